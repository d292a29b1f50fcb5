"""Lines for ``POST /memory/import`` (JSON Lines of turns and facts) and posting them."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import httpx

from tests import harness

__all__ = ["NDJSON", "fact", "http", "jsonl", "post", "turn"]


NDJSON = "application/x-ndjson"


def http(server: str, key: str | None = "ka") -> httpx.AsyncClient:
    """A client of ``server`` with key ``ka`` (alice) unless told, patient enough for imports."""
    return harness.http(server, key, timeout=60)


def jsonl(lines: Iterable[dict[str, Any] | str]) -> bytes:
    return "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines).encode()


def turn(ident: str, text: str, **fields: Any) -> dict[str, Any]:
    line = {
        "kind": "turn",
        "id": ident,
        "session_id": "old-chat",
        "speaker": "Ann",
        "role": "user",
        "text": text,
        "at": "2024-03-01T09:30:00Z",
    }
    return line | fields


def fact(ident: str, content: str, category: str = "preference", **fields: Any) -> dict[str, Any]:
    line = {"kind": "fact", "id": ident, "content": content, "category": category}
    return line | {"confidence": 0.8} | fields


async def post(server: str, body: bytes, key: str = "ka") -> dict[str, Any]:
    async with http(server, key) as client:
        response = await client.post(
            "/memory/import", content=body, headers={"content-type": NDJSON}
        )
    assert response.status_code == 200, response.text
    reply: dict[str, Any] = response.json()
    return reply
