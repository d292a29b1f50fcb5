"""Assembling what session actors share from the ports: one place, for the app and the tests."""

from __future__ import annotations

from actors.consolidation import Consolidator
from actors.context import ContextBuilder
from actors.entities import EntityKeeper
from actors.episodes import EpisodeKeeper
from actors.events import EventBus
from actors.extraction import Extractor
from actors.keeper import FactKeeper
from actors.learning import LearningDeps, ProgressBook
from actors.links import LinkKeeper
from actors.mailbox import SessionDeps
from actors.model_queue import ModelQueue
from actors.notes import NoteKeeper
from actors.ports import Clock, Embedder, Llm, Store
from actors.rules import RuleKeeper
from actors.writer import ArchiveWriter
from memory.predicates import Vocabulary
from schemas.settings import Settings

__all__ = ["build_deps"]


def build_deps(
    settings: Settings,
    *,
    llm: Llm,
    embedder: Embedder,
    store: Store,
    writer: ArchiveWriter,
    fact_writer: ArchiveWriter,
    clock: Clock,
    extract_backoff: float = 0.5,
    events: EventBus | None = None,
) -> SessionDeps:
    events = events or EventBus()
    queue = ModelQueue(settings.extract_concurrency)  # every learning call of the model
    extractor = Extractor(llm, settings, queue=queue, backoff=extract_backoff)
    keeper = FactKeeper(
        store, embedder, fact_writer, settings, clock, events, classify=extractor.classify
    )
    rules = RuleKeeper(store, embedder, fact_writer, clock, events)
    return SessionDeps(
        settings=settings,
        llm=llm,
        embedder=embedder,
        store=store,
        writer=writer,
        fact_writer=fact_writer,
        clock=clock,
        events=events,
        context=ContextBuilder(store, embedder, keeper, settings, clock),
        learning=LearningDeps(
            extractor=extractor,
            keeper=keeper,
            notes=NoteKeeper(llm, store, fact_writer, settings, clock, events, queue),
            progress=ProgressBook(store, fact_writer),
            events=events,
        ),
        rules=rules,
        entities=EntityKeeper(
            store, fact_writer, clock, Vocabulary(settings.predicates), events, lane=keeper.lane
        ),
        links=LinkKeeper(store, fact_writer, clock),
        episodes=EpisodeKeeper(store, embedder, fact_writer, clock, events),
        consolidator=Consolidator(
            llm, store, fact_writer, keeper, rules, settings, clock, events, queue
        ),
    )
