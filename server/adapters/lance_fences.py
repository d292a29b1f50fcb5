"""Fencing users in batches: re-stamping their rows with a node's epoch
(``server.adapters.lance_epochs``) for every user asking at once in a few commits.

A dead node's users all come back within a second or two, and each must be fenced
before it is served. Fenced one by one, each user costs a commit per table that holds
rows of theirs; on an object store a commit is a few requests, and the commits of one
table race for its next version. So fences asked for while one runs wait and go
together: one read per table for the whole batch, and one ``update`` per table and
epoch (users of shards taken at the same epoch share it), one delete of rows that
landed late.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
import numpy as np

from actors.errors import ArchiveUnavailable
from server.adapters.lance_common import PurgeGate, quote, user_filter

__all__ = ["Batches", "KeptRecords", "Records"]

#: The most users fenced in one batch (the filters name each of them).
_BATCH = 128


class Records(Protocol):
    """The epoch each user was last fenced at, kept where every node reads it."""

    async def recorded(self, user_id: str) -> int:
        """The user's recorded epoch; 0 if they were never fenced."""
        ...

    async def record(self, user_id: str, epoch: int) -> None:
        """Record ``epoch`` for the user, unless a newer one is recorded already."""
        ...


class KeptRecords:
    """``Records`` in this process's memory: for one process alone (a test, a benchmark
    on a local directory), since other nodes cannot read them."""

    def __init__(self) -> None:
        self.epochs: dict[str, int] = {}

    async def recorded(self, user_id: str) -> int:
        return self.epochs.get(user_id, 0)

    async def record(self, user_id: str, epoch: int) -> None:
        self.epochs[user_id] = max(epoch, self.epochs.get(user_id, 0))


@dataclass(eq=False)
class _Asked:
    user_id: str
    epoch: int
    recorded: int = 0
    moved: int = 0
    done: bool = False
    error: BaseException | None = None


class Batches:
    """Fences users of ``tables`` (each with its purge gate) at their epochs, asking
    ``records`` for the epoch each was last fenced at and recording the new one."""

    def __init__(self, column: str) -> None:
        self._column = column
        self._waiting: list[_Asked] = []
        self._lock = anyio.Lock()

    async def fence(
        self,
        user_id: str,
        epoch: int,
        tables: Sequence[tuple[Any, PurgeGate]],
        records: Records | None,
    ) -> int:
        """Fence ``user_id`` at ``epoch`` with whoever else is waiting; how many of their
        rows were re-stamped."""
        user_filter(user_id)
        asked = _Asked(user_id, int(epoch))
        self._waiting.append(asked)
        while not asked.done:  # each turn of the lock fences the longest waiting batch
            async with self._lock:
                if asked.done:
                    break
                batch, self._waiting = self._waiting[:_BATCH], self._waiting[_BATCH:]
                try:
                    await self._run(batch, tables, records)
                except Exception as exc:  # the batch's failure is each of its users'
                    for each in batch:
                        each.error = exc
                except BaseException:  # this request was cancelled: the others try again
                    self._waiting[:0] = [each for each in batch if each is not asked]
                    raise
                for each in batch:
                    each.done = True
        if asked.error is not None:
            raise asked.error
        return asked.moved

    async def _run(
        self,
        batch: list[_Asked],
        tables: Sequence[tuple[Any, PurgeGate]],
        records: Records | None,
    ) -> None:
        if records is not None:
            async with anyio.create_task_group() as tasks:
                for asked in batch:
                    tasks.start_soon(_look_up, asked, records)
        try:
            async with anyio.create_task_group() as tasks:
                for table, gate in tables:
                    if table.is_open():
                        tasks.start_soon(self._table, batch, table, gate)
        except* (OSError, RuntimeError, ValueError) as group:
            raise ArchiveUnavailable(f"could not re-stamp users' rows: {group}") from group
        if records is not None:
            async with anyio.create_task_group() as tasks:
                for asked in batch:
                    tasks.start_soon(records.record, asked.user_id, asked.epoch)

    async def _table(self, batch: list[_Asked], table: Any, gate: PurgeGate) -> None:
        column = self._column

        def either(clauses: list[str]) -> str:
            return " OR ".join(f"({c})" for c in clauses)

        older = either([f"user_id = {quote(a.user_id)} AND {column} < {a.epoch}" for a in batch])
        # Under the gate's read slot: a purge would take the update's new files.
        found = await gate.read(
            lambda: table.query().where(older).select(["user_id", column]).to_arrow()
        )
        users = np.asarray(found["user_id"].to_pylist(), dtype=object)
        epochs = found[column].to_numpy() if found.num_rows else np.zeros(0, np.int64)
        by_epoch: dict[int, list[_Asked]] = {}
        stale: list[_Asked] = []
        for asked in batch:
            mine = epochs[users == asked.user_id]
            valid = int((mine >= asked.recorded).sum())
            if valid:
                asked.moved += valid
                by_epoch.setdefault(asked.epoch, []).append(asked)
            if (mine < asked.recorded).any():
                stale.append(asked)
        for epoch, moving in sorted(by_epoch.items()):
            where = either(
                [
                    f"user_id = {quote(a.user_id)} AND {column} >= {a.recorded}"
                    f" AND {column} < {epoch}"
                    for a in moving
                ]
            )
            update = functools.partial(table.update, where=where, updates_sql={column: str(epoch)})
            await gate.read(update)
        if stale:
            where = either(
                [f"user_id = {quote(a.user_id)} AND {column} < {a.recorded}" for a in stale]
            )
            await gate.erasing(table, where)
            await table.delete(where)
            await gate.purge(table)


async def _look_up(asked: _Asked, records: Records) -> None:
    asked.recorded = await records.recorded(asked.user_id)
