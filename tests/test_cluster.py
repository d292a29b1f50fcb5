"""Cluster nodes (``MNEMO_NODE``) sharing one object-store data directory (moto's S3
server in its own process), each a real ``mnemo serve``: a user is served by one node
at a time, moves when their node dies or is asked for them, and no acknowledged turn
is lost or written twice on the way. Leases are short here (2 s) to keep it quick."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus

from testing.deploy import Proxy, mnemo_map
from testing.ports import free_port
from tests.harness import Client, serve_process
from tests.s3_bucket import BUCKET, objects, s3

pytestmark = pytest.mark.anyio

__all__ = ["s3"]

KEYS = {"key-alice": "alice", "key-bob": "bob"}


def node_env(s3: dict[str, str], name: str, tmp_path: Path, **more: str) -> dict[str, str]:
    return {
        **s3,
        "MNEMO_DATA_DIR": f"s3://{BUCKET}/cluster",
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
    s3: dict[str, str], tmp_path: Path, *names: str, **more: str
) -> Iterator[list[tuple[str, subprocess.Popen[bytes]]]]:
    with contextlib.ExitStack() as stack:
        yield [
            stack.enter_context(
                serve_process(tmp_path / "unused", **node_env(s3, n, tmp_path, **more))
            )
            for n in names
        ]


@pytest.fixture(params=["bucket", "volume"])
def journal(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    """Where the nodes keep their journal: the bucket, or a volume they all mount (here a
    directory of this machine)."""
    if request.param == "bucket":
        return {}
    return {"MNEMO_JOURNAL_DIR": str(tmp_path / "shared-journal")}


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
    s3: dict[str, str], tmp_path: Path, journal: dict[str, str]
) -> None:
    with nodes(s3, tmp_path, "n1", "n2", **journal) as [(one, first), (two, _)]:
        said = await acked_turns(one, "key-alice", "s1", 5)
        health = get(one, "/healthz", "key-alice").json()["cluster"]
        assert (health["node"], health["shards"], health["alive"][0]) == ("n1", 1, "n1")
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
    if journal:  # the shard's sequence is kept on the volume (its fence records)
        assert [p async for p in anyio.Path(journal["MNEMO_JOURNAL_DIR"]).glob("journal/*/*")]


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
    s3: dict[str, str], tmp_path: Path, journal: dict[str, str]
) -> None:
    with nodes(s3, tmp_path, "n1", "n2", **journal) as [(one, first), (two, _)]:
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


async def test_a_node_that_missed_losing_a_user_cannot_change_their_memory_once_fenced(
    s3: dict[str, str], tmp_path: Path
) -> None:
    # n1's lease is 60 s (a heartbeat every 12 s), n2's 2 s: n2 counts n1 dead between
    # two of its heartbeats and takes alice, while n1 goes on counting itself her home,
    # as a node does whose write passed its check just before it froze.
    long_lease = node_env(s3, "n1", tmp_path, MNEMO_LEASE_SECONDS="60")
    patient = node_env(s3, "n2", tmp_path, MNEMO_HANDOVER_AFTER="60")
    with (
        serve_process(tmp_path / "unused", **long_lease) as (one, _),
        serve_process(tmp_path / "unused", **patient) as (two, _),
    ):
        kept, other = (
            _created(one, "key-alice", text)
            for text in ["my locker code is 4471", "I live in Oslo"]
        )
        until_served(two, "key-alice", within=30)
        assert get(one, "/healthz", "key-alice").json()["cluster"]["shards"] == 1
        # n1's late writes: a delete and an edit, both past its (stale) check. The table
        # refuses the delete, so n1 answers 421 and gives alice up.
        async with httpx.AsyncClient(
            base_url=f"http://{one}", headers={"Authorization": "Bearer key-alice"}, timeout=30
        ) as late:
            deleted = await late.delete(f"/memory/long-term/{other}")
            edit = {"content": "my code is 0000"}
            edited = await late.patch(f"/memory/long-term/{kept}", json=edit)
        assert deleted.json()["error"]["message"].startswith("a newer node"), deleted.text
        assert (deleted.status_code, edited.status_code) == (421, 421)
        with anyio.fail_after(5):
            while get(one, "/healthz", "key-alice").json()["cluster"]["shards"]:
                await anyio.sleep(0.1)
        await anyio.sleep(1.5)  # a node reads the tables' latest version at most 1 s late
        found = get(two, f"/memory/long-term/{kept}", "key-alice")
        assert found.json()["content"] == "my locker code is 4471"
        assert get(two, f"/memory/long-term/{other}", "key-alice").status_code == 200


def _created(address: str, key: str, content: str) -> str:
    answer = httpx.post(
        f"http://{address}/memory/long-term",
        json={"content": content},
        headers={"Authorization": f"Bearer {key}"},
        timeout=30,
    )
    assert answer.status_code == 201, answer.text
    fact_id: str = answer.json()["added"][0]["id"]
    return fact_id


@dataclass
class _At:
    port: int


class Load:
    """Each user's chat through the proxy: a turn every 0.2 s on one session, reconnecting
    (as the chat page does) when a node refuses, closes or dies; every text is new, so
    what was acknowledged can be looked for afterwards."""

    def __init__(self, address: str, keys: dict[str, str]) -> None:
        self.address, self.keys = address, keys
        self.acked: dict[str, list[str]] = {user: [] for user in keys.values()}
        self.stopped = False

    async def run(self) -> None:
        async with anyio.create_task_group() as tg:
            for key, user in self.keys.items():
                tg.start_soon(self._chat, key, user)

    async def _chat(self, key: str, user: str) -> None:
        sent = 0
        while not self.stopped:
            try:
                async with Client.connect(self.address, f"chat-{user}", key) as client:
                    assert (await client.receive())["type"] == "ready"
                    while not self.stopped:
                        sent += 1
                        text = f"{user} says thing {sent}"
                        await client.send(type="turn", id=f"t{sent}", user=text, assistant="ok")
                        while (answer := await client.receive(timeout=20))["type"] not in (
                            "ack",
                            "error",
                        ):
                            pass
                        if answer["type"] == "ack":
                            self.acked[user].append(text)
                        await anyio.sleep(0.2)
            except (InvalidStatus, ConnectionClosed, OSError, TimeoutError):
                await anyio.sleep(0.2)

    async def until_each_acked(self, more: int, within: float) -> None:
        goal = {user: len(texts) + more for user, texts in self.acked.items()}
        with anyio.fail_after(within):
            while any(len(self.acked[user]) < n for user, n in goal.items()):
                await anyio.sleep(0.1)


def homes(address: str, keys: dict[str, str], within: float) -> dict[str, str]:
    """Each user's node, as REST through the proxy finds it (once none answers 421)."""
    found: dict[str, str] = {}
    deadline = time.monotonic() + within
    while len(found) < len(keys):
        for key, user in keys.items():
            if user not in found:
                answer = get(address, "/memory/long-term", key)
                if answer.status_code == 200:
                    found[user] = answer.headers["Mnemo-Node"]
                else:
                    assert answer.status_code in (421, 502, 503), answer.text
        assert time.monotonic() < deadline, f"not all served in {within} s: {found}"
        time.sleep(0.1)
    return found


