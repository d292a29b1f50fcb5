"""The archive's write-ahead journal: a message is durable once its record is on disk here.

A LanceDB append costs a data file, a manifest and a version, tens of
milliseconds under load, and the more of them the more compaction later. So an
acknowledged turn is first appended to a local journal file and fsynced (well
under a millisecond here), and the store moves journaled messages into its
table in bigger batches (``LanceStore.flush_messages``). A journal file is
deleted once its messages are in the table; whatever files are left when the
store opens (a crash) are replayed into the table then.

Records: a little-endian header (payload length, CRC-32 of the payload), then a
msgpack payload (the messages and their float32 vectors). A torn last record,
from a crash in the middle of a write, fails its length or CRC check and is
dropped: it was never acknowledged.
"""

from __future__ import annotations

import logging
import os
import struct
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Protocol

import anyio
import anyio.to_thread
import msgspec
import numpy as np
import numpy.typing as npt

from actors.errors import Rejected
from schemas.records import ArchivedMessage

__all__ = [
    "Journal",
    "Journaling",
    "Segment",
    "create_file",
    "decode_record",
    "encode_record",
    "frame",
    "frames",
    "write_durably",
]

_log = logging.getLogger("mnemo.journal")
_HEADER = struct.Struct("<II")
_SUFFIX = ".journal"


class _Record(msgspec.Struct, array_like=True):
    rows: list[ArchivedMessage]
    #: The rows' vectors, float32, row after row.
    vectors: bytes


_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(_Record)


@dataclass(eq=False)
class Segment:
    """One journal file (or, in a cluster, journal objects) and the messages it holds,
    in order of writing."""

    path: Path | None = None
    #: The journal objects it was read from (a cluster's journal).
    keys: list[str] = field(default_factory=list)
    rows: list[ArchivedMessage] = field(default_factory=list)
    vectors: list[npt.NDArray[np.float32]] = field(default_factory=list)
    #: Its messages may be in the table already (replayed after a crash, or an append
    #: that failed and may have committed): check before moving them.
    maybe_stored: bool = False

    def matrix(self, dim: int) -> npt.NDArray[np.float32]:
        """The vectors of ``rows``, one row each."""
        if not self.vectors:
            return np.zeros((0, dim), dtype=np.float32)
        return np.concatenate(self.vectors).reshape(-1, dim)


class Journaling(Protocol):
    """What the archive needs of a journal (``Journal`` here, or a cluster's)."""

    rows: int

    def recover(self) -> list[Segment]: ...

    async def append(
        self, rows: Sequence[ArchivedMessage], vectors: npt.NDArray[np.float32]
    ) -> None: ...

    async def seal(self) -> list[Segment]: ...

    async def discard(self, segment: Segment) -> None: ...

    def pending(self) -> list[Segment]: ...

    def close(self) -> None: ...


def encode_record(rows: Sequence[ArchivedMessage], flat: npt.NDArray[np.float32]) -> bytes:
    """One record's payload. Raises ``Rejected`` for rows that cannot be encoded."""
    try:
        return _encoder.encode(_Record(list(rows), flat.tobytes()))
    except (msgspec.EncodeError, OverflowError, TypeError, ValueError, RecursionError) as exc:
        raise Rejected(f"{len(rows)} messages cannot be journaled: {exc}") from exc


def decode_record(payload: bytes) -> tuple[list[ArchivedMessage], npt.NDArray[np.float32]]:
    """A payload's rows and their vectors (flat). Raises ``msgspec.DecodeError``."""
    record = _decoder.decode(payload)
    return record.rows, np.frombuffer(record.vectors, np.float32)


