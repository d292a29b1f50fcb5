"""Who is calling: API keys map to user ids; no keys configured means single-user mode.

A key travels as ``Authorization: Bearer <key>``. A browser cannot set that header on
a WebSocket, so a handshake may carry it as a ``Sec-WebSocket-Protocol`` entry
``mnemo.bearer.<key as unpadded base64url>`` beside ``mnemo``, the subprotocol the
server answers (``socket_key``). A query ``token`` is still read on WebSockets for old
clients, and redacted from every log line (``server.logs``); HTTP routes never read it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from dataclasses import dataclass

from starlette.requests import HTTPConnection

from schemas.settings import Settings

__all__ = [
    "BEARER_PROTOCOL",
    "PROTOCOL",
    "Viewer",
    "bearer",
    "protocol_entry",
    "socket_key",
    "user_for_token",
    "viewer_for_token",
]

#: The WebSocket subprotocol of mnemo's sockets: offered by clients, answered by the server.
PROTOCOL = "mnemo"
#: The prefix of the subprotocol entry carrying a key, ``mnemo.bearer.<base64url key>``.
BEARER_PROTOCOL = "mnemo.bearer."


def user_for_token(settings: Settings, token: str | None) -> str | None:
    """The user id a bearer token stands for, or ``None`` when it is missing or unknown.

    With no API keys configured every caller is ``settings.default_user``
    (the CLI refuses to bind a non-loopback address in that mode).
    """
    if not settings.api_keys:
        return settings.default_user
    if not token:
        return None
    return _users_by_digest(settings).get(_digest(token))


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


#: Per ``Settings`` object (kept here, so its id is not reused): its keys by digest.
_TABLES: dict[int, tuple[Settings, dict[bytes, str]]] = {}


def _users_by_digest(settings: Settings) -> dict[bytes, str]:
    """Keys by their SHA-256: one lookup per request, however many keys, and what a lookup
    takes tells nothing about how close a wrong token came to a key."""
    held = _TABLES.get(id(settings))
    if held is None or held[0] is not settings:
        table = {_digest(key): user for key, user in settings.api_keys.items()}
        held = _TABLES[id(settings)] = (settings, table)
    return held[1]


@dataclass(frozen=True, slots=True)
class Viewer:
    """Who watches the server (``/actors``, ``/ws/tail``, ``/metrics``): an admin sees every
    user's actors and events; a user only their own."""

    user_id: str | None
    admin: bool

    def may_see(self, user_id: str | None) -> bool:
        return self.admin or (user_id is not None and user_id == self.user_id)


def viewer_for_token(settings: Settings, token: str | None) -> Viewer | None:
    """An admin key (``MNEMO_ADMIN_KEYS``) or a user's API key; None when neither. In
    single-user mode (no API keys) the only user watches as admin."""
    if token:
        admin = False
        for key in settings.admin_keys:
            if hmac.compare_digest(key.encode(), token.encode()):
                admin = True
        if admin:
            return Viewer(None, admin=True)
    if not settings.api_keys:
        return Viewer(settings.default_user, admin=True)
    user_id = user_for_token(settings, token)
    return None if user_id is None else Viewer(user_id, admin=False)


def bearer(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header."""
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


def protocol_entry(key: str) -> str:
    """The ``Sec-WebSocket-Protocol`` entry carrying ``key``: base64url without padding,
    so any key fits the header's token characters."""
    encoded = base64.urlsafe_b64encode(key.encode()).rstrip(b"=").decode()
    return BEARER_PROTOCOL + encoded


def _from_protocols(offered: list[str]) -> str | None:
    for entry in offered:
        if entry.startswith(BEARER_PROTOCOL):
            encoded = entry.removeprefix(BEARER_PROTOCOL)
            try:
                raw = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
                return raw.decode() or None
            except (binascii.Error, ValueError):
                return None
    return None


def socket_key(connection: HTTPConnection) -> str | None:
    """The key of a WebSocket handshake: ``Authorization: Bearer``, else a
    ``mnemo.bearer.`` subprotocol entry, else the query's ``token`` (old clients)."""
    return (
        bearer(connection.headers.get("authorization"))
        or _from_protocols(list(connection.scope.get("subprotocols") or ()))
        or connection.query_params.get("token")
    )
