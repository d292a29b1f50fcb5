"""A cluster's journal on a shared volume instead of the bucket (``MNEMO_JOURNAL_DIR``).

The journal needs two things of where it lives (``server.cluster.journal``): that an
acknowledged record survives the loss of the node that wrote it, and a write that
creates a record only if none exists at its name, atomically, seen by every node: the
fence. An S3-compatible bucket gives both with ``If-None-Match: *``; so does a
directory every node mounts from a replicated filesystem (NFS v4, Amazon EFS, CephFS,
GlusterFS): a record is written to a temporary file, synced, and *linked* to its name,
and ``link(2)`` fails if the name exists, on every node's view of the directory.
What that buys is the ``ack``: a synced write to the volume instead of a PUT.

A listing that lags behind (a client's cached view of the directory) cannot break the
fence, only slow a take: a new owner that tries to create a record that exists lists
again. So mount the volume without caching directory attributes for long (NFS:
``actimeo=0`` or ``lookupcache=positive``).

The leases, heartbeats and saved indexes stay in the bucket (they replace objects by
ETag, which a filesystem cannot do atomically). Only ``create`` and plain writes are
offered here.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import anyio.to_thread

from server.cluster.objects import Listed, ObjectStoreError, PreconditionFailed

__all__ = ["Volume"]


class Volume:
    """Files under ``root`` as the journal's objects; keys given to the methods are
    paths relative to it (``journal/<shard>/<sequence>``)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, key: str) -> Path:
        if key.startswith("/") or ".." in key.split("/") or not key:
            raise ValueError(f"not a journal key: {key!r}")
        return self.root / key

    async def get(self, key: str) -> tuple[bytes, str] | None:
        """The record's bytes and a tag of its version, or None when there is none."""
        return await anyio.to_thread.run_sync(self._get, key)

    def _get(self, key: str) -> tuple[bytes, str] | None:
        path = self._path(key)
        try:
            with path.open("rb") as source:
                body = source.read()
                status = os.fstat(source.fileno())
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise ObjectStoreError(f"journal volume: get {path}: {exc}") from exc
        return body, _tag(status)

    async def put(self, key: str, body: bytes, *, create: bool = False) -> str:
        """Write the record, synced; ``create``: only if none exists at ``key`` (raises
        ``PreconditionFailed`` if one does). Returns its version's tag."""
        return await anyio.to_thread.run_sync(self._put, key, body, create)

    def _put(self, key: str, body: bytes, create: bool) -> str:
        path = self._path(key)
        # Unique across the nodes that share the directory (a pid is not).
        scratch = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with scratch.open("wb") as out:
                out.write(body)
                out.flush()
                os.fsync(out.fileno())
                status = os.fstat(out.fileno())
            if create:
                try:
                    os.link(scratch, path)  # fails if the name exists: the fence
                except FileExistsError:
                    raise PreconditionFailed(key) from None
                finally:
                    scratch.unlink(missing_ok=True)
            else:
                os.replace(scratch, path)
            _sync_directory(path.parent)
        except OSError as exc:
            scratch.unlink(missing_ok=True)
            raise ObjectStoreError(f"journal volume: put {path}: {exc}") from exc
        return _tag(status)

    async def keys(self, prefix: str) -> list[Listed]:
        """Every record under the folder ``prefix`` (ending in ``/``), in key order."""
        return await anyio.to_thread.run_sync(self._keys, prefix)

    def _keys(self, prefix: str) -> list[Listed]:
        folder = self._path(prefix.rstrip("/"))
        found: list[Listed] = []
        try:
            for path in folder.iterdir():
                if not path.name.startswith("."):
                    found.append(Listed(f"{prefix.rstrip('/')}/{path.name}", _tag(path.stat())))
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise ObjectStoreError(f"journal volume: list {folder}: {exc}") from exc
        return sorted(found, key=lambda listed: listed.key)

    async def delete(self, key: str) -> None:
        """Delete the record (no error if it is gone already)."""
        await anyio.to_thread.run_sync(self._delete, key)

    def _delete(self, key: str) -> None:
        path = self._path(key)
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            raise ObjectStoreError(f"journal volume: delete {path}: {exc}") from exc


def _tag(status: os.stat_result) -> str:
    return f"{status.st_ino:x}-{status.st_mtime_ns:x}-{status.st_size:x}"


def _sync_directory(folder: Path) -> None:
    """Make a new name in ``folder`` durable."""
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