class Journal:
    """Append-only journal files in ``directory``; one is written at a time.

    ``append`` writes into the open segment; ``seal`` closes it so that its
    messages can be moved into the table (then ``discard`` deletes its file).
    Messages of every segment not yet discarded are ``pending``: the store's reads
    show them. Use from one event loop; ``append`` and ``seal`` never interleave.
    """

    def __init__(self, directory: Path, dim: int) -> None:
        self._directory, self._dim = directory, dim
        self._open: Segment | None = None
        self._file: BinaryIO | None = None
        self._sealed: list[Segment] = []
        self._next = 0
        self._lock = anyio.Lock()
        self.rows = 0

    def recover(self) -> list[Segment]:
        """Read the files left by an earlier process (oldest first); they count as
        sealed. Call once, before anything is appended."""
        self._directory.mkdir(parents=True, exist_ok=True)
        paths = sorted(self._directory.glob(f"*{_SUFFIX}"))
        for path in paths:
            segment = Segment(path)
            for record in _records(path):
                self._keep(segment, record.rows, np.frombuffer(record.vectors, np.float32))
            self._sealed.append(segment)
            self.rows += len(segment.rows)
        numbers = [int(p.stem) for p in paths if p.stem.isdigit()]
        self._next = max(numbers, default=0) + 1
        return list(self._sealed)

    async def append(
        self, rows: Sequence[ArchivedMessage], vectors: npt.NDArray[np.float32]
    ) -> None:
        """Write ``rows`` and return once they are on disk. Raises ``OSError``, and
        ``Rejected`` for rows that cannot be encoded (then nothing is written)."""
        flat = np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1)
        payload = encode_record(rows, flat)
        data = frame(payload)
        async with self._lock:
            if self._open is None:
                path = self._directory / f"{self._next:012d}{_SUFFIX}"
                self._next += 1
                self._file = await anyio.to_thread.run_sync(create_file, path)
                self._open = Segment(path)
            segment, file = self._open, self._file
            assert file is not None
            try:
                await anyio.to_thread.run_sync(write_durably, file, data)
            except OSError:
                # Part of the record may be on disk: nothing more goes after it (a reader
                # stops at the first bad record). The next append starts a new file.
                file.close()
                if segment.rows:
                    self._sealed.append(segment)
                self._open, self._file = None, None
                raise
            self._keep(segment, rows, flat)
            self.rows += len(rows)

    async def seal(self) -> list[Segment]:
        """Close the segment being written (if it holds anything); returns every sealed
        segment not yet discarded, oldest first."""
        async with self._lock:
            if self._open is not None and self._open.rows:
                assert self._file is not None
                self._file.close()
                self._sealed.append(self._open)
                self._open, self._file = None, None
        return list(self._sealed)

    async def discard(self, segment: Segment) -> None:
        """Delete a sealed segment whose messages are in the table now."""
        self._sealed.remove(segment)
        self.rows -= len(segment.rows)
        if segment.path is not None:
            segment.path.unlink(missing_ok=True)

    def pending(self) -> list[Segment]:
        """Segments not yet discarded (sealed ones first), each with its messages."""
        return [*self._sealed, *([self._open] if self._open is not None else [])]

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def _keep(
        self, segment: Segment, rows: Sequence[ArchivedMessage], flat: npt.NDArray[np.float32]
    ) -> None:
        segment.rows.extend(rows)
        segment.vectors.append(flat)


def frame(payload: bytes) -> bytes:
    """``payload`` as one record: its length and CRC-32, then itself."""
    return _HEADER.pack(len(payload), zlib.crc32(payload)) + payload


def create_file(path: Path) -> BinaryIO:
    """A new journal file, opened for appending, its name durable."""
    file = path.open("ab", buffering=0)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)  # the new file's name is durable too
    finally:
        os.close(fd)
    return file


def write_durably(file: BinaryIO, data: bytes) -> None:
    """Append ``data`` and return once it is on disk."""
    file.write(data)
    os.fsync(file.fileno())


def _records(path: Path) -> Iterator[_Record]:
    """The whole records of a journal file; a torn or corrupt tail is logged and dropped."""
    for payload in frames(path):
        try:
            yield _decoder.decode(payload)
        except msgspec.DecodeError:
            _log.warning("journal %s: dropped a record that does not decode", path.name)
            return


def frames(path: Path) -> Iterator[bytes]:
    """The payloads of the whole records of a file; a torn or corrupt tail is logged and
    dropped."""
    data = path.read_bytes()
    offset = 0
    while offset < len(data):
        if offset + _HEADER.size > len(data):
            break
        size, crc = _HEADER.unpack_from(data, offset)
        payload = data[offset + _HEADER.size : offset + _HEADER.size + size]
        if len(payload) < size or zlib.crc32(payload) != crc:
            break
        yield payload
        offset += _HEADER.size + size
    if offset < len(data):
        _log.warning(
            "journal %s: dropped %d bytes of a torn or corrupt record at its end",
            path.name,
            len(data) - offset,
        )
