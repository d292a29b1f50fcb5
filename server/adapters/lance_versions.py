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

__all__ = ["VECTOR_TABLES", "EmbedderChanged", "check_embedder"]

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


async def check_embedder(db: Any, embedder: str, dim: int, messages_embedder: str | None) -> None:
    """Record ``embedder`` for every vector table that has no record yet, and raise
    ``EmbedderChanged`` when a table's record names another embedder or size.

    A store from before this record existed says who made its messages in the messages
    table's metadata (``messages_embedder``): that name is taken as the record's.
    """
    names = set((await db.list_tables()).tables)
    if "embedding_versions" in names:
        table = await db.open_table("embedding_versions")
    else:
        table = await db.create_table("embedding_versions", schema=_SCHEMA)
    rows = {r["table_name"]: r for r in await table.query().to_list()}
    if not rows and messages_embedder is not None and messages_embedder != embedder:
        rows["messages"] = {"embedder": messages_embedder, "dim": dim}
    for name, row in rows.items():
        if row["embedder"] != embedder or row["dim"] != dim:
            raise EmbedderChanged(
                f"the {name} table holds vectors of embedder {row['embedder']!r} "
                f"({row['dim']} dimensions); the configured embedder is {embedder!r} "
                f"({dim}). Configure the same MNEMO_EMBEDDER, or use another MNEMO_DATA_DIR."
            )
    missing = [n for n in VECTOR_TABLES if n not in rows]
    if missing:
        now = datetime.now(UTC)
        made = version("mnemo")
        await table.add(
            pa.Table.from_pylist(
                [
                    {
                        "table_name": n,
                        "embedder": embedder,
                        "dim": dim,
                        "recorded_at": now,
                        "mnemo_version": made,
                    }
                    for n in missing
                ],
                schema=_SCHEMA,
            )
        )
    table.close()
