"""The ``Llm`` port on an OpenAI-compatible ``/v1/chat/completions`` (``MNEMO_LLM_API=openai``):
llama.cpp's server, vLLM, LM Studio, Ollama's own ``/v1``.

Replies are decoded into typed structs; anything else the server sends (a line that is
not JSON, an ``error`` event, a stream without its ``[DONE]``) is ``LlmError``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any, TypeVar

import msgspec

from actors.errors import LlmError, LlmInvalidOutput
from schemas.llm import ChatChunk, PromptMessage
from server.adapters.upstream import Upstream, sse_data

__all__ = ["OpenAiLlm", "error_text"]

_PATH = "/v1/chat/completions"
_T = TypeVar("_T")


class _Usage(msgspec.Struct, frozen=True):
    prompt_tokens: int = 0
    completion_tokens: int = 0


class _Delta(msgspec.Struct, frozen=True):
    content: str | None = None


class _StreamChoice(msgspec.Struct, frozen=True):
    delta: _Delta = _Delta()
    finish_reason: str | None = None


class _Chunk(msgspec.Struct, frozen=True):
    choices: list[_StreamChoice] = []
    usage: _Usage | None = None
    error: Any = None


class _Message(msgspec.Struct, frozen=True):
    content: str | None = None


class _Choice(msgspec.Struct, frozen=True):
    message: _Message
    finish_reason: str | None = None


class _Completion(msgspec.Struct, frozen=True):
    choices: list[_Choice]


_chunk = msgspec.json.Decoder(_Chunk)
_completion = msgspec.json.Decoder(_Completion)
_encode = msgspec.json.Encoder().encode


def error_text(body: bytes) -> str:
    """The message of an error answer: OpenAI's ``{"error": {"message"}}``, Ollama's
    ``{"error": "..."}``, or the body itself (shortened)."""
    try:
        found = msgspec.json.decode(body)
    except msgspec.DecodeError:
        return body[:300].decode("utf-8", "replace")
    error = found.get("error") if isinstance(found, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    if isinstance(error, str):
        return error
    return body[:300].decode("utf-8", "replace")


class OpenAiLlm:
    """The ``Llm`` port on an OpenAI-compatible server; call ``aclose()`` when done with it.

    Raises only ``LlmUnavailable``, ``LlmTimeout`` and ``LlmError``.
    """

    def __init__(self, url: str, *, timeout: float) -> None:
        self._upstream = Upstream("openai", url, timeout=timeout)

    async def aclose(self) -> None:
        await self._upstream.aclose()

    async def stream_chat(
        self, messages: Sequence[PromptMessage], *, model: str
    ) -> AsyncIterator[ChatChunk]:
        """Stream a reply: one chunk per piece of text, then a ``done`` chunk with the
        token counts (asked for with ``stream_options.include_usage``).

        Closing the iterator early is safe: it closes the HTTP response.
        """
        body = {
            "model": model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        upstream = self._upstream
        async with upstream.open("POST", _PATH, _encode(body)) as response:
            if response.status_code != 200:
                text = error_text(await upstream.read(response))
                raise LlmError(f"{upstream.name} answered HTTP {response.status_code}: {text}")
            usage = _Usage()
            async for data in sse_data(upstream.lines(response)):
                if data == "[DONE]":
                    yield ChatChunk(
                        done=True,
                        prompt_tokens=usage.prompt_tokens,
                        completion_tokens=usage.completion_tokens,
                    )
                    return
                chunk = self._decode(_chunk, data)
                if chunk.error is not None:
                    raise LlmError(f"{upstream.name} reported an error mid-answer: {chunk.error}")
                usage = chunk.usage or usage
                for choice in chunk.choices[:1]:
                    if choice.delta.content:
                        yield ChatChunk(text=choice.delta.content)
        raise LlmError(f"{upstream.name}: the answer from {model!r} ended before [DONE]")

    async def generate_json(
        self,
        prompt: str,
        *,
        model: str,
        schema: dict[str, Any],
        system: str | None = None,
        max_tokens: int | None = None,
    ) -> str:
        """Ask for one answer constrained to the JSON ``schema`` (``response_format``
        ``json_schema``), at temperature 0, at most ``max_tokens`` long (None: the
        server's own limit).

        Returns the raw content for the caller to decode; an answer cut at the token
        limit raises ``LlmInvalidOutput`` (it would not be valid JSON).
        """
        messages = [] if system is None else [{"role": "system", "content": system}]
        messages.append({"role": "user", "content": prompt})
        body: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "temperature": 0,
            "stream": False,
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": schema},
            },
        }
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        upstream = self._upstream
        async with upstream.open("POST", _PATH, _encode(body)) as response:
            raw = await upstream.read(response)
        if response.status_code != 200:
            status = response.status_code
            raise LlmError(f"{upstream.name} answered HTTP {status}: {error_text(raw)}")
        reply = self._decode(_completion, raw)
        if not reply.choices:
            raise LlmError(f"{upstream.name} answered no choice")
        if reply.choices[0].finish_reason == "length":
            raise LlmInvalidOutput(
                f"{upstream.name}: the answer from {model!r} was truncated at the token limit"
            )
        return reply.choices[0].message.content or ""

    def _decode(self, decoder: msgspec.json.Decoder[_T], data: str | bytes) -> _T:
        try:
            return decoder.decode(data)
        except msgspec.DecodeError as exc:
            raise LlmError(f"{self._upstream.name} sent what is not its protocol: {exc}") from exc
