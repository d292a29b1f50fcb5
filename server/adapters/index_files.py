"""Large users' message indexes saved to disk, so that their first search after a
restart, an eviction or a move reads one file instead of rebuilding the index from
the table (100,000 messages: seconds of reading and counting, against one read).

The table stays the store of record; a saved index is a copy that is exactly right
or absent:

* a write of a user's messages (append, delete, clear) is *accepted* only once the
  user's file is deleted (``accept``), so no file ever misses an accepted write;
* a file is written from the user's index in memory when no write of theirs is under
  way and every accepted one is applied to it (``index_saving.IndexSaver``), then
  synced and renamed into place only if no write was accepted meanwhile (``install``);
* a file that cannot be read, or is of another format, embedder or vector size, is
  deleted and the user is read from the table.

A file is a header (JSON: the shape of the saved state, and where each array lies)
and the arrays, each at a multiple of 64 bytes; lists of strings are stored as their
UTF-8 text and where each string ends (``EncodedStrings``). A file is mapped, not read:
the first search touches the pages it needs (the projected vectors, the vectors of its
candidates). What a search reads only a little of (texts, the postings of a few words:
most of a file's bytes) is not mapped but read from the file when asked (``Stored``,
marked ``OnDemand`` when saved): mapped, the kernel would bring each page in with the
pages around it, and the process's resident memory would grow to most of the file.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import struct
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from server.adapters.file_arrays import EncodedStrings, OnDemand, OpenFile, Stored

__all__ = ["FORMAT", "IndexFiles", "UnreadableIndex"]

_MAGIC = b"MNEMOIX\x00"
#: The layout of ``MessageEntry.state()``; a file of another format is not read (6: with
#: the learned sparse vectors' postings).
FORMAT = 6
_ALIGN = 64
_SUFFIX = ".idx"
_DTYPES = frozenset({"<f4", "<f8", "<i4", "<i8", "|b1", "|u1", "|i1"})


class UnreadableIndex(Exception):
    """A saved index that is damaged, or of another format, embedder or vector size."""


class IndexFiles:
    """The saved indexes of a directory (see the module docstring)."""

    def __init__(self, directory: Path, *, embedder: str, dim: int) -> None:
        self.directory = directory
        self._embedder, self._dim = embedder, dim
        #: Names of the files present.
        self._held: set[str] = set()
        #: Writes accepted per user since the process started.
        self._accepted: dict[str, int] = {}

    def open(self) -> None:
        """Create the directory, note the files it holds, delete unfinished ones."""
        self.directory.mkdir(parents=True, exist_ok=True)
        for path in self.directory.iterdir():
            if path.suffix == _SUFFIX:
                self._held.add(path.name)
            elif path.name.endswith(".tmp"):
                path.unlink(missing_ok=True)

    def _name(self, user_id: str) -> str:
        return hashlib.sha256(user_id.encode()).hexdigest()[:40] + _SUFFIX

    def has(self, user_id: str) -> bool:
        return self._name(user_id) in self._held

    def accept(self, user_ids: Iterable[str]) -> None:
        """Before a write of these users' messages: their files go. Raises ``OSError``
        (then the write must not happen)."""
        for user_id in user_ids:
            self._accepted[user_id] = self._accepted.get(user_id, 0) + 1
            self.discard(user_id)

    def token(self, user_id: str) -> int:
        """Changes whenever a write of the user's messages is accepted."""
        return self._accepted.get(user_id, 0)

    def discard(self, user_id: str) -> None:
        name = self._name(user_id)
        if name in self._held:
            (self.directory / name).unlink(missing_ok=True)
            self._held.discard(name)

    def discard_prefix(self, prefix: str) -> None:
        """Delete the files of every user whose name (the SHA-256 of their id, in hex)
        starts with ``prefix``: a cluster's shard, taken from another node."""
        for name in [n for n in self._held if n.startswith(prefix)]:
            (self.directory / name).unlink(missing_ok=True)
            self._held.discard(name)

    def write(self, user_id: str, state: dict[str, Any]) -> Path:
        """Write ``state`` to a new temporary file, synced; returns its path (blocking:
        in a worker thread)."""
        arrays: list[npt.NDArray[Any] | Stored] = []
        tree = _flatten(state, arrays)
        offset, placed = 0, []
        for array in arrays:
            placed.append([array.dtype.str, list(array.shape), offset])
            offset += _padded(array.nbytes)
        header = json.dumps(
            {
                "format": FORMAT,
                "embedder": self._embedder,
                "dim": self._dim,
                "tree": tree,
                "arrays": placed,
                "data_bytes": offset,
            }
        ).encode()
        start = _padded(len(_MAGIC) + 8 + len(header))
        path = self.directory / f"{self._name(user_id)}.{os.getpid()}.tmp"
        with path.open("wb") as out:
            out.write(_MAGIC + struct.pack("<Q", len(header)) + header)
            out.write(bytes(start - out.tell()))
            for array in arrays:
                if isinstance(array, Stored):  # copied from the file it was read from
                    for chunk in array.chunks():
                        out.write(chunk)
                else:
                    out.write(np.ascontiguousarray(array).data)
                out.write(bytes(_padded(array.nbytes) - array.nbytes))
            out.flush()
            os.fsync(out.fileno())
        return path

    def path(self, user_id: str) -> Path:
        """Where the user's saved index is (if ``has`` it)."""
        return self.directory / self._name(user_id)

    def scratch(self, user_id: str) -> Path:
        """A temporary path for a file to ``install`` (one fetched from elsewhere)."""
        return self.directory / f"{self._name(user_id)}.{os.getpid()}.fetch.tmp"

    def install(self, user_id: str, path: Path, token: int) -> bool:
        """Put the file written by ``write`` in place, if no write of the user's messages
        was accepted since ``token`` was taken; else delete it. Whether it was put."""
        if token != self.token(user_id):
            path.unlink(missing_ok=True)
            return False
        name = self._name(user_id)
        os.replace(path, self.directory / name)
        self._held.add(name)
        return True

    def read(self, user_id: str) -> dict[str, Any]:
        """The state saved for the user (blocking: in a worker thread); its arrays lie in a
        private mapping of the file (writes to them stay in memory), or are ``Stored``.
        Raises ``UnreadableIndex``, and ``FileNotFoundError`` when there is none."""
        path = self.directory / self._name(user_id)
        file = OpenFile(os.open(path, os.O_RDONLY))
        try:
            buffer = mmap.mmap(file.fd, 0, access=mmap.ACCESS_COPY)
        except ValueError as exc:  # an empty file
            raise UnreadableIndex(f"{path}: {exc}") from exc
        try:
            return _parsed(buffer, file, (FORMAT, self._embedder, self._dim))
        except (ValueError, KeyError, TypeError, IndexError, struct.error) as exc:
            raise UnreadableIndex(f"{path}: {exc}") from exc


