"""What the client commands say when a server cannot be reached or refuses them: the
URL they tried and what to do, in one line (the page says the same, in api.js)."""

from __future__ import annotations

import json
import os

from server.config import CLIENT_KEY, CLIENT_URL

__all__ = ["refused", "unreachable"]


def _reason(exc: BaseException) -> str:
    """The cause in a few words: "connection refused", "name or service not known"..."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, TimeoutError) or "Timeout" in type(cause).__name__:
            return "no answer in time"
        if isinstance(cause, OSError) and cause.strerror:
            # asyncio words a refused connection its own way: the system's words instead
            number = cause.errno
            return (os.strerror(number) if number and number > 0 else cause.strerror).lower()
        cause = cause.__cause__ or cause.__context__
    return str(exc) or type(exc).__name__


def unreachable(url: str, exc: BaseException) -> str:
    """Nothing answered at ``url``."""
    return (
        f"can't reach mnemo at {url} ({_reason(exc)}): is `mnemo serve` running? Set --url"
        f" or {CLIENT_URL}."
    )


def refused(url: str, status: int, body: bytes | str, *, keyed: bool) -> str:
    """``url`` answered ``status`` with ``body`` (mnemo's ``{"error": {...}}``, or not) to
    a request that carried a key (``keyed``) or none."""
    try:
        detail, ours = str(json.loads(body)["error"]["message"]), True
    except (ValueError, KeyError, TypeError):
        text = body.decode(errors="replace") if isinstance(body, bytes) else body
        detail, ours = " ".join(text.split())[:200] or "no reason given", False
    if status == 401:
        said = "refused the key" if keyed else "wants a key"
        return f"{url} {said}: pass --key or set {CLIENT_KEY}."
    if not ours:
        return (
            f"{url} answered {status} ({detail}): is it a mnemo server? Set --url or {CLIENT_URL}."
        )
    return f"{url} answered {status}: {detail}"
