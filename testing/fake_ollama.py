"""A fake Ollama HTTP server on loopback, speaking the real wire format (stdlib, asyncio).

Speaks enough of the Ollama REST API for the official ``ollama`` client
(``AsyncClient`` / ``Client``): /api/chat, /api/generate (NDJSON streaming over
chunked encoding, or one JSON object), /api/embed, /api/tags, /api/show,
/api/ps, /api/version. Replies are scripted; faults are injectable.

    async with FakeOllama(models=["llama3.2"]) as fake:
        fake.script("Hello there!")                       # next chat/generate reply
        fake.script({"facts": []})                         # JSON-dumped (structured output)
        fake.fault(path="/api/chat", status=500)           # next /api/chat -> 500
        client = ollama.AsyncClient(host=fake.url)

Typed copy of ``/work/shared/reference/fake_ollama.py``; one addition: ``Fault.end_after``
ends a stream cleanly (terminating chunk, no ``done`` line) after N chunks.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from testing.fake_http import Drop, FakeHttpServer, Json

__all__ = ["FakeOllama", "Fault", "Reply", "hash_embed"]


@dataclass
class Reply:
    """One scripted chat/generate reply."""

    content: str | Json | list[Any] = ""  # dict/list are json.dumps'ed (structured output)
    thinking: str = ""  # streamed before content when non-empty
    done_reason: str = "stop"
    chunk_delay: float = 0.0  # seconds between streamed chunks
    tool_calls: list[Any] | None = None


@dataclass
class Fault:
    """One injected failure, consumed by the next request to ``path`` (None = any path)."""

    path: str | None = None
    delay: float = 0.0  # before the response starts (use for timeouts)
    status: int | None = None  # HTTP error, body {"error": error}
    error: str = "fake ollama failure"
    stream_error_after: int | None = None  # send {"error":..} NDJSON line after N chunks
    drop_after: int | None = None  # close the socket after N chunks (mid-stream)
    garbage_after: int | None = None  # send a non-JSON line after N chunks
    end_after: int | None = None  # end the stream cleanly after N chunks, without `done`


def _is_warm_up(path: str, body: Json) -> bool:
    """mnemo's model warm-up at start (``Extractor.warm_up``): a structured chat of one
    token. Answered at once and never recorded, scripted or faulted, so that tests see
    only the calls they make."""
    options = body.get("options")
    return (
        path == "/api/chat"
        and "format" in body
        and isinstance(options, dict)
        and options.get("num_predict") == 1
    )


def _warmed(body: Json) -> Json:
    return {
        "model": body.get("model"),
        "created_at": "2025-01-01T00:00:00Z",
        "message": {"role": "assistant", "content": "{"},
        "done": True,
        "done_reason": "length",
        "prompt_eval_count": 1,
        "eval_count": 1,
    }


def hash_embed(text: str, dim: int = 64) -> list[float]:
    """Deterministic bag-of-words feature hashing, L2-normalised.

    Texts sharing words get positive cosine similarity; identical texts get 1.0.
    """
    v = [0.0] * dim
    for tok in re.findall(r"\w+", text.lower()) or [""]:
        h = hashlib.sha256(tok.encode()).digest()
        v[int.from_bytes(h[:4], "little") % dim] += 1.0 if h[4] & 1 else -1.0
    n = math.sqrt(sum(x * x for x in v)) or 1.0
    return [x / n for x in v]


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _tokens(s: str) -> list[str]:
    return re.findall(r"\s*\S+|\s+", s) or [""]


def _norm(name: str) -> str:
    return name if ":" in name else name + ":latest"


@dataclass
class FakeOllama(FakeHttpServer):
    """The fake server; use as ``async with`` or ``start_in_thread()``/``stop_thread()``."""

    models: list[str] = field(default_factory=lambda: ["llama3.2", "nomic-embed-text"])
    version: str = "0.12.0"
    embed_dim: int = 64
    default_reply: str | Json | Reply = "OK"
    responder: Callable[[str, Json], Any] | None = None  # (path, body) -> str|dict|Reply
    #: Structured-output requests (a ``format`` in the body) take ``script_json`` replies,
    #: then this default, and leave the plain ``script`` queue to chat. None: one queue.
    json_default: str | Json | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        self._replies: list[Reply] = []
        self._json_replies: list[Reply] = []
        self._faults: list[Fault] = []

    # ---- scripting -------------------------------------------------------
    def script(self, *replies: str | Json | list[Any] | Reply) -> None:
        """Queue replies for the next chat/generate requests, in order."""
        for r in replies:
            self._replies.append(r if isinstance(r, Reply) else Reply(content=r))

    def script_json(self, *replies: str | Json | list[Any] | Reply) -> None:
        """Queue replies for the next structured-output requests (needs ``json_default``)."""
        for r in replies:
            self._json_replies.append(r if isinstance(r, Reply) else Reply(content=r))

    def fault(self, **kw: Any) -> None:
        """Queue a ``Fault(**kw)`` for the next matching request."""
        self._faults.append(Fault(**kw))

    def clear_faults(self) -> None:
        """Drop the faults no request has taken yet: Ollama is back."""
        self._faults.clear()

    async def _stream(
        self, w: asyncio.StreamWriter, lines: list[Json], fault: Fault | None, delay: float
    ) -> None:
        self._start_chunked(w, "application/x-ndjson")
        for i, line in enumerate(lines):
            obj: Json | str = line
            if fault and fault.end_after == i:
                break
            if fault and fault.drop_after == i:
                await w.drain()
                w.transport.abort()  # RST, no terminating chunk
                raise Drop()
            if fault and fault.garbage_after == i:
                obj = "this is {not json"
            if fault and fault.stream_error_after == i:
                obj = {"error": fault.error}
            await self._send_chunk(
                w, (obj if isinstance(obj, str) else json.dumps(obj)).encode() + b"\n"
            )
            if isinstance(obj, dict) and "error" in obj:
                break
            if delay and i < len(lines) - 1:
                await asyncio.sleep(delay)
        await self._end_chunked(w)

    def _take_fault(self, path: str) -> Fault | None:
        for i, f in enumerate(self._faults):
            if f.path in (None, path):
                return self._faults.pop(i)
        return None

    @staticmethod
    def _structured(body: Json) -> bool:
        """Whether the request asks for structured output (it takes ``script_json``)."""
        return "format" in body

    def _next_reply(self, path: str, body: Json) -> Reply:
        if self.json_default is not None and self._structured(body):
            if self._json_replies:
                return self._json_replies.pop(0)
            return Reply(content=self.json_default)
        if self._replies:
            return self._replies.pop(0)
        r = self.responder(path, body) if self.responder else self.default_reply
        return r if isinstance(r, Reply) else Reply(content=r)

    # ---- routes ----------------------------------------------------------
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
            return await self._send_json(w, 400, {"error": f"invalid character: {e}"})
        if _is_warm_up(path, body):
            return await self._send_json(w, 200, _warmed(body))
        self._record(method, path, body, headers)
        fault = self._take_fault(path)
        if fault and fault.delay:
            await asyncio.sleep(fault.delay)
        if fault and fault.status:
            return await self._send_json(w, fault.status, {"error": fault.error})

        if path == "/api/version" and method == "GET":
            return await self._send_json(w, 200, {"version": self.version})
        if path in ("/api/tags", "/api/ps") and method == "GET":
            entries = [self._model_entry(m) for m in self.models]
            return await self._send_json(w, 200, {"models": entries})
        if path not in ("/api/chat", "/api/generate", "/api/embed", "/api/show"):
            # gin's text, JSON-ified
            return await self._send_json(w, 404, {"error": "404 page not found"})
        if method != "POST":
            return await self._send_json(w, 405, {"error": "method not allowed"})
        model = body.get("model") or ""
        if not model:
            return await self._send_json(w, 400, {"error": "model is required"})
        if _norm(model) not in {_norm(m) for m in self.models}:
            return await self._send_json(w, 404, {"error": f"model '{model}' not found"})

        if path == "/api/show":
            return await self._send_json(
                w,
                200,
                {
                    "modelfile": "",
                    "parameters": "",
                    "template": "{{ .Prompt }}",
                    "details": self._model_entry(model)["details"],
                    "model_info": {"general.architecture": "fake", "fake.context_length": 8192},
                    "capabilities": ["completion", "embedding"],
                    "modified_at": _now(),
                },
            )
        if path == "/api/embed":
            inp = body.get("input", "")
            texts = [inp] if isinstance(inp, str) else list(inp)
            if not all(isinstance(t, str) for t in texts):
                return await self._send_json(w, 400, {"error": "invalid input type"})
            dim = int(body.get("dimensions") or self.embed_dim)
            return await self._send_json(
                w,
                200,
                {
                    "model": model,
                    "embeddings": [hash_embed(t, dim) for t in texts],
                    "total_duration": 1_000_000,
                    "load_duration": 1000,
                    "prompt_eval_count": sum(len(_tokens(t)) for t in texts),
                },
            )

        # /api/chat or /api/generate
        chat = path == "/api/chat"
        if chat and not body.get("messages"):
            return await self._send_json(w, 200, self._frame(model, chat, "", None, True, "load"))
        if self._replies or not self.responder:
            reply = self._next_reply(path, body)
        else:  # real-model responders block
            reply = await asyncio.to_thread(self._next_reply, path, body)
        content = reply.content
        if not isinstance(content, str):
            content = json.dumps(content)
        prompt_tokens = len(_tokens(json.dumps(body.get("messages") or body.get("prompt") or "")))
        stats = {
            "total_duration": 5_000_000,
            "load_duration": 1_000_000,
            "prompt_eval_count": prompt_tokens,
            "prompt_eval_duration": 1_000_000,
            "eval_count": len(_tokens(content)),
            "eval_duration": 3_000_000,
        }
        think = reply.thinking if body.get("think") not in (None, False) else ""

        if body.get("stream", True) is False:  # client always sends stream explicitly
            obj = self._frame(
                model, chat, content, think, True, reply.done_reason, reply.tool_calls
            )
            return await self._send_json(w, 200, obj | stats)
        lines = [self._frame(model, chat, "", t, False) for t in (_tokens(think) if think else [])]
        lines += [self._frame(model, chat, t, None, False) for t in _tokens(content)]
        if reply.tool_calls:
            lines.append(self._frame(model, chat, "", None, False, tool_calls=reply.tool_calls))
        lines.append(self._frame(model, chat, "", None, True, reply.done_reason) | stats)
        await self._stream(w, lines, fault, reply.chunk_delay)

    @staticmethod
    def _frame(
        model: str,
        chat: bool,
        text: str,
        thinking: str | None,
        done: bool,
        done_reason: str | None = None,
        tool_calls: list[Any] | None = None,
    ) -> Json:
        d: Json = {"model": model, "created_at": _now()}
        if chat:
            msg: Json = {"role": "assistant", "content": text}
            if thinking:
                msg["thinking"] = thinking
            if tool_calls:
                msg["tool_calls"] = tool_calls
            d["message"] = msg
        else:
            d["response"] = text
            if thinking:
                d["thinking"] = thinking
        d["done"] = done
        if done_reason:
            d["done_reason"] = done_reason
        return d

    @staticmethod
    def _model_entry(name: str) -> Json:
        n = _norm(name)
        return {
            "name": n,
            "model": n,
            "modified_at": _now(),
            "size": 1234567,
            "digest": hashlib.sha256(n.encode()).hexdigest(),
            "details": {
                "parent_model": "",
                "format": "gguf",
                "family": "fake",
                "families": ["fake"],
                "parameter_size": "1B",
                "quantization_level": "Q4_K_M",
            },
        }


if __name__ == "__main__":  # manual use: python fake_ollama.py [port]
    import sys

    async def _main() -> None:
        f = FakeOllama(port=int(sys.argv[1]) if len(sys.argv) > 1 else 11434)
        await f.start()
        print("fake ollama on", f.url, flush=True)
        await asyncio.Event().wait()

    asyncio.run(_main())
