"""A bucket on moto's S3 server for one test: the ``s3`` fixture and what the bucket holds."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from testing.s3_server import bucket_client, moto_server

__all__ = ["BUCKET", "objects", "s3"]


BUCKET = "mnemo-test"


@pytest.fixture
def s3() -> Iterator[dict[str, str]]:
    """moto's S3 server and the ``AWS_*`` variables that point LanceDB at it."""
    with moto_server(BUCKET) as env:
        yield env


def objects(env: dict[str, str]) -> dict[str, bytes]:
    """Every object in the bucket and its bytes; one deleted between the listing and its
    read (a running server's journal empties as it moves rows into the tables) is left
    out."""
    client = bucket_client(env)
    keys = [
        item["Key"]
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET)
        for item in page.get("Contents", [])
    ]
    found = {}
    for key in keys:
        try:
            found[key] = client.get_object(Bucket=BUCKET, Key=key)["Body"].read()
        except client.exceptions.NoSuchKey:
            continue
    return found
