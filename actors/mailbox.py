"""What a session actor receives and shares: its mail, the server-wide dependencies, and
the two ways an answer goes out."""

from __future__ import annotations

from dataclasses import dataclass, field

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from actors.channels import send
from actors.consolidation import Consolidator
from actors.context import ContextBuilder
from actors.entities import EntityKeeper
from actors.episodes import EpisodeKeeper
from actors.events import EventBus
from actors.learning import LearningDeps
from actors.links import LinkKeeper
from actors.ports import Clock, Embedder, Llm, Store
from actors.rules import RuleKeeper
from actors.writer import ArchiveWriter
from schemas.settings import Settings
from schemas.wire import (
    Chat,
    ContextRequest,
    End,
    ErrorFrame,
    Remember,
    ServerMessage,
    Set,
    Turn,
)

__all__ = ["ActorMessage", "Mail", "SessionDeps", "answer_closed", "send_reply"]

ActorMessage = Chat | Turn | ContextRequest | Remember | Set | End


@dataclass(frozen=True, slots=True)
class Mail:
    """A message for the actor and the stream its answers go to (the actor closes it)."""

    message: ActorMessage
    reply_to: MemoryObjectSendStream[ServerMessage]
    #: When it was posted (``anyio.current_time()``): what it waited in the mailbox shows.
    posted: float = field(default_factory=anyio.current_time)


@dataclass(frozen=True, slots=True)
class SessionDeps:
    """What every session actor of a server shares."""

    settings: Settings
    llm: Llm
    embedder: Embedder
    store: Store
    #: Archived messages and working memory (a turn's ack waits on this one only).
    writer: ArchiveWriter
    #: Facts, notes, profiles, progress: learned memory never delays an ack.
    fact_writer: ArchiveWriter
    clock: Clock
    events: EventBus
    context: ContextBuilder
    learning: LearningDeps
    #: Seed 002's rules (procedural memory), written through ``fact_writer``.
    rules: RuleKeeper
    #: Seed 002's entities, written through ``fact_writer``.
    entities: EntityKeeper
    #: Seed 002's provenance links, written through ``fact_writer``.
    links: LinkKeeper
    #: Seed 002's episodes stored directly, written through ``fact_writer``.
    episodes: EpisodeKeeper
    #: Seed 002's batch path from pending episodes to facts and rules.
    consolidator: Consolidator


async def send_reply(reply: MemoryObjectSendStream[ServerMessage], message: ServerMessage) -> None:
    """Send one answer; a client that went away is not an error of the actor."""
    try:
        await send(reply, message)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass


def answer_closed(mail: Mail) -> None:
    ident = getattr(mail.message, "id", None)
    try:
        mail.reply_to.send_nowait(
            ErrorFrame(id=ident, code="session_closed", message="the session has ended")
        )
    except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass
    mail.reply_to.close()