async def test_behind_haproxy_users_stay_on_one_node_move_on_join_and_on_kill_9_losing_nothing(
    s3: dict[str, str], tmp_path: Path
) -> None:
    keys = {f"key-{n}": f"user-{n}" for n in range(8)}
    env = {"MNEMO_API_KEYS": ",".join(f"{k}:{u}" for k, u in keys.items())}
    ports = [free_port() for _ in range(3)]
    map_file = tmp_path / "shards.map"
    assert mnemo_map(map_file, keys).returncode == 0
    with contextlib.ExitStack() as stack:
        running: dict[str, subprocess.Popen[bytes]] = {}

        def start(n: int) -> None:
            name = f"n{n + 1}"
            port = {"MNEMO_PORT": str(ports[n])}
            node = serve_process(tmp_path / "unused", **node_env(s3, name, tmp_path, **env, **port))
            running[name] = stack.enter_context(node)[1]

        start(0)
        start(1)
        proxy = Proxy(tmp_path, map_file, [_At(port) for port in ports])
        stack.callback(proxy.close)
        proxy.wait_for({"n1": "UP", "n2": "UP", "n3": "DOWN"})
        address = f"127.0.0.1:{proxy.port}"
        load = Load(address, keys)
        async with anyio.create_task_group() as tg:
            tg.start_soon(load.run)
            await load.until_each_acked(3, within=60)
            before = homes(address, keys, within=30)
            assert set(before.values()) == {"n1", "n2"}, before

            start(2)  # a node joins: the proxy sends it its share, their homes hand over
            proxy.wait_for({"n1": "UP", "n2": "UP", "n3": "UP"})
            joined = homes(address, keys, within=30)
            moved = {user for user in keys.values() if joined[user] != before[user]}
            assert moved, joined
            assert {joined[user] for user in moved} == {"n3"}
            await load.until_each_acked(3, within=60)

            victim = max(("n1", "n2", "n3"), key=lambda n: list(joined.values()).count(n))
            running[victim].kill()  # kill -9, under load
            killed = time.monotonic()
            after = homes(address, keys, within=30)
            move_seconds = time.monotonic() - killed
            assert victim not in after.values()
            assert all(after[u] == joined[u] for u in keys.values() if joined[u] != victim)
            await load.until_each_acked(3, within=60)
            load.stopped = True
        for key, user in keys.items():
            stored = [t for t in exported_texts(address, key) if t.startswith(f"{user} ")]
            assert len(stored) == len(set(stored)), user
            assert set(load.acked[user]) <= set(stored), (user, load.acked[user], stored)
    assert move_seconds < 20


