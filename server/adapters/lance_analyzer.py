"""LanceDB's full-text analyzer (``icu`` tokenizer, stemming, stop words) for the in-memory index.

The terms of every indexed text and query come from the same analyzer as the
store's own full-text index, through ``AsyncTable.tokenize``, after seed 002's
cleaning (``memory.text``). One call costs about a millisecond of fixed
overhead, so texts are analyzed many at a time: joined by a separator word and
split again where its token appears.
"""

from __future__ import annotations

import logging
import re
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from actors.errors import MnemoError
from memory.text import indexed_text

__all__ = ["Analyzer", "AnalyzerUnavailable", "QueryTerms"]

_log = logging.getLogger("mnemo.store")
_SEPARATOR = "mnemosepqz"
_PREFIX = re.compile(r"(\w+)\*")
_CHUNK_CHARS = 200_000
_QUERY_CACHE = 256


class AnalyzerUnavailable(MnemoError):
    """The full-text analyzer failed (its index is missing, or the call raised)."""

    code = "analyzer_unavailable"


@dataclass(frozen=True, slots=True)
class QueryTerms:
    """A query as the index sees it: analyzed terms, and prefixes from ``word*``."""

    terms: tuple[str, ...]
    prefixes: tuple[str, ...] = ()


class Analyzer:
    """Tokenizes with the analyzer of ``table``'s full-text index on ``column``."""

    def __init__(self, table: Any, column: str) -> None:
        self._table, self._column = table, column
        self._separator: str | None = None
        self._queries: OrderedDict[str, QueryTerms] = OrderedDict()
        self._pending: dict[str, anyio.Event] = {}

    async def _raw(self, text: str) -> Any:
        """LanceDB's tokens (``FtsToken``: ``text``, ``position``) of ``text``."""
        try:
            return await self._table.tokenize(text, column=self._column)
        except (OSError, RuntimeError, ValueError) as exc:
            raise AnalyzerUnavailable(f"full-text analyzer of {self._column}: {exc}") from exc

    async def _tokens(self, text: str) -> list[str]:
        return [token.text for token in await self._raw(text)]

    async def analyze(self, texts: Sequence[str]) -> list[list[str]]:
        """The terms of each text (cleaned by ``indexed_text``), in order."""
        if self._separator is None:
            [self._separator] = await self._tokens(_SEPARATOR) or [_SEPARATOR]
        out: list[list[str]] = []
        chunk: list[str] = []
        size = 0
        for text in texts:
            clean = indexed_text(text).replace(_SEPARATOR, " ")
            chunk.append(clean)
            size += len(clean)
            if size >= _CHUNK_CHARS:
                out += await self._analyze_chunk(chunk)
                chunk, size = [], 0
        if chunk:
            out += await self._analyze_chunk(chunk)
        return out

    async def _analyze_chunk(self, texts: list[str]) -> list[list[str]]:
        if len(texts) == 1:
            return [await self._tokens(texts[0])]
        tokens = await self._raw(f" {_SEPARATOR} ".join(texts))
        separator = self._separator
        current: list[str] = []
        out = [current]
        for token in tokens:
            text = token.text
            if text == separator:
                current = []
                out.append(current)
            else:
                current.append(text)
        if len(out) != len(texts):  # the separator was split or dropped after all
            _log.warning("analyzer separator lost; analyzing %d texts one by one", len(texts))
            return [await self._tokens(t) for t in texts]
        return out

    async def query_or_none(self, text: str) -> QueryTerms | None:
        """``query``, or None when the analyzer fails (search then matches keywords)."""
        try:
            return await self.query(text)
        except AnalyzerUnavailable as exc:
            _log.warning("full-text analysis failed, matching keywords instead: %s", exc)
            return None

    async def query(self, text: str) -> QueryTerms:
        """The terms of a query (cleaned by ``memory.text.query_text``: none for a blank
        one); ``word*`` asks for every term starting with ``word`` (seed 001's prefix
        match, which the full-text index itself does not offer). The searches of one
        query (facts, conversation) share one analysis."""
        if not text.strip():
            return QueryTerms(())
        while True:
            cached = self._queries.get(text)
            if cached is not None:
                self._queries.move_to_end(text)
                return cached
            pending = self._pending.get(text)
            if pending is None:
                break
            await pending.wait()
            if text not in self._queries:  # that analysis failed: try it ourselves
                break
        self._pending[text] = done = anyio.Event()
        try:
            prefixes = tuple(dict.fromkeys(m.casefold() for m in _PREFIX.findall(text)))
            rest = _PREFIX.sub(" ", text)
            terms = tuple(await self._tokens(rest)) if rest.strip() else ()
        finally:
            del self._pending[text]
            done.set()
        found = QueryTerms(terms, prefixes)
        self._queries[text] = found
        if len(self._queries) > _QUERY_CACHE:
            self._queries.popitem(last=False)
        return found
