"""`mnemo export` and `mnemo import` against a real server (the CLI runs in a thread)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio.to_thread
import httpx
import pytest

from server.cli import main
from server.cli_upload import Counted, UploadFailed, count_lines, upload
from testing.fake_ollama import FakeOllama
from tests.harness import make_app, serve, settings_for

pytestmark = pytest.mark.anyio


@pytest.fixture
async def url(tmp_path: Path, fake: FakeOllama) -> AsyncIterator[str]:
    settings = settings_for(tmp_path / "data", fake.url, api_keys={"ka": "alice", "kb": "bob"})
    async with serve(make_app(settings)) as address:
        yield f"http://{address}"


async def mnemo(*argv: str) -> int:
    return await anyio.to_thread.run_sync(main, list(argv))


def write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


TURN = {
    "kind": "turn",
    "id": "t1",
    "session_id": "trip",
    "speaker": "Ann",
    "role": "user",
    "text": "We landed in Porto",
    "at": "2024-06-02T12:00:00Z",
}
FACT = {"kind": "fact", "id": "f1", "content": "User likes port wine", "category": "preference"}


async def test_mnemo_export_then_import_moves_memory_to_another_user(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_lines(
        tmp_path / "in.jsonl", [json.dumps(TURN), json.dumps(FACT | {"confidence": 0.9})]
    )
    assert await mnemo("import", str(source), "--url", url, "--key", "ka") == 0
    assert "imported 2, skipped 0, failed 0" in capsys.readouterr().err
    out = tmp_path / "alice.jsonl"
    assert await mnemo("export", "--out", str(out), "--url", url, "--key", "ka") == 0
    exported = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert sorted(line["kind"] for line in exported) == ["fact", "turn"]
    assert await mnemo("import", str(out), "--url", url, "--key", "kb") == 0
    assert await mnemo("import", str(out), "--url", url, "--key", "kb") == 0
    assert "imported 0, skipped 2, failed 0" in capsys.readouterr().err
    async with httpx.AsyncClient(headers={"Authorization": "Bearer kb"}) as client:
        listed = (await client.get(f"{url}/memory/long-term")).json()["items"]
    assert sorted(i.get("text") or i.get("content") for i in listed) == [
        "User likes port wine",
        "We landed in Porto",
    ]


async def test_mnemo_import_lists_failed_lines_and_exits_1(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_lines(tmp_path / "in.jsonl", [json.dumps(TURN), "{oops", json.dumps(FACT)])
    assert await mnemo("import", str(source), "--url", url, "--key", "ka") == 1
    err = capsys.readouterr().err
    assert "imported 1, skipped 0, failed 2" in err
    assert "line 2: JSON is malformed" in err
    assert "line 3: Object missing required field `confidence`" in err


async def test_mnemo_reads_url_and_key_from_the_environment_and_refuses_a_bad_key(
    url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_lines(tmp_path / "in.jsonl", [json.dumps(TURN)])
    monkeypatch.setenv("MNEMO_URL", url)
    monkeypatch.setenv("MNEMO_API_KEY", "nope")
    assert await mnemo("import", str(source)) == 2
    assert await mnemo("export", "--out", str(tmp_path / "x.jsonl")) == 2
    assert capsys.readouterr().err.count("refused the key: pass --key or set MNEMO_API_KEY.") == 2
    monkeypatch.setenv("MNEMO_API_KEY", "ka")
    assert await mnemo("import", str(source)) == 0
    assert await mnemo("import", str(tmp_path / "missing.jsonl")) == 2
    assert "no such file" in capsys.readouterr().err


async def test_mnemo_export_into_a_pipe_closed_early_ends_quietly(url: str, tmp_path: Path) -> None:
    """``mnemo export | head``: the reader leaves while the export is still writing."""
    turns = [TURN | {"id": f"t{i}", "text": f"turn {i} " + "words " * 80} for i in range(400)]
    source = write_lines(tmp_path / "in.jsonl", [json.dumps(t) for t in turns])
    assert await mnemo("import", str(source), "--url", url, "--key", "ka") == 0
    command = [sys.executable, "-m", "server.cli", "export", "--url", url, "--key", "ka"]
    first, code, err = await anyio.to_thread.run_sync(read_then_leave, command)
    assert first.startswith(b"{")
    assert code == 0
    assert "Traceback" not in err
    assert "Broken pipe" not in err


def read_then_leave(command: list[str]) -> tuple[bytes, int, str]:
    """Run ``command`` into a pipe, read its first bytes and close the pipe (as head does)."""
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        assert process.stdout is not None
        assert process.stderr is not None
        first = process.stdout.read(100)
        process.stdout.close()
        err = process.stderr.read().decode()
        return first, process.wait(timeout=60), err


async def test_mnemo_import_counts_lines_as_the_server_imports_them_with_a_rate_and_eta(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    turns = [TURN | {"id": f"t{i}", "text": f"turn {i}"} for i in range(1200)]
    source = write_lines(tmp_path / "in.jsonl", [json.dumps(t) for t in turns])
    seen: list[Counted] = []
    answer = await upload(
        url, "ka", source, seen.append, size=source.stat().st_size, stall=30, connect_within=5
    )
    assert answer.status == 200
    assert json.loads(answer.body)["imported"] == 1200
    # The server's own count, batch by batch (500 lines each), as it writes them.
    assert seen == [Counted(500, 500, 0), Counted(1000, 1000, 0), Counted(1200, 1200, 0)]
    assert count_lines(source) == 1200
    assert await mnemo("import", str(source), "--url", url, "--key", "kb") == 0
    err = capsys.readouterr().err
    assert "1200/1200 lines" in err
    assert "lines/s" in err
    assert "eta" in err
    assert "imported 1200, skipped 0, failed 0" in err


async def test_an_upload_refused_or_not_answered_says_so(url: str, tmp_path: Path) -> None:
    source = write_lines(tmp_path / "in.jsonl", [json.dumps(TURN)] * 3 + ["", "{}"])
    assert count_lines(source) == 5
    size = source.stat().st_size
    refused = await upload(url, "nope", source, print, size=size, stall=30, connect_within=5)
    assert refused.status == 401
    assert json.loads(refused.body)["error"]["code"] == "unauthorized"
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"
    with pytest.raises(UploadFailed, match="cannot reach"):
        await upload(dead, None, source, print, size=size, stall=30, connect_within=5)


async def test_mnemo_export_that_fails_leaves_the_old_file_as_it_was(
    url: str, tmp_path: Path
) -> None:
    kept = tmp_path / "kept"
    kept.mkdir()
    backup = kept / "memory.jsonl"
    backup.write_bytes(b'{"kind": "turn", "old": "backup"}\n')
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}"
    assert await mnemo("export", "--out", str(backup), "--url", dead) == 2
    assert await mnemo("export", "--out", str(backup), "--url", url, "--key", "nope") == 2
    assert backup.read_bytes() == b'{"kind": "turn", "old": "backup"}\n'
    assert os.listdir(kept) == ["memory.jsonl"]  # no temporary file left
    source = write_lines(tmp_path / "in.jsonl", [json.dumps(TURN)])
    assert await mnemo("import", str(source), "--url", url, "--key", "ka") == 0
    assert await mnemo("export", "--out", str(backup), "--url", url, "--key", "ka") == 0
    assert [json.loads(line)["text"] for line in backup.read_text().splitlines()] == [
        "We landed in Porto"
    ]
