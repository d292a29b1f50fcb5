"""A deterministic feature-hashing embedder: no model, stdlib only, for tests and ``hash``."""

from __future__ import annotations

import hashlib
import itertools
import math
import re
from collections import Counter
from collections.abc import Iterator, Sequence

import numpy as np

from memory.sparse import SparseVector

__all__ = ["MAX_TOKENS", "HashEmbedder", "HashSparseEncoder"]

_WORD = re.compile(r"\w+")
# Han ideographs (with extensions and compatibility forms), kana and Hangul syllables:
# scripts written without spaces, where ``\w+`` yields a whole phrase as one token.
_CJK = re.compile(
    "[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002fa1f]"
)


#: Tokens of a text that count, like a model's context: the work per token is Python's,
#: and the writer embeds on the event loop with this embedder.
MAX_TOKENS = 512


def _all_tokens(text: str) -> Iterator[str]:
    for match in _WORD.finditer(text.lower()):
        run = match.group()
        yield run
        if len(run) > 1:
            # Single characters let Chinese texts that share characters score as similar.
            yield from (m.group() for m in _CJK.finditer(run))


def _tokens(text: str) -> Iterator[str]:
    return itertools.islice(_all_tokens(text), MAX_TOKENS)


class HashEmbedder:
    """Bag-of-words feature hashing, L2-normalised; implements the ``Embedder`` port.

    Each token lands in a sha256-chosen bucket with a sha256-chosen sign, so texts
    sharing words get positive cosine similarity and identical texts get 1.0. Only the
    first ``MAX_TOKENS`` tokens count. For texts without CJK characters and of at most
    that many words the vectors equal the fake Ollama's ``hash_embed``.
    A text without word characters (``""``, ``"!?"``) gets one fixed unit vector.
    """

    def __init__(self, dim: int = 64) -> None:
        if dim < 1:
            raise ValueError(f"dim must be positive, got {dim}")
        self._dim = dim

    @property
    def name(self) -> str:
        return f"hash-{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    def embed_one(self, text: str) -> list[float]:
        """The unit-length vector of one text."""
        vector = [0.0] * self._dim
        for token in list(_tokens(text)) or [""]:
            digest = hashlib.sha256(token.encode()).digest()
            bucket = int.from_bytes(digest[:4], "little") % self._dim
            vector[bucket] += 1.0 if digest[4] & 1 else -1.0
        # Opposite signs can cancel to zero; the empty-text vector keeps it unit-length.
        norm = math.sqrt(sum(x * x for x in vector))
        if norm == 0.0:
            return self.embed_one("")
        return [x / norm for x in vector]

    async def warm_up(self) -> None:
        """Nothing to load."""

    async def preload(self) -> None:
        """Nothing to load."""

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit-length vector per text; never blocks for long (pure arithmetic)."""
        return [self.embed_one(text) for text in texts]


#: The hashing stand-in's vocabulary, as wide as SPLADE-tiny's (bert-base-uncased).
_VOCABULARY = 30_522


class HashSparseEncoder:
    """A learned sparse model's stand-in for tests: each word of a text (lower-cased)
    is a term, hashed into SPLADE-tiny's vocabulary, weighing ``1 + ln(count)``; a text
    more than half of whose tokens are CJK gets no terms, as SPLADE's Chinese does not.
    Implements the ``SparseEncoder`` port."""

    @property
    def name(self) -> str:
        return "hash-sparse"

    async def encode(self, texts: Sequence[str]) -> list[SparseVector]:
        return [self.encode_one(text) for text in texts]

    def encode_one(self, text: str) -> SparseVector:
        tokens = list(_tokens(text))
        if not tokens or sum(bool(_CJK.fullmatch(t)) for t in tokens) * 2 > len(tokens):
            return SparseVector.of_dense(np.zeros(0, dtype=np.float32))
        weights = np.zeros(_VOCABULARY, dtype=np.float32)
        for token, count in Counter(t for t in tokens if not _CJK.search(t)).items():
            digest = hashlib.sha256(token.encode()).digest()
            weights[int.from_bytes(digest[:4], "little") % _VOCABULARY] += 1.0 + math.log(count)
        return SparseVector.of_dense(weights)

    async def preload(self) -> None:
        """Nothing to load."""
