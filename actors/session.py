"""SessionActor: one chat session, one mailbox, one task.

Only ``run()`` touches the session's working memory and history. Other tasks
talk to it through ``submit_nowait()``, passing a reply stream that the actor
closes once the message is answered.
"""

from __future__ import annotations

import logging
import secrets
from collections import deque
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

import anyio
import msgspec
from anyio.abc import TaskGroup, TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from actors.audit import ACTING_FOR
from actors.channels import receive, send
from actors.context import FORMAT_NAMES, chat_context
from actors.errors import (
    ArchiveUnavailable,
    LlmFailure,
    MnemoError,
    Overloaded,
    Rejected,
    SessionClosed,
)
from actors.events import LOG_CONTEXT, EventKind
from actors.keeper import changes_frame, emit_changes
from actors.learning import Extracted, SessionLearning
from actors.mailbox import Mail, SessionDeps, answer_closed, send_reply
from memory.prompts import Exchange, exchanges_of
from memory.recall import said
from memory.tokens import estimate_tokens
from memory.working import apply_set, record_message, set_problem
from schemas.llm import PromptMessage
from schemas.records import ArchivedMessage, Role, WorkingMemory
from schemas.wire import (
    Ack,
    Chat,
    ContextBlock,
    ContextRequest,
    Delta,
    Done,
    End,
    ErrorFrame,
    Remember,
    ServerMessage,
    Set,
    Turn,
    Usage,
    is_blank,
)

__all__ = ["SessionActor"]

_log = logging.getLogger("mnemo.session")
_FINAL_TIMEOUT = 10.0


def _ignore(_: ServerMessage) -> None:
    pass


def _run_inline(_: Callable[[], Awaitable[None]]) -> None:
    pass


class Expire:
    """Mail from the registry's idle timer: end now if still idle."""


def new_message_id() -> str:
    return "msg_" + secrets.token_hex(8)


