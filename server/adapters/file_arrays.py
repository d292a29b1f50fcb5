"""Arrays of a saved index (``server.adapters.index_files``) as a loaded index uses them:
strings kept encoded (``EncodedStrings``), and arrays read from the file when a stretch
of them is asked for rather than mapped (``Stored``, saved as ``OnDemand``)."""

from __future__ import annotations

import os
import weakref
from abc import abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

import numpy as np
import numpy.typing as npt

__all__ = ["EncodedStrings", "OnDemand", "OpenFile", "Stored", "StringColumn"]


class OpenFile:
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

    def __init__(self, file: OpenFile, offset: int, dtype: np.dtype[Any], length: int) -> None:
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
