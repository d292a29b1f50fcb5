"""Helpers shared by the LanceDB adapters: filter quoting, user filters, purging old versions."""

from __future__ import annotations

import re
import warnings
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from typing import Any, TypeVar

import anyio
import numpy as np

from actors.errors import ArchiveUnavailable

__all__ = [
    "SAFE_ID",
    "PurgeGate",
    "quote",
    "quote_all",
    "user_filter",
]

T = TypeVar("T")

SAFE_ID = re.compile(r"^[A-Za-z0-9_.:@-]{1,128}\Z")


def quote(value: str) -> str:
    """A SQL string literal for a LanceDB filter: single quotes doubled, no NULs."""
    if "\x00" in value:
        raise ValueError("NUL byte in a filter value")
    return "'" + value.replace("'", "''") + "'"


def quote_all(values: Sequence[str]) -> str:
    """A parenthesized list of string literals, for ``IN``."""
    return "(" + ", ".join(quote(v) for v in values) + ")"


#: Whose rows the store's ``warm_up`` reads at start (a valid id that names nobody: a
#: user by that name would only be read, never cached or changed).
WARM_UP_USER = "mnemo.warm-up"


def user_filter(user_id: str) -> str:
    if not SAFE_ID.match(user_id):
        raise ValueError(f"invalid user id {user_id!r}")
    return f"user_id = {quote(user_id)}"


class PurgeGate:
    """Reads share it; purging old versions takes it alone.

    A purge deletes the files of every old version, and a read that began on
    one of them would fail with "Not found" halfway: so a purge waits for the
    reads in flight, and reads that arrive meanwhile wait for the purge.
    Writes need no gate: one writer performs all of the store's writes.

    ``shared``: other processes write the tables too (a cluster's nodes). A purge then
    leaves alone the files no version names yet: they may be another node's write in
    flight (a file a failed write left behind goes at a later optimize, once it is
    LanceDB's 7 days old). Deleted rows' files are named by old versions, and go.
    """

    def __init__(self, *, shared: bool = False) -> None:
        self._shared = shared
        self._readers = 0
        self._purging = False
        self._changed = anyio.Condition()
        #: Per table (by identity): the data files (fragments) holding rows deleted since
        #: the table's last purge.
        self._erased: dict[int, set[int]] = {}

    async def erasing(self, table: Any, where: str) -> None:
        """Call before deleting the rows ``where`` selects: notes the data files that hold
        them. A delete only hides rows, and a compaction leaves a file whose hidden rows
        are under a tenth of it as it is: ``purge`` writes the rest of each noted file
        anew, so the deleted rows' bytes go with the old file. (A row's ``_rowid`` is its
        address, file number times 2^32 plus offset: the tables keep no stable row ids.)"""
        found = await self.read(
            lambda: table.query().where(where).with_row_id().select([]).to_arrow()
        )
        if found.num_rows:
            files = np.unique(found["_rowid"].to_numpy() >> 32).tolist()
            self._erased.setdefault(id(table), set()).update(files)

    async def read(self, run: Callable[[], Awaitable[T]]) -> T:
        async with self._changed:
            while self._purging:
                await self._changed.wait()
            self._readers += 1
        try:
            return await run()
        finally:
            with anyio.CancelScope(shield=True):
                async with self._changed:
                    self._readers -= 1
                    self._changed.notify_all()

    async def optimize(self, tables: Sequence[Any], cleanup_older_than: float) -> None:
        """Compact ``tables`` and refresh their indexes, keeping versions younger than
        ``cleanup_older_than`` seconds. Runs beside appends and reads, never beside a purge
        (it holds a read slot: a purge's ``delete_unverified`` would take its new files)."""

        async def run() -> None:
            older = timedelta(seconds=cleanup_older_than)
            for table in tables:
                await table.optimize(cleanup_older_than=older)

        try:
            await self.read(run)
        except (OSError, RuntimeError, ValueError) as exc:
            raise ArchiveUnavailable(f"optimize failed: {exc}") from exc

    async def purge(self, table: Any) -> None:
        """Rewrite what is left of the data files that held deleted rows (``erasing``),
        then drop every old version of ``table``: deleted rows are gone from disk, not
        just hidden."""
        async with self._changed:
            while self._purging:
                await self._changed.wait()
            self._purging = True
            while self._readers:
                await self._changed.wait()
        try:
            files = self._erased.pop(id(table), set())
            try:
                for number in sorted(files):
                    first = number << 32
                    await table.update(
                        where=f"_rowid >= {first} AND _rowid < {first + (1 << 32)}",
                        updates_sql={"user_id": "user_id"},  # every row written anew
                    )
            except BaseException:
                self._erased.setdefault(id(table), set()).update(files)
                raise
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=r"optimize\(cleanup_older_than=0\)")
                await table.optimize(
                    cleanup_older_than=timedelta(0), delete_unverified=not self._shared
                )
        finally:
            with anyio.CancelScope(shield=True):
                async with self._changed:
                    self._purging = False
                    self._changed.notify_all()
