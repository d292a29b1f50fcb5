"""Rows for a store on a temp directory: numbered messages a minute apart, stored with the
hash embedder, and every byte the store left on disk."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from memory.facts import Stored
from memory.hashing import HashEmbedder
from schemas.records import ArchivedMessage, Role
from server.adapters.lance_store import LanceStore
from testing.records import make_fact

__all__ = ["MESSAGES_T0", "everything_on_disk", "message", "put", "stored_fact"]

_embedder = HashEmbedder()


MESSAGES_T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def message(
    n: int, text: str, *, user: str = "u1", session: str = "s1", role: Role = "user"
) -> ArchivedMessage:
    return ArchivedMessage(
        id=f"msg_{n:016x}",
        user_id=user,
        session_id=session,
        scope="global",
        turn=n,
        role=role,
        speaker=role,
        text=text,
        at=MESSAGES_T0 + timedelta(minutes=n),
        meta={"n": n},
        source_id=f"t{n}",
    )


def everything_on_disk(root: Path) -> bytes:
    """Every file's bytes below ``root`` (store and journal alike)."""
    return b"".join(p.read_bytes() for p in root.rglob("*") if p.is_file())


async def put(store: LanceStore, *rows: ArchivedMessage) -> None:
    await store.append_messages(rows, [_embedder.embed_one(r.text) for r in rows])


def stored_fact(user: str, fact_id: str, content: str, validity: str = "active") -> Stored:
    fact = make_fact(fact_id, user_id=user, content=content, validity=validity)
    return Stored(fact, _embedder.embed_one(content))
