"""Every example of README.md and docs/*.md runs against the real server, as shown.

The convention. Every fenced code block is marked, on the last non-blank line before
its opening fence, by one of:

- ``<!-- example: KIND [options] -->``: the test runs it and compares what it shows
  with what the server answers;
- ``<!-- not-executed: REASON -->``: it is not run (installing, benchmarks, a diagram,
  a usage synopsis...), for the reason given.

An unmarked block fails the test. The examples of one document run in order, against
a fresh server of that document (uvicorn, LanceDB in a temporary directory, the hash
embedder) with a fake Ollama (``ollama=fake``, the default: chat replies "Hello, Ada!",
extraction finds "User loves green tea") or none (``ollama=none``: nothing listens,
so chats answer ``llm_unavailable`` and the rule-based reader learns). Kinds:

- ``ws PATH``: a WebSocket transcript on ``PATH``: ``-> {frame}`` is sent,
  ``<- {frame}`` must arrive (the next frame of its type and ``id``; pushed ``memory``
  frames may come in between), ``<- close CODE`` the server closes. Text after a
  line's JSON is a comment.
- ``sh``: ``$ command`` lines, each followed by its output (none shown: only its
  exit status is checked): ``curl`` (run by httpx against the server), ``mnemo``
  client commands (``--url`` the server) and ``cat FILE``.
- ``shape fact`` / ``shape turn``: a record must have exactly the keys of a real one.
- ``tail``: the event shown must come on ``/ws/tail`` while a ``turn`` (``id`` ``t1``)
  is sent in session ``s1``.
- ``file NAME``: the block is saved as ``NAME`` for the examples after it.
- ``config``: a TOML settings file the server must accept.
- ``python``: a Python script (the ``ollama`` and ``openai`` clients pointed at
  ``localhost:8000``, which is the server); what it prints must match the comment lines
  that end the block (``# `` and the printed line).

Shown output matches up to what changes from run to run: times, dates, ids and
uuids are normalized, latencies (``ms``, ``*_ms``) match any number; ``...`` as a
JSON value matches any value (``[...]`` any list), inside a string any text. An
object must show every key the server sends, unless it ends in ``, ...}``.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio.to_thread
import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from server.cli import main
from server.config import load_settings
from testing.fake_ollama import FakeOllama
from tests.docs_examples import (
    EXTRACTION,
    ID_PATTERN,
    REPLY,
    ROOT,
    Block,
    blocks_of,
    documents,
    loads_shown,
    mismatch,
    normalized,
    transcript,
)
from tests.harness import make_app, serve, settings_for

pytestmark = pytest.mark.anyio

KINDS = ("ws", "sh", "shape", "file", "config", "tail", "python")


class Servers:
    """One server per document and Ollama mode, started when its first example runs."""

    def __init__(self, stack: AsyncExitStack, tmp_path: Path) -> None:
        self.stack = stack
        self.tmp_path = tmp_path
        self.addresses: dict[str, str] = {}

    async def address(self, ollama: str) -> str:
        if ollama not in self.addresses:
            data = self.tmp_path / f"data-{ollama}"
            url = "http://127.0.0.1:1"  # nothing listens: Ollama unreachable
            if ollama == "fake":
                fake = FakeOllama(models=["llama3.2"], json_default=EXTRACTION)
                fake.default_reply = REPLY
                url = (await self.stack.enter_async_context(fake)).url
            app = make_app(settings_for(data, url))
            self.addresses[ollama] = await self.stack.enter_async_context(serve(app))
        return self.addresses[ollama]


def _options(block: Block) -> tuple[str, list[str], dict[str, str]]:
    assert block.marker is not None
    words = block.marker[1].split()
    options = dict(w.split("=", 1) for w in words[1:] if "=" in w)
    return words[0], [w for w in words[1:] if "=" not in w], options


# -- running one block -------------------------------------------------------------


async def _take(ws: ClientConnection, pending: list[dict[str, Any]], shown: Any) -> Any:
    """The next frame of the shown type (and id, when one is shown)."""

    def fits(frame: dict[str, Any]) -> bool:
        same_id = "id" not in shown or shown["id"] == "..." or frame.get("id") == shown["id"]
        return bool(frame.get("type") == shown.get("type") and same_id)

    with anyio.fail_after(10):
        while True:
            for frame in pending:
                if fits(frame):
                    pending.remove(frame)
                    return frame
            pending.append(json.loads(await ws.recv()))


async def _closed(ws: ClientConnection, pending: list[dict[str, Any]]) -> int | None:
    """The code the server closes with, the frames before it kept in ``pending``."""
    with anyio.fail_after(10):
        try:
            while True:
                pending.append(json.loads(await ws.recv()))
        except ConnectionClosed as closed:
            return closed.rcvd.code if closed.rcvd is not None else None


async def run_ws(block: Block, address: str) -> None:
    script = transcript(block)
    pending: list[dict[str, Any]] = []
    async with connect(f"ws://{address}{script.path}") as ws:
        for step in script.steps:
            if step.send:
                await ws.send(json.dumps(step.frame))
            elif isinstance(step.frame, int):
                code = await _closed(ws, pending)
                assert code == step.frame, f"{block.where}: {step.line}: closed with {code}"
            else:
                frame = await _take(ws, pending, step.frame)
                problem = mismatch(step.frame, frame)
                assert problem is None, f"{block.where}: {step.line}\n{problem}\ngot {frame}"
    left = [f for f in pending if f["type"] != "memory"]
    assert not left, f"{block.where}: frames the transcript does not show: {left}"


def _commands(body: str) -> list[tuple[str, list[str]]]:
    """(command, its output lines) for each ``$ `` line (``\\`` continues a command)."""
    found: list[tuple[str, list[str]]] = []
    continued = False
    for line in body.splitlines():
        if line.startswith("$ ") or continued:
            text = line[2:] if line.startswith("$ ") and not continued else line
            if continued:
                found[-1] = (found[-1][0] + " " + text.rstrip("\\").strip(), [])
            else:
                found.append((text.rstrip("\\").strip(), []))
            continued = line.endswith("\\")
        else:
            assert found, f"output before any command: {line}"
            found[-1][1].append(line)
    return found


async def _curl(argv: list[str], address: str) -> str:
    method, headers, body, url = "GET", {}, None, ""
    words = iter(argv[1:])
    for word in words:
        if word in ("-s", "-sS", "-S"):
            continue
        if word == "-X":
            method = next(words)
        elif word == "-H":
            name, _, value = next(words).partition(":")
            headers[name.strip()] = value.strip()
        elif word in ("-d", "--data-binary"):
            raw = next(words)
            body = await anyio.Path(raw[1:]).read_bytes() if raw[:1] == "@" else raw.encode()
            method = "POST" if method == "GET" else method
        else:
            url = re.sub(r"^(http://)?(127\.0\.0\.1|localhost):8000", f"http://{address}", word)
    async with httpx.AsyncClient() as client:
        response = await client.request(method, url, headers=headers, content=body)
    return response.text


async def run_sh(block: Block, address: str, capsys: pytest.CaptureFixture[str]) -> None:
    # An id the docs showed in an answer stands, in a later command, for the real one.
    real: dict[str, str] = {}
    for command, shown in _commands(block.body):
        for shown_id, actual_id in real.items():
            command = command.replace(shown_id, actual_id)
        argv = shlex.split(command)
        if argv[0] == "curl":
            out = await _curl(argv, address)
        elif argv[0] == "cat":
            out = await anyio.Path(argv[1]).read_text(encoding="utf-8")
        else:
            assert Path(argv[0]).name == "mnemo", f"{block.where}: {command} does not run here"
            capsys.readouterr()
            args = [*argv[1:], "--url", f"http://{address}"] if argv[1] != "--version" else []
            code = await anyio.to_thread.run_sync(main, args or argv[1:])
            captured = capsys.readouterr()
            out = captured.out + captured.err
            assert code == 0, f"{block.where}: {command} exited {code}: {out}"
        problem = _compare_output(shown, out)
        assert problem is None, f"{block.where}: $ {command}\n{problem}\ngot:\n{out}"
        ids = re.compile(ID_PATTERN)
        real |= dict(zip(ids.findall("\n".join(shown)), ids.findall(out), strict=False))


def _compare_output(shown: list[str], out: str) -> str | None:
    text = "\n".join(shown).strip()
    try:
        return mismatch(loads_shown(text), json.loads(out)) if text else None
    except json.JSONDecodeError:
        pass
    lines = out.strip().splitlines()
    if shown and all(line.startswith("{") for line in shown):
        if len(lines) != len(shown):
            return f"{len(lines)} lines, not the {len(shown)} shown"
        for s, a in zip(shown, lines, strict=True):
            found = mismatch(loads_shown(s), json.loads(a))
            if found:
                return found
        return None
    return mismatch(text, normalized(out.strip()))


async def run_shape(block: Block, name: str, address: str) -> None:
    base = f"http://{address}"
    async with httpx.AsyncClient(base_url=base) as client:
        if name == "fact":
            await client.post("/memory/long-term", json={"content": "I live in Lyon"})
        else:
            line = {"kind": "turn", "id": "shape", "session_id": "shape", "speaker": "user"}
            line |= {"role": "user", "text": "I live in Lyon", "at": "2026-11-22T08:00:00Z"}
            ndjson = {"Content-Type": "application/x-ndjson"}
            await client.post("/memory/import", content=json.dumps(line), headers=ndjson)
        items = (await client.get("/memory/long-term", params={"kind": f"{name}s"})).json()
    shown = loads_shown(block.body)
    actual = items["items"][0]
    assert sorted(shown) == sorted(actual), f"{block.where}: a real {name} has {sorted(actual)}"
    assert shown["kind"] == actual["kind"] == name


async def run_tail(block: Block, address: str) -> None:
    shown = loads_shown(block.body)
    async with connect(f"ws://{address}/ws/tail?kind={shown['kind']}") as tail:
        async with connect(f"ws://{address}/ws/s1") as ws:
            await ws.recv()
            await ws.send(json.dumps({"type": "turn", "id": "t1", "user": "hi", "assistant": "hi"}))
            with anyio.fail_after(10):
                event = json.loads(await tail.recv())
    problem = mismatch(shown, event)
    assert problem is None, f"{block.where}: {problem}\ngot {event}"


def _python(code: str) -> str:
    """What ``code`` prints (run as a script of its own)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "<docs>", "exec"), {"__name__": "__main__"})
    return out.getvalue()


