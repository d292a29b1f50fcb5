"""Embedding archived messages with their keys (``memory.keys``): one place for the writer
and the importer."""

from __future__ import annotations

from collections.abc import Sequence

import anyio.to_thread

from actors.ports import Embedder
from memory.keys import mixed, statement_text
from memory.recall import key_text
from schemas.records import ArchivedMessage

__all__ = ["key_vectors"]

#: Messages read without a worker thread (a turn is two).
_READ_IN_PLACE = 4


async def key_vectors(
    embedder: Embedder,
    messages: Sequence[ArchivedMessage],
    texts: Sequence[str] | None = None,
) -> list[list[float]]:
    """The vectors messages are archived with (``memory.keys``): their key texts
    (``memory.recall.key_text``) and their statements, embedded in one call. Reading a
    batch larger than a few turns runs in a worker thread (an import must not hold the
    event loop); a turn's two messages are read in place. ``texts``: the messages' key
    texts when the caller has better ones than the messages give (a message read back
    has lost the context its search text was built with)."""
    if len(messages) <= _READ_IN_PLACE:
        statements = [statement_text(m) for m in messages]
    else:
        statements = await anyio.to_thread.run_sync(lambda: [statement_text(m) for m in messages])
    with_statements = [i for i, text in enumerate(statements) if text]
    searched = list(texts) if texts is not None else [key_text(m) for m in messages]
    vectors = await embedder.embed([*searched, *(statements[i] for i in with_statements)])
    n = len(messages)
    statement_vectors: list[Sequence[float] | None] = [None] * n
    for i, vector in zip(with_statements, vectors[n:], strict=True):
        statement_vectors[i] = vector
    return mixed(vectors[:n], statement_vectors)
