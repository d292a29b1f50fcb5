"""The archive's ``messages`` table and the journal in front of it.

Rows go into the journal (durable, fsynced) and move into the LanceDB table
in bulk (``flush``); until then ``pending`` has them, and ``consistent`` reads
the table and the journal as one. Also the table's row format: its schema and
the conversions between rows and ``ArchivedMessage``.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import msgspec
import numpy as np
import numpy.typing as npt
import pyarrow as pa
from lancedb.query import ColumnOrdering

from actors.errors import ArchiveUnavailable, Rejected
from memory.recall import search_text
from schemas.records import ArchivedMessage
from server.adapters.journal import Journaling
from server.adapters.lance_analyzer import AnalyzerUnavailable
from server.adapters.lance_common import PurgeGate, quote_all, user_filter
from server.adapters.lance_epochs import EPOCH

__all__ = [
    "COLUMNS",
    "EMBEDDER_KEY",
    "NEWEST_FIRST",
    "TERMS_COLUMN",
    "Analyze",
    "JournaledMessages",
    "columns_of",
    "message_of",
    "messages_schema",
    "newest_first",
]

_T = TypeVar("_T")
_log = logging.getLogger("mnemo.store")
#: The column of a message's analyzed terms (see ``messages_schema``).
TERMS_COLUMN = "terms"
EMBEDDER_KEY = b"mnemo.embedder"
_json = msgspec.json.Encoder()
_meta_decoder: msgspec.json.Decoder[dict[str, Any]] = msgspec.json.Decoder(dict[str, Any])
#: Ids per ``IN (...)`` filter when checking which rows the table holds.
_IDS_PER_QUERY = 500


def messages_schema(dim: int, embedder: str) -> pa.Schema:
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("user_id", pa.string(), nullable=False),
            pa.field("session_id", pa.string(), nullable=False),
            pa.field("scope", pa.string(), nullable=False),
            pa.field("turn", pa.int32(), nullable=False),
            pa.field("role", pa.string(), nullable=False),
            pa.field("speaker", pa.string(), nullable=False),
            pa.field("text", pa.string(), nullable=False),
            pa.field("at", pa.timestamp("us", tz="UTC"), nullable=False),
            pa.field("meta", pa.string(), nullable=False),
            pa.field("source_id", pa.string(), nullable=False),
            # What the message is found by (memory.recall.search_text): full-text indexed.
            pa.field("search_text", pa.string(), nullable=False),
            pa.field("vector", pa.list_(pa.float32(), dim), nullable=False),
            # The search text's terms by the index's analyzer, joined by spaces (a term has
            # none), so loading a user's index analyzes nothing; null: analyze on load.
            pa.field(TERMS_COLUMN, pa.string(), nullable=True),
            # The epoch of the node that stored it (server.adapters.lance_epochs): only a
            # delete of all of a user's messages is conditional on it.
            pa.field(EPOCH, pa.int64(), nullable=False),
        ],
        metadata={EMBEDDER_KEY: embedder.encode()},
    )


#: The columns a message is read back from.
COLUMNS = [
    f.name
    for f in messages_schema(1, "")
    if f.name not in ("vector", "search_text", TERMS_COLUMN, EPOCH)
]

NEWEST_FIRST = [
    ColumnOrdering(column_name="at", ascending=False),
    ColumnOrdering(column_name="id", ascending=True),
]


def columns_of(messages: Sequence[ArchivedMessage]) -> dict[str, list[Any]]:
    """Messages column by column (``at`` as epoch seconds), as ``MessageEntry.add``
    takes them."""
    return {
        "id": [m.id for m in messages],
        "session_id": [m.session_id for m in messages],
        "scope": [m.scope for m in messages],
        "turn": [m.turn for m in messages],
        "role": [m.role for m in messages],
        "speaker": [m.speaker for m in messages],
        "text": [m.text for m in messages],
        "at": [m.at.timestamp() for m in messages],
        "meta": [_json.encode(m.meta).decode() for m in messages],
        "source_id": [m.source_id for m in messages],
    }


#: The index's analysis of texts (``Analyzer.analyze``); raises ``AnalyzerUnavailable``.
Analyze = Callable[[Sequence[str]], Awaitable[list[list[str]]]]


def _arrow(
    messages: Sequence[ArchivedMessage],
    vectors: npt.NDArray[np.float32],
    schema: pa.Schema,
    terms: Sequence[str | None] | None = None,
    epoch_of: Callable[[str], int] = lambda _user_id: 0,
) -> pa.Table:
    """Messages as an Arrow table of the ``messages`` schema, built column by column
    (``terms`` joined by spaces; None: null, analyzed when a user's index loads; each
    row's epoch that of its user by ``epoch_of``)."""
    columns = columns_of(messages)
    del columns["at"]
    terms_column = pa.array(terms or [None] * len(messages), pa.string())
    vector = pa.FixedSizeListArray.from_arrays(
        pa.array(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1)),
        schema.field("vector").type.list_size,
    )
    return pa.table(
        {
            **columns,
            "user_id": [m.user_id for m in messages],
            "at": [m.at for m in messages],
            "search_text": [search_text(m) for m in messages],
            "vector": vector,
            **({} if TERMS_COLUMN not in schema.names else {TERMS_COLUMN: terms_column}),
            **({} if EPOCH not in schema.names else {EPOCH: _epochs(messages, epoch_of)}),
        },
        schema=schema,
    )


