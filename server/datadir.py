"""Where a server keeps its data, and one server per data directory: an exclusive lock
on ``<data_dir>/mnemo.lock``.

A data directory is a local path, or an object-store URI (``s3://bucket/prefix``,
configured with the standard ``AWS_*`` variables, which LanceDB reads). With a URI
only the LanceDB tables live there; the turn journal, the saved search indexes and
the lock live in ``MNEMO_LOCAL_DIR``.

A second ``mnemo serve`` on the same directory would be a second writer of its
tables and journal, and neither process would see the other's writes. The lock is
the kernel's (``flock``), so it goes away with its process, however that ends (a
``kill -9`` included); the file keeps who took it last, to name the holder.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from actors.errors import MnemoError

__all__ = ["DataDirLock", "DataDirLocked", "is_uri", "local_dir", "tables_uri"]

_NAME = "mnemo.lock"


def is_uri(data_dir: str) -> bool:
    """Whether ``data_dir`` names an object store (``scheme://...``), not a path."""
    return "://" in data_dir


def tables_uri(data_dir: str) -> str:
    """Where the LanceDB tables of ``data_dir`` live."""
    return (
        f"{data_dir.rstrip('/')}/lancedb" if is_uri(data_dir) else str(Path(data_dir) / "lancedb")
    )


def local_dir(data_dir: str, local: str) -> Path:
    """The local directory of ``data_dir``'s journal, saved indexes and lock: the data
    directory itself, or ``local`` (``MNEMO_LOCAL_DIR``) for an object-store URI."""
    return Path(local) if is_uri(data_dir) else Path(data_dir)


class DataDirLocked(MnemoError):
    """Another process holds the data directory."""

    code = "data_dir_locked"


class DataDirLock:
    """``acquire()`` takes the lock (or raises ``DataDirLocked`` naming the holder);
    ``release()`` gives it back. Use as a context manager."""

    def __init__(self, data_dir: str | Path) -> None:
        self.path = Path(data_dir) / _NAME
        self._file: IO[str] | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        file = self.path.open("a+", encoding="utf-8")
        try:
            fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            file.seek(0)
            holder = _describe(file.read())
            file.close()
            raise DataDirLocked(
                f"{self.path.parent} is in use by another mnemo server ({holder}); stop it or"
                " use another MNEMO_DATA_DIR"
            ) from None
        file.seek(0)
        file.truncate()
        holder_info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": datetime.now(UTC).isoformat(),
        }
        file.write(json.dumps(holder_info) + "\n")
        file.flush()
        self._file = file

    def release(self) -> None:
        if self._file is not None:
            fcntl.flock(self._file.fileno(), fcntl.LOCK_UN)
            self._file.close()
            self._file = None

    def __enter__(self) -> DataDirLock:
        self.acquire()
        return self

    def __exit__(self, *_: object) -> None:
        self.release()


def _describe(text: str) -> str:
    try:
        holder = json.loads(text)
        return f"pid {holder['pid']} on {holder['host']}, since {holder['since']}"
    except (ValueError, KeyError, TypeError):
        return "a process that has not said who it is yet"
