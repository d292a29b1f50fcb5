"""The LanceDB store: archived messages and working-memory snapshots.

The only module that imports ``lancedb``. Every read and write names its user,
and every value that reaches a filter string is validated or quoted here.
Writes are expected to come from one writer (``actors.writer``): LanceDB makes a
version per write, so single-row appends are batched upstream and the writer
calls ``optimize()`` on a schedule.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread
import lancedb
import msgspec
import numpy as np
import pyarrow as pa
from anyio.abc import TaskStatus
from lancedb.index import FTS, BTree

from actors.errors import ArchiveUnavailable, MnemoError
from actors.keys import key_vectors
from actors.ports import Embedder, Page, ScoredMessage, SparseEncoder, VectorSource
from memory.projection import PROJECT_FROM
from memory.recall import CONTEXT_CHARS, said
from memory.search_index import SearchIndex
from memory.text import indexed_text
from schemas.records import ArchivedMessage, WorkingMemory
from schemas.settings import MIN_SIMILARITY, Ranking, SearchMode
from server.adapters.index_files import IndexFiles
from server.adapters.index_saving import SharedIndexes
from server.adapters.journal import Journal, Journaling
from server.adapters.lance_analyzer import FTS_TOKENIZER, Analyzer, AnalyzerUnavailable
from server.adapters.lance_cache import (
    Budget,
)
from server.adapters.lance_common import PurgeGate, quote, quote_all, user_filter
from server.adapters.lance_entities import LanceEntities
from server.adapters.lance_episodes import LanceEpisodes
from server.adapters.lance_epochs import EPOCH, Epochs, with_epoch
from server.adapters.lance_events import LanceEvents
from server.adapters.lance_facts import LanceFacts
from server.adapters.lance_links import LanceLinks
from server.adapters.lance_messages import (
    COLUMNS,
    EMBEDDER_KEY,
    NEWEST_FIRST,
    TERMS_COLUMN,
    JournaledMessages,
    message_of,
    messages_schema,
    newest_first,
)
from server.adapters.lance_rules import LanceRules
from server.adapters.lance_shared import SHARED_CONSISTENCY, SharedTables
from server.adapters.lance_versions import EmbedderChanged, check_embedder
from server.adapters.learned_journal import LearnedJournal, Moving
from server.adapters.message_search import MessageSearch

__all__ = ["LanceStore", "StoreMismatch", "quote"]

_MESSAGES = "messages"
_WORKING = "working"
_json = msgspec.json.Encoder()
_working_decoder = msgspec.json.Decoder(WorkingMemory)
_WORKING_SCHEMA = with_epoch(
    pa.schema(
        [
            pa.field("user_id", pa.string(), nullable=False),
            pa.field("session_id", pa.string(), nullable=False),
            pa.field("data", pa.string(), nullable=False),
        ]
    )
)


class StoreMismatch(MnemoError):
    """The data directory was written with another embedder (``embedding_versions``)."""

    code = "store_mismatch"


_log = logging.getLogger("mnemo.store")


class LanceStore:
    """Implements the ``Store`` port on a LanceDB directory (or object-store URI)."""

    def __init__(
        self,
        uri: str | Path,
        *,
        embedder: Embedder,
        cache_bytes: int = 1 << 30,
        journal: Path | Callable[[int], Journaling] | None = None,
        lance_metadata_bytes: int = 16 << 20,
        lance_index_bytes: int = 128 << 20,
        ranking: Ranking | None = None,
        min_similarity: float = MIN_SIMILARITY,
        indexes: Path | None = None,
        save_index_from: int = 200,
        save_index_after: float = 30.0,
        project_from: int = PROJECT_FROM,
        shared: bool = False,
        learned: SparseEncoder | None = None,
    ) -> None:
        """``cache_bytes`` bounds the in-memory search indexes (messages and facts together);
        past it, the least recently used users' indexes are evicted. With a ``journal``
        directory (or a function making a journal for the vectors' size: a cluster's),
        appended messages are durable once journaled there and reach the table at
        ``flush_messages()``; without one, each append writes the table.
        ``ranking`` orders found messages (``memory.ranking``; default: ``Ranking()``);
        ``min_similarity`` is ``Settings.min_similarity``.
        With an ``indexes`` directory, the message indexes of users with at least
        ``save_index_from`` messages are saved there (``server.adapters.index_files``)
        once their messages have not changed for ``save_index_after`` seconds. Users with
        at least ``project_from`` messages rank by a projection first and hold their
        vectors as int8 (``memory.projection``, ``memory.vectors``).
        ``lance_metadata_bytes`` and ``lance_index_bytes`` bound LanceDB's own caches (see
        ``Settings``). ``shared``: other processes write the tables too (a cluster's
        nodes; ``server.adapters.lance_shared``). ``learned``: the learned sparse model
        messages are also ranked by (``MessageSearch``)."""
        self._shared = shared
        self._uri = str(uri)
        self._journal_dir = journal
        self._indexes_dir = indexes
        self._archive: JournaledMessages | None = None
        #: Facts, log entries and links (a local journal only: a cluster's nodes write
        #: those tables directly, under their epoch fence).
        self._learned: LearnedJournal | None = None
        self._embedder = embedder
        self._lance_caches = (lance_metadata_bytes, lance_index_bytes)
        self._session: lancedb.Session | None = None
        self._dim = 0
        self._schema: pa.Schema | None = None
        #: One memory budget for the messages' and the facts' indexes.
        self._budget = Budget(cache_bytes)
        self._analyzer: Analyzer | None = None
        self._db: Any = None
        self._messages: Any = None
        self._working: Any = None
        self._facts: LanceFacts | None = None
        self._rules: LanceRules | None = None
        self._events: LanceEvents | None = None
        self._entities: LanceEntities | None = None
        self._links: LanceLinks | None = None
        self._episodes: LanceEpisodes | None = None
        #: Shared by both adapters: reads against purges of old versions.
        self._gate = PurgeGate(shared=shared)
        #: The working-memory table's own: purging it never holds up other reads.
        self._working_gate = PurgeGate(shared=shared)
        #: The epoch each write of a user's rows carries (a cluster node's fencing).
        self.epochs = Epochs()
        self._search = MessageSearch(
            self._budget,
            self._gate,
            ranking or Ranking(),
            min_similarity=min_similarity,
            save_from=save_index_from,
            save_after=save_index_after,
            project_from=project_from,
            learned=learned,
        )

    @property
    def facts(self) -> LanceFacts:
        """Facts, notes, profiles and extraction progress (available once opened)."""
        if self._facts is None:
            raise RuntimeError("the store is not open")
        return self._facts

    @property
    def entities(self) -> LanceEntities:
        """Entities (available once opened)."""
        if self._entities is None:
            raise RuntimeError("the store is not open")
        return self._entities

    @property
    def episodes(self) -> LanceEpisodes:
        """Episodes stored directly (available once opened)."""
        if self._episodes is None:
            raise RuntimeError("the store is not open")
        return self._episodes

    @property
    def links(self) -> LanceLinks:
        """Provenance links between memories (available once opened)."""
        if self._links is None:
            raise RuntimeError("the store is not open")
        return self._links

    @property
    def events(self) -> LanceEvents:
        """The audit log of memory changes (available once opened)."""
        if self._events is None:
            raise RuntimeError("the store is not open")
        return self._events

    @property
    def rules(self) -> LanceRules:
        """Rules and their applications (available once opened)."""
        if self._rules is None:
            raise RuntimeError("the store is not open")
        return self._rules

    async def open(self) -> None:
        """Open (creating if needed) the tables and their indexes.

        Raises ``StoreMismatch`` when the directory holds vectors of another size.
        Call after the embedder's ``warm_up()``: its ``dim`` sizes the vector column.
        """
        self._dim = self._embedder.dim
        name = self._embedder.name
        if self._uri.find("://") < 0:
            await anyio.Path(self._uri).mkdir(parents=True, exist_ok=True)
        metadata, index = self._lance_caches
        # LanceDB caches the metadata of every table version it reads, and every write makes
        # a version: with its defaults (1 GiB of metadata, 6 GiB of index pages) the process
        # grows with every write long after the old versions stopped being read.
        self._session = lancedb.Session(
            index_cache_size_bytes=index, metadata_cache_size_bytes=metadata
        )
        if self._shared:
            self._db = SharedTables(
                await lancedb.connect_async(
                    self._uri,
                    session=self._session,
                    read_consistency_interval=SHARED_CONSISTENCY,
                )
            )
        else:
            self._db = await lancedb.connect_async(self._uri, session=self._session)
        names = set((await self._db.list_tables()).tables)
        if _MESSAGES in names:
            self._messages = await self._db.open_table(_MESSAGES)
            schema = await self._messages.schema()
            size = schema.field("vector").type.list_size
            if size != self._dim:
                stored = (schema.metadata or {}).get(EMBEDDER_KEY, b"?").decode()
                raise StoreMismatch(
                    f"{self._uri} holds {size}-dimensional vectors from embedder {stored!r}; "
                    f"the configured embedder {name!r} makes {self._dim}. "
                    "Use the same MNEMO_EMBEDDER or another MNEMO_DATA_DIR."
                )
        else:
            self._messages = await self._db.create_table(
                _MESSAGES, schema=messages_schema(self._dim, name)
            )
        recorded = ((await self._messages.schema()).metadata or {}).get(EMBEDDER_KEY)
        try:
            await check_embedder(self._db, name, self._dim, recorded.decode() if recorded else None)
        except EmbedderChanged as exc:
            raise StoreMismatch(f"{self._uri}: {exc}") from None
        if "search_text" not in (await self._messages.schema()).names:
            # Written before search texts existed: who said it, then what (no context).
            await self._messages.add_columns({"search_text": "concat(speaker, ': ', text)"})
        if TERMS_COLUMN not in (await self._messages.schema()).names:
            # Written before terms were stored: analyzed when a user's index loads.
            await self._messages.add_columns({TERMS_COLUMN: "CAST(NULL AS STRING)"})
        if EPOCH not in (await self._messages.schema()).names:
            await self._messages.add_columns({EPOCH: "CAST(0 AS BIGINT)"})
        self._schema = await self._messages.schema()
        self._working = await self.epochs.open(
            self._db, _WORKING, _WORKING_SCHEMA, self._working_gate
        )
        await self._ensure_indexes()
        # One analyzer for messages and facts: both indexes are icu with positions.
        self._analyzer = Analyzer(self._messages, "search_text")
        try:
            await self._analyzer.prepare()  # not on the first search
        except AnalyzerUnavailable as exc:
            _log.warning("full-text analyzer unavailable at start: %s", exc)
        self._facts = LanceFacts(
            self._db,
            dim=self._dim,
            gate=self._gate,
            epochs=self.epochs,
            analyzer=self._analyzer,
            budget=self._budget,
        )
        await self._facts.open()
        gate, epochs = self._gate, self.epochs
        self._rules = LanceRules(self._db, dim=self._dim, gate=gate, epochs=epochs)
        await self._rules.open()
        self._events = LanceEvents(self._db, gate=gate, epochs=epochs)
        await self._events.open()
        self._entities = LanceEntities(self._db, gate=gate, epochs=epochs)
        await self._entities.open()
        self._links = LanceLinks(self._db, gate=gate, epochs=epochs)
        await self._links.open()
        self._episodes = LanceEpisodes(self._db, dim=self._dim, gate=gate, epochs=epochs)
        await self._episodes.open()
        journal: Journaling | None = None
        if isinstance(self._journal_dir, Path):
            journal = Journal(self._journal_dir, self._dim)
            await self._open_learned(self._journal_dir.parent / "learned")
        elif self._journal_dir is not None:
            journal = self._journal_dir(self._dim)
        self._archive = JournaledMessages(
            self._messages,
            self._schema,
            self._gate,
            journal,
            self._analyzer.analyze,
            self.epochs.held,
        )
        files = None
        if self._indexes_dir is not None:
            files = IndexFiles(self._indexes_dir, embedder=name, dim=self._dim)
            await anyio.to_thread.run_sync(files.open)
        self._search.attach(self._archive, self._analyzer, self._dim, files)
        if replayed := await self._archive.recover():
            _log.info("replayed %d journaled messages into the archive", replayed)
        # The process's first queries (Lance opening files and indexes, ~10-20 ms) are
        # paid here, not by the first user's search.
        await self._search.warm_up()
        await self._facts.warm_up()

    async def _open_learned(self, directory: Path) -> None:
        """Journal facts, log entries and links in ``directory``; replay what a crash left."""
        learned = LearnedJournal(directory, self._dim)
        replayed = await anyio.to_thread.run_sync(learned.recover)
        for table in (self.facts, self.events, self.links):
            table.journal_to(learned, self._settled)
        self._learned = learned
        if replayed:
            try:
                await self.flush_learned()
                _log.info("replayed %d journaled writes of facts, log and links", replayed)
            except MnemoError as exc:  # still journaled: reads see them, the writer retries
                _log.warning("journaled facts stay in the journal: %s", exc)

    def _settled(self) -> AbstractAsyncContextManager[None]:
        assert self._learned is not None
        return self._learned.settled(self._move_learned)

    @property
    def journals_learned(self) -> bool:
        return self._learned is not None

    @property
    def learned_pending(self) -> int:
        return self._learned.rows if self._learned is not None else 0

    async def flush_learned(self) -> int:
        if self._learned is None:
            return 0
        try:
            return await self._learned.move(self._move_learned)
        except (OSError, ValueError, RuntimeError) as exc:
            raise ArchiveUnavailable(f"journaled facts not moved: {exc}") from exc

    async def _move_learned(self, moving: Moving) -> None:
        await self.facts.move(moving)
        await self.events.move(moving.events, maybe_stored=moving.maybe_stored)
        await self.links.move(moving.links)

    async def _ensure_indexes(self) -> None:
        indices = await self._messages.list_indices()
        have = {tuple(ix.columns) for ix in indices}
        if ("user_id",) not in have:
            await self._messages.create_index("user_id", config=BTree())
        if ("search_text",) not in have:
            await self._messages.create_index(
                "search_text", config=FTS(base_tokenizer=FTS_TOKENIZER, with_position=True)
            )
        for old in (ix for ix in indices if tuple(ix.columns) == ("text",)):
            await self._messages.drop_index(old.name)  # from before search texts
        if ("user_id",) not in {tuple(ix.columns) for ix in await self._working.list_indices()}:
            await self._working.create_index("user_id", config=BTree())

    async def aclose(self) -> None:
        if self._learned is not None:
            try:
                await self.flush_learned()
            except MnemoError as exc:  # the journal keeps them: the next open replays them
                _log.warning("journaled facts stay in the journal: %s", exc)
            self._learned.close()
        if self._archive is not None:
            await self._search.saver.save()
            try:
                await self._archive.flush()
            except MnemoError as exc:  # the journal keeps them: the next open replays them
                _log.warning("journaled messages stay in the journal: %s", exc)
            self._archive.close()
        if self._facts is not None:
            self._facts.close()
        if self._rules is not None:
            self._rules.close()
        if self._events is not None:
            self._events.close()
        if self._entities is not None:
            self._entities.close()
        if self._links is not None:
            self._links.close()
        if self._episodes is not None:
            self._episodes.close()
        for table in (self._messages, self._working):
            if table is not None:
                table.close()
        if self._db is not None:
            self._db.close()

    # -- messages ------------------------------------------------------------

    async def append_messages(
        self, rows: Sequence[ArchivedMessage], vectors: Sequence[Sequence[float]]
    ) -> None:
        """Durable on return: journaled (or, without a journal, in the table); searches and
        reads see the rows from then on."""
        if not rows:
            return
        matrix = np.asarray(vectors, dtype=np.float32).reshape(len(rows), self._dim)
        async with self._search.saver.writing({m.user_id for m in rows}):
            await self._messages_table.append(rows, matrix)
            await self._search.index(rows, matrix)

    async def run_indexing(
        self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Until cancelled: index appended messages in the background, so that an append
        returns once its rows are durable (see ``server.adapters.index_queue``)."""
        await self._search.run_indexing(task_status=task_status)

    async def flush_messages(self) -> int:
        """Move journaled messages into the table, in one append per journal file; returns
        how many moved. Raises ``ArchiveUnavailable`` (they stay journaled)."""
        return await self._messages_table.flush()

    @property
    def _messages_table(self) -> JournaledMessages:
        if self._archive is None:
            raise RuntimeError("the store is not open")
        return self._archive

    async def list_messages(self, user_id: str, *, limit: int, offset: int) -> Page:
        where = user_filter(user_id)

        async def read(limit: int, offset: int) -> Page:
            # One row more on each side: a row stored twice (two nodes moving it at once)
            # lists as two equal neighbours, maybe across the page's edge; such copies
            # are deleted and the page read again.
            start = max(0, offset - 1)
            for _ in range(2):
                total = int(await self._gate.read(lambda: self._messages.count_rows(where)))
                rows = await self._gate.read(
                    self._messages.query()
                    .where(where)
                    .select(COLUMNS)
                    .order_by(NEWEST_FIRST)
                    .limit(limit + 1 + offset - start)
                    .offset(start)
                    .to_list
                )
                ids = [row["id"] for row in rows]
                twice = {b for a, b in itertools.pairwise(ids) if a == b}
                if not twice or not await self._messages_table.drop_copies(user_id, [*twice]):
                    break
            return [message_of(r) for r in rows[offset - start : offset - start + limit]], total

        if not self._messages_table.pending(user_id):
            page, pending = await self._messages_table.consistent(
                user_id, lambda: read(limit, offset)
            )
            if not pending:
                return page
        # Some are journaled: merge them with the table's first offset + limit.
        (stored, total), pending = await self._messages_table.consistent(
            user_id, lambda: read(offset + limit, 0)
        )
        merged = newest_first([*stored, *pending])
        return merged[offset : offset + limit], total + len(merged) - len(stored)

    async def count_messages(self, user_id: str) -> int:
        where = user_filter(user_id)

        async def count() -> int:
            return int(await self._gate.read(lambda: self._messages.count_rows(where)))

        total, pending = await self._messages_table.consistent(user_id, count)
        if not pending:
            return total
        _, total = await self.list_messages(user_id, limit=1, offset=0)  # merged as it does
        return total

    async def session_messages(
        self, user_id: str, session_id: str, *, limit: int
    ) -> list[ArchivedMessage]:
        where = f"{user_filter(user_id)} AND session_id = {quote(session_id)}"
        query = (
            self._messages.query().where(where).select(COLUMNS).order_by(NEWEST_FIRST).limit(limit)
        )
        rows, pending = await self._messages_table.consistent(
            user_id, lambda: self._gate.read(query.to_list)
        )
        ours = [m for m in pending if m.session_id == session_id]
        found = newest_first([*map(message_of, rows), *ours])[:limit]
        found.sort(key=lambda m: (m.turn, m.at, m.role != "user"))
        return found

    async def get_message(self, user_id: str, message_id: str) -> ArchivedMessage | None:
        # Journal first: a message moved into the table after this look is found there.
        journaled = next(
            (m for m in self._messages_table.pending(user_id) if m.id == message_id), None
        )
        if journaled is not None:
            return journaled
        rows = await self._gate.read(
            self._messages.query()
            .where(f"{user_filter(user_id)} AND id = {quote(message_id)}")
            .select(COLUMNS)
            .limit(1)
            .to_list
        )
        return message_of(rows[0]) if rows else None

    async def existing_message_ids(self, user_id: str, ids: Sequence[str]) -> set[str]:
        if not ids:
            return set()
        wanted = set(ids)
        journaled = {m.id for m in self._messages_table.pending(user_id) if m.id in wanted}
        return journaled | await self._messages_table.stored_ids(user_id, ids)

    async def delete_message(self, user_id: str, message_id: str) -> bool:
        """Delete a message, and its text from the search text (and embedding) of the
        messages that answered it; then purge old versions: its text is nowhere on disk."""
        where = f"{user_filter(user_id)} AND id = {quote(message_id)}"
        async with self._messages_table.all_in_table():  # and no journal file left
            found = await self._gate.read(
                self._messages.query().where(where).select(COLUMNS).limit(1).to_list
            )
            if not found:
                return False
            deleted = message_of(found[0])
            await self._search.settled()  # no add of it queued behind the removal
            answers = await self._answers_to(deleted)
            matrix = np.zeros((0, self._dim), dtype=np.float32)
            if answers:
                vectors = await key_vectors(self._embedder, answers)
                matrix = np.asarray(vectors, dtype=np.float32).reshape(len(answers), self._dim)
            ids = [message_id, *(m.id for m in answers)]
            async with self._search.saver.writing([user_id]):
                if answers:  # their old search texts quote it (the delete notes its own)
                    await self._gate.erasing(
                        self._messages, f"{user_filter(user_id)} AND id IN {quote_all(ids[1:])}"
                    )
                # The answers replaced where still stored (never added back), then the
                # message deleted: both conditional on the rows' epoch, so a late one
                # changes no row a newer node stored (docs/scaling.md).
                try:
                    if answers:
                        rows = self._messages_table.arrow_of(answers, matrix)
                        await self.epochs.replace(self._messages, ["user_id", "id"], rows)
                    await self.epochs.delete(
                        self._gate, self._messages, user_id, f"id = {quote(message_id)}"
                    )
                except (OSError, RuntimeError, ValueError) as exc:
                    raise ArchiveUnavailable(f"delete failed: {exc}") from exc
                for gone in ids:
                    self._search.remove(user_id, gone)
                if answers:
                    await self._search.index(answers, matrix)
            await self._gate.purge(self._messages)
        return True

    async def _answers_to(self, message: ArchivedMessage) -> list[ArchivedMessage]:
        """The messages of ``message``'s session whose search text quotes it (the message
        after it: ``memory.recall.search_text``), read back without that quote."""
        quoted = indexed_text(f"(after {said(message.speaker, message.text)[:CONTEXT_CHARS]})")
        where = (
            f"{user_filter(message.user_id)} AND session_id = {quote(message.session_id)}"
            f" AND id != {quote(message.id)}"
        )
        rows = await self._gate.read(
            self._messages.query().where(where).select([*COLUMNS, "search_text"]).to_list
        )
        return [message_of(r) for r in rows if quoted in r["search_text"]]

    async def clear_messages(self, user_id: str) -> int:
        where = user_filter(user_id)
        async with self._messages_table.all_in_table():
            count = int(await self._gate.read(lambda: self._messages.count_rows(where)))
            if count:
                await self._search.settled()
                async with self._search.saver.writing([user_id]):
                    # Conditional on the epoch: a late one leaves a newer node's rows.
                    await self.epochs.delete(self._gate, self._messages, user_id)
                    self._search.drop(user_id)
                await self._gate.purge(self._messages)
        return count

    async def search_messages(
        self,
        user_id: str,
        text: str,
        vector: VectorSource,
        *,
        k: int,
        scope: str | None = None,
        mode: SearchMode = "hybrid",
        at: datetime | None = None,
    ) -> list[ScoredMessage]:
        """See ``MessageSearch.search``."""
        return await self._search.search(user_id, text, vector, k=k, scope=scope, mode=mode, at=at)

    async def message_similarities(
        self, user_id: str, ids: Sequence[str], vector: Sequence[float]
    ) -> dict[str, float]:
        """See ``MessageSearch.similarities``."""
        return await self._search.similarities(user_id, ids, vector)

    async def message_index(self, user_id: str) -> SearchIndex:
        """The user's in-memory message index, loaded if needed (benchmarks and tests)."""
        return await self._search.message_index(user_id)

    def index_bytes(self) -> int:
        """Memory held by the in-memory search indexes (messages and facts)."""
        return self._budget.total

    def lance_cache_bytes(self) -> int:
        """Memory held by LanceDB's own caches (metadata and index pages)."""
        return int(self._session.size_bytes) if self._session is not None else 0

    def share_indexes(self, shared: SharedIndexes) -> None:
        """Keep saved indexes in ``shared`` too (a cluster node's bucket)."""
        self._search.saver.shared = shared

    async def refresh(self) -> None:
        """Read every table's latest version from now on (a shared data directory: before
        serving users another node wrote)."""
        if isinstance(self._db, SharedTables):
            await self._db.refresh()

    def forget(self, held: Callable[[str], bool], prefix: str) -> None:
        """Drop the in-memory indexes of the users ``held`` says and the saved index files
        whose names start with ``prefix``: a cluster's shard, given up or taken (what this
        node kept of it may be out of date)."""
        self._search.forget(held, prefix)
        self.facts.forget(held)

    async def warm(self, user_id: str) -> None:
        """Load the user's messages and facts into memory ahead of their first search."""
        await self._search.warm(user_id)
        await self.facts.warm(user_id)

    # -- working memory ------------------------------------------------------

    async def put_working(self, items: Sequence[tuple[str, WorkingMemory]]) -> None:
        if not items:
            return
        rows = self.epochs.stamp(
            [
                {"user_id": u, "session_id": w.session_id, "data": _json.encode(w).decode()}
                for u, w in items
            ]
        )
        data = pa.Table.from_pylist(rows, schema=_WORKING_SCHEMA)
        await self.epochs.merge(self._working, ["user_id", "session_id"], data)

    async def get_working(self, user_id: str, session_id: str) -> WorkingMemory | None:
        rows = await self._working_gate.read(
            self._working.query()
            .where(f"{self.epochs.reads(user_id)} AND session_id = {quote(session_id)}")
            .limit(1)
            .to_list
        )
        return _working_decoder.decode(rows[0]["data"]) if rows else None

    async def delete_working(self, user_id: str, session_id: str) -> None:
        also = f"session_id = {quote(session_id)}"
        await self.epochs.delete(self._working_gate, self._working, user_id, also)

    async def purge_working(self) -> None:
        await self._working_gate.purge(self._working)

    # -- maintenance ---------------------------------------------------------

    async def optimize(self, *, cleanup_older_than: float) -> None:
        await self._gate.optimize((self._messages,), cleanup_older_than)
        await self._working_gate.optimize((self._working,), cleanup_older_than)
        # The fact tables are optimized by their own writer (LanceFacts.optimize).

    async def version_count(self) -> int:
        """How many versions of the messages table exist (for tests and benchmarks)."""
        return len(await self._messages.list_versions())
