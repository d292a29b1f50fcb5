"""``mnemo mcp`` as desktop clients run it: a subprocess speaking MCP on stdin/stdout,
driven by the SDK's own stdio client. It owns a data directory no server holds, and
bridges to the server that holds one (or to ``--url``), never opening a second writer."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from server.datadir import DataDirLock
from testing.fake_ollama import FakeOllama
from tests.harness import get_json, http, make_app, serve, serve_process, settings_for
from tests.mcp_client import call

pytestmark = pytest.mark.anyio

_COMMAND = [sys.executable, "-m", "server.cli", "mcp"]


def _env(data: Path, ollama: str, **more: str) -> dict[str, str]:
    kept = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_")}
    return {
        **kept,
        "MNEMO_DATA_DIR": str(data),
        "MNEMO_EMBEDDER": "hash",
        "MNEMO_LLM_URL": ollama,
        **more,
    }


@asynccontextmanager
async def stdio_session(
    env: dict[str, str], errors: Path, *args: str
) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=_COMMAND[0], args=[*_COMMAND[1:], *args], env=env)
    with errors.open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


async def test_mnemo_mcp_owns_a_data_directory_no_server_holds(
    tmp_path: Path, fake: FakeOllama
) -> None:
    data, errors = tmp_path / "data", tmp_path / "stderr.txt"
    async with stdio_session(_env(data, fake.url), errors) as mcp:
        assert len((await mcp.list_tools()).tools) == 19
        fact = await call(
            mcp, "memory_store_fact", subject="user", predicate="city", content="User is in Oslo"
        )
        rule = await call(mcp, "memory_store_rule", content="Use metric units")
        found = await call(mcp, "memory_search", query="Oslo")
        assert found["results"][0]["id"] == fact["id"]
    said = errors.read_text()
    assert "mnemo mcp: no server runs on" in said
    assert "serving it from this process as local" in said
    with DataDirLock(data):  # released when the process ended
        pass
    async with serve(make_app(settings_for(data, fake.url))) as server, http(server, None) as rest:
        assert (await rest.get(f"/memory/long-term/{fact['id']}")).json()["content"] == (
            "User is in Oslo"
        )
        assert (await rest.get(f"/memory/rules/{rule['id']}")).status_code == 200


async def test_mnemo_mcp_bridges_to_the_server_that_holds_the_data_directory(
    tmp_path: Path, fake: FakeOllama
) -> None:
    data, errors = tmp_path / "data", tmp_path / "stderr.txt"
    settings = settings_for(data, fake.url, api_keys={"key-ada": "ada", "key-bo": "bo"})
    async with serve(make_app(settings)) as server:
        host, port = server.split(":")
        env = _env(data, fake.url, MNEMO_HOST=host, MNEMO_PORT=port, MNEMO_API_KEY="key-ada")
        with DataDirLock(data):  # as `mnemo serve` holds it
            async with stdio_session(env, errors) as mcp:
                rule = await call(mcp, "memory_store_rule", content="Keep answers short")
                episode = await call(
                    mcp, "memory_store_episode", content="Asked about trains", butler="travel"
                )
        said = errors.read_text()
        [line] = said.splitlines()
        assert "is in use by another mnemo server" in line
        assert line.endswith(f": bridging stdio to the server at http://{server}/mcp")
        async with http(server, "key-ada") as ada, http(server, "key-bo") as bo:
            assert (await ada.get(f"/memory/rules/{rule['id']}")).json()["content"] == (
                "Keep answers short"
            )
            assert (await ada.get(f"/memory/episodes/{episode['id']}")).status_code == 200
            assert (await bo.get(f"/memory/rules/{rule['id']}")).status_code == 404


async def test_mnemo_mcp_bridges_to_a_url_with_a_key_and_says_when_the_key_is_refused(
    tmp_path: Path, fake: FakeOllama
) -> None:
    settings = settings_for(tmp_path / "data", fake.url, api_keys={"key-ada": "ada"})
    async with serve(make_app(settings)) as server:
        env = _env(tmp_path / "elsewhere", fake.url)
        errors = tmp_path / "stderr.txt"
        url = f"http://{server}"
        async with stdio_session(env, errors, "--url", url, "--key", "key-ada") as mcp:
            stats = await call(mcp, "memory_stats")
            assert stats["rules"]["candidate"] == 0
        refused = await anyio.run_process(
            [*_COMMAND, "--url", url, "--key", "wrong"], env=env, check=False
        )
    assert refused.returncode == 1
    said = refused.stderr.decode()
    assert said == f"mnemo mcp: {url}/mcp refused the key: pass --key or set MNEMO_API_KEY.\n"
    assert refused.stdout == b""
    nobody = await anyio.run_process(
        [*_COMMAND, "--url", "http://127.0.0.1:9"], env=env, check=False
    )
    assert nobody.returncode == 1
    assert nobody.stderr.decode() == (
        "mnemo mcp: can't reach mnemo at http://127.0.0.1:9 (connection refused): is"
        " `mnemo serve` running? Set --url or MNEMO_URL.\n"
    )
    assert not (tmp_path / "elsewhere").exists()  # a bridge never touches a data directory


@pytest.mark.parametrize(
    ("setting", "said"),
    [
        (
            {"MNEMO_API_KEYS": "key-ada:ada"},
            "MNEMO_API_KEYS is set: pass --key (or MNEMO_API_KEY) of a user",
        ),
        (
            {"MNEMO_API_KEY": "key-ada"},
            "a key was given but no MNEMO_API_KEYS is set, so it names no user",
        ),
    ],
    ids=["keys-but-no-key", "a-key-but-no-keys"],
)
def test_mnemo_mcp_owning_a_directory_needs_a_key_exactly_when_keys_are_set(
    tmp_path: Path, setting: dict[str, str], said: str
) -> None:
    env = _env(tmp_path, "http://127.0.0.1:9", **setting)
    answer = subprocess.run(
        _COMMAND,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert answer.returncode == 2
    assert said in answer.stderr


class _Desktop:
    """A desktop client's side of ``mnemo mcp``, by hand: JSON-RPC lines on the process's
    stdin and stdout, so that how the process ends is the test's to choose (the SDK's
    client would close stdin, then terminate a process that does not exit)."""

    def __init__(self, env: dict[str, str], *args: str) -> None:
        self.process = subprocess.Popen(
            [*_COMMAND, *args],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self._read = b""

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        self.process.stdin.flush()

    def answer(self, id_: int) -> dict[str, Any]:
        assert self.process.stdout is not None
        deadline = time.monotonic() + 30
        while True:
            while b"\n" in self._read:
                line, self._read = self._read.split(b"\n", 1)
                message: dict[str, Any] = json.loads(line)
                if message.get("id") == id_:
                    return message
            assert select.select([self.process.stdout], [], [], deadline - time.monotonic())[0]
            chunk = os.read(self.process.stdout.fileno(), 1 << 16)
            assert chunk, "mnemo mcp closed its stdout"
            self._read += chunk

    def start(self) -> None:
        client = {"name": "desktop", "version": "1"}
        self.send(
            {
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": client,
                },
            }
        )
        assert "result" in self.answer(1)
        self.send({"method": "notifications/initialized"})

    def call(self, id_: int, tool: str, **arguments: Any) -> Any:
        self.send(
            {"id": id_, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
        )
        return self.answer(id_)["result"]["structuredContent"]

    def stop(self, how: str) -> tuple[int, str]:
        """End the process as a client or a user would; its exit status and stderr."""
        assert self.process.stdin is not None
        assert self.process.stderr is not None
        if how == "closes-stdin":
            self.process.stdin.close()
        else:
            self.process.send_signal(signal.SIGINT if how == "ctrl-c" else signal.SIGTERM)
        try:
            status = self.process.wait(30)
            return status, self.process.stderr.read().decode()
        finally:
            self.process.kill()
            self.process.wait()
            for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
                assert stream is not None  # the process was started with all three piped
                stream.close()


_ENDINGS = ["closes-stdin", "ctrl-c", "sigterm"]


@pytest.mark.parametrize("how", _ENDINGS)
def test_mnemo_mcp_owning_a_directory_ends_cleanly_when_its_client_leaves_or_on_a_signal(
    tmp_path: Path, how: str
) -> None:
    data = tmp_path / "data"
    desktop = _Desktop(_env(data, "http://127.0.0.1:9"))
    desktop.start()
    fact = desktop.call(
        2, "memory_store_fact", subject="user", predicate="city", content="User is in Oslo"
    )
    status, said = desktop.stop(how)
    assert status == 0, said
    assert "Traceback" not in said, said
    with DataDirLock(data):  # released
        pass
    with serve_process(data, MNEMO_EMBEDDER="hash") as (address, _):
        kept = get_json(f"http://{address}/memory/long-term/{fact['id']}")
    assert kept["content"] == "User is in Oslo"


@pytest.fixture(scope="module")
def holder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, Any]]:
    """A ``mnemo serve`` on a data directory (its log: what it was asked)."""
    data = tmp_path_factory.mktemp("held") / "data"
    with serve_process(data, MNEMO_EMBEDDER="hash") as (address, process):
        yield data, address, process


@pytest.mark.parametrize("how", _ENDINGS)
def test_mnemo_mcp_bridging_ends_its_session_and_exits_when_its_client_leaves_or_on_a_signal(
    holder: tuple[Path, str, Any], how: str
) -> None:
    data, address, server = holder
    host, port = address.split(":")
    desktop = _Desktop(_env(data, "http://127.0.0.1:9", MNEMO_HOST=host, MNEMO_PORT=port))
    desktop.start()
    rule = desktop.call(2, "memory_store_rule", content=f"Answer in French ({how})")
    status, said = desktop.stop(how)
    assert status == 0, said
    assert "bridging stdio to the server" in said
    assert "Traceback" not in said, said
    assert get_json(f"http://{address}/memory/rules/{rule['id']}")["content"] == (
        f"Answer in French ({how})"
    )
    log = b""
    while b'"DELETE /mcp' not in log:  # the session ended on the server
        assert select.select([server.stdout], [], [], 10)[0], log.decode()
        log += os.read(server.stdout.fileno(), 1 << 16)
