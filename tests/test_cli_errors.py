"""What the client commands say when they cannot do their work: the URL or the file they
tried and what to do, in one line. Each runs as a user runs it, in its own process."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import httpx
import pytest

from bench.common import free_port
from testing.fake_ollama import FakeOllama
from tests.harness import make_app, serve, settings_for

pytestmark = pytest.mark.anyio

_ENV = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_")}
#: A line of an export (what it holds does not matter here: its brackets do).
_LINE = {"kind": "turn", "id": "t1", "session_id": "trip", "text": "We landed in Porto"}


async def mnemo(*argv: str) -> tuple[int, str]:
    """``mnemo ARGV`` in its own process: its exit status and what it said on stderr (its
    lines that are not blank)."""
    done = await anyio.run_process(
        [sys.executable, "-m", "server.cli", *argv], env=_ENV, check=False
    )
    said = [line for line in done.stderr.decode().splitlines() if line.strip()]
    return done.returncode, "".join(f"{line}\n" for line in said)


@pytest.fixture
async def url(tmp_path: Path, fake: FakeOllama) -> AsyncIterator[str]:
    settings = settings_for(tmp_path / "data", fake.url, api_keys={"ka": "alice"})
    async with serve(make_app(settings)) as address:
        yield f"http://{address}"


async def test_commands_name_the_url_nothing_answers_at_and_say_what_to_do() -> None:
    nowhere = f"http://127.0.0.1:{free_port()}"
    said = (
        f"can't reach mnemo at {nowhere} (connection refused): is `mnemo serve` running?"
        " Set --url or MNEMO_URL.\n"
    )
    assert await mnemo("export", "--url", nowhere) == (2, f"mnemo: {said}")
    assert await mnemo("actors", "--url", nowhere) == (1, f"mnemo actors: {said}")
    command = [sys.executable, "-m", "server.cli", "tail", "--url", nowhere]
    async with await anyio.open_process(command, env=_ENV) as tail:
        assert tail.stderr is not None
        with anyio.fail_after(30):
            first = b""
            while b"\n" not in first:
                first += await tail.stderr.receive()
        tail.terminate()
    assert first.decode().startswith(f"mnemo tail: {said[:-1]} Retrying in 0.5 s.")


async def test_a_refused_or_missing_key_names_the_url_and_the_option_to_set(
    url: str, tmp_path: Path
) -> None:
    out = tmp_path / "out.jsonl"
    assert await mnemo("export", "--url", url, "--key", "nope", "--out", str(out)) == (
        2,
        f"mnemo: {url}/memory/export refused the key: pass --key or set MNEMO_API_KEY.\n",
    )
    assert await mnemo("actors", "--url", url) == (
        1,
        f"mnemo actors: {url}/actors wants a key: pass --key or set MNEMO_API_KEY.\n",
    )


async def test_a_url_that_is_no_mnemo_server_is_named_so(fake: FakeOllama) -> None:
    status, said = await mnemo("export", "--url", fake.url)
    assert status == 2
    assert said.startswith(f"mnemo: {fake.url}/memory/export answered 404 (")
    assert said.endswith("): is it a mnemo server? Set --url or MNEMO_URL.\n")


@pytest.mark.parametrize("indent", [None, 2], ids=["one-line", "pretty-printed"])
async def test_importing_a_json_array_says_the_format_is_json_lines(
    url: str, tmp_path: Path, indent: int | None
) -> None:
    array = tmp_path / "turns.json"
    array.write_text(json.dumps([_LINE], indent=indent), encoding="utf-8")
    status, said = await mnemo("import", str(array), "--url", url, "--key", "ka")
    assert (status, said) == (
        2,
        f"mnemo: {array} holds a JSON array, but import reads JSON lines: one object per line,"
        f" as `mnemo export` writes them (`jq -c '.[]' {array}` turns it into them).\n",
    )
    async with httpx.AsyncClient(headers={"Authorization": "Bearer ka"}) as client:
        assert (await client.get(f"{url}/memory/long-term")).json()["total"] == 0
