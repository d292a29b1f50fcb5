"""Cluster nodes (``MNEMO_NODE``) sharing one object-store data directory (moto's S3
server in its own process), each a real ``mnemo serve``: a user is served by one node
at a time, moves when their node dies or is asked for them, and no acknowledged turn
is lost or written twice on the way. Leases are short here (2 s) to keep it quick."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed

from tests.harness import Client
from tests.test_object_store import _BUCKET, s3
from tests.test_serve_process import _serving

pytestmark = pytest.mark.anyio

__all__ = ["s3"]

KEYS = {"key-alice": "alice", "key-bob": "bob"}


def node_env(s3: dict[str, str], name: str, tmp_path: Path, **more: str) -> dict[str, str]:
    return {
        **s3,
        "MNEMO_DATA_DIR": f"s3://{_BUCKET}/cluster",
        "MNEMO_LOCAL_DIR": str(tmp_path / name),
        "MNEMO_NODE": name,
        "MNEMO_API_KEYS": ",".join(f"{k}:{u}" for k, u in KEYS.items()),
        "MNEMO_EMBEDDER": "hash",
        "MNEMO_PRELOAD_EMBEDDER": "false",
        "MNEMO_LEASE_SECONDS": "2",
        "MNEMO_HANDOVER_AFTER": "0.5",
        "MNEMO_MIN_HOLD": "1",
        **more,
    }


@contextlib.contextmanager
def nodes(
    s3: dict[str, str], tmp_path: Path, *names: str
) -> Iterator[list[tuple[str, subprocess.Popen[bytes]]]]:
    with contextlib.ExitStack() as stack:
        yield [
            stack.enter_context(_serving(tmp_path / "unused", **node_env(s3, n, tmp_path)))
            for n in names
        ]


def get(address: str, path: str, key: str) -> httpx.Response:
    return httpx.get(
        f"http://{address}{path}", headers={"Authorization": f"Bearer {key}"}, timeout=30
    )


def exported_texts(address: str, key: str) -> list[str]:
    answer = get(address, "/memory/export", key)
    assert answer.status_code == 200, answer.text
    lines = [json.loads(line) for line in answer.text.splitlines() if line.strip()]
    return sorted(line["text"] for line in lines if line.get("kind") == "turn")


def until_served(address: str, key: str, within: float) -> float:
    """Seconds until ``address`` serves the key's user (polling every 0.1 s)."""
    start = time.monotonic()
    while True:
        answer = get(address, "/memory/long-term", key)
        if answer.status_code == 200:
            return time.monotonic() - start
        assert answer.status_code == 421, answer.text
        assert time.monotonic() - start < within, f"not served within {within} s"
        time.sleep(0.1)


async def acked_turns(address: str, key: str, session: str, count: int) -> list[str]:
    said = []
    async with Client.connect(address, session, key) as client:
        assert (await client.receive())["type"] == "ready"
        for n in range(count):
            text = f"{session} remembers item number {n}"
            await client.send(type="turn", id=f"t{n}", user=text, assistant="noted")
            ack = await client.receive()
            assert ack["type"] == "ack", ack
            said.append(text)
    return said


async def test_a_user_is_served_by_one_node_and_moves_with_every_acked_turn_when_it_dies(
    s3: dict[str, str], tmp_path: Path
) -> None:
    with nodes(s3, tmp_path, "n1", "n2") as [(one, first), (two, _)]:
        said = await acked_turns(one, "key-alice", "s1", 5)
        answer = get(two, "/memory/long-term", "key-alice")
        assert answer.status_code == 421
        assert answer.json()["error"]["code"] == "not_home"
        assert answer.headers["Retry-After"] == "1"
        # Bob's home is whoever serves him first: the other node, here.
        assert get(two, "/memory/long-term", "key-bob").status_code == 200
        assert get(one, "/memory/long-term", "key-bob").status_code == 421
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        moved = until_served(two, "key-alice", within=15)
        assert exported_texts(two, "key-alice") == sorted([*said, *["noted"] * len(said)])
    assert moved > 1.0  # it waited for the dead node's lease


async def test_a_node_asked_for_a_user_hands_them_over_and_closes_their_socket_with_1012(
    s3: dict[str, str], tmp_path: Path
) -> None:
    with nodes(s3, tmp_path, "n1", "n2") as [(one, _), (two, _)]:
        async with Client.connect(one, "s1", "key-alice") as client:
            assert (await client.receive())["type"] == "ready"
            await client.send(type="turn", id="t1", user="alice likes green tea", assistant="ok")
            assert (await client.receive())["type"] == "ack"
            until_served(two, "key-alice", within=15)  # asks, n1 hands over
            with pytest.raises(ConnectionClosed) as closed:
                await client.receive(timeout=10)
        assert closed.value.rcvd is not None
        assert closed.value.rcvd.code == 1012
        assert exported_texts(two, "key-alice") == ["alice likes green tea", "ok"]
        assert get(one, "/memory/long-term", "key-alice").status_code == 421


async def test_a_paused_owner_cannot_acknowledge_a_turn_after_another_node_fenced_it(
    s3: dict[str, str], tmp_path: Path
) -> None:
    with nodes(s3, tmp_path, "n1", "n2") as [(one, first), (two, _)]:
        async with Client.connect(one, "s1", "key-alice") as client:
            assert (await client.receive())["type"] == "ready"
            await client.send(type="turn", id="t1", user="before the pause", assistant="ok")
            assert (await client.receive())["type"] == "ack"
            os.kill(first.pid, signal.SIGSTOP)  # a long GC pause, a frozen VM
            try:
                until_served(two, "key-alice", within=15)
                await client.send(type="turn", id="t2", user="after the fence", assistant="x")
            finally:
                os.kill(first.pid, signal.SIGCONT)
            answers: list[dict[str, Any]] = []
            with contextlib.suppress(ConnectionClosed, TimeoutError):
                while True:
                    answers.append(await client.receive(timeout=10))
        assert not [a for a in answers if a.get("type") == "ack"], answers
        texts = exported_texts(two, "key-alice")
        assert "after the fence" not in texts
        assert "before the pause" in texts
