"""The write-ahead journal of what mnemo learns: facts, log entries and links.

A fact written by an agent used to wait for its own LanceDB merge (tens of
milliseconds on a quiet machine, seconds under load). Here, as for archived
messages (``server.adapters.journal``), a write is durable once its record is
fsynced in a local journal file; reads see it at once through the pending
overlay kept here; ``move`` carries every pending write into the tables in one
write per table (one append of new facts, one merge of changed ones, one delete
per user, one append of log entries, one merge of links), and deletes the
journal files it moved. Files left by a crash are replayed at open.

Reads take ``pending`` *before* they read a table: a write moved while they
read is then in one or the other, never in neither.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import anyio
import anyio.to_thread
import msgspec
import numpy as np

from actors.errors import Rejected
from memory.facts import Stored
from schemas.records import Fact, MemoryEvent, MemoryLink
from server.adapters.journal import create_file, frame, frames, write_durably

__all__ = ["LearnedJournal", "Moving", "Pending"]

_log = logging.getLogger("mnemo.journal")
_SUFFIX = ".learned"


class _Record(msgspec.Struct, array_like=True, omit_defaults=True):
    facts: list[Fact] = []
    #: The facts' vectors, float32, row after row.
    vectors: bytes = b""
    #: The facts are new (never in the table): appended, not merged.
    fresh: bool = False
    #: (user, fact ids) deleted.
    deleted: list[tuple[str, list[str]]] = []
    events: list[MemoryEvent] = []
    links: list[MemoryLink] = []


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(_Record)


@dataclass(slots=True)
class _Fact:
    seq: int
    #: The fact as written; None once deleted.
    stored: Stored | None
    #: Not in the table (only ever added since the last move): appended when moved.
    fresh: bool


@dataclass(slots=True)
class Pending:
    """A read's view of the writes not yet moved (taken before reading the tables)."""

    #: (user, fact id) -> the fact as written, or None when deleted.
    facts: dict[tuple[str, str], Stored | None] = field(default_factory=dict)
    events: list[MemoryEvent] = field(default_factory=list)
    links: list[MemoryLink] = field(default_factory=list)

    def overlay(self, user_id: str, stored: Sequence[Stored]) -> list[Stored]:
        """``stored`` (the user's rows read from the table) with the pending writes of
        ``user_id`` applied; the facts written since come last."""
        mine = {i: s for (u, i), s in self.facts.items() if u == user_id}
        if not mine:
            return list(stored)
        out = [mine.get(s.fact.id, s) for s in stored]
        seen = {s.fact.id for s in stored}
        out += [s for i, s in mine.items() if i not in seen and s is not None]
        return [s for s in out if s is not None]


@dataclass(slots=True)
class Moving:
    """What one move writes into the tables."""

    #: New facts: appended.
    fresh: list[Stored] = field(default_factory=list)
    #: Facts that may be in the table: merged.
    changed: list[Stored] = field(default_factory=list)
    deleted: dict[str, list[str]] = field(default_factory=dict)
    events: list[MemoryEvent] = field(default_factory=list)
    links: list[MemoryLink] = field(default_factory=list)
    #: Some of it may be in the tables already (replayed, or a move that failed part
    #: way): log entries already there are not appended twice.
    maybe_stored: bool = False

    def __len__(self) -> int:
        deleted = sum(len(ids) for ids in self.deleted.values())
        return len(self.fresh) + len(self.changed) + deleted + len(self.events) + len(self.links)


