"""``mnemo tail`` and ``mnemo actors`` against a real server."""

from __future__ import annotations

import argparse
import io
import json
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from bench.common import free_port
from server import watch_cli
from server.cli import _parser
from testing.fake_ollama import FakeOllama
from tests.harness import ADMIN, KEYS, Client, make_app, one_turn, serve, settings_for

pytestmark = pytest.mark.anyio


@pytest.fixture
async def server(tmp_path: Path, fake: FakeOllama) -> AsyncIterator[str]:
    settings = settings_for(tmp_path, fake.url, api_keys=KEYS, admin_keys=[ADMIN])
    async with serve(make_app(settings)) as address:
        yield address


async def run_tail(argv: list[str]) -> list[str]:
    out = io.StringIO()
    args = _parser().parse_args(["tail", *argv])
    code = await anyio.to_thread.run_sync(watch_cli.tail, args, out)
    assert code == 0
    return out.getvalue().splitlines()


async def test_tail_prints_a_sessions_events_as_json_lines(server: str) -> None:
    lines: list[str] = []

    async def follow() -> None:
        lines.extend(
            await run_tail(
                [
                    "--json",
                    "--count",
                    "3",
                    "--session",
                    "s1",
                    "--url",
                    f"http://{server}",
                    "--key",
                    ADMIN,
                ]
            )
        )

    async with anyio.create_task_group() as tg:
        tg.start_soon(follow)
        await anyio.sleep(1)  # connected
        await one_turn(server, "s1", "key-alice")
    events = [json.loads(line) for line in lines]
    assert [e["kind"] for e in events] == ["actor.spawned", "turn.received", "turn.acked"]
    assert {(e["session_id"], e["user_id"]) for e in events} == {("s1", "alice")}


def test_an_event_reads_as_one_line_with_time_kind_session_user_and_details() -> None:
    line = watch_cli.format_event(
        {
            "kind": "facts.added",
            "at": "2026-11-23T08:30:01.250Z",
            "session_id": "s1",
            "user_id": "alice",
            "data": {"facts": [{"id": "fact_0000abcd", "content": "Lives in Lyon"}]},
        }
    )
    assert line.plain == (
        "08:30:01.250 facts.added          s1 alice                 facts=[Lives in Lyon]"
    )
    assert any(span.style == "yellow" for span in line.spans)


async def test_tail_refused_without_a_valid_key_says_why(server: str) -> None:
    args = _parser().parse_args(["tail", "--url", f"http://{server}", "--key", "nope"])
    assert await anyio.to_thread.run_sync(watch_cli.tail, args, io.StringIO()) == 1


async def test_tail_reconnects_when_the_server_restarts(tmp_path: Path, fake: FakeOllama) -> None:
    settings = settings_for(tmp_path, fake.url, api_keys=KEYS, admin_keys=[ADMIN])
    port = free_port()
    lines: list[str] = []

    async def follow() -> None:
        argv = ["--json", "--count", "2", "--kind", "actor.spawned"]
        lines.extend(await run_tail([*argv, "--url", f"http://127.0.0.1:{port}", "--key", ADMIN]))

    async with anyio.create_task_group() as tg:
        async with serve(make_app(settings), port):
            tg.start_soon(follow)
            await anyio.sleep(1)
            await one_turn(f"127.0.0.1:{port}", "before", "key-alice")
        async with serve(make_app(settings), port):
            await anyio.sleep(3)  # the tail's backoff brings it back
            await one_turn(f"127.0.0.1:{port}", "after", "key-alice")
            with anyio.fail_after(10):
                while len(lines) < 2:
                    await anyio.sleep(0.05)
    assert [json.loads(line)["session_id"] for line in lines] == ["before", "after"]


async def test_actors_prints_a_table_of_live_actors(server: str) -> None:
    await one_turn(server, "a1", "key-alice", end=False)
    out = io.StringIO()
    args = _parser().parse_args(["actors", "--url", f"http://{server}", "--key", ADMIN])
    assert await anyio.to_thread.run_sync(watch_cli.actors, args, out) == 0
    text = out.getvalue()
    assert "1 live actors" in text
    assert "a1" in text
    assert "alice" in text
    async with Client.connect(server, "a1", "key-alice") as client:
        assert (await client.receive())["turn_count"] == 1


async def test_actors_prints_whole_session_ids_however_narrow_the_output(server: str) -> None:
    session = "a-session-id-long-enough-to-be-cut-" + "x" * 60
    await one_turn(server, session, "key-alice", end=False)
    out = io.StringIO()
    args = _parser().parse_args(["actors", "--url", f"http://{server}", "--key", ADMIN])
    assert await anyio.to_thread.run_sync(watch_cli.actors, args, out) == 0
    assert session in out.getvalue()


def test_every_option_of_tail_and_actors_has_help() -> None:
    for command in ("tail", "actors"):
        with pytest.raises(SystemExit):
            _parser().parse_args([command, "--help"])
    commands = [a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction)]
    for name, sub in commands[0].choices.items():
        for option in sub._actions:
            assert option.help, f"mnemo {name} {option.option_strings} has no help"
