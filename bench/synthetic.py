"""Synthetic stored memories for the retrieval bench: LoCoMo's words, random unit vectors.

Message texts are drawn word by word from the unigram distribution of LoCoMo's
turns, with LoCoMo's turn lengths, so BM25 sees realistic term frequencies and
posting-list sizes; fact contents are LoCoMo's observations. Vectors are mixtures
of real MiniLM embeddings of LoCoMo turns plus noise (``mixed_vectors``): as cheap
as random ones, but with the structure ANN indexes rely on.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from memory.facts import Stored
from schemas.records import ArchivedMessage, Fact

__all__ = [
    "LOCOMO",
    "Corpus",
    "RandomEmbedder",
    "Vectors",
    "facts",
    "messages",
    "mixed_vectors",
    "unit_vectors",
]

LOCOMO = Path(__file__).resolve().parents[2] / "shared" / "eval" / "locomo-dev.json"
_START = datetime(2025, 1, 1, tzinfo=UTC)
Vectors = npt.NDArray[np.float32]


def unit_vectors(rng: np.random.Generator, n: int, dim: int) -> Vectors:
    vectors = rng.standard_normal((n, dim), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


def mixed_vectors(rng: np.random.Generator, basis: Vectors, n: int) -> Vectors:
    """Unit vectors shaped like real embeddings: a basis vector (a real embedding),
    plus a random share of another, plus noise of norm 0.3. Exact search costs the
    same on any vectors; ANN recall does not (on plain random vectors it is near 0)."""
    first = basis[rng.integers(0, len(basis), n)]
    second = basis[rng.integers(0, len(basis), n)]
    share = rng.uniform(0.0, 1.0, (n, 1)).astype(np.float32)
    noise = unit_vectors(rng, n, basis.shape[1]) * np.float32(0.3)
    vectors: Vectors = first + share * second + noise
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


class RandomEmbedder:
    """An ``Embedder`` of random unit vectors, sized like the bundled MiniLM (384):
    for bulk rows whose embedding cost is measured apart."""

    def __init__(self, dim: int = 384, seed: int = 0) -> None:
        self._dim = dim
        self._rng = np.random.default_rng(seed)

    @property
    def name(self) -> str:
        return f"random-{self._dim}"

    @property
    def dim(self) -> int:
        return self._dim

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors: list[list[float]] = unit_vectors(self._rng, len(texts), self._dim).tolist()
        return vectors

    async def warm_up(self) -> None:
        return None

    async def preload(self) -> None:
        return None


@dataclass(frozen=True)
class Corpus:
    words: npt.NDArray[Any]  # object array of str
    weights: npt.NDArray[np.float64]
    lengths: npt.NDArray[np.int64]  # words per turn, one entry per LoCoMo turn
    questions: list[str]  # categories 1-4
    observations: list[str]

    @classmethod
    def load(cls, path: Path = LOCOMO) -> Corpus:
        conversations: list[dict[str, Any]] = json.loads(path.read_text())
        turns: list[str] = []
        observations: list[str] = []
        questions: list[str] = []
        for c in conversations:
            for key, value in c["conversation"].items():
                if key.startswith("session_") and isinstance(value, list):
                    turns += [t["text"] for t in value]
            for session in c["observation"].values():
                for items in session.values():
                    observations += [text for text, *_ in items]
            questions += [q["question"] for q in c["qa"] if q["category"] in (1, 2, 3, 4)]
        counts = Counter(w for t in turns for w in t.split())
        words = np.array(list(counts), dtype=object)
        weights = np.array(list(counts.values()), dtype=np.float64)
        lengths = np.array([max(1, len(t.split())) for t in turns], dtype=np.int64)
        return cls(words, weights / weights.sum(), lengths, questions, observations)

    def texts(self, rng: np.random.Generator, n: int) -> list[str]:
        """``n`` texts of LoCoMo turn lengths, words drawn by LoCoMo's word frequencies."""
        lengths = rng.choice(self.lengths, size=n)
        drawn = self.words[rng.choice(len(self.words), size=int(lengths.sum()), p=self.weights)]
        ends = np.cumsum(lengths).tolist()
        return [" ".join(drawn[e - k : e]) for e, k in zip(ends, lengths.tolist(), strict=True)]


def messages(
    texts: Sequence[str], users: Sequence[str], offset: int, *, per_session: int = 40
) -> list[ArchivedMessage]:
    """Archived messages for ``texts``, row ``offset + i`` belonging to
    ``users[(offset + i) % len(users)]``: users interleave as they would over time."""
    rows = []
    for i, text in enumerate(texts):
        n = offset + i
        user = users[n % len(users)]
        nth = n // len(users)  # this user's nth message
        rows.append(
            ArchivedMessage(
                id=f"m{n}",
                user_id=user,
                session_id=f"s{nth // per_session}",
                scope="global",
                turn=(nth % per_session) // 2,
                role="user" if nth % 2 == 0 else "assistant",
                speaker="",
                text=text,
                at=_START + timedelta(seconds=n),
            )
        )
    return rows


def facts(user: str, contents: Sequence[str], vectors: Vectors) -> list[Stored]:
    """Active facts of ``user``, one per content (ids ``fact_`` + 8 hex digits)."""
    out = []
    for i, (content, vector) in enumerate(zip(contents, vectors, strict=True)):
        at = _START + timedelta(minutes=i)
        fact = Fact(
            id=f"fact_{i:08x}",
            user_id=user,
            content=content,
            category="knowledge",
            confidence=0.8,
            created_at=at,
            updated_at=at,
            last_seen=at,
            last_confirmed_at=at,
        )
        out.append(Stored(fact, vector))
    return out
