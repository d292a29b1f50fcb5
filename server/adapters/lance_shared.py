"""Tables that other processes write too (a cluster's nodes share one data directory).

A table handle reads the version it last saw until it looks again. A cluster node
looks at most every ``SHARED_CONSISTENCY`` (LanceDB's ``read_consistency_interval``):
looking before every read costs a listing of the table's versions on the object store
per query (on the local S3 server here: turn ``ack`` p50 15.6 -> 40 ms under load).
What must be seen at once is seen through ``refresh``: when a node takes a user over,
every table moves to its latest version before the user is served, so every write of
the user's previous node is read.

Another node's purge (a user's delete: ``lance_common.PurgeGate``) drops a table's old
versions at once, and with them the data files a version this node still reads may
name: a read or write based on it fails with "Not found". Every table handle is
wrapped so that such a call moves the table to its latest version and runs once more.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import anyio

__all__ = ["SHARED_CONSISTENCY", "SharedTables"]

#: How stale a shared table's reads may be (writes of the users this node does not serve).
SHARED_CONSISTENCY = timedelta(seconds=1)


class SharedTables:
    """Wraps a LanceDB connection: notes every table opened or created through it, so
    that ``refresh`` can move them all to their latest versions."""

    def __init__(self, db: Any) -> None:
        self._db = db
        self._tables: list[Any] = []
        self._lock = anyio.Lock()
        self._refreshed = 0.0

    async def open_table(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return self._note(await self._db.open_table(name, *args, **kwargs))

    async def create_table(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return self._note(await self._db.create_table(name, *args, **kwargs))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._db, name)

    def _note(self, table: Any) -> Any:
        self._tables.append(table)
        return _Retrying(table, table)

    async def refresh(self) -> None:
        """Every table at its latest version; one refresh serves everyone who asked
        before it started."""
        asked = anyio.current_time()
        async with self._lock:
            if self._refreshed > asked:
                return
            started = anyio.current_time()
            self._tables = [table for table in self._tables if table.is_open()]
            for table in self._tables:
                await table.checkout_latest()
            self._refreshed = started


class _Retrying:
    """A LanceDB table, query or merge builder whose calls, when they fail because a
    file of the version they read is gone, move ``table`` to its latest version and
    run once more. Builders it returns are wrapped too."""

    def __init__(self, inner: Any, table: Any) -> None:
        self._inner = inner
        self._table = table

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._inner, name)
        if not callable(found) or name in _AS_IS:
            return found

        def call(*args: Any, **kwargs: Any) -> Any:
            result = found(*args, **kwargs)
            if inspect.isawaitable(result):
                return _again(result, lambda: found(*args, **kwargs), self._table)
            if type(result).__module__.startswith("lancedb."):
                return _Retrying(result, self._table)
            return result

        return call


#: Calls passed through unwrapped.
_AS_IS = frozenset({"checkout_latest", "is_open", "close", "name"})


async def _again(first: Awaitable[Any], run: Callable[[], Awaitable[Any]], table: Any) -> Any:
    try:
        return await first
    except RuntimeError as exc:
        if "Not found" not in str(exc):
            raise
    await table.checkout_latest()
    return await run()