async def run_python(block: Block, address: str) -> None:
    lines = block.body.rstrip().splitlines()
    output = len(lines)
    while output > 0 and lines[output - 1].startswith("# "):
        output -= 1
    shown = [line.removeprefix("# ") for line in lines[output:]]
    code = "\n".join(lines[:output])
    code = re.sub(r"(http://)?(127\.0\.0\.1|localhost):8000", f"http://{address}", code)
    out = await anyio.to_thread.run_sync(_python, code)
    problem = mismatch("\n".join(shown), normalized(out.strip()))
    assert problem is None, f"{block.where}: {problem}\ngot:\n{out}"


async def run_file(block: Block, name: str) -> None:
    await anyio.Path(name).write_text(block.body + "\n", encoding="utf-8")


async def run_config(block: Block) -> None:
    await run_file(block, "config.toml")
    load_settings({"MNEMO_CONFIG": "config.toml"})


# -- the tests ---------------------------------------------------------------------

ALL = [block for path in documents() for block in blocks_of(path)]
RUN = sorted({b.path for b in ALL if b.marker and b.marker[0] == "example"})


def test_every_code_block_of_the_docs_is_an_example_or_says_why_it_is_not_run() -> None:
    unmarked = [b.where for b in ALL if b.marker is None]
    assert not unmarked, (
        f"mark these <!-- example: ... --> or <!-- not-executed: why -->: {unmarked}"
    )
    for block in ALL:
        assert block.marker is not None
        kind, reason = block.marker
        if kind == "example":
            assert reason.split()[0] in KINDS, f"{block.where}: unknown example kind {reason}"
        else:
            assert len(reason) > 10, f"{block.where}: say why it is not run"


