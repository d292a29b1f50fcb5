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
import weakref
from abc import abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, overload

import numpy as np
import numpy.typing as npt

__all__ = [
    "FORMAT",
    "EncodedStrings",
    "IndexFiles",
    "OnDemand",
    "Stored",
    "StringColumn",
    "UnreadableIndex",
]

_MAGIC = b"MNEMOIX\x00"
#: The layout of ``MessageEntry.state()``; a file of another format is not read.
FORMAT = 4
_ALIGN = 64
_SUFFIX = ".idx"
_DTYPES = frozenset({"<f4", "<f8", "<i4", "<i8", "|b1", "|u1", "|i1"})


class _File:
    """An open saved index, closed once nothing read from it is left (the file may have
    been deleted or replaced meanwhile: what was read stays readable)."""

    __slots__ = ("__weakref__", "fd")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        weakref.finalize(self, os.close, fd)

    def read(self, offset: int, size: int) -> bytes:
        chunks, done = [], 0
        while done < size:
            chunk = os.pread(self.fd, min(size - done, 1 << 30), offset + done)
            if not chunk:
                raise OSError(f"a saved index ended {size - done} bytes early")
            chunks.append(chunk)
            done += len(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)


class OnDemand:
    """Marks an array to save so that it is read back as ``Stored``, not mapped."""

    __slots__ = ("array",)

    def __init__(self, array: npt.NDArray[Any] | Stored) -> None:
        self.array = array


class Stored:
    """A one-dimensional array of a saved index, read from its file when a stretch of it
    is asked for (``stored[a:b]`` is a new NumPy array), or whole by ``np.asarray``."""

    __slots__ = ("_file", "_offset", "dtype", "shape")

    def __init__(self, file: _File, offset: int, dtype: np.dtype[Any], length: int) -> None:
        self._file, self._offset = file, offset
        self.dtype, self.shape = dtype, (length,)

    def __len__(self) -> int:
        return self.shape[0]

    @property
    def nbytes(self) -> int:
        return self.shape[0] * self.dtype.itemsize

    def __getitem__(self, index: slice) -> npt.NDArray[Any]:
        start, stop, step = index.indices(len(self))
        if step != 1:
            raise IndexError("a stored array is read in stretches")
        stop = max(start, stop)
        size = self.dtype.itemsize
        raw = self._file.read(self._offset + start * size, (stop - start) * size)
        return np.frombuffer(raw, dtype=self.dtype)

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> npt.NDArray[Any]:
        whole = self[:]
        return whole if dtype is None else whole.astype(dtype)

    def tobytes(self) -> bytes:
        return self._file.read(self._offset, self.nbytes)

    def chunks(self, size: int = 1 << 23) -> Iterator[bytes]:
        """The array's bytes, ``size`` at a time."""
        for start in range(0, self.nbytes, size):
            yield self._file.read(self._offset + start, min(size, self.nbytes - start))


class StringColumn(Sequence[str]):
    """A read-only sequence of strings whose subclasses say how to read one (``_at``,
    given an index in range)."""

    __slots__ = ()

    @abstractmethod
    def _at(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, slice):
            return [self._at(i) for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("string index out of range")
        return self._at(index)


class EncodedStrings(StringColumn):
    """Strings as one UTF-8 buffer and where each ends (in bytes): each one is decoded
    when it is read (a large user's texts load without making a string each). Read from
    a saved index, the buffer is ``Stored``."""

    __slots__ = ("data", "ends")

    def __init__(self, data: npt.NDArray[np.uint8] | Stored, ends: npt.NDArray[np.int64]) -> None:
        if len(ends) and (ends[-1] != len(data) or (np.diff(ends) < 0).any() or ends[0] < 0):
            raise ValueError("string ends do not match their text")
        self.data, self.ends = data, ends

    @classmethod
    def of(cls, values: Iterable[str]) -> EncodedStrings:
        encoded = [value.encode("utf-8", "surrogatepass") for value in values]
        data = np.frombuffer(b"".join(encoded), dtype=np.uint8)
        ends = np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded)))
        return cls(data, ends.astype(np.int64))

    @classmethod
    def joined(cls, parts: Sequence[EncodedStrings]) -> EncodedStrings:
        """One after the other."""
        offsets = np.cumsum([0, *(len(part.data) for part in parts)])
        return cls(
            np.concatenate([part.data for part in parts]) if parts else np.zeros(0, np.uint8),
            np.concatenate(
                [part.ends + offset for part, offset in zip(parts, offsets, strict=False)]
            )
            if parts
            else np.zeros(0, np.int64),
        )

    def __len__(self) -> int:
        return len(self.ends)

    def _at(self, index: int) -> str:
        end = int(self.ends[index])
        start = int(self.ends[index - 1]) if index else 0
        return self.data[start:end].tobytes().decode("utf-8", "surrogatepass")

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_list())

    def to_list(self) -> list[str]:
        """Every string (ASCII text, the usual case for ids and names, in one decode)."""
        raw = self.data.tobytes()
        ends = self.ends.tolist()
        if raw.isascii():
            text = raw.decode("ascii")
            return [text[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True)]
        return [
            raw[a:b].decode("utf-8", "surrogatepass")
            for a, b in zip([0, *ends[:-1]], ends, strict=True)
        ]

    @property
    def nbytes(self) -> int:
        """The bytes held in memory (a stored buffer is not)."""
        held = 0 if isinstance(self.data, Stored) else self.data.nbytes
        return int(held + self.ends.nbytes)


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
        file = _File(os.open(path, os.O_RDONLY))
        try:
            buffer = mmap.mmap(file.fd, 0, access=mmap.ACCESS_COPY)
        except ValueError as exc:  # an empty file
            raise UnreadableIndex(f"{path}: {exc}") from exc
        try:
            return _parsed(buffer, file, (FORMAT, self._embedder, self._dim))
        except (ValueError, KeyError, TypeError, IndexError, struct.error) as exc:
            raise UnreadableIndex(f"{path}: {exc}") from exc


def _parsed(buffer: mmap.mmap, file: _File, kind: tuple[int, str, int]) -> dict[str, Any]:
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