async def test_a_node_stopped_with_sigterm_hands_its_users_over_without_waiting_for_a_lease(
    s3: dict[str, str], tmp_path: Path
) -> None:
    slow = {"MNEMO_LEASE_SECONDS": "30"}  # a dead node's users would wait 30 s
    with contextlib.ExitStack() as stack:
        one, first = stack.enter_context(
            serve_process(tmp_path / "unused", **node_env(s3, "n1", tmp_path, **slow))
        )
        two, _ = stack.enter_context(
            serve_process(tmp_path / "unused", **node_env(s3, "n2", tmp_path, **slow))
        )
        said = await acked_turns(one, "key-alice", "s1", 3)
        assert get(two, "/memory/long-term", "key-alice").status_code == 421
        first.send_signal(signal.SIGTERM)
        assert first.wait(30) in (0, -signal.SIGTERM)  # uvicorn re-raises it once done
        moved = until_served(two, "key-alice", within=10)
        assert exported_texts(two, "key-alice") == sorted([*said, *["noted"] * len(said)])
    assert moved < 10


async def test_a_users_saved_index_goes_to_the_bucket_the_next_node_maps_it_and_a_delete_erases_it(
    s3: dict[str, str], tmp_path: Path
) -> None:
    secret = "alice hides the spare key under the blue pot 4417"
    name = hashlib.sha256(b"alice").hexdigest()[:40]
    saving = {"MNEMO_SAVE_INDEX_FROM": "5", "MNEMO_SAVE_INDEX_AFTER": "0.3"}
    never = {"MNEMO_SAVE_INDEX_FROM": "100000"}  # this node saves no index of its own
    with contextlib.ExitStack() as stack:
        one, first = stack.enter_context(
            serve_process(tmp_path / "unused", **node_env(s3, "n1", tmp_path, **saving))
        )
        two, _ = stack.enter_context(
            serve_process(tmp_path / "unused", **node_env(s3, "n2", tmp_path, **never))
        )
        async with Client.connect(one, "s1", "key-alice") as client:
            assert (await client.receive())["type"] == "ready"
            for n, text in enumerate([secret, *[f"alice notes thing {n}" for n in range(5)]]):
                await client.send(type="turn", id=f"t{n}", user=text, assistant="noted")
                await client.until("ack")
        with anyio.fail_after(30):  # saved, then put in the bucket
            while not [k for k in objects(s3) if "/indexes/" in k and f"{name}." in k]:
                await anyio.sleep(0.2)
        first.kill()
        first.wait(10)
        until_served(two, "key-alice", within=15)
        hits = get(two, "/memory/search?q=spare+key+blue+pot&kind=turns", "key-alice").json()
        assert hits["hits"][0]["text"] == secret
        # Mapped from the file fetched from the bucket: this node saves none itself.
        assert (tmp_path / "n2" / "indexes" / f"{name}.idx").is_file()

        listed = get(two, "/memory/long-term?kind=turns", "key-alice").json()["items"]
        [turn] = [t for t in listed if t["text"] == secret]
        async with httpx.AsyncClient(base_url=f"http://{two}", timeout=30) as rest:
            answer = await rest.delete(
                f"/memory/long-term/{turn['id']}", headers={"Authorization": "Bearer key-alice"}
            )
        assert answer.status_code == 200
        stored = objects(s3)
    assert not any(secret.encode() in data for data in stored.values())
