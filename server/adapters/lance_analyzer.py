"""LanceDB's full-text analyzer (``icu`` tokenizer, stemming, stop words) for the in-memory index.

The terms of every indexed text and query come from the same analyzer as the
store's own full-text index, through ``AsyncTable.tokenize``, after seed 002's
cleaning (``memory.text``). One call costs about a millisecond of fixed
overhead, so texts are analyzed many at a time: joined by a separator word and
split again where its token appears.

A query must not wait. Under load, the answer of an ``AsyncTable.tokenize`` call
waits its turn on the event loop (1.4 ms p50, 5 ms p99 measured in the server at
200 turns/s), and ``lancedb.tokenize``, which analyzes on the spot, spends 0.45 ms
of every call building its stop-word filter (5 µs without it). So a query is
analyzed by ``lancedb.tokenize`` with the index's settings but its stop words
kept: LanceDB drops stop words after stemming, so the only extra terms are stop
words, which no index vocabulary holds (texts are analyzed by the index), and
BM25 over a vocabulary ignores them. Whether ``lancedb.tokenize`` agrees with
the index is checked on the first query; if it does not, queries take the
index's way too.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import lancedb

from actors.errors import MnemoError
from memory.text import MAX_QUERY_CHARS, indexed_text

__all__ = ["FTS_TOKENIZER", "Analyzer", "AnalyzerUnavailable", "QueryTerms"]

_log = logging.getLogger("mnemo.store")
_SEPARATOR = "mnemosepqz"
_PREFIX = re.compile(r"\b(\w++)\*")
_CHUNK_CHARS = 200_000
#: The full-text indexes' tokenizer (``lancedb.index.FTS``; the other settings default).
FTS_TOKENIZER = "icu"
#: Stemming, stop words, folding, CJK segmentation and a number: what must agree.
_PROBE = "The runners' Müller café ran 我喜欢用Python写代码 3.14 e-mail"


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
        #: Whether ``lancedb.tokenize`` agrees with the index (None: not checked yet).
        self._local: bool | None = None

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
        if self._separator is None:
            [self._separator] = await self._tokens(_SEPARATOR) or [_SEPARATOR]
        out = _split_at(await self._raw(f" {_SEPARATOR} ".join(texts)), self._separator)
        if len(out) != len(texts):  # the separator was split or dropped after all
            _log.warning("analyzer separator lost; analyzing %d texts one by one", len(texts))
            return [await self._tokens(t) for t in texts]
        return out

    async def prepare(self) -> None:
        """Check whether ``lancedb.tokenize`` agrees with the index, as the first query
        would (its first calls cost tens of milliseconds): the store calls it when it opens.
        Raises ``AnalyzerUnavailable``."""
        local = [t.text for t in _tokenize_here(_PROBE)]
        self._local = local == await self._tokens(_PROBE)
        if not self._local:
            _log.warning("lancedb.tokenize differs from the index: %s", local)

    async def query_or_none(self, text: str) -> QueryTerms | None:
        """``query``, or None when the analyzer fails (search then matches keywords)."""
        try:
            return await self.query(text)
        except AnalyzerUnavailable as exc:
            _log.warning("full-text analysis failed, matching keywords instead: %s", exc)
            return None

    async def query(self, text: str) -> QueryTerms:
        """The terms of a query (cleaned by ``memory.text.query_text``: none for a blank
        one), stop words included (see the module's notes); ``word*`` asks for every term
        starting with ``word`` (seed 001's prefix match, which the full-text index itself
        does not offer). Only the first ``MAX_QUERY_CHARS`` characters are analyzed."""
        text = text[:MAX_QUERY_CHARS]
        prefixes = tuple(dict.fromkeys(m.casefold() for m in _PREFIX.findall(text)))
        rest = _PREFIX.sub(" ", text)
        if not rest.strip():
            return QueryTerms((), prefixes)
        if self._local is None:
            await self.prepare()
        if not self._local:
            return QueryTerms(tuple(await self._tokens(rest)), prefixes)
        terms = _tokenize_here(rest, remove_stop_words=False)
        return QueryTerms(tuple(t.text for t in terms), prefixes)


def _split_at(tokens: Any, separator: str) -> list[list[str]]:
    """The terms of ``tokens`` (``FtsToken``s) between the separator's tokens."""
    out: list[list[str]] = [[]]
    for token in tokens:
        if token.text == separator:
            out.append([])
        else:
            out[-1].append(token.text)
    return out


def _tokenize_here(text: str, *, remove_stop_words: bool = True) -> Any:
    """The index's analysis of ``text``, computed in this thread."""
    try:
        return lancedb.tokenize(
            text, base_tokenizer=FTS_TOKENIZER, remove_stop_words=remove_stop_words
        )
    except (OSError, RuntimeError, ValueError) as exc:
        raise AnalyzerUnavailable(f"lancedb.tokenize: {exc}") from exc
