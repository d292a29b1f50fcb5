"""``configure_logging``: JSON lines with the session's ids, without per-request chatter."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from server.logs import configure_logging


@pytest.fixture
def restored_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    levels = {name: logging.getLogger(name).level for name in ("httpx", "httpcore")}
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    for name, was in levels.items():
        logging.getLogger(name).setLevel(was)


def _lines(stream: io.StringIO) -> list[dict[str, str]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_each_ollama_request_is_not_logged_but_its_warnings_and_mnemos_info_are(
    restored_logging: None,
) -> None:
    stream = io.StringIO()
    configure_logging(stream)
    logging.getLogger("httpx").info('HTTP Request: POST http://ollama/api/chat "HTTP/1.1 200 OK"')
    logging.getLogger("httpcore.connection").debug("connect_tcp.started")
    logging.getLogger("httpx").warning("a warning from httpx")
    logging.getLogger("mnemo.ws").info("a line from mnemo")
    assert [(e["logger"], e["level"], e["message"]) for e in _lines(stream)] == [
        ("httpx", "warning", "a warning from httpx"),
        ("mnemo.ws", "info", "a line from mnemo"),
    ]