def _epochs(messages: Sequence[ArchivedMessage], epoch_of: Callable[[str], int]) -> pa.Array:
    of = {u: epoch_of(u) for u in {m.user_id for m in messages}}
    return pa.array([of[m.user_id] for m in messages], pa.int64())


def message_of(row: dict[str, Any]) -> ArchivedMessage:
    at: datetime = row["at"]
    return ArchivedMessage(
        id=row["id"],
        user_id=row["user_id"],
        session_id=row["session_id"],
        scope=row["scope"],
        turn=row["turn"],
        role=row["role"],
        speaker=row["speaker"],
        text=row["text"],
        at=at.astimezone(UTC),
        meta=_meta_decoder.decode(row["meta"]),
        source_id=row["source_id"],
    )


def newest_first(messages: Sequence[ArchivedMessage]) -> list[ArchivedMessage]:
    """Messages newest first (``at`` desc, ``id`` asc), each id once."""
    unique = {m.id: m for m in messages}
    return sorted(unique.values(), key=lambda m: (-m.at.timestamp(), m.id))


class JournaledMessages:
    """The ``messages`` table with an optional journal in front of it.

    With a journal, ``append`` is durable once journaled and ``flush`` moves the
    rows into the table (one append per journal file); without one, ``append``
    writes the table. Every method names the user it is for.
    """

    def __init__(
        self,
        table: Any,
        schema: pa.Schema,
        gate: PurgeGate,
        journal: Journaling | None,
        analyze: Analyze | None = None,
        epoch_of: Callable[[str], int] = lambda _user_id: 0,
    ) -> None:
        self.table, self._schema, self._gate, self._journal = table, schema, gate, journal
        #: The epoch a row of a user is stored with (a cluster node's, while it holds
        #: the user's shard: ``Epochs.held``).
        self._epoch_of = epoch_of
        #: Fills the terms column of the rows a flush moves (off every ack's path).
        self._analyze = analyze
        self._dim: int = schema.field("vector").type.list_size
        #: Held by a flush, and by deletes (``all_in_table``).
        self._lock = anyio.Lock()
        #: Odd while a flush writes the table (see ``consistent``).
        self._sequence = 0
        self._flushed = anyio.Event()

    async def recover(self) -> int:
        """Move what an earlier process left journaled into the table (skipping rows the
        table holds already: it may have died between the two); returns how many."""
        if self._journal is None:
            return 0
        recovered = await anyio.to_thread.run_sync(self._journal.recover)
        for segment in recovered:
            segment.maybe_stored = True
        return await self.flush() if recovered else 0

    async def append(
        self, rows: Sequence[ArchivedMessage], matrix: npt.NDArray[np.float32]
    ) -> None:
        """Durable on return. Raises ``ArchiveUnavailable``, and ``Rejected`` for rows the
        table cannot take (then nothing is written): a journaled row that could not move
        into the table would hold up every later one."""
        table = self.arrow_of(rows, matrix)
        if self._journal is None:
            table = self.arrow_of(rows, matrix, await self._terms(rows))
            await self._add(table, len(rows))
            return
        try:
            await self._journal.append(rows, matrix)
        except OSError as exc:
            raise ArchiveUnavailable(f"journal write of {len(rows)} rows: {exc}") from exc

    def arrow_of(
        self,
        rows: Sequence[ArchivedMessage],
        matrix: npt.NDArray[np.float32],
        terms: Sequence[str | None] | None = None,
    ) -> pa.Table:
        """``rows`` and their vectors (and ``terms``) as the table's rows, at this node's
        epoch. Raises ``Rejected``."""
        try:
            return _arrow(rows, matrix, self._schema, terms, self._epoch_of)
        except (pa.ArrowException, ValueError, TypeError, OverflowError) as exc:
            raise Rejected(f"{len(rows)} messages do not fit the archive: {exc}") from exc

    async def flush(self) -> int:
        """Move journaled rows into the table; returns how many moved. Raises
        ``ArchiveUnavailable`` (they stay journaled)."""
        async with self._lock:
            return await self._flush()

    @asynccontextmanager
    async def all_in_table(self) -> AsyncIterator[None]:
        """Every row journaled so far in the table, and no move into the table until the
        block ends (a delete and its purge of old versions see every row, leave no
        journal file behind with the deleted text, and no write of the table runs beside
        the purge). Appends go on meanwhile, into a new journal file."""
        async with self._lock:
            await self._flush()
            yield

    async def _flush(self) -> int:
        if self._journal is None:
            return 0
        moved = 0
        for segment in await self._journal.seal():
            rows, matrix = segment.rows, segment.matrix(self._dim)
            if segment.maybe_stored:
                rows, matrix = await self._not_stored(rows, matrix)
            self._sequence += 1
            moved_all = False
            try:
                if rows:
                    table = self.arrow_of(rows, matrix, await self._terms(rows))
                    await self._gate.read(functools.partial(self._add, table, len(rows)))
                if rows and segment.maybe_stored:
                    # Another node may have moved the same rows at the same time.
                    await self._drop_copies_of(rows)
                await self._journal.discard(segment)
                moved_all = True
            finally:
                if not moved_all:
                    segment.maybe_stored = True  # a failed add may still have committed
                self._sequence += 1
                self._flushed.set()
                self._flushed = anyio.Event()
            moved += len(segment.rows)
        return moved

    async def _terms(self, rows: Sequence[ArchivedMessage]) -> list[str | None] | None:
        """The rows' terms joined by spaces, or None when there is no analyzer or it
        fails (the rows are analyzed when a user's index loads instead)."""
        if self._analyze is None or TERMS_COLUMN not in self._schema.names:
            return None
        try:
            analyzed = await self._analyze([search_text(m) for m in rows])
        except AnalyzerUnavailable:
            return None
        return [" ".join(terms) for terms in analyzed]

    async def _add(self, table: pa.Table, rows: int) -> None:
        try:
            await self.table.add(table)
        except (OSError, RuntimeError, ValueError) as exc:
            raise ArchiveUnavailable(f"append of {rows} rows failed: {exc}") from exc

    async def _not_stored(
        self, rows: Sequence[ArchivedMessage], matrix: npt.NDArray[np.float32]
    ) -> tuple[list[ArchivedMessage], npt.NDArray[np.float32]]:
        """The rows (and their vectors) the table does not hold yet."""
        stored: set[tuple[str, str]] = set()
        for user_id in {m.user_id for m in rows}:
            ids = [m.id for m in rows if m.user_id == user_id]
            for start in range(0, len(ids), _IDS_PER_QUERY):
                found = await self.stored_ids(user_id, ids[start : start + _IDS_PER_QUERY])
                stored |= {(user_id, i) for i in found}
        keep = [n for n, m in enumerate(rows) if (m.user_id, m.id) not in stored]
        return [rows[n] for n in keep], matrix[keep]

    async def _drop_copies_of(self, rows: Sequence[ArchivedMessage]) -> None:
        for user_id in {m.user_id for m in rows}:
            ids = [m.id for m in rows if m.user_id == user_id]
            for start in range(0, len(ids), _IDS_PER_QUERY):
                await self.drop_copies(user_id, ids[start : start + _IDS_PER_QUERY])

    async def drop_copies(self, user_id: str, ids: Sequence[str]) -> int:
        """Delete every copy but the first of the user's rows ``ids`` that the table holds
        more than once; returns how many went. Two nodes moving the same journaled rows
        into the table at once can both append them (docs/scaling.md). The first copy (by
        row address: a compaction keeps the order, and a delete of an address it
        rewrote matches nothing) stays, so no row is ever lost, whoever repairs. Raises
        ``ArchiveUnavailable``."""
        where = f"{user_filter(user_id)} AND id IN {quote_all(ids)}"
        try:
            found = await self._gate.read(
                self.table.query().where(where).select(["id"]).with_row_id().to_list
            )
            kept: set[str] = set()
            copies: list[int] = []
            for row in sorted(found, key=lambda row: int(row["_rowid"])):
                if row["id"] in kept:
                    copies.append(int(row["_rowid"]))
                kept.add(row["id"])
            if copies:
                addresses = ", ".join(map(str, copies))
                await self.table.delete(f"{where} AND _rowid IN ({addresses})")
                _log.warning("user %s: %d rows stored twice, copies deleted", user_id, len(copies))
        except (OSError, RuntimeError, ValueError) as exc:
            raise ArchiveUnavailable(f"repair of rows stored twice failed: {exc}") from exc
        return len(copies)

    async def stored_ids(self, user_id: str, ids: Sequence[str]) -> set[str]:
        """Which of ``ids`` the table holds for this user (journaled ones not counted)."""
        rows = await self._gate.read(
            self.table.query()
            .where(f"{user_filter(user_id)} AND id IN {quote_all(ids)}")
            .select(["id"])
            .to_list
        )
        return {row["id"] for row in rows}

    def pending(self, user_id: str) -> list[ArchivedMessage]:
        """The user's journaled messages not yet in the table."""
        if self._journal is None:
            return []
        return [m for s in self._journal.pending() for m in s.rows if m.user_id == user_id]

    def pending_vectors(
        self, user_id: str
    ) -> tuple[list[ArchivedMessage], npt.NDArray[np.float32]]:
        """``pending(user_id)`` with their vectors."""
        rows: list[ArchivedMessage] = []
        parts: list[npt.NDArray[np.float32]] = []
        for segment in self._journal.pending() if self._journal is not None else []:
            picks = [n for n, m in enumerate(segment.rows) if m.user_id == user_id]
            if picks:
                rows += [segment.rows[n] for n in picks]
                parts.append(segment.matrix(self._dim)[picks])
        matrix = np.concatenate(parts) if parts else np.zeros((0, self._dim), np.float32)
        return rows, matrix

    async def consistent(
        self, user_id: str, read: Callable[[], Awaitable[_T]]
    ) -> tuple[_T, list[ArchivedMessage]]:
        """``read()`` of the table, and the user's journaled messages it did not see: read
        again if a flush ran meanwhile (a seqlock), so each message is seen once."""
        while True:
            sequence = self._sequence
            if sequence % 2:
                await self._flushed.wait()
                continue
            result = await read()
            if self._sequence == sequence:
                return result, self.pending(user_id)

    def close(self) -> None:
        if self._journal is not None:
            self._journal.close()
