"""Plain HTTP to the model server, Ollama's API or an OpenAI-compatible one.

The drop-in endpoints relay requests through it byte for byte where the APIs agree, and
the OpenAI-compatible ``Llm`` adapter (``server.adapters.openai_compat``) is built on it.
Every failure of the connection becomes ``LlmUnavailable``, ``LlmTimeout`` or
``LlmError`` here; an answer with an error status is the caller's to read.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Literal

import httpx

from actors.errors import LlmError, LlmFailure, LlmTimeout, LlmUnavailable

__all__ = ["Api", "Upstream", "sse_data"]

Api = Literal["ollama", "openai"]
_NAMES: dict[Api, str] = {"ollama": "Ollama", "openai": "the OpenAI-compatible server"}


class Upstream:
    """One connection pool to the model server at ``url``; call ``aclose()`` when done.

    ``url`` of an ``openai`` server may end in ``/v1``; paths are given with it
    (``/v1/chat/completions``), as the API documents them.
    """

    def __init__(self, api: Api, url: str, *, timeout: float) -> None:
        base = url.rstrip("/")
        if api == "openai":
            base = base.removesuffix("/v1")
        self.api, self.url, self.timeout = api, base, timeout
        self.name = f"{_NAMES[api]} at {base}"
        # Constructing the client opens no connection; the first request does.
        self._client = httpx.AsyncClient(base_url=base, timeout=httpx.Timeout(timeout))

    async def aclose(self) -> None:
        """Close the connection pool. Idempotent."""
        await self._client.aclose()

    @asynccontextmanager
    async def open(
        self, method: str, path: str, body: bytes | None = None
    ) -> AsyncIterator[httpx.Response]:
        """Send a request (a JSON ``body``) and yield its response, body unread; leaving
        the block closes it, which cancels a generation still under way upstream.

        Raises ``LlmUnavailable``, ``LlmTimeout`` or ``LlmError`` when the request fails.
        """
        headers = {"Content-Type": "application/json"} if body is not None else {}
        request = self._client.build_request(method, path, content=body, headers=headers)
        with self.errors():
            response = await self._client.send(request, stream=True)
        try:
            yield response
        finally:
            await response.aclose()

    async def read(self, response: httpx.Response) -> bytes:
        """The whole body of ``response``; raises like ``open``."""
        with self.errors():
            return await response.aread()

    async def lines(self, response: httpx.Response) -> AsyncIterator[str]:
        """The body of ``response`` line by line (NDJSON, or SSE); raises like ``open``."""
        parts = response.aiter_lines()
        while True:
            with self.errors():
                line = await anext(parts, None)
            if line is None:
                return
            yield line

    @contextmanager
    def errors(self) -> Iterator[None]:
        """Turn httpx's failures within the block into ours."""
        try:
            yield
        except httpx.HTTPError as exc:
            raise self._translate(exc) from exc

    def _translate(self, exc: httpx.HTTPError) -> LlmFailure:
        match exc:
            case httpx.TimeoutException():  # ConnectTimeout and ReadTimeout carry no text
                return LlmTimeout(
                    f"{self.name} did not answer within {self.timeout:g} s ({type(exc).__name__})"
                )
            case httpx.ConnectError():
                return LlmUnavailable(f"cannot reach {self.name}: {exc}")
            case _:  # e.g. RemoteProtocolError: the connection dropped mid-answer
                return LlmError(f"{self.name}: connection failed: {type(exc).__name__}: {exc}")


async def sse_data(lines: AsyncIterator[str]) -> AsyncIterator[str]:
    """The ``data`` of each server-sent event in ``lines`` (several ``data:`` lines of one
    event joined by newlines, as the SSE specification says); comments and other fields
    are skipped."""
    data: list[str] = []
    async for line in lines:
        if not line:
            if data:
                yield "\n".join(data)
                data = []
        elif line.startswith("data:"):
            value = line[5:]
            data.append(value[1:] if value.startswith(" ") else value)
    if data:
        yield "\n".join(data)
