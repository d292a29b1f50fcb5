"""Rows stamped with the epoch of the node that wrote them: how a cluster refuses the late
write of a node that froze after its last "still home" check.

Every row of a user-scoped table carries ``epoch``: the lease epoch under which its
user was served when it was written (0 on a single node). The messages are the
exception below: their rows come from the fenced journal, and re-stamping them would
rewrite every message and its vector at each move, so they keep the epoch they were
stored with (``held``), and only a delete of all of a user's messages is conditional
on it: a late one leaves the rows a newer node stored. Before a node serves a user of a shard it
took, it *fences* them (``restamp``): it gives the user's rows its own, higher epoch
and records that epoch as the user's (``Records``: the cluster's object store). Then:

- every update, merge and delete of a user's rows is conditional on their epoch being
  at most the writer's own (``merge``, ``delete``). LanceDB commits a write against
  the table's latest version, so a conditional write that commits after the re-stamp
  finds no row it may change, and changes nothing (docs/performance.md, "Writes
  conditional on an epoch"). The late writer is told (``NotHome``; its node gives the
  user's shard up);
- an append cannot be refused that way: its rows land with the old epoch. So a node
  reads a user's rows only at its own epoch or newer (``reads``), and the next fence
  deletes rows older than the user's recorded epoch (they were never the user's
  memory) while it re-stamps the rest. A late appender that finds the user's rows
  re-stamped once its own are in (``append``) is told too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pyarrow as pa
from lancedb.index import BTree

from actors.errors import NotHome
from server.adapters.lance_common import PurgeGate, quote_all, user_filter
from server.adapters.lance_fences import Batches, Records

__all__ = ["EPOCH", "Epochs", "scoped_records_schema", "with_epoch"]

#: The column every row of a user-scoped table carries.
EPOCH = "epoch"


def with_epoch(schema: pa.Schema) -> pa.Schema:
    """``schema`` with the ``epoch`` column last."""
    return schema.append(pa.field(EPOCH, pa.int64(), nullable=False))


def scoped_records_schema(dim: int) -> pa.Schema:
    """A table of records kept as JSON (``data``), each of a user and a scope, found by
    a vector: rules and episodes."""
    return with_epoch(
        pa.schema(
            [
                pa.field("id", pa.string(), nullable=False),
                pa.field("user_id", pa.string(), nullable=False),
                pa.field("scope", pa.string(), nullable=False),
                pa.field("created_at", pa.timestamp("us", tz="UTC"), nullable=False),
                pa.field("data", pa.string(), nullable=False),
                pa.field("vector", pa.list_(pa.float32(), dim), nullable=False),
            ]
        )
    )


class Epochs:
    """Whose epoch a write carries, which rows a read counts, and the tables whose rows
    carry an epoch.

    ``of`` is the single node's constant 0 until a cluster node hands in its own
    (``serve_with``): then the epoch of the user's shard, raising ``NotHome`` for a
    user this node may not write (not served, or not fenced yet); ``refused`` is told
    of users whose rows a newer node has re-stamped; ``records`` keeps the epoch each
    user was fenced at."""

    def __init__(self) -> None:
        self._of: Callable[[str], int] = lambda _user_id: 0
        self._held: Callable[[str], int] = lambda _user_id: 0
        self._refused: Callable[[str], None] = lambda _user_id: None
        self._fencing = False
        self._tables: list[tuple[Any, PurgeGate]] = []
        self._records: Records | None = None
        self._batches = Batches(EPOCH)

    def serve_with(
        self,
        of: Callable[[str], int],
        refused: Callable[[str], None] | None = None,
        records: Records | None = None,
        held: Callable[[str], int] | None = None,
    ) -> None:
        self._of, self._fencing = of, True
        if refused is not None:
            self._refused = refused
        self._records = records
        if held is not None:
            self._held = held

    def of(self, user_id: str) -> int:
        """The epoch of a write of ``user_id``'s rows by this node."""
        user_filter(user_id)
        return self._of(user_id)

    def held(self, user_id: str) -> int:
        """The epoch a message of ``user_id`` is stored with: that of their shard while
        this node holds it (fenced or not, leaving or not), else 0. Never raises: a
        journaled row must reach the table whoever moves it."""
        return self._held(user_id)

    def reads(self, user_id: str) -> str:
        """The filter of a read of ``user_id``'s rows: on a cluster node, those at its
        epoch or newer (older ones landed after the user was fenced)."""
        if not self._fencing:
            return user_filter(user_id)
        return f"{user_filter(user_id)} AND {EPOCH} >= {self.of(user_id)}"

    def reads_all(self, user_ids: Sequence[str]) -> str:
        """``reads`` for several users at once."""
        if not self._fencing:
            for user_id in user_ids:
                user_filter(user_id)
            return f"user_id IN {quote_all(user_ids)}"
        return "(" + " OR ".join(f"({self.reads(u)})" for u in user_ids) + ")"

    async def open(self, db: Any, name: str, schema: pa.Schema, gate: PurgeGate) -> Any:
        """The table ``name`` (created with ``schema``, which has ``epoch``, and a BTree
        index on ``user_id``; a table from before epochs gets the column, all 0)."""
        if name in set((await db.list_tables()).tables):
            table = await db.open_table(name)
            if EPOCH not in (await table.schema()).names:
                await table.add_columns({EPOCH: "CAST(0 AS BIGINT)"})
        else:
            table = await db.create_table(name, schema=schema)
            await table.create_index("user_id", config=BTree())
        self._tables.append((table, gate))
        return table

    def stamp(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``rows`` (each with its ``user_id``), each given the epoch of its write."""
        for row in rows:
            row[EPOCH] = self.of(row["user_id"])
        return rows

    async def delete(self, gate: PurgeGate, table: Any, user_id: str, also: str = "") -> int:
        """Delete ``user_id``'s rows (those the filter ``also`` selects), conditional on
        their epoch; how many. Their data files are noted for ``gate.purge``, which the
        caller runs. Raises ``NotHome`` if a newer node has re-stamped some of them."""
        where = user_filter(user_id) + (f" AND ({also})" if also else "")
        count = int(await gate.read(lambda: table.count_rows(where)))
        if not count:
            return 0
        epoch = self.of(user_id)
        mine = f"{where} AND {EPOCH} <= {epoch}"
        await gate.erasing(table, mine)
        result = await table.delete(mine)
        if result.num_deleted_rows < count:
            await self._refused_if_newer(table, user_id, epoch)
        return int(result.num_deleted_rows)

    async def append(self, table: Any, data: pa.Table) -> None:
        """Append ``data``'s rows; then ``landed``."""
        await table.add(data)
        await self.landed(table, data)

    async def landed(self, table: Any, data: pa.Table) -> None:
        """After ``data``'s rows were appended to ``table`` by a cluster node: raise
        ``NotHome`` (telling the node) for a user whose rows there a newer node has
        re-stamped (reads will not count the appended ones). A look at the table, not at
        the records in the bucket, so it costs the object store nothing: a user with no
        rows there is not caught, and their late rows are still never read."""
        if self._fencing and data.num_rows:
            await self._refused_newer(table, data)

    async def _refused_newer(self, table: Any, data: pa.Table) -> None:
        """``_refused_if_newer`` for each user of ``data``, at the epoch of their rows."""
        epochs = dict(zip(data["user_id"].to_pylist(), data[EPOCH].to_pylist(), strict=True))
        refused: NotHome | None = None
        for user_id, epoch in sorted(epochs.items()):
            try:
                await self._refused_if_newer(table, user_id, epoch)
            except NotHome as exc:
                refused = exc
        if refused is not None:
            raise refused

    async def erase(self, gate: PurgeGate, table: Any, user_id: str, also: str = "") -> int:
        """``delete``, then the deleted rows purged from disk, old versions and all."""
        count = await self.delete(gate, table, user_id, also)
        if count:
            await gate.purge(table)
        return count

    async def _refused_if_newer(self, table: Any, user_id: str, epoch: int) -> None:
        """After a write changed fewer rows than it should: if the user's rows carry a
        newer epoch, tell the node and raise ``NotHome``."""
        if await table.count_rows(f"{user_filter(user_id)} AND {EPOCH} > {int(epoch)}"):
            self._refused(user_id)
            raise NotHome("a newer node serves this user: the write was refused")

    async def merge(self, table: Any, on: str | Sequence[str], data: pa.Table) -> None:
        """Insert ``data``'s rows or replace those matched on ``on``, conditionally: a
        stored row whose epoch is newer than the incoming one's stays as it is, and then
        ``NotHome`` is raised (after the rows not refused are written)."""
        result = await _merge(table, on, data)
        if result.num_updated_rows + result.num_inserted_rows < data.num_rows:
            await self._refused_newer(table, data)

    async def replace(self, table: Any, on: str | Sequence[str], data: pa.Table) -> None:
        """Replace the stored rows matched on ``on`` by ``data``'s, conditionally as
        ``merge`` does; a row no longer stored is not added back. Raises ``NotHome`` when
        a newer node's rows refused it."""
        result = await _merge(table, on, data, insert=False)
        if result.num_updated_rows < data.num_rows:
            await self._refused_newer(table, data)

    async def restamp(self, user_id: str, epoch: int) -> int:
        """Fence ``user_id`` at ``epoch``: their rows at their recorded epoch or newer get
        ``epoch``, rows older than it (appends that landed after an earlier fence) are
        deleted (a table without such rows is not written), and ``epoch`` is recorded,
        together with every other user asking meanwhile (``lance_fences``). How many
        of the user's rows were re-stamped. From now on an older epoch's update, merge
        or delete of their rows changes nothing."""
        return await self._batches.fence(user_id, epoch, self._tables, self._records)


async def _merge(
    table: Any, on: str | Sequence[str], data: pa.Table, *, insert: bool = True
) -> Any:
    """Replace the rows matched on ``on`` whose epoch is not newer than ``data``'s, and
    (``insert``) insert the others."""
    merge = table.merge_insert(on if isinstance(on, str) else list(on))
    merge = merge.when_matched_update_all(where=f"target.{EPOCH} <= source.{EPOCH}")
    if insert:
        merge = merge.when_not_matched_insert_all()
    return await merge.execute(data)
