"""moto's S3 server in its own process, for tests and benchmarks: the ``AWS_*`` variables
that point LanceDB (and a cluster's object client) at it, and a client of its own."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import boto3

__all__ = ["bucket_client", "moto_server"]


@contextlib.contextmanager
def moto_server(bucket: str) -> Iterator[dict[str, str]]:
    """A fresh moto S3 server holding an empty ``bucket``; yields its ``AWS_*`` variables
    (the server is killed at the end)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(url, timeout=1):
                    break
            except OSError:
                assert process.poll() is None, "moto's server exited"
                assert time.monotonic() < deadline, "moto's server did not start in 30 s"
                time.sleep(0.1)
        env = {
            "AWS_ENDPOINT": url,
            "AWS_ALLOW_HTTP": "true",
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_REGION": "us-east-1",
        }
        bucket_client(env).create_bucket(Bucket=bucket)
        yield env
    finally:
        process.kill()
        process.wait(10)


def bucket_client(env: dict[str, str]) -> Any:
    """boto3's S3 client for the server ``env`` names."""
    return boto3.client(
        "s3",
        endpoint_url=env["AWS_ENDPOINT"],
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
        region_name=env["AWS_REGION"],
    )
