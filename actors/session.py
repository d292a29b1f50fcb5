"""SessionActor: one chat session, one mailbox, one task.

Only ``run()`` touches the session's working memory and history. Other tasks
talk to it through ``submit_nowait()``, passing a reply stream that the actor
closes once the message is answered.
"""

from __future__ import annotations

import logging
import secrets
from collections import deque
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import anyio
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from actors.errors import ArchiveUnavailable, LlmFailure, MnemoError, Overloaded, SessionClosed
from actors.ports import Clock, Embedder, Llm, Store
from actors.writer import ArchiveWriter
from memory.recall import CONTEXT_FORMATS, RecalledBlock, format_recalled
from memory.working import apply_set, record_message
from schemas.llm import PromptMessage
from schemas.records import ArchivedMessage, Role, WorkingMemory
from schemas.settings import Settings
from schemas.wire import (
    Ack,
    Chat,
    ContextBlock,
    ContextRequest,
    Delta,
    Done,
    End,
    ErrorFrame,
    ServerMessage,
    Set,
    Turn,
    Usage,
)

__all__ = ["ActorMessage", "Mail", "SessionActor", "SessionDeps"]

_log = logging.getLogger("mnemo.session")
_FINAL_TIMEOUT = 10.0
_RECALL_K = 8

ActorMessage = Chat | Turn | ContextRequest | Set | End


@dataclass(frozen=True, slots=True)
class Mail:
    """A message for the actor and the stream its answers go to (the actor closes it)."""

    message: ActorMessage
    reply_to: MemoryObjectSendStream[ServerMessage]


