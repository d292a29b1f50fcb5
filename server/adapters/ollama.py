"""Ollama adapters for the ``Llm`` and ``Embedder`` ports: the only module that imports ``ollama``.

Every failure of the ``ollama`` client is turned into ``LlmUnavailable``, ``LlmTimeout``
or ``LlmError`` here. The client (0.6.3) lets several kinds escape besides its own
``ResponseError``: builtin ``ConnectionError`` for plain requests, and raw ``httpx``
errors and ``json.JSONDecodeError`` while streaming. It also ends a stream quietly when
the server stops before the ``done`` line, so that case is checked here.
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import anyio
import httpx
import ollama
import pydantic

from actors.errors import LlmError, LlmFailure, LlmInvalidOutput, LlmTimeout, LlmUnavailable
from memory.text import embedding_text
from schemas.llm import ChatChunk, PromptMessage

__all__ = ["OllamaEmbedder", "OllamaLlm"]

# What the ollama client can raise for a failed call. AttributeError and TypeError come
# from its parsing (``part.get(...)``, ``cls(**part)``) when a line is JSON but not an
# object; the ``with self._errors()`` blocks wrap only calls into the client.
_FAILURES = (
    ollama.ResponseError,
    ConnectionError,
    httpx.RequestError,
    json.JSONDecodeError,
    pydantic.ValidationError,
    AttributeError,
    TypeError,
)


class _OllamaClient:
    """One ``ollama.AsyncClient`` with a timeout on connect and on every read."""

    def __init__(self, host: str, *, timeout: float) -> None:
        self._host, self._timeout = host, timeout
        # Constructing the httpx client opens no connection; the first call does.
        self._client = ollama.AsyncClient(
            host=host,
            timeout=httpx.Timeout(timeout),
            event_hooks={"response": [_unlink_when_closed]},
        )

    async def aclose(self) -> None:
        """Close the HTTP connection pool. Idempotent."""
        await self._client.close()  # type: ignore[no-untyped-call]  # ollama leaves it bare

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except _FAILURES as exc:
            raise self._translate(exc) from exc

    def _translate(self, exc: Exception) -> LlmFailure:
        match exc:
            case httpx.TimeoutException():  # ConnectTimeout and ReadTimeout carry no text
                return LlmTimeout(
                    f"Ollama at {self._host} did not answer within {self._timeout:g} s "
                    f"({type(exc).__name__})"
                )
            case httpx.ConnectError() | ConnectionError():
                return LlmUnavailable(f"cannot reach Ollama at {self._host}: {exc}")
            case ollama.ResponseError(status_code=-1):  # an {"error": ...} line mid-stream
                return LlmError(f"Ollama reported an error mid-answer: {exc.error}")
            case ollama.ResponseError():
                return LlmError(f"Ollama answered HTTP {exc.status_code}: {exc.error}")
            case httpx.RequestError():  # e.g. RemoteProtocolError: connection dropped
                return LlmError(f"Ollama's connection failed: {type(exc).__name__}: {exc}")
            case json.JSONDecodeError():
                return LlmError(f"Ollama sent a line that is not JSON: {exc}")
            case _:
                return LlmError(f"Ollama sent an unexpected reply: {type(exc).__name__}: {exc}")


class OllamaLlm(_OllamaClient):
    """The ``Llm`` port on Ollama's ``/api/chat``; call ``aclose()`` when done with it.

    Raises only ``LlmUnavailable``, ``LlmTimeout`` and ``LlmError``.
    """

    def __init__(
        self, host: str, *, timeout: float, first_token_timeout: float | None = None
    ) -> None:
        """``timeout``: seconds to connect and between two streamed pieces of an answer;
        ``first_token_timeout`` (default ``timeout``): seconds a structured answer may take
        to its first piece, which covers the model's wait for its turn and its reading of
        the prompt (tens of seconds for a small model on a CPU)."""
        super().__init__(host, timeout=timeout)
        self._silence = timeout
        self._first = first_token_timeout or timeout
        # Structured answers are timed here, piece by piece, so their reads have no
        # timeout of httpx's (which would apply ``timeout`` to the first piece too).
        self._json_client = ollama.AsyncClient(
            host=host,
            timeout=httpx.Timeout(timeout, read=None),
            event_hooks={"response": [_unlink_when_closed]},
        )

    async def aclose(self) -> None:
        """Close both HTTP connection pools. Idempotent."""
        await super().aclose()
        await self._json_client.close()  # type: ignore[no-untyped-call]  # ollama leaves it bare

    async def stream_chat(
        self, messages: Sequence[PromptMessage], *, model: str
    ) -> AsyncIterator[ChatChunk]:
        """Stream a reply: one chunk per piece of text, then a ``done`` chunk with token counts.

        Closing the iterator early is safe: it closes the HTTP response.
        """
        with self._errors():  # builds the request only; it is sent on the first read
            parts = await self._client.chat(model=model, messages=_wire(messages), stream=True)
        try:
            while True:
                with self._errors():
                    part = await anext(parts, None)
                if part is None:
                    raise LlmError(f"Ollama's answer from {model!r} ended before its done line")
                if part.message.content:
                    yield ChatChunk(text=part.message.content)
                if part.done:  # done_reason "length" is an ordinary end for chat
                    yield ChatChunk(
                        done=True,
                        prompt_tokens=part.prompt_eval_count or 0,
                        completion_tokens=part.eval_count or 0,
                    )
                    return
        finally:
            if isinstance(parts, AsyncGenerator):
                with self._errors():
                    await parts.aclose()

    async def generate_json(
        self,
        prompt: str,
        *,
        model: str,
        schema: dict[str, Any],
        system: str | None = None,
        max_tokens: int | None = None,
    ) -> str:
        """Ask for one answer constrained to the JSON ``schema``, at temperature 0, at most
        ``max_tokens`` long (Ollama's ``num_predict``; None: the model's own limit).

        The answer is streamed, so a slow model that keeps answering is never cut off: the
        call times out only when the model is silent, ``first_token_timeout`` before its
        first piece or ``timeout`` between two (``LlmTimeout`` says which). Returns the
        raw content for the caller to decode; an answer cut at the token limit raises
        ``LlmInvalidOutput`` (it would not be valid JSON).
        """
        messages = [] if system is None else [{"role": "system", "content": system}]
        messages.append({"role": "user", "content": prompt})
        options: dict[str, Any] = {"temperature": 0}
        if max_tokens is not None:
            options["num_predict"] = max_tokens
        with self._errors():  # builds the request only; it is sent on the first read
            parts = await self._json_client.chat(
                model=model, messages=messages, format=schema, options=options, stream=True
            )
        pieces: list[str] = []
        try:
            while True:
                wait = self._silence if pieces else self._first
                with self._errors(), anyio.move_on_after(wait) as waited:
                    part = await anext(parts, None)
                if waited.cancelled_caught:
                    raise LlmTimeout(
                        f"Ollama's answer from {model!r} went silent for {wait:g} s after "
                        f"{len(pieces)} pieces"
                        if pieces
                        else f"Ollama's answer from {model!r} had not started after {wait:g} s"
                    )
                if part is None:
                    raise LlmError(f"Ollama's answer from {model!r} ended before its done line")
                if part.message.content:
                    pieces.append(part.message.content)
                if part.done:
                    break
        finally:
            if isinstance(parts, AsyncGenerator):
                with self._errors():
                    await parts.aclose()
        if part.done_reason == "length":
            raise LlmInvalidOutput(
                f"Ollama's answer from {model!r} was truncated at the token limit "
                f"({max_tokens if max_tokens is not None else 'the model default'})"
            )
        return "".join(pieces)


class OllamaEmbedder(_OllamaClient):
    """The ``Embedder`` port on Ollama's ``/api/embed`` (``MNEMO_EMBEDDER=ollama:<model>``).

    ``dim`` is known once a call has returned (``probe()`` makes one) or when given.
    Call ``aclose()`` when done with it.
    """

    def __init__(self, host: str, model: str, *, timeout: float, dim: int | None = None) -> None:
        super().__init__(host, timeout=timeout)
        self._model, self._dim = model, dim

    @property
    def name(self) -> str:
        return f"ollama:{self._model}"

    @property
    def dim(self) -> int:
        """The vector length; raises ``RuntimeError`` before it is known."""
        if self._dim is None:
            raise RuntimeError(f"{self.name}: dimension unknown until probe() or embed()")
        return self._dim

    async def warm_up(self) -> None:
        """Learn the vector length from Ollama when it was not configured."""
        if self._dim is None:
            await self.probe()

    async def preload(self) -> None:
        """Nothing to load here: Ollama loads its model on the first call."""

    async def probe(self) -> int:
        """Embed one text to learn (or check) the dimension; raises like ``embed``."""
        await self.embed(["dim probe"])
        return self.dim

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit-length vector per text (an empty one is sent as a single space).

        Raises ``LlmUnavailable``/``LlmTimeout``/``LlmError``; ``LlmError`` also when the
        model returns the wrong number of vectors, a different dimension, or a zero vector.
        """
        if not texts:
            return []
        with self._errors():
            reply = await self._client.embed(
                model=self._model, input=[embedding_text(t) for t in texts]
            )
        vectors = [_unit(v) for v in reply.embeddings]
        if len(vectors) != len(texts):
            raise LlmError(f"{self.name} returned {len(vectors)} vectors for {len(texts)} texts")
        dims = sorted({len(v) for v in vectors})
        if len(dims) != 1 or self._dim not in (None, dims[0]):
            want = "one dimension" if self._dim is None else f"dimension {self._dim}"
            raise LlmError(f"{self.name} returned dimensions {dims}, expected {want}")
        self._dim = dims[0]
        return vectors


