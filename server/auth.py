"""Who is calling: API keys map to user ids; no keys configured means single-user mode."""

from __future__ import annotations

import hmac

from schemas.settings import Settings

__all__ = ["bearer", "user_for_token"]


def user_for_token(settings: Settings, token: str | None) -> str | None:
    """The user id a bearer token stands for, or ``None`` when it is missing or unknown.

    With no API keys configured every caller is ``settings.default_user``
    (the CLI refuses to bind a non-loopback address in that mode).
    """
    if not settings.api_keys:
        return settings.default_user
    if not token:
        return None
    found = None
    for key, user in settings.api_keys.items():  # constant time per key: no timing oracle
        if hmac.compare_digest(key.encode(), token.encode()):
            found = user
    return found


def bearer(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header."""
    if not header:
        return None
    scheme, _, token = header.partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None