class LearnedJournal:
    """Journal files in ``directory`` and the writes they hold that the tables lack.

    Use from one event loop. ``write`` returns once durable; ``move`` and ``settled``
    take turns (a purge settles first, so nothing it deletes comes back from a journal).
    """

    def __init__(self, directory: Path, dim: int) -> None:
        self._directory, self._dim = directory, dim
        self._facts: dict[tuple[str, str], _Fact] = {}
        self._events: list[tuple[int, MemoryEvent]] = []
        self._links: list[tuple[int, MemoryLink]] = []
        self._seq = 0
        self._file: BinaryIO | None = None
        self._path: Path | None = None
        #: Files closed and not yet moved, with the last sequence number each holds.
        self._sealed: list[tuple[Path, int]] = []
        self._next = 0
        self._writing = anyio.Lock()
        self._moving = anyio.Lock()
        #: Replayed writes (and those of a failed move) may be in the tables already.
        self._maybe_stored = False

    @property
    def rows(self) -> int:
        """Writes not yet moved."""
        return len(self._facts) + len(self._events) + len(self._links)

    def recover(self) -> int:
        """Read the files left by an earlier process; their writes are pending again (and
        may be in the tables already). Call once, before anything is written."""
        self._directory.mkdir(parents=True, exist_ok=True)
        paths = sorted(self._directory.glob(f"*{_SUFFIX}"))
        for path in paths:
            for payload in frames(path):
                try:
                    record = _decoder.decode(payload)
                except msgspec.DecodeError:
                    _log.warning("journal %s: dropped a record that does not decode", path.name)
                    break
                self._keep(record)
            self._sealed.append((path, self._seq))
        numbers = [int(p.stem) for p in paths if p.stem.isdigit()]
        self._next = max(numbers, default=0) + 1
        self._maybe_stored = bool(paths)
        for pending in self._facts.values():
            pending.fresh = False
        return self.rows

    def pending(self) -> Pending:
        """The writes not yet moved, as reads overlay them."""
        return Pending(
            {key: f.stored for key, f in self._facts.items()},
            [e for _, e in self._events],
            [link for _, link in self._links],
        )

    def holds(self, user_id: str) -> bool:
        """Whether ``user_id`` has facts written and not yet moved."""
        return any(u == user_id for u, _ in self._facts)

    async def write(
        self,
        *,
        facts: Sequence[Stored] = (),
        fresh: bool = False,
        deleted: Sequence[tuple[str, Sequence[str]]] = (),
        events: Sequence[MemoryEvent] = (),
        links: Sequence[MemoryLink] = (),
    ) -> None:
        """Return once the writes are on disk (and pending). Raises ``OSError``, and
        ``Rejected`` for what cannot be encoded (then nothing is written)."""
        flat = np.ascontiguousarray(
            np.asarray([np.asarray(s.vector, dtype=np.float32) for s in facts], np.float32)
        ).reshape(-1)
        record = _Record(
            facts=[s.fact for s in facts],
            vectors=flat.tobytes(),
            fresh=fresh,
            deleted=[(user, list(ids)) for user, ids in deleted],
            events=list(events),
            links=list(links),
        )
        try:
            data = frame(_encoder.encode(record))
        except (msgspec.EncodeError, OverflowError, TypeError, ValueError) as exc:
            raise Rejected(f"cannot be journaled: {exc}") from exc
        async with self._writing:
            if self._file is None:
                self._path = self._directory / f"{self._next:012d}{_SUFFIX}"
                self._next += 1
                self._file = await anyio.to_thread.run_sync(create_file, self._path)
            file = self._file
            try:
                await anyio.to_thread.run_sync(write_durably, file, data)
            except OSError:
                # Part of the record may be on disk: nothing more goes after it. The
                # file holds earlier writes: it is moved with them.
                self._seal_open()
                raise
            self._keep(record)

    def _keep(self, record: _Record) -> None:
        self._seq += 1
        seq = self._seq
        vectors = np.frombuffer(record.vectors, np.float32).reshape(-1, self._dim)
        for fact, vector in zip(record.facts, vectors, strict=True):
            key = (fact.user_id, fact.id)
            before = self._facts.get(key)
            fresh = record.fresh or (before is not None and before.fresh)
            self._facts[key] = _Fact(seq, Stored(fact, vector), fresh)
        for user, ids in record.deleted:
            for ident in ids:
                before = self._facts.get((user, ident))
                if before is not None and before.fresh:
                    del self._facts[(user, ident)]  # never reached the table
                else:
                    self._facts[(user, ident)] = _Fact(seq, None, False)
        self._events += [(seq, e) for e in record.events]
        self._links += [(seq, link) for link in record.links]

    def _seal_open(self) -> None:
        if self._file is not None:
            assert self._path is not None
            self._file.close()
            self._sealed.append((self._path, self._seq))
            self._file, self._path = None, None

    async def move(self, write: Callable[[Moving], Awaitable[None]]) -> int:
        """Write everything pending into the tables with ``write``, then delete the files
        it came from; returns how many writes moved. Raises what ``write`` raises (the
        writes stay pending, and are merged, not appended, at the next move)."""
        async with self._moving:
            return await self._move(write)

    async def _move(self, write: Callable[[Moving], Awaitable[None]]) -> int:
        async with self._writing:
            self._seal_open()
        if not self._sealed:
            return 0
        upto = self._sealed[-1][1]
        moving = Moving(maybe_stored=self._maybe_stored)
        for (user, ident), pending in self._facts.items():
            if pending.seq > upto:
                continue
            if pending.stored is None:
                moving.deleted.setdefault(user, []).append(ident)
            elif pending.fresh:
                moving.fresh.append(pending.stored)
            else:
                moving.changed.append(pending.stored)
        moving.events = [e for seq, e in self._events if seq <= upto]
        moving.links = [link for seq, link in self._links if seq <= upto]
        try:
            await write(moving)
        except BaseException:
            # Some of it may have landed: from now on merged, and log entries checked.
            self._maybe_stored = True
            for pending in self._facts.values():
                if pending.seq <= upto:
                    pending.fresh = False
            raise
        self._facts = {k: f for k, f in self._facts.items() if f.seq > upto}
        self._events = [(seq, e) for seq, e in self._events if seq > upto]
        self._links = [(seq, link) for seq, link in self._links if seq > upto]
        files, self._sealed = [p for p, _ in self._sealed], []
        for path in files:
            path.unlink(missing_ok=True)
        self._maybe_stored = False
        return len(moving)

    @asynccontextmanager
    async def settled(self, write: Callable[[Moving], Awaitable[None]]) -> AsyncIterator[None]:
        """Move everything pending, and hold off other moves until the block ends: for a
        delete and purge, after which no journal file may hold what it deleted."""
        async with self._moving:
            await self._move(write)
            yield

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