@pytest.mark.parametrize("document", RUN)
async def test_the_examples_of_a_document_answer_as_shown(
    document: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MNEMO_API_KEY", raising=False)
    async with AsyncExitStack() as stack:
        servers = Servers(stack, tmp_path)
        for block in blocks_of(ROOT / document):
            if block.marker is None or block.marker[0] != "example":
                continue
            kind, words, options = _options(block)
            if kind in ("config", "file"):
                await (run_file(block, words[0]) if kind == "file" else run_config(block))
                continue
            address = await servers.address(options.get("ollama", "fake"))
            if kind == "ws":
                await run_ws(block, address)
            elif kind == "tail":
                await run_tail(block, address)
            elif kind == "sh":
                await run_sh(block, address, capsys)
            elif kind == "python":
                await run_python(block, address)
            else:
                await run_shape(block, words[0], address)


def test_user_docs_explain_themselves_without_citing_the_seeds_or_the_design_notes() -> None:
    """Only docs/conformance.md (what the original specifications ask, scenario by
    scenario) names the seeds and DESIGN.md; every other doc says what happens."""
    for path in documents():
        if path.name == "conformance.md":
            continue
        text = path.read_text(encoding="utf-8")
        for cited in ("seed 0", "DESIGN.md", "seed's", "seeds 0"):
            assert cited not in text, f"{path.relative_to(ROOT)} cites {cited!r}"
