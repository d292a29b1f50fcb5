"""uvicorn's connection protocols, with what mnemo needs at the edge: a deadline for a
request's head, and no error logged for a WebSocket handshake the app refused.

uvicorn times a kept-alive connection only until its next byte arrives, and a new
connection not at all: a client that opens a connection and sends nothing, or a request
head a byte at a time, holds it forever. Here every connection must deliver a whole
request head (the WebSocket upgrade included) within ``handshake_timeout`` seconds of
being opened or of its previous response, or it is closed.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from uvicorn._types import ASGISendEvent
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

__all__ = ["RefusingWebSockets", "timed_http"]

_log = logging.getLogger("mnemo.http")


class _TimedH11(H11Protocol):
    handshake_timeout = 10.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        #: The request scope when the deadline was set: a new one means a head arrived.
        self._waiting_since: object = None

    # uvicorn's H11Protocol narrows asyncio's BaseTransport parameter to Transport, so
    # mypy reports the override of asyncio.Protocol's signature; the narrowing is uvicorn's.
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.scope is not self._waiting_since:  # a whole head (or an upgrade) arrived
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()  # kept alive: the next request's head is timed too

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._waiting_since = self.scope
        self._deadline = self.loop.call_later(self.handshake_timeout, self._expire)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expire(self) -> None:
        self._deadline = None
        if self.scope is not self._waiting_since or self.transport.is_closing():
            return  # a request arrived meanwhile (pipelined after a response)
        prefix = f"{self.client[0]}:{self.client[1]} " if self.client else ""
        _log.info("%sclosed: no request head within %s s", prefix, self.handshake_timeout)
        self.transport.close()


def timed_http(handshake_timeout: float) -> type[H11Protocol]:
    """uvicorn's h11 protocol, closing connections that send no whole request head within
    ``handshake_timeout`` seconds (pass it as ``uvicorn.Config(http=...)``)."""
    return type("TimedH11Protocol", (_TimedH11,), {"handshake_timeout": handshake_timeout})


class RefusingWebSockets(WebSocketsSansIOProtocol):
    """uvicorn's websockets-sansio protocol, except that a handshake the app refused with an
    HTTP response (``send_denial_response``: 401, 400) is not logged as an error ("ASGI
    callable returned without completing handshake"): it is an answer, logged at INFO by
    uvicorn as "connection rejected"."""

    async def send(self, message: ASGISendEvent) -> None:
        await super().send(message)
        refused = message["type"] == "websocket.http.response.body"
        if refused and not message.get("more_body", False):
            self.handshake_complete = True