def _parsed(buffer: mmap.mmap, file: OpenFile, kind: tuple[int, str, int]) -> dict[str, Any]:
    if len(buffer) < len(_MAGIC) + 8 or buffer[: len(_MAGIC)] != _MAGIC:
        raise ValueError("not a saved index")
    (length,) = struct.unpack_from("<Q", buffer, len(_MAGIC))
    header = json.loads(bytes(buffer[len(_MAGIC) + 8 : len(_MAGIC) + 8 + length]))
    if (header["format"], header["embedder"], header["dim"]) != kind:
        raise ValueError(
            f"format {header['format']} of {header['embedder']} ({header['dim']} "
            f"dimensions), not {kind[0]} of {kind[1]} ({kind[2]})"
        )
    start = _padded(len(_MAGIC) + 8 + length)
    if start + int(header["data_bytes"]) != len(buffer):
        raise ValueError("its size does not match its header")

    def array(number: int, *, stored: bool) -> npt.NDArray[Any] | Stored:
        dtype, shape, offset = header["arrays"][number]
        if dtype not in _DTYPES:
            raise ValueError(f"unexpected array type {dtype}")
        count = int(np.prod(shape, dtype=np.int64))
        if offset < 0 or offset + count * np.dtype(dtype).itemsize > header["data_bytes"]:
            raise ValueError("an array lies outside the file")
        if stored:
            if len(shape) != 1:
                raise ValueError("a stored array of more than one dimension")
            return Stored(file, start + offset, np.dtype(dtype), count)
        mapped = np.frombuffer(buffer, dtype=dtype, count=count, offset=start + offset)
        return mapped.reshape(shape)

    state: dict[str, Any] = _unflatten(header["tree"], array)
    return state


def _padded(size: int) -> int:
    return -(-size // _ALIGN) * _ALIGN


def _flatten(value: Any, arrays: list[npt.NDArray[Any] | Stored]) -> Any:
    """``value`` as JSON, its arrays (and strings) replaced by their numbers in
    ``arrays``. A non-empty list of strings is saved as ``EncodedStrings``, whose text
    is read back ``Stored``."""
    if isinstance(value, np.ndarray):
        arrays.append(value)
        return {"array": len(arrays) - 1}
    if isinstance(value, OnDemand):
        arrays.append(value.array)
        return {"stored": len(arrays) - 1}
    if isinstance(value, dict):
        return {"dict": {key: _flatten(item, arrays) for key, item in value.items()}}
    if isinstance(value, list | tuple) and value and all(isinstance(v, str) for v in value):
        value = EncodedStrings.of(value)
    if isinstance(value, EncodedStrings):
        arrays += [value.data, value.ends]
        return {"strings": len(arrays) - 2}
    if isinstance(value, list | tuple):
        return {"list": [_flatten(item, arrays) for item in value]}
    if value is None or isinstance(value, bool | int | float):
        return {"value": value}
    raise TypeError(f"cannot save a {type(value).__name__}")


def _unflatten(node: dict[str, Any], array: Callable[..., Any]) -> Any:
    (kind, value), *rest = node.items()
    if rest:
        raise ValueError("a node of two kinds")
    if kind == "array":
        return array(value, stored=False)
    if kind == "stored":
        return array(value, stored=True)
    if kind == "dict":
        return {key: _unflatten(item, array) for key, item in value.items()}
    if kind == "list":
        return [_unflatten(item, array) for item in value]
    if kind == "strings":
        return EncodedStrings(array(value, stored=True), array(value + 1, stored=False))
    if kind == "value":
        return value
    raise ValueError(f"unknown node {kind!r}")
