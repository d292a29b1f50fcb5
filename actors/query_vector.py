"""A query's embedding, computed once and shared by the searches of that query."""

from __future__ import annotations

from collections.abc import Sequence

import anyio

from actors.errors import MnemoError
from actors.ports import Embedder

__all__ = ["QueryVector"]


class QueryVector:
    """A query's embedding, computed once, on the first search's need, and shared by every
    search that awaits it (a ``VectorSource``): each scores its text side meanwhile.
    Raises what the embedder raised."""

    def __init__(self, embedder: Embedder, text: str) -> None:
        self._embedder, self.text = embedder, text
        self._done: anyio.Event | None = None
        self._vector: list[float] | None = None
        self._error: MnemoError | None = None

    async def __call__(self) -> Sequence[float]:
        while self._vector is None:
            if self._error is not None:
                raise self._error
            if self._done is not None:
                await self._done.wait()
                if self._vector is None and self._error is None:
                    self._done = None  # the search computing it was cancelled: take over
                continue
            self._done = done = anyio.Event()
            try:
                [self._vector] = await self._embedder.embed([self.text])
            except MnemoError as exc:
                self._error = exc
            finally:
                done.set()
        return self._vector
