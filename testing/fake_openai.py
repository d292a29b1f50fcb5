"""A fake OpenAI-compatible model server on loopback (llama.cpp's server, vLLM), scripted
like the fake Ollama: ``/v1/chat/completions`` (server-sent events or one JSON object,
``stream_options.include_usage``, tool calls, ``response_format``) and ``/v1/models``.

    async with FakeOpenAi(models=["llama3.2"]) as fake:
        fake.script("Hello there!")                  # next completion's text
        fake.script(Reply(tool_calls=[...]))         # OpenAI's shape: id, type, function
        fake.fault(path="/v1/chat/completions", status=500)

Errors are OpenAI's ``{"error": {"message", "type", "param", "code"}}``.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any

from testing.fake_http import Json
from testing.fake_ollama import FakeOllama, Fault, Reply, _tokens

__all__ = ["FakeOpenAi"]

_CHAT = "/v1/chat/completions"


def _error(message: str, kind: str, code: str | None = None) -> Json:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


@dataclass
class FakeOpenAi(FakeOllama):
    """The fake server; ``requests``, ``script``, ``fault`` as on ``FakeOllama``."""

    @staticmethod
    def _structured(body: Json) -> bool:
        return "response_format" in body

    async def _handle(
        self,
        method: str,
        path: str,
        raw: bytes,
        headers: dict[str, str],
        w: asyncio.StreamWriter,
    ) -> None:
        try:
            body: Json = json.loads(raw) if raw else {}
        except json.JSONDecodeError as e:
            self._record(method, path, {"_raw": raw.decode("utf-8", "replace")}, headers)
            return await self._send_json(w, 400, _error(str(e), "invalid_request_error"))
        if path == _CHAT and "response_format" in body and body.get("max_tokens") == 1:
            # mnemo's warm-up at start (``Extractor.warm_up``): answered, never recorded,
            # scripted or faulted, as the fake Ollama does.
            cut = Reply(content="{", done_reason="length")
            return await self._complete(w, str(body.get("model")), body, cut, None)
        self._record(method, path, body, headers)
        fault = self._take_fault(path)
        if fault and fault.delay:
            await asyncio.sleep(fault.delay)
        if fault and fault.status:
            return await self._send_json(w, fault.status, _error(fault.error, "server_error"))
        if path == "/v1/models" and method == "GET":
            data = [
                {"id": m, "object": "model", "created": 1700000000, "owned_by": "fake"}
                for m in self.models
            ]
            return await self._send_json(w, 200, {"object": "list", "data": data})
        if path != _CHAT:
            return await self._send_json(w, 404, _error(f"no route {path}", "not_found_error"))
        if method != "POST":
            return await self._send_json(w, 405, _error("method not allowed", "invalid_request"))
        model = body.get("model") or ""
        if not isinstance(body.get("messages"), list) or not body["messages"]:
            message = "'messages' must be a non-empty array"
            return await self._send_json(w, 400, _error(message, "invalid_request_error"))
        if model not in self.models:
            message = f"The model `{model}` does not exist"
            return await self._send_json(
                w, 404, _error(message, "invalid_request_error", "model_not_found")
            )
        if self._replies or not self.responder:
            reply = self._next_reply(path, body)
        else:  # real-model responders block
            reply = await asyncio.to_thread(self._next_reply, path, body)
        await self._complete(w, model, body, reply, fault)

    async def _complete(
        self, w: asyncio.StreamWriter, model: str, body: Json, reply: Reply, fault: Fault | None
    ) -> None:
        content = reply.content if isinstance(reply.content, str) else json.dumps(reply.content)
        finish = "tool_calls" if reply.tool_calls else reply.done_reason
        usage = {
            "prompt_tokens": len(_tokens(json.dumps(body["messages"]))),
            "completion_tokens": len(_tokens(content)),
        }
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        head = {"id": "chatcmpl-fake", "created": int(time.time()), "model": model}
        if not body.get("stream"):
            message: Json = {"role": "assistant", "content": content}
            if reply.tool_calls:
                message["tool_calls"] = reply.tool_calls
            choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
            answer = head | {"object": "chat.completion", "choices": [choice], "usage": usage}
            return await self._send_json(w, 200, answer)
        with_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        deltas: list[Json] = [{"role": "assistant", "content": ""}]
        deltas += [{"content": t} for t in _tokens(content)]
        for i, call in enumerate(reply.tool_calls or []):
            deltas.append({"tool_calls": [{"index": i, **call}]})
        chunks = [
            head
            | {
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": d, "logprobs": None, "finish_reason": None}],
            }
            for d in deltas
        ]
        last = {"index": 0, "delta": {}, "logprobs": None, "finish_reason": finish}
        chunks.append(head | {"object": "chat.completion.chunk", "choices": [last]})
        if with_usage:
            for chunk in chunks:
                chunk["usage"] = None
            chunks.append(head | {"object": "chat.completion.chunk", "choices": [], "usage": usage})
        self._start_chunked(w, "text/event-stream")
        for i, chunk in enumerate(chunks):
            event: Any = chunk
            if fault and fault.stream_error_after == i:
                event = _error(fault.error, "server_error")
            await self._send_chunk(w, f"data: {json.dumps(event)}\n\n".encode())
            if event is not chunk:
                break
            if reply.chunk_delay and i < len(chunks) - 1:
                await asyncio.sleep(reply.chunk_delay)
        else:
            await self._send_chunk(w, b"data: [DONE]\n\n")
        await self._end_chunked(w)
