"""Objects under a prefix of an S3-compatible bucket, with the store's conditional writes.

Leases and the journal of a cluster rely on two preconditions every S3-compatible
store checks atomically: ``If-None-Match: *`` (create, fail if the key exists) and
``If-Match: <ETag>`` (replace only the version read). A failed precondition raises
``PreconditionFailed``; nothing else here decides who wins.

The client is boto3's, configured from the same ``AWS_*`` variables LanceDB reads
(``AWS_ENDPOINT``, ``AWS_REGION``, the credentials); its blocking calls run in worker
threads.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import anyio.to_thread

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

    def __init__(self, uri: str, environ: dict[str, str] | None = None) -> None:
        import boto3
        from botocore.config import Config

        env = dict(os.environ if environ is None else environ)
        self._bucket, prefix = _split(uri)
        self._prefix = f"{prefix}/" if prefix else ""
        self._client: Any = boto3.client(
            "s3",
            endpoint_url=env.get("AWS_ENDPOINT") or env.get("AWS_ENDPOINT_URL") or None,
            region_name=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-east-1",
            aws_access_key_id=env.get("AWS_ACCESS_KEY_ID"),
            aws_secret_access_key=env.get("AWS_SECRET_ACCESS_KEY"),
            aws_session_token=env.get("AWS_SESSION_TOKEN"),
            config=Config(
                retries={"max_attempts": 3, "mode": "standard"},
                max_pool_connections=32,
                connect_timeout=5,
                read_timeout=10,
            ),
        )

    async def get(self, key: str) -> tuple[bytes, str] | None:
        """The object's bytes and ETag, or None when there is no such key."""
        return await anyio.to_thread.run_sync(self._get, key)

    async def put(
        self, key: str, body: bytes, *, create: bool = False, replace: str | None = None
    ) -> str:
        """Write the object; returns its new ETag. ``create``: only if the key does not
        exist; ``replace``: only if its ETag is still this one. Raises
        ``PreconditionFailed`` when the condition does not hold."""
        return await anyio.to_thread.run_sync(self._put, key, body, create, replace)

    async def keys(self, prefix: str) -> list[Listed]:
        """Every key under ``prefix``, in key order."""
        return await anyio.to_thread.run_sync(self._list, prefix)

    async def delete(self, key: str) -> None:
        """Delete the object (no error if it is gone already)."""
        await anyio.to_thread.run_sync(self._delete, key)

    def _get(self, key: str) -> tuple[bytes, str] | None:
        try:
            answer = self._client.get_object(Bucket=self._bucket, Key=self._prefix + key)
        except self._client.exceptions.NoSuchKey:
            return None
        except Exception as exc:
            raise self._failed("get", key, exc) from exc
        return answer["Body"].read(), answer["ETag"]

    def _put(self, key: str, body: bytes, create: bool, replace: str | None) -> str:
        conditions: dict[str, str] = {}
        if create:
            conditions["IfNoneMatch"] = "*"
        if replace is not None:
            conditions["IfMatch"] = replace
        try:
            answer = self._client.put_object(
                Bucket=self._bucket, Key=self._prefix + key, Body=body, **conditions
            )
        except Exception as exc:
            if _status(exc) in (409, 412):  # 409: a concurrent conditional write won
                raise PreconditionFailed(key) from exc
            raise self._failed("put", key, exc) from exc
        return str(answer["ETag"])

    def _list(self, prefix: str) -> list[Listed]:
        found: list[Listed] = []
        try:
            pages = self._client.get_paginator("list_objects_v2").paginate(
                Bucket=self._bucket, Prefix=self._prefix + prefix
            )
            for page in pages:
                for item in page.get("Contents", []):
                    found.append(Listed(item["Key"][len(self._prefix) :], item["ETag"]))
        except Exception as exc:
            raise self._failed("list", prefix, exc) from exc
        return sorted(found, key=lambda listed: listed.key)

    def _delete(self, key: str) -> None:
        try:
            self._client.delete_object(Bucket=self._bucket, Key=self._prefix + key)
        except Exception as exc:
            raise self._failed("delete", key, exc) from exc

    def _failed(self, what: str, key: str, exc: Exception) -> ObjectStoreError:
        return ObjectStoreError(f"object store: {what} {self._prefix}{key}: {exc}")


def _status(exc: Exception) -> int | None:
    response = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return None
    status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return status if isinstance(status, int) else None
