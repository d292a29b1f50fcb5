"""The server's threads: numpy's products run on one BLAS thread, whose idle spinning
would otherwise take the cores from the query embedding and the event loop."""

from __future__ import annotations

from pathlib import Path

import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from testing.fake_ollama import FakeOllama
from tests.harness import make_app, serve, settings_for

pytestmark = pytest.mark.anyio


def blas_threads() -> list[int]:
    return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]


async def test_a_running_server_gives_numpy_one_blas_thread(
    tmp_path: Path, fake: FakeOllama
) -> None:
    with threadpool_limits(2, user_api="blas"):
        assert blas_threads()
        assert all(n == 2 for n in blas_threads())
        async with serve(make_app(settings_for(tmp_path, fake.url))):
            assert blas_threads() == [1] * len(blas_threads())
