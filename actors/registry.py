"""Starts, finds and forgets session actors: the supervision boundary."""

from __future__ import annotations

import functools
import heapq
import logging
from collections.abc import Awaitable, Callable

import anyio
import msgspec
from anyio.abc import TaskGroup, TaskStatus
from anyio.streams.memory import MemoryObjectSendStream

from actors.errors import MnemoError, Overloaded, SessionClosed, TooManySessions
from actors.events import EventKind
from actors.mailbox import ActorMessage, Mail, SessionDeps
from actors.session import SessionActor
from memory.working import new_working_memory
from schemas.llm import PromptMessage
from schemas.records import WorkingMemory
from schemas.wire import End, ServerMessage

__all__ = ["END_TIMEOUT", "SessionRegistry"]

_log = logging.getLogger("mnemo.registry")

_Key = tuple[str, str]
#: How long an ``end`` is waited for (its pending extraction included): by the connection
#: that sent it, and by ``end_app`` for each session.
END_TIMEOUT = 15.0


class SessionRegistry:
    """Live actors by (user id, session id), all running in one task group.

    Sessions of different users never share an actor, even with equal session ids.
    """

    def __init__(self, task_group: TaskGroup, deps: SessionDeps) -> None:
        self._tg = task_group
        self._deps = deps
        self._live: dict[_Key, SessionActor] = {}
        self._subscribers: dict[_Key, set[MemoryObjectSendStream[ServerMessage]]] = {}
        #: Sessions being opened (their store reads under way), and live or opening
        #: sessions per user (for ``max_sessions_per_user``).
        self._opening: dict[_Key, anyio.Event] = {}
        self._per_user: dict[str, int] = {}
        self.crashes = 0
        #: (when the session may have been idle for ``idle_timeout``, its key): one
        #: entry per key in ``_timed`` (keys only: a stopped actor is not kept alive).
        self._due: list[tuple[float, _Key]] = []
        self._timed: set[_Key] = set()
        self._timing = False
        self._preloading = False

    def get(self, user_id: str, session_id: str) -> SessionActor | None:
        return self._live.get((user_id, session_id))

    def live(self) -> list[SessionActor]:
        return list(self._live.values())

    async def open(
        self, user_id: str, session_id: str, scope: str = "global"
    ) -> tuple[SessionActor, bool]:
        """The session's actor, started if needed, and whether the session already existed
        (live here, a working-memory snapshot left by an earlier process, or archived
        turns: a session resumes with the turn count its archive proves).

        Raises ``TooManySessions`` when the user already has ``max_sessions_per_user``
        live sessions. Opening one session never waits for another's store reads.
        """
        key = (user_id, session_id)
        while True:
            actor = self._live.get(key)
            if actor is not None and not actor.ended:
                return actor, True
            if actor is not None:  # it takes no more mail: its successor starts now
                del self._live[key]
                self._forget_user(user_id)
            opening = self._opening.get(key)
            if opening is None:
                break
            await opening.wait()  # the same session, opened by another connection
        limit = self._deps.settings.max_sessions_per_user
        if self._per_user.get(user_id, 0) >= limit:
            raise TooManySessions(f"a user may have at most {limit} live sessions")
        done = self._opening[key] = anyio.Event()
        self._per_user[user_id] = self._per_user.get(user_id, 0) + 1
        started = False
        try:
            memory, history = await self._load(user_id, session_id)
            actor = SessionActor(
                user_id,
                session_id,
                self._deps,
                memory=memory,
                history=history,
                scope=scope,
                publish=lambda message: self._publish(key, message),
                spawn=self.spawn,
            )
            self._live[key] = actor
            await self._tg.start(self._supervise, key, actor)
            started = True
        finally:
            del self._opening[key]
            done.set()
            if not started:
                self._live.pop(key, None)
                self._forget_user(user_id)
        self._time(key, actor.last_active + self._deps.settings.idle_timeout)
        self.spawn(functools.partial(self._deps.store.warm, user_id))  # ready for its search
        self.preload_embedder_soon()
        kind: EventKind = "actor.resumed" if memory is not None else "actor.spawned"
        self._deps.events.emit(
            kind, session_id=session_id, user_id=user_id, scope=scope, turns=actor.turn_count
        )
        return actor, memory is not None

    async def _load(
        self, user_id: str, session_id: str
    ) -> tuple[WorkingMemory | None, list[PromptMessage]]:
        """The session's working memory and recent history, from its snapshot and its
        archive. Snapshots are written every few seconds, and a process can die before a
        session's first one: the archive has every acknowledged turn, so the turn count
        is the larger of the two and a turn number is never used twice."""
        store = self._deps.store
        try:
            memory = await store.get_working(user_id, session_id)
            rows = await store.session_messages(
                user_id, session_id, limit=max(self._deps.settings.history_messages, 1)
            )
        except MnemoError as exc:
            _log.warning("could not load session %s: %s", session_id, exc)
            return None, []
        history = [PromptMessage(r.role, r.text) for r in rows if r.role != "other"]
        archived = max((r.turn for r in rows), default=0)
        if memory is None and rows:
            memory = new_working_memory(session_id, self._deps.clock.now())
        if memory is not None and archived > memory.turn_count:
            memory = msgspec.structs.replace(memory, turn_count=archived)
        keep = self._deps.settings.history_messages
        return memory, history[-keep:] if keep > 0 else []

    def _forget_user(self, user_id: str) -> None:
        left = self._per_user.get(user_id, 0) - 1
        if left > 0:
            self._per_user[user_id] = left
        else:
            self._per_user.pop(user_id, None)

    def _time(self, key: _Key, due: float) -> None:
        if key in self._timed:
            return  # its entry is looked at first and put back for the newest actor
        self._timed.add(key)
        heapq.heappush(self._due, (due, key))
        if not self._timing:
            self._timing = True
            self._tg.start_soon(self._expire_idle)

    async def _expire_idle(self) -> None:
        """One timer for every actor's idle timeout, soonest first. An actor timing its
        own wait would leave a timer, a cancel scope and their context behind for the
        garbage collector with every message; here a session costs one heap entry,
        looked at once per ``idle_timeout`` (and put back if it was active meanwhile)."""
        timeout = self._deps.settings.idle_timeout
        try:
            while self._due:
                due, key = self._due[0]
                now = anyio.current_time()
                if due > now:
                    await anyio.sleep(due - now)
                    continue
                heapq.heappop(self._due)
                self._timed.discard(key)
                actor = self._live.get(key)
                if actor is None or actor.ended:
                    continue
                if actor.last_active + timeout > now:
                    self._time(key, actor.last_active + timeout)
                    continue
                actor.expire_nowait()
                self._time(key, now + timeout)  # in case it was busy after all
        finally:
            self._timing = False

    async def end_app(self, user_id: str, scope: str, *, notes: bool = True) -> int:
        """End the user's live sessions in ``scope`` as ``end`` does (the turns queued
        before it are handled, pending extraction runs, the conversation's note is started
        unless ``notes`` is False, the final archive lands) and return how many ended
        within ``END_TIMEOUT`` each (the others end later, as asked). A client still
        connected to one starts a new conversation with its next message, as after an
        idle expiry."""
        actors = [
            actor
            for (user, _), actor in list(self._live.items())
            if user == user_id and actor.scope == scope and not actor.ended
        ]
        if not notes:
            for actor in actors:
                actor.forgo_note()
        ended = 0

        async def end(actor: SessionActor) -> None:
            nonlocal ended
            send, receive = anyio.create_memory_object_stream[ServerMessage](1)
            with send, receive, anyio.move_on_after(END_TIMEOUT):
                while True:
                    try:
                        actor.submit_nowait(Mail(End(), send.clone()))
                        break
                    except SessionClosed:
                        return  # it ended on its own meanwhile
                    except Overloaded:
                        await anyio.sleep(0.05)  # a full mailbox: end after what it holds
                send.close()
                async for _ in receive:  # closed once the actor handled ``end``
                    pass
                ended += 1

        async with anyio.create_task_group() as group:
            for actor in actors:
                group.start_soon(end, actor)
        return ended

    def subscribe(
        self, user_id: str, session_id: str, stream: MemoryObjectSendStream[ServerMessage]
    ) -> Callable[[], None]:
        """Push the session's ``memory`` frames into ``stream`` until the returned
        function is called (which also closes ``stream``)."""
        key = (user_id, session_id)
        self._subscribers.setdefault(key, set()).add(stream)

        def unsubscribe() -> None:
            found = self._subscribers.get(key)
            if found is not None:
                found.discard(stream)
                if not found:
                    del self._subscribers[key]
            stream.close()

        return unsubscribe

    def _publish(self, key: _Key, message: ServerMessage) -> None:
        for stream in list(self._subscribers.get(key, ())):
            try:
                stream.send_nowait(message)
            except anyio.WouldBlock:
                _log.warning("dropped a push to a slow client of session %s", key[1])
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                self._subscribers.get(key, set()).discard(stream)

    def preload_embedder_soon(self) -> None:
        """A user showed up: load the embedder's model in the background, once (an idle
        server that has seen no user holds none; see ``Embedder.preload``)."""
        if not self._preloading:
            self._preloading = True
            self.spawn(self._deps.embedder.preload)

    async def preload_embedder(self) -> None:
        """Load the embedder's model now, once; a failure is logged (the first ``embed``
        tries again and reports it to its caller)."""
        if not self._preloading:
            self._preloading = True
            await self._background(self._deps.embedder.preload)

    def spawn(self, work: Callable[[], Awaitable[None]]) -> None:
        """Run ``work`` in the background (end-of-session notes); failures are logged."""
        self._tg.start_soon(self._background, work)

    async def _background(self, work: Callable[[], Awaitable[None]]) -> None:
        try:
            await work()
        except Exception:
            _log.exception("background work failed")

    async def submit(
        self,
        user_id: str,
        session_id: str,
        message: ActorMessage,
        outbox: MemoryObjectSendStream[ServerMessage],
        scope: str = "global",
    ) -> None:
        """Deliver ``message``; answers go to a clone of ``outbox`` (the caller keeps its own).

        An actor that has just stopped (ended, expired, crashed) is replaced once, in
        ``scope``. Raises ``Overloaded`` when the mailbox is full, ``TooManySessions``
        when its replacement would be one session too many.
        """
        actor = self.get(user_id, session_id)
        if actor is not None:
            try:
                actor.submit_nowait(Mail(message, outbox.clone()))
                return
            except SessionClosed:
                pass
        actor, _ = await self.open(user_id, session_id, scope)
        actor.submit_nowait(Mail(message, outbox.clone()))

    async def _supervise(
        self,
        key: _Key,
        actor: SessionActor,
        *,
        task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Run one actor; a crash is logged and the actor forgotten, never propagated,
        because under anyio it would cancel every other session in the group."""
        events, (user_id, session_id) = self._deps.events, key
        try:
            await actor.run(task_status=task_status)
        except Exception as exc:
            self.crashes += 1
            _log.exception("session actor %s of user %s crashed", key[1], key[0])
            events.emit("actor.crashed", session_id=session_id, user_id=user_id, error=repr(exc))
        except BaseException:
            events.emit("actor.stopped", session_id=session_id, user_id=user_id)
            raise
        finally:
            if self._live.get(key) is actor:
                del self._live[key]
                self._forget_user(user_id)
