"""LanceDB table ``embedding_versions``: which embedder made the vectors of each table.

A store holds vectors of one embedder at a time: mixing two models' vectors in one
search would rank by noise. Each vector table's embedder (name and size) is recorded
when the table is first used; a store opened with another embedder is refused, even
when the vector sizes happen to agree.
"""

from __future__ import annotations

from datetime import UTC, datetime
from importlib.metadata import version
from typing import Any

import pyarrow as pa

__all__ = [
    "VECTOR_TABLES",
    "EmbedderChanged",
    "check_embedder",
    "record_embedder",
    "recorded_embedders",
]

#: The tables whose rows carry an embedding.
VECTOR_TABLES = ("messages", "facts", "rules", "episodes")
_SCHEMA = pa.schema(
    [
        pa.field("table_name", pa.string(), nullable=False),
        pa.field("embedder", pa.string(), nullable=False),
        pa.field("dim", pa.int32(), nullable=False),
        pa.field("recorded_at", pa.timestamp("us", tz="UTC"), nullable=False),
        pa.field("mnemo_version", pa.string(), nullable=False),
    ]
)


class EmbedderChanged(Exception):
    """The store's vectors were made by another embedder than the configured one."""


async def _table(db: Any) -> Any:
    if "embedding_versions" in set((await db.list_tables()).tables):
        return await db.open_table("embedding_versions")
    return await db.create_table("embedding_versions", schema=_SCHEMA)


async def recorded_embedders(db: Any) -> dict[str, tuple[str, int]]:
    """The embedder (name, size) each vector table records; tables without a record are
    left out."""
    table = await _table(db)
    rows = await table.query().to_list()
    table.close()
    return {r["table_name"]: (r["embedder"], r["dim"]) for r in rows}


async def record_embedder(db: Any, name: str, embedder: str, dim: int) -> None:
    """Record that table ``name`` holds vectors of ``embedder`` (replacing its record)."""
    table = await _table(db)
    await table.delete(f"table_name = '{name}'")
    await table.add(pa.Table.from_pylist([_row(name, embedder, dim)], schema=_SCHEMA))
    table.close()


def _row(name: str, embedder: str, dim: int) -> dict[str, Any]:
    return {
        "table_name": name,
        "embedder": embedder,
        "dim": dim,
        "recorded_at": datetime.now(UTC),
        "mnemo_version": version("mnemo"),
    }


async def check_embedder(db: Any, embedder: str, dim: int, messages_embedder: str | None) -> None:
    """Record ``embedder`` for every vector table that has no record yet, and raise
    ``EmbedderChanged`` when a table's record names another embedder or size.

    A store from before this record existed says who made its messages in the messages
    table's metadata (``messages_embedder``): that name is taken as the record's.
    """
    table = await _table(db)
    rows = {r["table_name"]: r for r in await table.query().to_list()}
    if not rows and messages_embedder is not None and messages_embedder != embedder:
        rows["messages"] = {"embedder": messages_embedder, "dim": dim}
    for name, row in rows.items():
        if row["embedder"] != embedder or row["dim"] != dim:
            raise EmbedderChanged(
                f"the {name} table holds vectors of embedder {row['embedder']!r} "
                f"({row['dim']} dimensions); the configured embedder is {embedder!r} "
                f"({dim}). Configure the same MNEMO_EMBEDDER, move the data directory to "
                "this one with `mnemo reembed` (server stopped), or use another MNEMO_DATA_DIR."
            )
    missing = [n for n in VECTOR_TABLES if n not in rows]
    if missing:
        await table.add(
            pa.Table.from_pylist([_row(n, embedder, dim) for n in missing], schema=_SCHEMA)
        )
    table.close()
