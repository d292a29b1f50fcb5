"""`mnemo serve` as a user runs it: its own process, embedded defaults (ONNX MiniLM), no Ollama."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from websockets.exceptions import ConnectionClosed

from testing.ports import free_port
from tests.harness import Client, get_json, serve_process

pytestmark = pytest.mark.anyio


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    with serve_process(tmp_path / "data") as running:
        yield running


async def test_serve_on_embedded_defaults_acks_turns_recalls_them_and_stops_cleanly(
    served: tuple[str, subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    address, process = served
    async with Client.connect(address, "s1") as client:
        ready = await client.receive()
        await client.send(
            type="turn", id="t1", user="My sister Mia lives in Kyoto", assistant="Nice"
        )
        ack = await client.receive()
        await client.send(
            type="context", id="q", query="Where does my sibling live?", format="conversation"
        )
        block = await client.receive()
        await client.send(type="chat", id="c1", content="hello?")
        error, _ = await client.until("error")
    assert ready["type"] == "ready"
    assert ack == {"type": "ack", "id": "t1", "turn": 1}
    assert "Mia lives in Kyoto" in block["text"]
    assert error["code"] == "llm_unavailable"
    process.send_signal(signal.SIGTERM)
    process.wait(30)
    assert process.stdout is not None
    log = process.stdout.read().decode()
    assert "Application shutdown complete." in log, log
    assert "Traceback" not in log, log
    # Not a terminal: one JSON object per line, carrying the session's ids.
    entries = [json.loads(line) for line in log.splitlines() if line.strip()]
    [failed] = [e for e in entries if e["message"].startswith("chat in session s1 failed")]
    assert (failed["level"], failed["session_id"], failed["user_id"]) == ("warning", "s1", "local")
    assert (tmp_path / "data" / "lancedb" / "messages.lance").is_dir()


async def _close_frame(client: Client) -> tuple[int, str] | None:
    """The code and reason the server closed the connection with (frames before: read)."""
    try:
        while True:
            await client.connection.recv()
    except ConnectionClosed as exc:
        frame = exc.rcvd
    return None if frame is None else (frame.code, frame.reason)


async def test_a_stopping_server_tells_its_clients_to_reconnect_and_saves_their_indexes(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    with serve_process(data, MNEMO_EMBEDDER="hash", MNEMO_SAVE_INDEX_FROM="2") as (
        address,
        process,
    ):
        async with Client.connect(address, "s1") as client:
            await client.receive()
            for n in range(2):
                await client.send(
                    type="turn", id=f"t{n}", user=f"walked to pier {n}", assistant="ok"
                )
                await client.until("ack")
            await client.send(type="context", id="q", query="pier")  # loads the user's index
            await client.until("context")
            process.send_signal(signal.SIGTERM)
            closed = await _close_frame(client)
        process.wait(30)
    assert closed == (1012, "")  # service restart: reconnect
    assert len(list((data / "indexes").glob("*.idx"))) == 1
    with serve_process(data, MNEMO_EMBEDDER="hash") as (address, _):
        async with Client.connect(address, "s1") as client:
            ready = await client.receive()
            await client.send(type="context", id="q", query="pier 1")
            block, _ = await client.until("context")
    assert (ready["resumed"], ready["turn_count"]) == (True, 2)
    assert "walked to pier 1" in block["text"]


async def test_a_turn_acked_just_before_the_server_was_killed_is_archived_after_a_restart(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    # The journal never moves into the table by itself here: only the restart moves it.
    slow = {"MNEMO_EMBEDDER": "hash", "MNEMO_ARCHIVE_FLUSH_INTERVAL": "3600"}
    with serve_process(data, **slow) as (address, process):
        async with Client.connect(address, "s1") as client:
            await client.receive()
            await client.send(type="turn", id="t1", user="My locker code is 4471", assistant="Ok")
            ack = await client.receive()
        process.kill()  # SIGKILL: no shutdown, no flush
        process.wait(10)
    assert ack == {"type": "ack", "id": "t1", "turn": 1}
    assert list((data / "journal").glob("*.journal"))
    with serve_process(data, **slow) as (address, _):
        listed = get_json(f"http://{address}/memory/long-term?kind=turns")
    assert sorted(item["text"] for item in listed["items"]) == ["My locker code is 4471", "Ok"]
    assert not list((data / "journal").glob("*.journal"))


def test_a_second_server_on_the_same_data_directory_refuses_to_start_and_names_the_first(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    with serve_process(data, MNEMO_EMBEDDER="hash") as (_, first):
        second = subprocess.run(
            [sys.executable, "-m", "server.cli", "serve"],
            env={**os.environ, "MNEMO_DATA_DIR": str(data), "MNEMO_PORT": str(free_port())},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert first.poll() is None  # the first one serves on
    assert second.returncode == 2
    assert f"pid {first.pid}" in second.stderr
    assert "in use by another mnemo server" in second.stderr


def test_an_idle_connection_is_kept_longer_than_clients_keep_theirs(
    served: tuple[str, subprocess.Popen[bytes]],
) -> None:
    """httpx (and so the MCP SDK's client) drops an idle connection after 5 s: a server
    closing at the same moment would fail a request sent on it (an agent pacing its tool
    calls 5 s apart lost its session that way)."""
    host, port = served[0].split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        connection.request("GET", "/healthz")
        assert connection.getresponse().read().startswith(b'{"status":"ok"')
        opened = connection.sock
        time.sleep(5.5)
        connection.request("GET", "/healthz")  # on the same socket: fails if it was closed
        assert connection.getresponse().read().startswith(b'{"status":"ok"')
        assert connection.sock is opened
    finally:
        connection.close()


async def test_ctrl_c_stops_the_server_after_a_clean_shutdown_without_a_traceback(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    with serve_process(data, MNEMO_EMBEDDER="hash") as (address, process):
        async with Client.connect(address, "s1") as client:
            await client.receive()
            await client.send(type="turn", id="t1", user="My bike is green", assistant="Ok")
            ack = await client.receive()
        process.send_signal(signal.SIGINT)
        status = process.wait(30)
        assert process.stdout is not None
        log = process.stdout.read().decode()
    assert ack == {"type": "ack", "id": "t1", "turn": 1}
    assert status == 0
    assert "Application shutdown complete." in log, log
    assert "Traceback" not in log, log
    assert "KeyboardInterrupt" not in log, log
    with serve_process(data, MNEMO_EMBEDDER="hash") as (address, _):
        listed = get_json(f"http://{address}/memory/long-term?kind=turns")
    assert "My bike is green" in [item["text"] for item in listed["items"]]


@pytest.mark.parametrize(
    "setting",
    [
        "MNEMO_CONTEXT_BUDGET=0",
        "MNEMO_CONFIDENCE_THRESHOLD=7",
        "MNEMO_MAX_FACTS=0",
        "MNEMO_SCORE_KEYWORD=nan",
        "MNEMO_RATE_LIMIT=0",
        "MNEMO_PORT=99999",
    ],
)
def test_a_bad_setting_stops_the_server_with_status_2_and_one_line_naming_it(
    tmp_path: Path, setting: str
) -> None:
    name, value = setting.split("=")
    data = tmp_path / "data"
    refused = subprocess.run(
        [sys.executable, "-m", "server.cli", "serve"],
        env={**os.environ, "MNEMO_DATA_DIR": str(data), "MNEMO_PORT": "0", name: value},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert refused.returncode == 2
    [line] = refused.stderr.splitlines()
    assert line.startswith(f"mnemo: {setting}: must be a "), line
    assert refused.stdout == ""
    assert not data.exists()


def test_serve_help_shows_the_data_directory_and_the_other_defaults(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_")}
    shown = subprocess.run(
        [sys.executable, "-m", "server.cli", "serve", "--help"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert f"MNEMO_DATA_DIR       mnemo-data ({tmp_path.resolve() / 'mnemo-data'})" in shown
    assert "MNEMO_PORT           8000" in shown
    assert "MNEMO_LLM_API        ollama" in shown
    assert "MNEMO_LLM_URL        http://127.0.0.1:11434" in shown
    assert "MNEMO_API_KEYS       none: one user" in shown
