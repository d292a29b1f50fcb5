"""Logging for ``mnemo serve``: readable lines on a terminal, one JSON object per line
otherwise, each carrying the session and user it happened in (when there is one).

No line carries a key: a query's ``token`` (which old WebSocket clients still send, and
uvicorn writes into its access lines), a ``mnemo.bearer.`` subprotocol entry and a
``Bearer`` credential are replaced by ``[redacted]`` in every formatted line, its
traceback included (``redact``)."""

from __future__ import annotations

import json
import logging
import re
import sys
from datetime import UTC, datetime
from typing import TextIO
from urllib.parse import unquote_plus

from actors.events import LOG_CONTEXT

__all__ = ["JsonFormatter", "configure_logging", "redact"]

#: Libraries that log every request at INFO: httpx writes a line per call to Ollama
#: (two a turn under load, formatted and written on the event loop). Their warnings
#: and errors still show; mnemo logs the failures that matter itself.
_CHATTY = ("httpx", "httpcore")


_QUERY = re.compile(r"\?([^\s\"'#]*)")
_CREDENTIAL = re.compile(r"(mnemo\.bearer\.|\b[Bb]earer )[^\s\"',]+")
_HIDDEN = "[redacted]"


def _query_redacted(found: re.Match[str]) -> str:
    pairs = found.group(1).split("&")
    for i, pair in enumerate(pairs):
        name, equals, _ = pair.partition("=")
        if equals and unquote_plus(name) == "token":
            pairs[i] = f"{name}={_HIDDEN}"
    return "?" + "&".join(pairs)


def redact(line: str) -> str:
    """``line`` without keys: the values of query ``token`` parameters (however their
    name is escaped), ``mnemo.bearer.`` entries and ``Bearer`` credentials."""
    if "?" in line:
        line = _QUERY.sub(_query_redacted, line)
    if "earer" in line:
        line = _CREDENTIAL.sub(lambda found: found.group(1) + _HIDDEN, line)
    return line


class _SessionFilter(logging.Filter):
    """Stamp each record with the session actor it was logged from (``LOG_CONTEXT``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        found = LOG_CONTEXT.get()
        if found is not None and not hasattr(record, "session_id"):
            record.user_id, record.session_id = found
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "at": datetime.fromtimestamp(record.created, UTC).isoformat().replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in ("session_id", "user_id"):
            value = getattr(record, name, None)
            if value is not None:
                entry[name] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return redact(json.dumps(entry, ensure_ascii=False))


class _TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        session = getattr(record, "session_id", None)
        return redact(f"{text} [{session} {getattr(record, 'user_id', '')}]" if session else text)


def configure_logging(stream: TextIO | None = None, level: int = logging.INFO) -> None:
    """Send every log record (mnemo's and uvicorn's) to ``stream`` (stderr by default)."""
    stream = stream or sys.stderr
    handler = logging.StreamHandler(stream)
    handler.addFilter(_SessionFilter())
    if stream.isatty():
        handler.setFormatter(_TextFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    else:
        handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    for name in _CHATTY:
        logging.getLogger(name).setLevel(max(level, logging.WARNING))
