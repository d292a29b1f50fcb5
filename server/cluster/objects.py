"""Objects under a prefix of an S3-compatible bucket, with the store's conditional writes.

Leases and the journal of a cluster rely on two preconditions every S3-compatible
store checks atomically: ``If-None-Match: *`` (create, fail if the key exists) and
``If-Match: <ETag>`` (replace only the version read). A failed precondition raises
``PreconditionFailed``; nothing else here decides who wins.

The client is ``obstore`` (Rust's ``object_store``, the library LanceDB's own storage
layer is built on), configured from the same ``AWS_*`` variables LanceDB reads
(``AWS_ENDPOINT``, ``AWS_REGION``, the credentials, ``AWS_ALLOW_HTTP``). Its calls are
asynchronous: no worker thread per request.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from actors.errors import MnemoError

__all__ = ["Listed", "ObjectStoreError", "Objects", "PreconditionFailed"]


class PreconditionFailed(Exception):
    """A conditional write lost: the key exists (create) or changed (replace)."""


class ObjectStoreError(MnemoError):
    """The object store could not be reached or refused a request."""

    code = "object_store_unavailable"


@dataclass(frozen=True, slots=True)
class Listed:
    key: str
    etag: str


def _split(uri: str) -> tuple[str, str]:
    scheme, sep, rest = uri.partition("://")
    if not sep or scheme != "s3" or not rest.split("/", 1)[0]:
        raise ValueError(f"expected s3://bucket/prefix, got {uri!r}")
    bucket, _, prefix = rest.partition("/")
    return bucket, prefix.strip("/")


class Objects:
    """The objects under ``s3://bucket/prefix``; keys given to the methods are relative
    to the prefix."""

    def __init__(self, uri: str, environ: Mapping[str, str] | None = None) -> None:
        import obstore
        from obstore.store import S3Store

        env = os.environ if environ is None else environ
        bucket, prefix = _split(uri)
        config: dict[str, Any] = {
            "endpoint": env.get("AWS_ENDPOINT") or env.get("AWS_ENDPOINT_URL"),
            "region": env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1",
            "access_key_id": env.get("AWS_ACCESS_KEY_ID"),
            "secret_access_key": env.get("AWS_SECRET_ACCESS_KEY"),
            "session_token": env.get("AWS_SESSION_TOKEN"),
            # ETag preconditions for replace (create needs none): S3's own, and MinIO's.
            "conditional_put": "etag",
        }
        self._obstore: Any = obstore
        self._store: Any = S3Store(
            bucket,
            prefix=prefix or None,
            config=cast(Any, {k: v for k, v in config.items() if v}),
            client_options={
                "allow_http": env.get("AWS_ALLOW_HTTP", "").lower() in ("1", "true"),
                "timeout": "10s",
                "connect_timeout": "5s",
            },
        )
        self._where = f"s3://{bucket}/{prefix}"

    async def get(self, key: str) -> tuple[bytes, str] | None:
        """The object's bytes and ETag, or None when there is no such key."""
        try:
            found = await self._obstore.get_async(self._store, key)
            return bytes(await found.bytes_async()), str(found.meta["e_tag"])
        except FileNotFoundError:
            return None
        except Exception as exc:
            raise self._failed("get", key, exc) from exc

    async def put(
        self, key: str, body: bytes, *, create: bool = False, replace: str | None = None
    ) -> str:
        """Write the object; returns its new ETag. ``create``: only if the key does not
        exist; ``replace``: only if its ETag is still this one. Raises
        ``PreconditionFailed`` when the condition does not hold."""
        from obstore.exceptions import AlreadyExistsError, PreconditionError

        mode: Any = "create" if create else {"e_tag": replace} if replace else None
        try:
            written = await self._obstore.put_async(self._store, key, body, mode=mode)
        except (AlreadyExistsError, PreconditionError) as exc:
            raise PreconditionFailed(key) from exc
        except Exception as exc:
            raise self._failed("put", key, exc) from exc
        return str(written["e_tag"])

    async def keys(self, prefix: str) -> list[Listed]:
        """Every key under the folder ``prefix`` (ending in ``/``), in key order."""
        found: list[Listed] = []
        try:
            async for chunk in self._obstore.list(self._store, prefix.rstrip("/")):
                found += [Listed(str(m["path"]), str(m["e_tag"])) for m in chunk]
        except Exception as exc:
            raise self._failed("list", prefix, exc) from exc
        return sorted(found, key=lambda listed: listed.key)

    async def upload(self, key: str, path: Path) -> None:
        """Write the file at ``path`` to ``key`` (in parts, several at a time, if large)."""
        try:
            await self._obstore.put_async(self._store, key, path)
        except Exception as exc:
            raise self._failed("upload", key, exc) from exc

    async def download(
        self, key: str, path: Path, *, part: int = 8 << 20, at_once: int = 8
    ) -> bool:
        """Write the object at ``key`` to ``path``, in ``part``-byte ranges fetched
        ``at_once`` at a time (one stream from a store is slower than the network);
        False when there is no such key."""
        try:
            size = int((await self._obstore.head_async(self._store, key))["size"])
            with path.open("wb") as out:
                for first in range(0, size, part * at_once):
                    starts = list(range(first, min(first + part * at_once, size), part))
                    ends = [min(start + part, size) for start in starts]
                    for chunk in await self._obstore.get_ranges_async(
                        self._store, key, starts=starts, ends=ends
                    ):
                        out.write(memoryview(chunk))
        except FileNotFoundError:
            return False
        except OSError:
            raise
        except Exception as exc:
            raise self._failed("download", key, exc) from exc
        return True

    async def delete(self, key: str) -> None:
        """Delete the object (no error if it is gone already)."""
        try:
            await self._obstore.delete_async(self._store, key)
        except FileNotFoundError:
            pass
        except Exception as exc:
            raise self._failed("delete", key, exc) from exc

    def _failed(self, what: str, key: str, exc: Exception) -> ObjectStoreError:
        return ObjectStoreError(f"object store: {what} {self._where}/{key}: {exc}")