class _Unlinked(httpx.AsyncByteStream):
    """A response's body that lets go of httpx's own stream once closed.

    httpx's stream and its response point at each other, so every response is a
    reference cycle (about 40 objects with the request and the pooled connection's
    stream) that only the cyclic garbage collector frees. At hundreds of model calls a
    second those young collections stop the event loop for 10-25 ms each; without the
    cycle, reference counting frees a response as soon as the client drops it.
    """

    def __init__(self, stream: httpx.AsyncByteStream) -> None:
        self._stream: httpx.AsyncByteStream | None = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._stream is not None:
            async for chunk in self._stream:
                yield chunk

    async def aclose(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            await stream.aclose()


async def _unlink_when_closed(response: httpx.Response) -> None:
    """httpx's ``response`` event hook: see ``_Unlinked``."""
    if isinstance(response.stream, httpx.AsyncByteStream):
        response.stream = _Unlinked(response.stream)


def _wire(messages: Sequence[PromptMessage]) -> list[dict[str, str]]:
    return [{"role": m.role, "content": m.content} for m in messages]


def _unit(vector: Sequence[float]) -> list[float]:
    norm = math.hypot(*vector)
    if not (norm > 0 and math.isfinite(norm)):  # also rejects NaN
        raise LlmError(f"the embedding model returned a vector of norm {norm}")
    return [x / norm for x in vector]
