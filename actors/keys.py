"""Embedding archived messages with their keys (``memory.keys``): one place for the writer
and the importer."""

from __future__ import annotations

from collections.abc import Sequence

import anyio.to_thread

from actors.ports import Embedder
from memory.keys import fact_text, mixed
from memory.recall import search_text
from schemas.records import ArchivedMessage

__all__ = ["key_vectors"]

#: Messages read without a worker thread (a turn is two).
_READ_IN_PLACE = 4


async def key_vectors(embedder: Embedder, messages: Sequence[ArchivedMessage]) -> list[list[float]]:
    """The vectors messages are archived with (``memory.keys``): their search texts and
    the facts read in them, embedded in one call. Reading a batch larger than a few turns
    runs in a worker thread (~2 ms a long message: an import must not hold the event
    loop); a turn's two messages are read in place."""
    if len(messages) <= _READ_IN_PLACE:
        facts = [fact_text(m) for m in messages]
    else:
        facts = await anyio.to_thread.run_sync(lambda: [fact_text(m) for m in messages])
    with_facts = [i for i, text in enumerate(facts) if text]
    vectors = await embedder.embed(
        [*(search_text(m) for m in messages), *(facts[i] for i in with_facts)]
    )
    n = len(messages)
    fact_vectors: list[Sequence[float] | None] = [None] * n
    for i, vector in zip(with_facts, vectors[n:], strict=True):
        fact_vectors[i] = vector
    return mixed(vectors[:n], fact_vectors)
