"""The models a real-model server serves, and the one it has loaded (Ollama's scheduler).

One model is loaded at a time and runs one request at a time; the others wait their
turn, as with Ollama's ``OLLAMA_NUM_PARALLEL=1``. A model stays loaded for its
``keep_alive`` after its last request (five minutes unless a request says otherwise);
``keep_alive`` 0 unloads it when the request ends.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio

from testing.llama.worker import Event, Worker

__all__ = ["Scheduler", "ServedModel", "full_name", "now_iso"]

#: llama.cpp's file types (``general.file_type``) as Ollama names them.
_FILE_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1"}
_FILE_TYPES |= {10: "Q2_K", 11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S"}
_FILE_TYPES |= {15: "Q4_K_M", 16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K", 32: "BF16"}


def full_name(name: str) -> str:
    """Ollama's full name of a model: ``:latest`` when no tag is given."""
    return name if ":" in name else name + ":latest"


def now_iso() -> str:
    """Now, as Ollama writes times (RFC 3339, UTC)."""
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class ServedModel:
    """A GGUF file served under ``name``, with what its header says."""

    name: str
    path: Path
    digest: str
    size: int
    modified_at: str
    info: dict[str, Any]
    #: Default options, as a Modelfile's ``PARAMETER`` lines give them; a request's
    #: own ``options`` win.
    parameters: dict[str, Any]

    @classmethod
    async def read(
        cls, name: str, path: Path, worker: Worker, parameters: dict[str, Any]
    ) -> ServedModel:
        """Describe ``path``: its sha256 from the sidecar ``<path>.sha256`` that
        ``testing.downloads`` writes, else computed; its metadata from the worker."""
        digest, size, mtime = await anyio.to_thread.run_sync(_describe, path)
        answer = await worker.call("info", path=str(path))
        modified = datetime.fromtimestamp(mtime, UTC).isoformat().replace("+00:00", "Z")
        return cls(full_name(name), path, digest, size, modified, answer["info"], parameters)

    @property
    def max_ctx(self) -> int:
        """The context the model was trained with (requests get at most this)."""
        return int(self.info.get("context_length") or 2048)

    def details(self) -> dict[str, Any]:
        """Ollama's ``details`` of a model."""
        architecture = str(self.info.get("architecture") or "")
        return {
            "parent_model": "",
            "format": "gguf",
            "family": architecture,
            "families": [architecture],
            "parameter_size": self._parameter_size(),
            "quantization_level": _FILE_TYPES.get(self.info.get("file_type") or -1, "unknown"),
        }

    def entry(self) -> dict[str, Any]:
        """The model as ``/api/tags`` lists it."""
        return {
            "name": self.name,
            "model": self.name,
            "modified_at": self.modified_at,
            "size": self.size,
            "digest": self.digest,
            "details": self.details(),
        }

    def _parameter_size(self) -> str:
        count = self.info.get("parameter_count")
        if not count:
            return str(self.info.get("size_label") or "")
        for scale, unit in ((1e9, "B"), (1e6, "M"), (1e3, "K")):
            if count >= scale:
                return f"{count / scale:.2f}".rstrip("0").rstrip(".") + unit
        return str(count)


@dataclass(slots=True)
class _Loaded:
    model: ServedModel
    num_ctx: int
    expires_at: float


class Scheduler:
    """Runs requests on the worker one at a time, loading and unloading models."""

    def __init__(self, worker: Worker, *, keep_alive: float) -> None:
        self._worker = worker
        self._keep_alive = keep_alive
        # A semaphore, not a lock: a streamed answer takes its turn in the request's task
        # and gives it back in the task that streams the response.
        self._lock = anyio.Semaphore(1)
        self._loaded: _Loaded | None = None
        self._busy = 0

    @property
    def loaded(self) -> tuple[ServedModel, int, float] | None:
        """The loaded model, its context size and when it expires (epoch seconds)."""
        if self._loaded is None:
            return None
        return self._loaded.model, self._loaded.num_ctx, self._loaded.expires_at

    async def load(self, model: ServedModel, num_ctx: int, keep_alive: float | None) -> int:
        """Load ``model`` (if not loaded with ``num_ctx``); nanoseconds it took."""
        async with self._turn(model, num_ctx, keep_alive):
            answer = await self._worker.call("load", path=str(model.path), num_ctx=num_ctx)
            return int(answer["load_ns"])

    async def unload(self, model: ServedModel) -> None:
        """Unload ``model`` now if it is the loaded one."""
        async with self._lock:
            if self._loaded is not None and self._loaded.model == model:
                await self._worker.call("unload")
                self._loaded = None

    @asynccontextmanager
    async def generate(
        self,
        model: ServedModel,
        num_ctx: int,
        keep_alive: float | None,
        request: dict[str, Any],
    ) -> AsyncIterator[AsyncIterator[Event]]:
        """Wait for the model's turn and yield the events of one generation."""
        async with (
            self._turn(model, num_ctx, keep_alive),
            self._worker.stream(
                "generate", path=str(model.path), num_ctx=num_ctx, **request
            ) as events,
        ):
            yield events

    async def expire(self) -> None:
        """Unload the model once its keep-alive has passed with no request (runs forever)."""
        while True:
            await anyio.sleep(0.25)
            loaded = self._loaded
            if loaded is not None and not self._busy and time.time() >= loaded.expires_at:
                await self.unload(loaded.model)

    @asynccontextmanager
    async def _turn(
        self, model: ServedModel, num_ctx: int, keep_alive: float | None
    ) -> AsyncIterator[None]:
        self._busy += 1
        try:
            async with self._lock:
                self._loaded = _Loaded(model, num_ctx, math.inf)
                try:
                    yield
                finally:
                    seconds = self._keep_alive if keep_alive is None else keep_alive
                    self._loaded.expires_at = time.time() + seconds
        finally:
            self._busy -= 1


def _describe(path: Path) -> tuple[str, int, float]:
    """The sha256 (from the sidecar when there is one), size and mtime of ``path``."""
    stat = path.stat()
    sidecar = path.with_name(path.name + ".sha256")
    if sidecar.exists():
        return sidecar.read_text().strip(), stat.st_size, stat.st_mtime
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest(), stat.st_size, stat.st_mtime
