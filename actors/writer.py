"""The store's single writer: batches appends, orders every other write, optimizes on a schedule.

LanceDB writes a fragment and a version per write, so one-row appends degrade
queries badly; every archived message goes through here and lands in batches.
Writes go through ``call`` in the same task, so no write is ever in flight while
a purge drops old versions. Two exceptions keep a purge off the acks' path: the
working-memory snapshots are written, deleted and purged in one background task
beside the appends, and the archive's message deletes run outside this writer
entirely (the store serializes them with its journal's moves into the table).

The writer is shared by every user, so a user has one ``call`` queued or running at a
time (their others wait their turn outside the queue): one user's storm of writes never
stands between another user's write and the writer by more than one call.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
from anyio.abc import TaskGroup, TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from actors.audit import ACTING_FOR, CHANGED_BY
from actors.channels import receive, send
from actors.errors import ArchiveUnavailable, MnemoError, NotHome, Rejected
from actors.events import EventBus
from actors.keyed import KeyedLocks
from actors.keys import key_vectors
from actors.ports import Embedder, Store
from schemas.records import ArchivedMessage, WorkingMemory

__all__ = ["ArchiveWriter", "WriterStats"]

_log = logging.getLogger("mnemo.writer")
_T = TypeVar("_T")
_QUEUE_SIZE = 4096
_FLUSH_TIMEOUT = 10.0


@dataclass(slots=True, eq=False)
class _Append:
    rows: Sequence[ArchivedMessage]
    #: Answer the waiter at the first failed write rather than once the rows land.
    impatient: bool = False
    done: anyio.Event = field(default_factory=anyio.Event)
    error: MnemoError | None = None


@dataclass(slots=True, eq=False)
class _Call:
    fn: Callable[[], Awaitable[Any]]
    #: Whether queued snapshots and coalesced writes land first (see ``call``).
    barrier: bool = True
    #: Who asked (``actors.audit.CHANGED_BY`` in the caller's task), for its log entries.
    changed_by: str = field(default_factory=CHANGED_BY.get)
    #: Whose memory it writes (``actors.audit.ACTING_FOR`` in the caller's task).
    user_id: str | None = field(default_factory=ACTING_FOR.get)
    done: anyio.Event = field(default_factory=anyio.Event)
    result: Any = None
    error: BaseException | None = None


class _Wake:
    """Mail that only wakes the writer to flush working-memory snapshots."""


_Op = _Append | _Call | _Wake


@dataclass(slots=True)
class WriterStats:
    batches: int = 0
    rows: int = 0
    retries: int = 0
    optimizes: int = 0
    last_batch_rows: int = 0


class ArchiveWriter:
    """Owns every write to the store. Start ``run()`` in a task group, then call the methods."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        *,
        batch_max: int = 1024,
        linger: float = 0.002,
        optimize_interval: float = 60.0,
        optimize_after_writes: int = 100,
        optimizer: Callable[[float], Awaitable[None]] | None = None,
        cleanup_older_than: float = 3600.0,
        snapshot_interval: float = 1.0,
        flush: Callable[[], Awaitable[int]] | None = None,
        flush_interval: float = 1.0,
        flush_rows: int = 2000,
        pending: Callable[[], int] | None = None,
        events: EventBus | None = None,
        name: str = "archive",
        guard: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        self._store, self._embedder = store, embedder
        #: Raises ``NotHome`` for a user a cluster node no longer serves (and fences a
        #: user it serves, once): awaited right before each call that writes for a user
        #: runs, and for each working-memory snapshot.
        self._guard = guard
        #: ``store.*`` events carry ``writer=name`` (``archive`` or ``facts``).
        self._events, self.name = events or EventBus(), name
        self._batch_max, self._linger = batch_max, linger
        self._optimize_interval = optimize_interval
        self._optimize_after_writes = optimize_after_writes
        self._optimizer = optimizer
        self._writes = 0
        self._cleanup_older_than = cleanup_older_than
        self._snapshot_interval = snapshot_interval
        self._next_snapshot = 0.0
        #: Moves journaled rows into the table (``Store.flush_messages``): in the
        #: background, after ``flush_interval`` seconds or ``flush_rows`` rows.
        self._flush = flush
        self._flush_interval, self._flush_rows = flush_interval, flush_rows
        #: How many writes the store holds journaled for ``flush`` (the facts writer's:
        #: its calls journal their writes in the store, ``Store.learned_pending``).
        self._pending = pending
        #: Its moves' name in ``store.*`` events: ``table`` (the archive's messages), or
        #: ``learned`` (the facts writer's facts, log entries and links).
        self._table_name = "table" if name == "archive" else "learned"
        self._unflushed = 0
        self._flush_at = 0.0
        self._moving = False
        self._send: MemoryObjectSendStream[_Op]
        self._receive: MemoryObjectReceiveStream[_Op]
        self._send, self._receive = anyio.create_memory_object_stream[_Op](_QUEUE_SIZE)
        self._working: dict[tuple[str, str], WorkingMemory] = {}
        self._flushers: list[Callable[[], Awaitable[None]]] = []
        self._flush_wanted = False
        #: Sessions whose snapshots are to be deleted (with old versions), a purge of old
        #: snapshot versions wanted, and the events their waiters wait on.
        self._forgotten: dict[tuple[str, str], None] = {}
        self._purge_wanted = False
        self._working_waiters: list[anyio.Event] = []
        self._working_retry = False
        self._stopped = False
        self._wake_pending = False
        self._carry: _Op | None = None
        self._dirty = False
        self._optimizing = False
        self._snapshotting = False
        self._snapshot_lock = anyio.Lock()
        #: The requests of the write under way (answered if it crashes).
        self._in_flight: list[_Append | _Call] = []
        #: The users with a call queued or running (``call``).
        self._calling = KeyedLocks()
        self.stats = WriterStats()

    # -- API for other tasks -------------------------------------------------

    async def append(self, rows: Sequence[ArchivedMessage], *, patient: bool = True) -> None:
        """Return once ``rows`` are durable. Cancelling the wait leaves the write queued.

        Raises ``ArchiveUnavailable`` if the writer stopped before the rows landed, and
        ``Rejected`` if the store cannot take them (nothing of them is written). Not
        ``patient``: also ``ArchiveUnavailable`` as soon as a write of them fails (the
        embedder or the store is down); they stay queued and are tried again.
        """
        op = _Append(rows, impatient=not patient)
        await self._enqueue(op)
        await op.done.wait()
        if op.error is not None:
            raise op.error

    def append_nowait(self, rows: Sequence[ArchivedMessage]) -> None:
        """Queue rows without waiting for durability. Raises ``ArchiveUnavailable`` if full."""
        try:
            self._send.send_nowait(_Append(rows))
        except (anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise ArchiveUnavailable("the archive queue is full") from None

    async def call(self, fn: Callable[[], Awaitable[_T]], *, barrier: bool = True) -> _T:
        """Run ``fn`` in the writer's task, after every write queued before it; the
        caller's user (``actors.audit.ACTING_FOR``) has one call queued at a time.

        With ``barrier`` (the default) the working-memory snapshots and coalesced
        writes (``request_flush``) waiting for their interval land first, so a delete
        leaves nothing behind. ``barrier=False`` is for the hot calls that neither
        delete nor read what those writes hold (storing and marking facts): they leave
        the coalesced writes to their interval instead of paying for them each time.
        """
        op = _Call(fn, barrier)
        if op.user_id is None:  # the server's own upkeep
            await self._enqueue(op)
            await op.done.wait()
        else:
            async with self._calling.hold(op.user_id):  # one queued call per user
                await self._enqueue(op)
                await op.done.wait()
        if op.error is not None:
            raise op.error
        result: _T = op.result
        return result

    def journaled(self, rows: int) -> None:
        """Count ``rows`` appended to the store's journal (by this writer's appends, or by
        a ``call`` such as an import's), so they move into the table after
        ``flush_interval`` seconds or ``flush_rows`` rows like every other append."""
        if self._flush is None or not rows:
            return
        if not self._unflushed:
            self._flush_at = anyio.current_time() + self._flush_interval
        self._unflushed += rows

    def put_working(self, user_id: str, memory: WorkingMemory) -> None:
        """Queue a working-memory snapshot; only the newest per session is written.

        Snapshots are written at most every ``snapshot_interval`` seconds (and
        before any ordered call, and at shutdown), never on a turn's ack path.
        """
        self._working[(user_id, memory.session_id)] = memory
        self._wake()

    def add_flusher(self, flusher: Callable[[], Awaitable[None]]) -> None:
        """Run ``flusher`` in the writer's task whenever snapshots are written and
        ``request_flush()`` was called since: for other coalesced writes."""
        self._flushers.append(flusher)

    def request_flush(self) -> None:
        """Ask for the flushers to run at the next snapshot time."""
        self._flush_wanted = True
        self._wake()

    def _wake(self) -> None:
        if not self._wake_pending:
            try:
                self._send.send_nowait(_Wake())
                self._wake_pending = True
            except (anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass  # the next queued write flushes snapshots too

    async def forget_working(self, user_id: str, session_id: str) -> None:
        """Delete a session's snapshot (after any queued one for it is dropped) and every
        old version of it: on return it is nowhere on disk. Done beside the appends, with
        the snapshot writes (deletes waiting meanwhile share one purge); raises
        ``ArchiveUnavailable`` if the writer stopped first."""
        self._working.pop((user_id, session_id), None)
        self._forgotten[(user_id, session_id)] = None
        await self._wait_working()

    async def purge_working(self) -> None:
        """Drop every old version of the working-memory snapshots (a user's delete-all:
        what ended sessions held must not stay in old versions)."""
        self._purge_wanted = True
        await self._wait_working()

    async def _wait_working(self) -> None:
        if self._stopped:
            raise ArchiveUnavailable("the archive writer has stopped")
        done = anyio.Event()
        self._working_waiters.append(done)
        self._wake()
        await done.wait()
        if self._stopped:
            raise ArchiveUnavailable("the archive writer has stopped")

    async def _enqueue(self, op: _Op) -> None:
        try:
            await send(self._send, op)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise ArchiveUnavailable("the archive writer has stopped") from None

    # -- the writer's own task -----------------------------------------------

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Write until cancelled, then flush what is queued (shielded, bounded in time).

        If a write raises something unexpected, the requests of that write are answered
        with ``ArchiveUnavailable`` and the error propagates, but the queue stays open:
        the supervisor calls ``run()`` again and everyone else's writes carry on.
        """
        task_status.started()
        stopping = False
        try:
            async with anyio.create_task_group() as background:
                await self._write_until_cancelled(background)
        except anyio.get_cancelled_exc_class():
            stopping = True
            raise
        finally:
            if stopping:
                with anyio.CancelScope(shield=True), anyio.move_on_after(_FLUSH_TIMEOUT):
                    await self._drain()
                self._fail_queued()
            else:
                self._fail_in_flight()

    async def _write_until_cancelled(self, background: TaskGroup) -> None:
        next_optimize = anyio.current_time() + self._optimize_interval
        while True:
            op = self._carry
            self._carry = None
            if op is None:
                deadline = next_optimize
                if self._snapshot_waiting() and not self._snapshotting:
                    deadline = min(deadline, self._snapshot_at())
                if self._unflushed and not self._moving:
                    deadline = min(deadline, self._flush_at)
                with anyio.move_on_after(max(0.0, deadline - anyio.current_time())):
                    op = await receive(self._receive)
            if op is not None:
                await self._handle(op)
            self._count_pending()
            if not self._snapshotting and self._snapshot_due():
                # Snapshots (a merge into another table) never hold up the appends.
                self._snapshotting = True
                background.start_soon(self._snapshot)
            if self._move_due():
                self._moving = True
                background.start_soon(self._move)
            # Also under constant load: a busy writer must still compact on schedule.
            due = anyio.current_time() >= next_optimize
            if due or self._writes >= self._optimize_after_writes:
                if self._dirty and not self._optimizing:
                    # Compaction takes seconds on a big table: it runs beside the
                    # writes (LanceDB commits appends and rewrites concurrently).
                    self._optimizing, self._dirty, self._writes = True, False, 0
                    background.start_soon(self._optimize)
                next_optimize = anyio.current_time() + self._optimize_interval

    async def _handle(self, op: _Op) -> None:
        if isinstance(op, _Append):
            if self._linger > 0:
                await anyio.sleep(self._linger)
            await self._write_batch(self._gather(op))
        elif isinstance(op, _Call):
            self._in_flight = [op]
            if op.barrier:
                async with self._snapshot_lock:  # snapshots queued before the call land first
                    await self._flush_working()
            token = CHANGED_BY.set(op.changed_by)
            try:
                if self._guard is not None and op.user_id is not None:
                    await self._guard(op.user_id)  # a cluster node no longer serving: NotHome
                op.result = await op.fn()
            except MnemoError as exc:
                op.error = exc
            except (OSError, ValueError, RuntimeError) as exc:
                _log.error("store call failed: %s", exc)
                op.error = ArchiveUnavailable(str(exc))
            finally:
                CHANGED_BY.reset(token)
            self._in_flight = []
            op.done.set()
            self._mark_dirty()
        else:
            self._wake_pending = False

    def _fail_in_flight(self) -> None:
        """After a crash: answer the requests whose write raised, so nobody waits on them."""
        for op in self._in_flight:
            if not op.done.is_set():
                op.error = ArchiveUnavailable("the write failed; the writer carries on")
                op.done.set()
        self._in_flight = []

    def _gather(self, first: _Append) -> list[_Append]:
        batch, rows = [first], len(first.rows)
        while rows < self._batch_max:
            try:
                op = self._receive.receive_nowait()
            except anyio.WouldBlock:
                break
            if not isinstance(op, _Append):
                if isinstance(op, _Wake):
                    self._wake_pending = False
                    continue
                self._carry = op
                break
            batch.append(op)
            rows += len(op.rows)
        return batch

    async def _write_batch(self, batch: list[_Append]) -> None:
        self._in_flight = list(batch)
        rows = [r for op in batch for r in op.rows]
        delay = 0.05
        started = anyio.current_time()
        while True:
            try:
                vectors = await key_vectors(self._embedder, rows)
                await self._store.append_messages(rows, vectors)
                break
            except Rejected as exc:
                # Rows the store cannot take (nothing of them was written): refuse the
                # request they came with, and write everyone else's.
                await self._reject(batch, exc)
                return
            except MnemoError as exc:
                self.stats.retries += 1
                _log.warning("archive write of %d rows failed, retrying: %s", len(rows), exc)
                self._events.emit("store.failed", writer=self.name, rows=len(rows), error=str(exc))
                for op in batch:
                    if op.impatient and not op.done.is_set():
                        op.error = ArchiveUnavailable(f"not yet durable, retrying: {exc}")
                        op.done.set()
                await anyio.sleep(delay)
                delay = min(delay * 2, 5.0)
        self.stats.batches += 1
        self.stats.rows += len(rows)
        self.stats.last_batch_rows = len(rows)
        ms = round((anyio.current_time() - started) * 1000, 3)
        self._events.emit("store.flushed", writer=self.name, rows=len(rows), ms=ms)
        if self._flush is None:
            self._mark_dirty()
        else:  # journaled: the table gets them at the next move
            self.journaled(len(rows))
        for op in batch:
            op.done.set()
        self._in_flight = []

    async def _reject(self, batch: list[_Append], exc: Rejected) -> None:
        if len(batch) > 1:
            for op in batch:  # one at a time: only the culprit is refused
                await self._write_batch([op])
            return
        [op] = batch
        _log.warning("refused to archive %d rows: %s", len(op.rows), exc)
        self._events.emit("store.failed", writer=self.name, rows=len(op.rows), error=str(exc))
        op.error = exc
        op.done.set()
        self._in_flight = []

    def _count_pending(self) -> None:
        """Take the store's count of journaled writes (a ``pending`` writer's): they move
        after ``flush_interval`` seconds or ``flush_rows`` writes, as appends do."""
        if self._pending is None or self._moving:
            return
        count = self._pending()
        if count and not self._unflushed:
            self._flush_at = anyio.current_time() + self._flush_interval
        self._unflushed = count

    def _move_due(self) -> bool:
        if not self._unflushed or self._moving:
            return False
        return self._unflushed >= self._flush_rows or anyio.current_time() >= self._flush_at

    async def _move(self) -> None:
        """Background: journaled rows into the table (shielded: a started move finishes)."""
        assert self._flush is not None
        rows, self._unflushed = self._unflushed, 0
        started = anyio.current_time()
        try:
            with anyio.CancelScope(shield=True), anyio.move_on_after(_FLUSH_TIMEOUT) as scope:
                moved = await self._flush()
            if scope.cancelled_caught:
                raise ArchiveUnavailable(f"no answer from the store in {_FLUSH_TIMEOUT} s")
            ms = round((anyio.current_time() - started) * 1000, 3)
            self._events.emit("store.flushed", writer=self._table_name, rows=moved, ms=ms)
            self._mark_dirty()
        except MnemoError as exc:
            _log.warning("moving %d journaled rows into the table failed: %s", rows, exc)
            self._events.emit("store.failed", writer=self._table_name, rows=rows, error=str(exc))
            self._unflushed += rows  # still journaled: try again after the interval
            self._flush_at = anyio.current_time() + self._flush_interval
        finally:
            self._moving = False
            self._wake()

    def _snapshot_waiting(self) -> bool:
        return bool(self._working) or self._flush_wanted or bool(self._working_waiters)

    def _snapshot_at(self) -> float:
        """When the next snapshot write is due: deletes at once, unless they just failed."""
        return 0.0 if self._working_waiters and not self._working_retry else self._next_snapshot

    def _snapshot_due(self) -> bool:
        return self._snapshot_waiting() and anyio.current_time() >= self._snapshot_at()

    async def _snapshot(self) -> None:
        """Background: write the due snapshots (shielded: taken snapshots always land)."""
        try:
            with anyio.CancelScope(shield=True), anyio.move_on_after(_FLUSH_TIMEOUT):
                async with self._snapshot_lock:
                    await self._flush_working()
        finally:
            self._snapshotting = False
            self._wake()  # snapshots queued meanwhile: the loop schedules the next write

    async def _flush_working(self) -> None:
        if not self._snapshot_waiting():
            return
        self._next_snapshot = anyio.current_time() + self._snapshot_interval
        items = [(user, memory) for (user, _), memory in self._working.items()]
        self._working.clear()
        forgotten, self._forgotten = list(self._forgotten), {}
        if self._guard is not None:  # another node's users are theirs to write
            items = [i for i in items if await self._home(i[0])]
            forgotten = [f for f in forgotten if await self._home(f[0])]
        # (A user whose fencing failed stays: the write fails too, and all are tried again.)
        purge, self._purge_wanted = self._purge_wanted or bool(forgotten), False
        waiters, self._working_waiters = self._working_waiters, []
        started = anyio.current_time()
        try:
            for user, session in forgotten:  # before: a session opened again keeps its new one
                await self._store.delete_working(user, session)
            if items:
                await self._store.put_working(items)
                ms = round((anyio.current_time() - started) * 1000, 3)
                self._events.emit("store.flushed", writer="working", rows=len(items), ms=ms)
            if purge:
                await self._store.purge_working()
        except MnemoError as exc:
            _log.warning("working-memory snapshot write failed: %s", exc)
            for user, memory in items:
                self._working.setdefault((user, memory.session_id), memory)
            self._forgotten.update(dict.fromkeys(forgotten))
            self._purge_wanted = self._purge_wanted or purge
            self._working_waiters = waiters + self._working_waiters  # the next try is theirs
            self._working_retry = True
        else:
            self._working_retry = False
            for done in waiters:
                done.set()
        if self._flush_wanted:
            self._flush_wanted = False
            for flusher in self._flushers:
                try:
                    await flusher()
                except MnemoError as exc:
                    _log.warning("coalesced write failed: %s", exc)
        self._mark_dirty()

    async def _home(self, user_id: str) -> bool:
        """Whether this node still writes ``user_id``'s memory (a cluster's guard)."""
        assert self._guard is not None
        try:
            await self._guard(user_id)
        except NotHome:
            return False
        except MnemoError as exc:
            _log.warning("could not fence a user before their snapshot: %s", exc)
        return True

    def _mark_dirty(self) -> None:
        """Count a write: every LanceDB write adds a fragment and a version, which slow
        queries down until the next optimize."""
        self._dirty = True
        self._writes += 1

    async def _optimize(self) -> None:
        started = anyio.current_time()
        try:
            if self._optimizer is not None:
                await self._optimizer(self._cleanup_older_than)
            else:
                await self._store.optimize(cleanup_older_than=self._cleanup_older_than)
        except MnemoError as exc:
            _log.warning("optimize failed: %s", exc)
            self._events.emit(
                "store.failed", writer=self.name, operation="optimize", error=str(exc)
            )
            self._dirty = True  # try again at the next occasion
            return
        finally:
            self._optimizing = False
        self.stats.optimizes += 1
        _log.info("store optimized")
        ms = round((anyio.current_time() - started) * 1000, 3)
        self._events.emit("store.optimized", writer=self.name, ms=ms)

    async def _drain(self) -> None:
        """Write everything still queued; used once, at shutdown."""
        if self._carry is not None:
            await self._handle(self._carry)
            self._carry = None
        while True:
            try:
                op = self._receive.receive_nowait()
            except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                break
            await self._handle(op)
        async with self._snapshot_lock:
            await self._flush_working()
        if self._flush is not None:
            try:
                await self._flush()
            except MnemoError as exc:  # journaled: the next start replays them
                _log.warning("journaled rows stay in the journal: %s", exc)

    def _fail_queued(self) -> None:
        self._stopped = True
        for done in self._working_waiters:
            done.set()
        self._working_waiters = []
        self._send.close()
        while True:
            try:
                op = self._receive.receive_nowait()
            except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                break
            if isinstance(op, _Append):
                op.error = ArchiveUnavailable("the archive writer stopped")
                op.done.set()
            elif isinstance(op, _Call):
                op.error = ArchiveUnavailable("the archive writer stopped")
                op.done.set()
        self._receive.close()
