"""What the two ONNX adapters (MiniLM's ``onnx_embedder``, SPLADE's ``splade``) share: the
bundled WordPiece tokenizer, and running many texts one at a time in worker threads.

Both models read bert-base-uncased's WordPiece: the same vocabulary, normalizer and
pre-tokenizer (``tests/test_splade.py`` checks SPLADE-tiny's ``tokenizer.json`` against the
bundled one), so one tokenizer serves both, truncating at :data:`MAX_TOKENS`.
"""

from __future__ import annotations

import functools
import importlib.resources
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol, TypeVar, cast, overload

import anyio
import anyio.to_thread

from memory.text import embedding_text

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = ["CHUNK", "MAX_TOKENS", "PerText", "per_text", "token_ids", "vectors_now", "wordpiece"]

_TOKENIZER = "minilm-tokenizer.json"
# sentence-transformers' max_seq_length for all-MiniLM-L6-v2; the vendored
# tokenizer.json says 128 and pads to a fixed 128, so both are overridden.
MAX_TOKENS = 256
#: Texts a worker of :func:`per_text` tokenizes at a time.
CHUNK = 64

_Out = TypeVar("_Out", covariant=True)
_T = TypeVar("_T")


@functools.cache
def wordpiece() -> Tokenizer:
    """The bundled tokenizer, truncating at :data:`MAX_TOKENS`, unpadded; loaded once,
    shared by threads (encoding does not change it)."""
    # Imported here: an idle server that has seen no user holds no tokenizers.
    from tokenizers import Tokenizer

    resource = importlib.resources.files("server.adapters") / "data" / _TOKENIZER
    tokenizer = Tokenizer.from_str(resource.read_text(encoding="utf-8"))
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    tokenizer.no_padding()  # one text a run: nothing to pad
    return tokenizer


def token_ids(texts: Sequence[str]) -> list[list[int]]:
    """Token ids per text (an empty one as a single space), truncated, unpadded."""
    # One encode() per text rather than encode_batch(): the batch call fans out to the
    # tokenizers crate's own thread pool, and the adapters' `threads` should bound it all.
    tokenizer = wordpiece()
    return [tokenizer.encode(embedding_text(text)).ids for text in texts]


class PerText(Protocol[_Out]):
    """A loaded model that runs one text's token ids at a time."""

    def vector(self, ids: Sequence[int]) -> _Out: ...


@overload
def vectors_now(load: Callable[[], PerText[_T]], texts: Sequence[str]) -> list[_T]: ...
@overload
def vectors_now(
    load: Callable[[], PerText[_T] | None], texts: Sequence[str]
) -> list[_T] | None: ...
def vectors_now(load: Callable[[], PerText[_T] | None], texts: Sequence[str]) -> list[_T] | None:
    """``model.vector`` of each text, in this thread (``load()`` gives the model; ``None``:
    there is none, and so no vectors)."""
    model = load()
    if model is None:
        return None
    return [model.vector(ids) for ids in token_ids(texts)]


@overload
async def per_text(
    load: Callable[[], PerText[_T]],
    texts: Sequence[str],
    *,
    limiter: anyio.CapacityLimiter,
    threads: int,
) -> list[_T]: ...
@overload
async def per_text(
    load: Callable[[], PerText[_T] | None],
    texts: Sequence[str],
    *,
    limiter: anyio.CapacityLimiter,
    threads: int,
) -> list[_T] | None: ...
async def per_text(
    load: Callable[[], PerText[_T] | None],
    texts: Sequence[str],
    *,
    limiter: anyio.CapacityLimiter,
    threads: int,
) -> list[_T] | None:
    """``model.vector`` of each text's token ids, in order, the model given by ``load()``
    (blocking, called in a worker thread; ``None``: there is none, and so no vectors);
    the event loop never waits on CPU. One text (a query) is one trip to a worker thread.
    More are run by ``threads`` workers, each taking the next chunk of :data:`CHUNK`
    texts, tokenizing it and running its texts one by one, each step in a worker thread
    under ``limiter``: one call has at most ``threads`` steps waiting for a thread, and a
    query that arrives during an import waits for at most one text per worker.
    Cancelling takes effect once the steps in flight finish."""
    if len(texts) == 1:  # a query: one trip to a worker thread, not two
        return await anyio.to_thread.run_sync(vectors_now, load, texts, limiter=limiter)
    model = await anyio.to_thread.run_sync(load, limiter=limiter)
    if model is None:
        return None
    out: list[_T | None] = [None] * len(texts)
    starts = iter(range(0, len(texts), CHUNK))

    async def worker() -> None:
        for start in starts:  # shared: each worker takes the next chunk
            chunk = texts[start : start + CHUNK]
            encoded = await anyio.to_thread.run_sync(token_ids, chunk, limiter=limiter)
            for i, ids in enumerate(encoded, start):
                out[i] = await anyio.to_thread.run_sync(model.vector, ids, limiter=limiter)

    workers = min(threads, -(-len(texts) // CHUNK))
    async with anyio.create_task_group() as group:
        for _ in range(workers):
            group.start_soon(worker)
    return cast("list[_T]", out)  # every place filled