class SessionActor:
    """Serves one (user, session) pair until ``end``, idle expiry or cancellation."""

    def __init__(
        self,
        user_id: str,
        session_id: str,
        deps: SessionDeps,
        *,
        memory: WorkingMemory | None = None,
        history: list[PromptMessage] | None = None,
        scope: str = "global",
        publish: Callable[[ServerMessage], None] = _ignore,
        spawn: Callable[[Callable[[], Awaitable[None]]], None] = _run_inline,
    ) -> None:
        self.user_id, self.session_id, self.scope = user_id, session_id, scope
        #: Reads see ``global`` plus this session's scope (DESIGN: scope filter).
        self._scope_filter = None if scope == "global" else scope
        self._deps = deps
        self._settings = deps.settings
        self._mailbox: MemoryObjectSendStream[Mail | Extracted | Expire]
        self._inbox: MemoryObjectReceiveStream[Mail | Extracted | Expire]
        self._mailbox, self._inbox = anyio.create_memory_object_stream[Mail | Extracted | Expire](
            deps.settings.mailbox_size
        )
        #: The extraction tasks' way in; stays open after the mailbox closes to clients.
        self._internal = self._mailbox.clone()
        self._learning = SessionLearning(
            user_id, session_id, scope, deps.learning, publish=publish, spawn=spawn
        )
        self._tg: TaskGroup | None = None
        self._memory = memory
        self._history: deque[PromptMessage] = deque(
            history or [], maxlen=max(deps.settings.history_messages, 0)
        )
        self._current: Mail | None = None
        self._state = "idle"
        self.ended = False
        #: ``anyio.current_time()`` of the last mail: the idle timeout counts from it.
        self.last_active = anyio.current_time()

    @property
    def state(self) -> str:
        """``streaming`` while a reply streams, ``extracting`` while facts are extracted."""
        return self._state if self._state != "idle" else self._learning.state

    @property
    def memory(self) -> WorkingMemory | None:
        """The working memory as of now (read-only snapshot; structs are frozen)."""
        return self._memory

    @property
    def mailbox_depth(self) -> int:
        """Mail waiting for the actor (not counting what it is handling now)."""
        return self._inbox.statistics().current_buffer_used

    @property
    def turn_count(self) -> int:
        return self._memory.turn_count if self._memory is not None else 0

    def submit_nowait(self, mail: Mail) -> None:
        """Queue ``mail``. Raises ``Overloaded`` when the mailbox is full and
        ``SessionClosed`` when the actor has stopped; in both cases it closes
        ``mail.reply_to`` itself."""
        try:
            self._mailbox.send_nowait(mail)
        except anyio.WouldBlock:
            mail.reply_to.close()
            raise Overloaded(f"session {self.session_id} has too many queued messages") from None
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            mail.reply_to.close()
            raise SessionClosed(self.session_id) from None

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Handle mail until ``end``, idle expiry (``Settings.idle_timeout``, timed by the
        registry: ``expire_nowait``) or cancellation.

        ``end`` and expiry finish the session: pending extraction runs, queued
        archive writes land, then its working memory is forgotten. On cancellation
        (server shutdown) the working memory is kept, so the session resumes later.
        """
        task_status.started()
        LOG_CONTEXT.set((self.user_id, self.session_id))  # this task and the ones it starts
        ACTING_FOR.set(self.user_id)
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                await self._loop()
        finally:
            self._tg = None
            self._close_mailbox()
            self._internal.close()
            if not self.ended and self._memory is not None:
                self._deps.writer.put_working(self.user_id, self._memory)

    async def _loop(self) -> None:
        while not self.ended:
            mail = await receive(self._inbox)
            if isinstance(mail, Expire):
                if anyio.current_time() - self.last_active >= self._settings.idle_timeout:
                    _log.info("session %s expired after idle timeout", self.session_id)
                    self._emit("actor.expired", turns=self.turn_count)
                    await self._end_session()
                continue
            self.last_active = anyio.current_time()
            if isinstance(mail, Extracted):
                await self._extracted(mail)
            else:
                self._current = mail  # answered by _close_mailbox if handling fails
                await self._handle(mail)
                mail.reply_to.close()
                self._current = None
            self.last_active = anyio.current_time()  # idle from the end of the work

    def forgo_note(self) -> None:
        """End without writing the app's note: its notes were deleted while the session
        was on (uninstalling the app with ``purge``)."""
        self._learning.keep_note = False

    def expire_nowait(self) -> None:
        """Ask the actor to end if it has been idle for ``Settings.idle_timeout`` by the
        time it reads this (the registry's timer calls it; a busy actor ignores it)."""
        try:
            self._internal.send_nowait(Expire())
        except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass  # busy or stopped: the registry asks again later

    async def _extracted(self, mail: Extracted) -> None:
        self._memory = self._learning.apply(mail, self._memory)
        if self._memory is not None:
            self._deps.writer.put_working(self.user_id, self._memory)
        # After a failure the turns wait for the next turn (or the end), not a hot loop.
        if self._tg is not None and not self.ended and mail.result is not None:
            self._learning.start(self._tg, self._deliver)

    def _close_mailbox(self) -> None:
        """Stop accepting mail and answer whatever is still queued (no await)."""
        self._mailbox.close()
        pending = [self._current] if self._current is not None else []
        while True:
            try:
                mail = self._inbox.receive_nowait()
            except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                break
            if isinstance(mail, Mail):
                pending.append(mail)
        self._inbox.close()
        for mail in pending:
            answer_closed(mail)
        self._current = None

    async def _end_session(self) -> None:
        """Finish the session: wait for a running extraction and extract what is pending,
        start the end-of-conversation note, let every queued write land, then forget."""
        self.ended = True
        self._mailbox.close()  # clients now get session_closed; extraction still delivers
        with anyio.move_on_after(_FINAL_TIMEOUT * 12):
            while self._learning.state == "extracting":
                mail = await receive(self._inbox)
                if isinstance(mail, Extracted):
                    self._memory = self._learning.apply(mail, self._memory)
                elif isinstance(mail, Mail):
                    answer_closed(mail)
        exchanges = exchanges_of(self._history)
        await self._learning.finish(self._memory, exchanges)
        try:
            with anyio.fail_after(_FINAL_TIMEOUT):
                await self._deps.writer.forget_working(self.user_id, self.session_id)
        except (TimeoutError, ArchiveUnavailable) as exc:
            _log.warning("final archive of session %s failed: %s", self.session_id, exc)

    # -- handlers --------------------------------------------------------------

    async def _handle(self, mail: Mail) -> None:
        match mail.message:
            case Chat() as chat:
                await self._chat(chat, mail.reply_to, mail.posted)
            case Turn() as turn:
                await self._turn(turn, mail.reply_to)
            case ContextRequest() as request:
                await self._context(request, mail.reply_to)
            case Remember() as request:
                await self._remember_fact(request, mail.reply_to)
            case Set(topic=topic, variables=variables, id=ident):
                problem = set_problem(self._memory, variables)
                if problem is not None:
                    await send_reply(
                        mail.reply_to, ErrorFrame(id=ident, code="bad_request", message=problem)
                    )
                    return
                self._memory = apply_set(
                    self._memory, self.session_id, self._now(), topic=topic, variables=variables
                )
                self._deps.writer.put_working(self.user_id, self._memory)
            case End():
                self._emit("actor.ended", turns=self.turn_count)
                await self._end_session()

    def _now(self) -> datetime:
        return self._deps.clock.now()

    def _emit(self, kind: EventKind, **data: Any) -> None:
        self._deps.events.emit(kind, session_id=self.session_id, user_id=self.user_id, **data)

    def _row(
        self,
        turn: int,
        role: Role,
        text: str,
        source_id: str,
        meta: dict[str, Any],
        after: str | None = None,
    ) -> ArchivedMessage:
        """A message to archive; ``after`` is the message it answers (``speaker: text``),
        by default the session's last one."""
        if after is None:
            after = said(self._history[-1].role, self._history[-1].content) if self._history else ""
        return ArchivedMessage(
            id=new_message_id(),
            user_id=self.user_id,
            session_id=self.session_id,
            scope=self.scope,
            turn=turn,
            role=role,
            speaker=role,
            text=text,
            at=self._now(),
            meta=meta,
            source_id=source_id,
            context=after,
        )

    async def _turn(self, turn: Turn, reply: MemoryObjectSendStream[ServerMessage]) -> None:
        self._memory = record_message(self._memory, self.session_id, self._now())
        number = self._memory.turn_count
        self._emit("turn.received", id=turn.id, turn=number)
        received = anyio.current_time()
        asked = said("user", turn.user) if not is_blank(turn.user) else None
        rows = _spoken(
            [
                self._row(number, "user", turn.user, turn.id, turn.meta),
                self._row(number, "assistant", turn.assistant, turn.id, turn.meta, asked),
            ]
        )
        self._remember(rows)
        self._deps.writer.put_working(self.user_id, self._memory)
        answer: ServerMessage
        try:
            with anyio.fail_after(self._settings.ack_timeout):
                await self._deps.writer.append(rows)
            answer = Ack(id=turn.id, turn=number)
        except (TimeoutError, ArchiveUnavailable) as exc:
            answer = ErrorFrame(
                id=turn.id, code="archive_unavailable", message=f"turn not yet durable: {exc}"
            )
        except Rejected as exc:  # the store cannot take it: nothing of it was written
            answer = ErrorFrame(id=turn.id, code=exc.code, message=f"turn not stored: {exc}")
        await send_reply(reply, answer)
        if isinstance(answer, Ack):
            ms = round((anyio.current_time() - received) * 1000, 3)
            self._emit("turn.acked", id=turn.id, turn=number, ms=ms)
            self._learn(number, turn.user, turn.assistant)
        else:
            self._emit("store.failed", id=turn.id, turn=number, error=answer.message)

    def _learn(self, turn: int, user: str, assistant: str) -> None:
        """Queue the exchange for extraction; off the reply's critical path."""
        self._learning.add(Exchange(turn, user, assistant))
        if self._tg is not None:
            self._learning.start(self._tg, self._deliver)

    async def _deliver(self, mail: Extracted) -> None:
        """Mail an extraction result to this actor (called from its extraction task)."""
        try:
            await send(self._internal, mail)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            _log.warning("session %s stopped before its extraction result", self.session_id)

    async def _chat(
        self, chat: Chat, reply: MemoryObjectSendStream[ServerMessage], posted: float
    ) -> None:
        self._memory = record_message(self._memory, self.session_id, self._now())
        number = self._memory.turn_count
        self._emit("chat.received", id=chat.id, turn=number)
        user_row = self._row(number, "user", chat.content, chat.id, chat.meta)
        asked = said("user", chat.content)
        self._deps.writer.put_working(self.user_id, self._memory)
        started = anyio.current_time()
        memory = await chat_context(
            self._deps.context,
            self.user_id,
            chat.content,
            scope=self._scope_filter,
            topic=self._memory.current_topic,
            history=[*self._history, PromptMessage("user", chat.content)],
            system_tokens=estimate_tokens(self._settings.system_prompt),
        )
        if memory.compaction_stage:
            self._emit(
                "context.compacted",
                id=chat.id,
                stage=memory.compaction_stage,
                messages=len(memory.history),
            )
        system = self._settings.system_prompt
        if memory.memory_text:
            system = f"{system}\n\n{memory.memory_text}"
        prompt = [PromptMessage("system", system), *memory.history]
        parts: list[str] = []
        context_ms = round((anyio.current_time() - started) * 1000, 3)
        queued_ms = round((started - posted) * 1000, 3)
        usage = Usage(
            context_tokens=memory.memory_tokens, context_ms=context_ms, queued_ms=queued_ms
        )
        self._state = "streaming"
        called = anyio.current_time()
        try:
            stream = self._deps.llm.stream_chat(prompt, model=self._settings.chat_model)
            async for chunk in stream:
                if not usage.model_first_ms:
                    first = max(round((anyio.current_time() - called) * 1000, 3), 0.001)
                    usage = msgspec.structs.replace(usage, model_first_ms=first)
                if chunk.text:
                    parts.append(chunk.text)
                    await send(reply, Delta(id=chat.id, text=chunk.text))
                if chunk.done:
                    usage = msgspec.structs.replace(
                        usage,
                        prompt_tokens=chunk.prompt_tokens,
                        completion_tokens=chunk.completion_tokens,
                    )
        except LlmFailure as exc:
            _log.warning("chat in session %s failed: %s (%s)", self.session_id, exc.code, exc)
            self._emit("llm.error", call="chat", code=exc.code, error=str(exc))
            self._emit("chat.failed", id=chat.id, code=exc.code)
            self._archive([user_row])
            await send_reply(reply, ErrorFrame(id=chat.id, code=exc.code, message=str(exc)))
            # What the user said teaches without a reply: with no model to extract either,
            # the rule-based reader reads it (``actors.extraction``).
            self._learn(number, chat.content, "")
            return
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            # The client went away mid-stream: keep what was said, stop generating.
            partial = {**chat.meta, "interrupted": True}
            answered = "".join(parts)
            self._archive(
                [user_row, self._row(number, "assistant", answered, chat.id, partial, asked)]
            )
            self._learn(number, chat.content, answered)
            return
        finally:
            self._state = "idle"
        assistant_row = self._row(number, "assistant", "".join(parts), chat.id, chat.meta, asked)
        self._remember([user_row, assistant_row])
        await self._archive_before_done([user_row, assistant_row])
        await send_reply(reply, Done(id=chat.id, turn=number, usage=usage))
        self._emit(
            "chat.streamed",
            id=chat.id,
            turn=number,
            ms=round((anyio.current_time() - started) * 1000, 3),
            app=self._scope_filter,
            notes=memory.notes,
            **msgspec.structs.asdict(usage),
        )
        self._learn(number, chat.content, assistant_row.text)

    async def _context(
        self, request: ContextRequest, reply: MemoryObjectSendStream[ServerMessage]
    ) -> None:
        budget = request.budget if request.budget is not None else self._settings.context_budget
        name = request.format or self._settings.context_format
        problem = None
        if name not in FORMAT_NAMES:
            problem = f"unknown context format {name!r}; known: {', '.join(FORMAT_NAMES)}"
        elif budget <= 0:
            problem = "budget must be positive"
        if problem is not None:
            await send_reply(reply, ErrorFrame(id=request.id, code="bad_request", message=problem))
            return
        topic = self._memory.current_topic if self._memory else None
        block = await self._deps.context.build(
            self.user_id,
            request.query,
            format=name,
            budget=budget,
            scope=self._scope_filter,
            topic=topic,
        )
        await send_reply(
            reply,
            ContextBlock(
                id=request.id,
                text=block.text,
                tokens=block.tokens,
                memory_ids=block.memory_ids,
                budget_needed=block.needed or None,
            ),
        )

    async def _remember_fact(
        self, request: Remember, reply: MemoryObjectSendStream[ServerMessage]
    ) -> None:
        try:
            changes = await self._deps.learning.keeper.remember(
                self.user_id,
                request.content,
                category=request.category,
                pinned=request.pinned,
                session_id=self.session_id,
                scope=self.scope,
            )
        except ValueError as exc:
            await send_reply(reply, ErrorFrame(id=request.id, code="bad_request", message=str(exc)))
            return
        except MnemoError as exc:
            await send_reply(reply, ErrorFrame(id=request.id, code=exc.code, message=str(exc)))
            return
        emit_changes(self._deps.events, changes, self.user_id, self.session_id)
        frame = changes_frame(changes, request.id)
        if frame is not None:
            await send_reply(reply, frame)

    async def _archive_before_done(self, rows: list[ArchivedMessage]) -> None:
        """Archive a chat's exchange and wait until it is durable (``ack_timeout`` at
        most), so that a ``done`` names a turn number the archive holds: after a crash the
        session resumes past it. A write that fails (the embedder or the store is down)
        or takes longer stays queued and is retried; the ``done`` goes out at once, the
        reply was streamed."""
        try:
            with anyio.fail_after(self._settings.ack_timeout):
                await self._deps.writer.append(_spoken(rows), patient=False)
        except (TimeoutError, ArchiveUnavailable, Rejected) as exc:
            _log.warning("chat of session %s not yet durable: %s", self.session_id, exc)

    def _archive(self, rows: list[ArchivedMessage]) -> None:
        rows = _spoken(rows)
        if not rows:
            return
        try:
            self._deps.writer.append_nowait(rows)
        except ArchiveUnavailable as exc:
            _log.error("could not queue %d rows of session %s: %s", len(rows), self.session_id, exc)

    def _remember(self, rows: list[ArchivedMessage]) -> None:
        for row in _spoken(rows):
            if row.role in ("user", "assistant"):
                self._history.append(PromptMessage(row.role, row.text))


def _spoken(rows: list[ArchivedMessage]) -> list[ArchivedMessage]:
    """The rows that say something: a blank side of a turn (or a model's empty reply) is
    not archived, so the archive holds only what an import takes back
    (``schemas.wire.text_problem``)."""
    return [row for row in rows if not is_blank(row.text)]
