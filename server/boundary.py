"""The trust boundary of every request: its ``Host`` and its ``Origin``, in one place.

A server on a laptop is reachable by every web page its user opens, so the network is
not the boundary. A page of another site can point a name it controls at 127.0.0.1
(DNS rebinding: its requests then carry ``Host: evil.example``), or call the server
from its own origin (its requests carry ``Origin: https://evil.example``). Both are
refused here, before any route runs: REST, both WebSockets, the page, ``/mcp``.

- ``Host``: on a loopback address, the loopback names only (``localhost``,
  ``*.localhost``, 127.0.0.0/8, ``[::1]``, any port) plus ``Settings.allowed_hosts``;
  on another address, ``allowed_hosts`` when it is set, else any name (such a server
  needs keys, which a rebinding page does not hold). A request with no ``Host`` is no
  browser's. A foreign one is answered 421 ``unknown_host`` (a WebSocket: the
  handshake refused with that answer).
- ``Origin``: none (not a browser, or a same-origin ``GET``), the server's own origin
  (its host and port are the request's ``Host``), or one of ``Settings.allowed_origins``,
  which also get CORS answers (preflight included) so a frontend served elsewhere
  works. Any other, ``null`` included, is answered 403 ``forbidden_origin``.

Every HTTP answer also says ``X-Content-Type-Options: nosniff``.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from starlette.datastructures import Headers, MutableHeaders
from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from starlette.websockets import WebSocket

from schemas.settings import Settings
from server.config import is_loopback
from server.http import error

__all__ = ["Boundary", "host_name", "origin_key"]

_DEFAULT_PORTS = {"http": "80", "https": "443", "ws": "80", "wss": "443"}
#: What a page of a listed origin may send and read (``/mcp`` needs its session headers).
_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
_HEADERS = ("Authorization", "Content-Type", "Last-Event-ID", "Mcp-Protocol-Version",
            "Mcp-Session-Id", "X-Mnemo-App", "X-Mnemo-Opt-Out",
            "X-Mnemo-Session")  # fmt: skip
_EXPOSED = ("Content-Disposition", "Mcp-Session-Id", "Mnemo-Node", "Retry-After")
_NOSNIFF = (b"x-content-type-options", b"nosniff")


def host_name(host: str) -> str:
    """The name of a ``Host`` value, without its port: lower case, no trailing dot, an
    IPv6 address without its brackets."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].partition("]")[0]
    name, colon, port = host.rpartition(":")
    if colon and port.isdigit():
        host = name
    return host.rstrip(".")


def _loopback_name(name: str) -> bool:
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def origin_key(origin: str) -> str | None:
    """``scheme://host[:port]`` of an origin as browsers send it (lower case, no default
    port, no path), or None when ``origin`` is none (``null``, no scheme or host)."""
    try:
        parts = urlsplit(origin.strip())
        port = parts.port
    except ValueError:
        return None
    scheme, name = parts.scheme.lower(), parts.hostname
    if not scheme or not name or parts.path not in ("", "/") or parts.query or parts.username:
        return None
    shown = f"[{name}]" if ":" in name else name
    if port is not None and str(port) != _DEFAULT_PORTS.get(scheme):
        shown += f":{port}"
    return f"{scheme}://{shown}"


def _same_origin(origin: str, host: str) -> bool:
    """Whether ``origin`` (already an ``origin_key``) names the server the request came to
    by ``Host``: the same name and port (a scheme's default port when either leaves it out)."""
    scheme, _, authority = origin.partition("://")
    default = _DEFAULT_PORTS.get(scheme, "")
    host = host.strip().lower()
    if host.endswith(f":{default}"):
        host = host.removesuffix(f":{default}")
    return authority == host.rstrip(".")


class Boundary:
    """ASGI middleware checking ``Host`` and ``Origin`` (see the module), around the app."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self._app = app
        self._origins = frozenset(
            key for key in map(origin_key, settings.allowed_origins) if key is not None
        )
        self._cors = CORSMiddleware(
            app,
            allow_origins=sorted(self._origins),
            allow_methods=_METHODS,
            allow_headers=_HEADERS,
            expose_headers=_EXPOSED,
            # A page of a listed public origin may call a server on this machine
            # (Chrome's Private Network Access asks first).
            allow_private_network=True,
        )
        self._hosts = frozenset(h.strip().lower().rstrip(".") for h in settings.allowed_hosts)
        self._any_host = "*" in self._hosts or (not self._hosts and not is_loopback(settings.host))

    def host_allowed(self, host: str | None) -> bool:
        if host is None or self._any_host:
            return True
        name = host_name(host)
        if _loopback_name(name) or name in self._hosts:
            return True
        return any(h.startswith("*.") and name.endswith(h[1:]) for h in self._hosts)

    def origin_allowed(self, origin: str | None, host: str | None) -> bool:
        if origin is None:
            return True
        key = origin_key(origin)
        if key is None:
            return False
        return key in self._origins or (host is not None and _same_origin(key, host))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            await self._app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        host, origin = headers.get("host"), headers.get("origin")
        if not self.host_allowed(host):
            await _refuse(scope, receive, send, 421, "unknown_host", _UNKNOWN_HOST)
        elif not self.origin_allowed(origin, host):
            await _refuse(scope, receive, send, 403, "forbidden_origin", _FOREIGN_ORIGIN)
        elif kind == "websocket":
            await self._app(scope, receive, send)
        elif origin is not None and origin_key(origin) in self._origins:
            await self._cors(scope, receive, _nosniff(send))
        else:
            await self._app(scope, receive, _nosniff(send))


_UNKNOWN_HOST = "this server does not answer to that host name (set MNEMO_ALLOWED_HOSTS to add one)"
_FOREIGN_ORIGIN = (
    "pages of that origin may not call this server (set MNEMO_ALLOWED_ORIGINS to allow one)"
)


def _nosniff(send: Send) -> Send:
    async def sending(message: Message) -> None:
        if message["type"] in ("http.response.start", "websocket.http.response.start"):
            message.setdefault("headers", [])
            headers = MutableHeaders(scope=message)
            headers.append(*(part.decode() for part in _NOSNIFF))
        await send(message)

    return sending


async def _refuse(
    scope: Scope, receive: Receive, send: Send, status: int, code: str, message: str
) -> None:
    answer = error(status, code, message)
    if scope["type"] == "websocket":
        await WebSocket(scope, receive, _nosniff(send)).send_denial_response(answer)
    else:
        await answer(scope, receive, _nosniff(send))
