"""Moving a data directory to another embedder: every stored vector made again (seed 002).

Run with the server stopped (``mnemo reembed`` takes the data directory's lock). Each
vector table (``embedding_versions.VECTOR_TABLES``) whose record names another embedder
is rebuilt: its rows are read, their vectors made again from their texts (messages from
their stored search texts and statements, as the archive made them; facts, rules and
episodes from their content), written to ``<table>__reembed``, and swapped in. A table is
done when its record names the new embedder, so a run that stops (a crash, Ctrl-C)
resumes where it stopped: a finished table is skipped, a table caught in its swap is
completed, a half-written copy is written again.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import lancedb
import msgspec
import pyarrow as pa
from lancedb.index import BTree

from actors.keys import key_vectors
from actors.ports import Embedder
from memory.recall import key_text_of_stored
from server.adapters.lance_messages import EMBEDDER_KEY, message_of
from server.adapters.lance_versions import VECTOR_TABLES, record_embedder, recorded_embedders

__all__ = ["ReembedError", "reembed"]

#: Texts embedded per call (and per step of the progress bar).
BATCH = 256
_COPY = "__reembed"

Progress = Callable[[str, int, int], None]


class ReembedError(Exception):
    """The data directory cannot be moved now; the message says why."""


async def _vectors(name: str, rows: list[dict[str, Any]], embedder: Embedder) -> list[list[float]]:
    if name == "messages":
        messages = [message_of(r) for r in rows]
        stored = [
            key_text_of_stored(m, r["search_text"]) for m, r in zip(messages, rows, strict=True)
        ]
        return await key_vectors(embedder, messages, stored)
    return await embedder.embed([r["content"] if "content" in r else _content(r) for r in rows])


def _content(row: dict[str, Any]) -> str:
    """The text of a rule or an episode: its record (``data``) holds it."""
    record: dict[str, Any] = msgspec.json.decode(row["data"])
    return str(record["content"])


def _schema(old: pa.Schema, dim: int, embedder: str, name: str) -> pa.Schema:
    vector = pa.field("vector", pa.list_(pa.float32(), dim), nullable=False)
    schema = old.set(old.get_field_index("vector"), vector)
    if name == "messages":
        schema = schema.with_metadata({**(old.metadata or {}), EMBEDDER_KEY: embedder.encode()})
    return schema


async def _swap(db: Any, name: str) -> None:
    """Replace ``name`` by its finished copy, then drop the copy."""
    copy = await db.open_table(name + _COPY)
    data = await copy.query().to_arrow()
    if name in set((await db.list_tables()).tables):
        await db.drop_table(name)
    table = await db.create_table(name, data=data, schema=data.schema)
    await table.create_index("user_id", config=BTree())
    table.close()
    copy.close()
    await db.drop_table(name + _COPY)


async def _rebuild(db: Any, name: str, embedder: Embedder, progress: Progress) -> int:
    table = await db.open_table(name)
    data = await table.query().to_arrow()
    table.close()
    rows = data.to_pylist()
    vectors: list[list[float]] = []
    for start in range(0, len(rows), BATCH):
        vectors += await _vectors(name, rows[start : start + BATCH], embedder)
        progress(name, min(start + BATCH, len(rows)), len(rows))
    progress(name, len(rows), len(rows))
    schema = _schema(data.schema, embedder.dim, embedder.name, name)
    column = pa.array(vectors, type=schema.field("vector").type)
    rebuilt = data.set_column(data.schema.get_field_index("vector"), schema.field("vector"), column)
    rebuilt = rebuilt.replace_schema_metadata(schema.metadata)
    if name + _COPY in set((await db.list_tables()).tables):
        await db.drop_table(name + _COPY)  # a copy left half written by an earlier run
    copy = await db.create_table(name + _COPY, data=rebuilt, schema=schema)
    copy.close()
    await _swap(db, name)
    return len(rows)


async def reembed(
    data_dir: Path, embedder: Embedder, progress: Progress = lambda *_: None
) -> dict[str, int]:
    """Make every vector of ``data_dir`` again with ``embedder``; how many rows each table
    had made again (0: it was the embedder's already). Raises ``ReembedError`` when
    journaled messages or facts wait to move into their tables."""
    for journal, held in ((data_dir / "journal", "messages"), (data_dir / "learned", "facts")):
        if journal.is_dir() and any(p.is_file() for p in journal.iterdir()):
            raise ReembedError(
                f"{journal} holds {held} not yet in the table: start `mnemo serve` on this "
                "data directory once (it moves them), stop it, then run `mnemo reembed` again"
            )
    await embedder.warm_up()
    db: Any = await lancedb.connect_async(data_dir / "lancedb")
    done: dict[str, int] = {}
    try:
        recorded = await recorded_embedders(db)
        for name in VECTOR_TABLES:
            names = set((await db.list_tables()).tables)
            if name not in names and name + _COPY in names:
                await _swap(db, name)  # stopped between dropping the table and its copy
            elif name in names and recorded.get(name) != (embedder.name, embedder.dim):
                done[name] = await _rebuild(db, name, embedder, progress)
            await record_embedder(db, name, embedder.name, embedder.dim)
            done.setdefault(name, 0)
    finally:
        db.close()
    return done