@dataclass(frozen=True, slots=True)
class SessionDeps:
    """What every session actor of a server shares."""

    settings: Settings
    llm: Llm
    embedder: Embedder
    store: Store
    writer: ArchiveWriter
    clock: Clock


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
    ) -> None:
        self.user_id, self.session_id = user_id, session_id
        self._deps = deps
        self._settings = deps.settings
        self._mailbox: MemoryObjectSendStream[Mail]
        self._inbox: MemoryObjectReceiveStream[Mail]
        self._mailbox, self._inbox = anyio.create_memory_object_stream[Mail](
            deps.settings.mailbox_size
        )
        self._memory = memory
        self._history: deque[PromptMessage] = deque(
            history or [], maxlen=max(deps.settings.history_messages, 0)
        )
        self._current: Mail | None = None
        self.state = "idle"
        self.ended = False

    @property
    def memory(self) -> WorkingMemory | None:
        """The working memory as of now (read-only snapshot; structs are frozen)."""
        return self._memory

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
        """Handle mail until ``end``, idle expiry (``Settings.idle_timeout``) or cancellation.

        ``end`` and expiry finish the session: queued archive writes are awaited,
        then its working memory is forgotten. On cancellation (server shutdown)
        the working memory is kept, so the session resumes after a restart.
        """
        task_status.started()
        try:
            while not self.ended:
                mail: Mail | None = None
                with anyio.move_on_after(self._settings.idle_timeout):
                    mail = await self._inbox.receive()
                if mail is None:
                    _log.info("session %s expired after idle timeout", self.session_id)
                    self._close_mailbox()
                    await self._end_session()
                    break
                self._current = mail  # answered by _close_mailbox if handling fails
                await self._handle(mail)
                mail.reply_to.close()
                self._current = None
        finally:
            self._close_mailbox()
            if not self.ended and self._memory is not None:
                self._deps.writer.put_working(self.user_id, self._memory)

    def _close_mailbox(self) -> None:
        """Stop accepting mail and answer whatever is still queued (no await)."""
        self._mailbox.close()
        pending = [self._current] if self._current is not None else []
        while True:
            try:
                pending.append(self._inbox.receive_nowait())
            except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                break
        self._inbox.close()
        for mail in pending:
            ident = getattr(mail.message, "id", None)
            try:
                mail.reply_to.send_nowait(
                    ErrorFrame(id=ident, code="session_closed", message="the session has ended")
                )
            except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass
            mail.reply_to.close()
        self._current = None

    async def _end_session(self) -> None:
        """Final archive (every queued write of this session lands), then forget."""
        self.ended = True
        try:
            with anyio.fail_after(_FINAL_TIMEOUT):
                await self._deps.writer.forget_working(self.user_id, self.session_id)
        except (TimeoutError, ArchiveUnavailable) as exc:
            _log.warning("final archive of session %s failed: %s", self.session_id, exc)

    # -- handlers --------------------------------------------------------------

    async def _handle(self, mail: Mail) -> None:
        match mail.message:
            case Chat() as chat:
                await self._chat(chat, mail.reply_to)
            case Turn() as turn:
                await self._turn(turn, mail.reply_to)
            case ContextRequest() as request:
                await self._context(request, mail.reply_to)
            case Set(topic=topic, variables=variables):
                self._memory = apply_set(
                    self._memory, self.session_id, self._now(), topic=topic, variables=variables
                )
                self._deps.writer.put_working(self.user_id, self._memory)
            case End():
                await self._end_session()

    def _now(self) -> datetime:
        return self._deps.clock.now()

    def _row(
        self, turn: int, role: Role, text: str, source_id: str, meta: dict[str, Any]
    ) -> ArchivedMessage:
        return ArchivedMessage(
            id=new_message_id(),
            user_id=self.user_id,
            session_id=self.session_id,
            scope="global",
            turn=turn,
            role=role,
            speaker=role,
            text=text,
            at=self._now(),
            meta=meta,
            source_id=source_id,
        )

    async def _turn(self, turn: Turn, reply: MemoryObjectSendStream[ServerMessage]) -> None:
        self._memory = record_message(self._memory, self.session_id, self._now())
        number = self._memory.turn_count
        rows = [
            self._row(number, "user", turn.user, turn.id, turn.meta),
            self._row(number, "assistant", turn.assistant, turn.id, turn.meta),
        ]
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
        await _send(reply, answer)

    async def _chat(self, chat: Chat, reply: MemoryObjectSendStream[ServerMessage]) -> None:
        self._memory = record_message(self._memory, self.session_id, self._now())
        number = self._memory.turn_count
        user_row = self._row(number, "user", chat.content, chat.id, chat.meta)
        self._deps.writer.put_working(self.user_id, self._memory)
        recalled = await self._recall(
            chat.content, self._settings.context_budget, skip_history=True
        )
        system = self._settings.system_prompt
        if recalled.text:
            system = f"{system}\n\n{recalled.text}"
        prompt = [
            PromptMessage("system", system),
            *self._history,
            PromptMessage("user", chat.content),
        ]
        parts: list[str] = []
        usage = Usage(context_tokens=recalled.tokens)
        self.state = "streaming"
        try:
            stream = self._deps.llm.stream_chat(prompt, model=self._settings.chat_model)
            async for chunk in stream:
                if chunk.text:
                    parts.append(chunk.text)
                    await reply.send(Delta(id=chat.id, text=chunk.text))
                if chunk.done:
                    usage = Usage(
                        prompt_tokens=chunk.prompt_tokens,
                        completion_tokens=chunk.completion_tokens,
                        context_tokens=recalled.tokens,
                    )
        except LlmFailure as exc:
            _log.warning("chat in session %s failed: %s (%s)", self.session_id, exc.code, exc)
            self._archive([user_row])
            await _send(reply, ErrorFrame(id=chat.id, code=exc.code, message=str(exc)))
            return
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            # The client went away mid-stream: keep what was said, stop generating.
            partial = {**chat.meta, "interrupted": True}
            self._archive(
                [user_row, self._row(number, "assistant", "".join(parts), chat.id, partial)]
            )
            return
        finally:
            self.state = "idle"
        assistant_row = self._row(number, "assistant", "".join(parts), chat.id, chat.meta)
        self._archive([user_row, assistant_row])
        self._remember([user_row, assistant_row])
        await _send(reply, Done(id=chat.id, turn=number, usage=usage))

    async def _context(
        self, request: ContextRequest, reply: MemoryObjectSendStream[ServerMessage]
    ) -> None:
        budget = request.budget if request.budget is not None else self._settings.context_budget
        if request.format not in (None, *CONTEXT_FORMATS):
            known = ", ".join(CONTEXT_FORMATS)
            await _send(
                reply,
                ErrorFrame(
                    id=request.id,
                    code="bad_request",
                    message=f"unknown context format {request.format!r}; known: {known}",
                ),
            )
            return
        if budget <= 0:
            await _send(
                reply,
                ErrorFrame(id=request.id, code="bad_request", message="budget must be positive"),
            )
            return
        block = await self._recall(request.query, budget)
        await _send(
            reply,
            ContextBlock(
                id=request.id, text=block.text, tokens=block.tokens, memory_ids=block.memory_ids
            ),
        )

    async def _recall(
        self, query: str, budget: int, *, skip_history: bool = False
    ) -> RecalledBlock:
        """Relevant archived messages of this user, best first, within ``budget`` tokens.

        ``skip_history`` leaves out what the prompt already carries as history.
        A failing embedder or store degrades to an empty block: recall helps a
        reply but must never block it.
        """
        recent = {(m.role, m.content) for m in self._history} if skip_history else set()
        try:
            [vector] = await self._deps.embedder.embed([query])
            found = await self._deps.store.search_messages(
                self.user_id, query, vector, k=_RECALL_K + len(recent)
            )
        except MnemoError as exc:
            _log.warning("recall failed in session %s: %s", self.session_id, exc)
            return format_recalled([], budget)
        fresh = [m for m, _ in found if (m.role, m.text) not in recent][:_RECALL_K]
        return format_recalled(fresh, budget)

    def _archive(self, rows: list[ArchivedMessage]) -> None:
        try:
            self._deps.writer.append_nowait(rows)
        except ArchiveUnavailable as exc:
            _log.error("could not queue %d rows of session %s: %s", len(rows), self.session_id, exc)

    def _remember(self, rows: list[ArchivedMessage]) -> None:
        for row in rows:
            if row.role in ("user", "assistant"):
                self._history.append(PromptMessage(row.role, row.text))


async def _send(reply: MemoryObjectSendStream[ServerMessage], message: ServerMessage) -> None:
    """Send one answer; a client that went away is not an error of the actor."""
    try:
        await reply.send(message)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass
