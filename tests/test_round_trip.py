"""Round trips are total: what the server accepts it exports, and what it exports it imports.

Generated histories (turns with unicode, CJK, emoji, whitespace, long and empty sides,
scopes and meta; facts added by REST with categories and pins, moves that supersede one
another, a retraction, a repetition; rules with their feedback, entities and a merge,
episodes, links; the notes and the profile a model writes) go through a real server
(uvicorn, LanceDB in a temporary directory, a websockets client). The export
(``GET /memory/export`` and ``mnemo export``) is imported into a fresh data directory
(``POST /memory/import`` and ``mnemo import``) and exported again: the same lines, every
kind, same ids, same fields.
"""

from __future__ import annotations

import itertools
import json
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import httpx
import msgspec
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from websockets.asyncio.client import connect

from memory.transfer import parse_line
from schemas.settings import Settings
from schemas.wire import MAX_TEXT, decode_client
from server.cli import main
from testing.fake_ollama import FakeOllama
from tests.app_notes import NoteModel
from tests.harness import Client, make_app, serve, settings_for

pytestmark = pytest.mark.anyio

KEYS = {"ka": "alice", "kb": "bob", "kc": "carol"}

#: Texts people write that a random text rarely holds: line and paragraph separators,
#: NEL, CJK, emoji with joiners, right-to-left script, combining marks, NUL, sentences the
#: rule-based extractor reads facts from.
_ODD = [
    "",
    " ",
    "\n\t ",
    "line\u2028break\u2029para\x85nel",
    "我住在上海\uff0c喜欢喝茶。",
    "👩\u200d👩\u200d👧 family 🎉",
    "مرحبا بالعالم",
    "e\u0301\u0301 combining",
    "nul\x00inside",
    "I live in Lisbon and I love surfing.",
    "My name is Ann.",
    '{"json": "inside", "n": [1, 2]}',
]
_texts = st.one_of(
    st.text(max_size=40),
    st.sampled_from(_ODD),
    # Long texts: a turn of two of them still fits a frame (64 KiB of UTF-8).
    st.builds(lambda c, n: c * n, st.sampled_from(["a", "界", "😀"]), st.integers(1000, 7000)),
)
_json_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**53), 2**53),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=10),
)
_meta = st.dictionaries(st.text(max_size=6), _json_values, max_size=3)
_scopes = st.sampled_from(["global", "travel", "app.b:2"])


@dataclass(frozen=True)
class Session:
    id: str
    scope: str
    #: (user, assistant, meta): at most one side blank.
    turns: list[tuple[str, str, dict[str, Any]]]


@dataclass(frozen=True)
class Extras:
    """What a history holds besides turns and facts added as they are."""

    #: Where the user lives, one place after another: each supersedes the one before.
    moves: list[str] = field(default_factory=list)
    #: A habit the user then gives up (retracted), and a fact stated twice.
    retracted: bool = False
    repeated: bool = False
    #: Rules and their feedback (True: helpful), entities (name, type) and whether the
    #: second is merged into the first, episodes (content, scope), and links between
    #: the first fact, rule, episode and turn.
    rules: list[tuple[str, list[bool]]] = field(default_factory=list)
    entities: list[tuple[str, str]] = field(default_factory=list)
    merged: bool = False
    episodes: list[tuple[str, str]] = field(default_factory=list)
    linked: bool = False


@dataclass(frozen=True)
class History:
    sessions: list[Session]
    #: (content, category, pinned, scope)
    facts: list[tuple[str, str | None, bool, str]] = field(default_factory=list)
    extras: Extras = field(default_factory=Extras)


def _said(turn: tuple[str, str, dict[str, Any]]) -> bool:
    return bool(turn[0].strip() or turn[1].strip())


_turns = st.lists(st.tuples(_texts, _texts, _meta).filter(_said), min_size=1, max_size=4)
_sessions = st.builds(Session, st.sampled_from(["s1", "trip.2024", "a:b-c_d"]), _scopes, _turns)
_facts = st.lists(
    st.tuples(
        _texts.filter(lambda t: bool(t.strip()) and len(t) < 2000),
        st.sampled_from([None, "preference", "identity", "goal", "knowledge", "project"]),
        st.booleans(),
        _scopes,
    ),
    max_size=4,
)
_utterances = _texts.filter(lambda t: bool(t.strip()) and len(t) < 2000)
_extras = st.builds(
    Extras,
    st.lists(st.sampled_from(["Lyon", "Lisbon", "Porto", "Oslo"]), max_size=3, unique=True),
    st.booleans(),
    st.booleans(),
    st.lists(st.tuples(_utterances, st.lists(st.booleans(), max_size=3)), max_size=2),
    st.lists(
        st.tuples(
            st.sampled_from(["Ana Souza", "Acme", "Porto", "Tom"]),
            st.sampled_from(["person", "organization", "place", "other"]),
        ),
        max_size=3,
        unique_by=lambda e: e,
    ),
    st.booleans(),
    st.lists(st.tuples(_utterances, _scopes), max_size=2),
    st.booleans(),
)
_histories = st.builds(
    History, st.lists(_sessions, max_size=2, unique_by=lambda s: s.id), _facts, _extras
)


@asynccontextmanager
async def _server(fake: FakeOllama) -> AsyncIterator[str]:
    """A real server on a fresh data directory; yields its base URL."""
    with tempfile.TemporaryDirectory(prefix="mnemo-trip-") as tmp:
        config = settings_for(Path(tmp), fake.url, api_keys=KEYS, rate_limit=1e5, rate_burst=1e5)
        async with serve(make_app(config)) as address:
            yield address


async def _tell(address: str, history: History) -> None:
    """Send the history through the socket and REST, as alice; every turn acked, every fact
    stored, every session ended (so its extraction has finished)."""
    for session in history.sessions:
        url = f"ws://{address}/ws/{session.id}?token=ka&app={session.scope}"
        async with connect(url) as connection:
            client = Client(connection)
            await client.until("ready")
            for n, (user, assistant, meta) in enumerate(session.turns):
                turn = {"type": "turn", "id": f"t{n}", "user": user, "assistant": assistant}
                await connection.send(json.dumps(turn | {"meta": meta}, ensure_ascii=False))
                answer = await client.receive(timeout=30)
                while answer["type"] not in ("ack", "error"):
                    answer = await client.receive(timeout=30)
                assert answer == {"type": "ack", "id": f"t{n}", "turn": n + 1}
            await client.send(type="end")
            with anyio.fail_after(30):
                async for _ in client.connection:
                    pass
    async with httpx.AsyncClient(base_url=f"http://{address}", headers=_auth("ka")) as rest:
        for content, category, pinned, scope in history.facts:
            body = {"content": content, "pinned": pinned, "scope": scope}
            stored = await rest.post("/memory/long-term", json=body | {"category": category})
            assert stored.status_code == 201, stored.text
        await _tell_extras(rest, history.extras)


async def _posted(rest: httpx.AsyncClient, path: str, body: Any = None) -> Any:
    answer = await rest.post(path, json=body)
    assert answer.status_code in (200, 201), answer.text
    return answer.json()


async def _tell_extras(rest: httpx.AsyncClient, extras: Extras) -> None:
    """Facts with a history, rules with feedback, entities, episodes and links, by REST."""
    said: list[tuple[str, str | None]] = [
        (f"User lives in {place}", "lives_in") for place in extras.moves
    ]
    if extras.retracted:
        said += [("User eats meat every day", None), ("User no longer eats meat", None)]
    if extras.repeated:
        said += [("User likes jazz", None), ("User likes jazz", None)]
    for content, predicate in said:
        key = {"subject": "user", "predicate": predicate} if predicate else {}
        await _posted(rest, "/memory/long-term", {"content": content, **key})
    rules = []
    for content, feedback in extras.rules:
        rule = await _posted(rest, "/memory/rules", {"content": content, "scope": "travel"})
        rules.append(rule["id"])
        for helpful in feedback:
            outcome = "helpful" if helpful else "harmful"
            await _posted(rest, f"/memory/rules/{rule['id']}/{outcome}")
    entities = []
    for name, kind in extras.entities:
        body = {"canonical_name": name, "entity_type": kind, "aliases": [name.split()[0]]}
        entities.append((await _posted(rest, "/memory/entities", body))["id"])
    if extras.merged and len(entities) > 1:
        body = {"source_entity_id": entities[1], "target_entity_id": entities[0]}
        await _posted(rest, "/memory/entities/merge", body)
    episodes = [
        (await _posted(rest, "/memory/episodes", {"content": c, "scope": s}))["id"]
        for c, s in extras.episodes
    ]
    if not extras.linked:
        return
    facts = (await rest.get("/memory/long-term", params={"kind": "facts"})).json()["items"]
    turns = (await rest.get("/memory/long-term", params={"kind": "turns"})).json()["items"]
    ends = [("fact", f["id"]) for f in facts[:1]] + [("rule", r) for r in rules[:1]]
    ends += [("episode", e) for e in episodes[:1]] + [("episode", t["id"]) for t in turns[:1]]
    for (source_type, source_id), (target_type, target_id) in itertools.pairwise(ends):
        body = {"source_type": source_type, "source_id": source_id, "relation": "related_to"}
        body |= {"target_type": target_type, "target_id": target_id}
        await _posted(rest, "/memory/links", body)


def _auth(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def _export(address: str, key: str) -> bytes:
    async with httpx.AsyncClient(base_url=f"http://{address}", headers=_auth(key)) as rest:
        answer = await rest.get("/memory/export", timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.content


async def _settled_export(address: str, key: str) -> bytes:
    """The export once the server's background work (notes and the profile of the
    sessions that ended) is done: the same twice, a second apart."""
    last = await _export(address, key)
    with anyio.fail_after(60):
        while True:
            await anyio.sleep(1.0)
            now = await _export(address, key)
            if _comparable(now) == _comparable(last):
                return now
            last = now


async def _import(address: str, key: str, body: bytes) -> dict[str, Any]:
    headers = {**_auth(key), "Content-Type": "application/x-ndjson"}
    async with httpx.AsyncClient(base_url=f"http://{address}", headers=headers) as rest:
        answer = await rest.post("/memory/import", content=body, timeout=60)
    assert answer.status_code == 200, answer.text
    reply: dict[str, Any] = answer.json()
    return reply


async def _mnemo(*argv: str) -> int:
    return await anyio.to_thread.run_sync(main, list(argv))


def _comparable(export: bytes) -> dict[str, list[str]]:
    """An export's lines by kind, each as canonical JSON, sorted: the order of lines
    aside (turns come newest first, and messages with the same time in either order),
    everything counts."""
    lines = [json.loads(line) for line in export.split(b"\n") if line.strip()]
    kinds: dict[str, list[str]] = {}
    for line in lines:
        kinds.setdefault(line["kind"], []).append(json.dumps(line, sort_keys=True))
    return {kind: sorted(found) for kind, found in kinds.items()}


async def _round_trip(history: History) -> None:
    async with FakeOllama(models=["llama3.2"]) as fake:
        fake.responder = NoteModel()  # writes the notes and the profile of ended sessions
        async with _server(fake) as first:
            await _tell(first, history)
            exported = await _settled_export(first, "ka")
            with tempfile.TemporaryDirectory(prefix="mnemo-trip-cli-") as tmp:
                by_cli = Path(tmp) / "alice.jsonl"
                url = f"http://{first}"
                assert (
                    await _mnemo("export", "--out", str(by_cli), "--url", url, "--key", "ka") == 0
                )
                assert _comparable(by_cli.read_bytes()) == _comparable(exported)
                async with _server(fake) as fresh:
                    reply = await _import(fresh, "kb", exported)
                    assert reply["errors"] == [], reply
                    url = f"http://{fresh}"
                    status = await _mnemo("import", str(by_cli), "--url", url, "--key", "kc")
                    assert status == 0
                    again = await _export(fresh, "kb")
                    by_cli_again = await _export(fresh, "kc")
                    twice = await _import(fresh, "kb", exported)
    original = _comparable(exported)
    assert len(original.get("turn", [])) == sum(
        (bool(u.strip()) + bool(a.strip())) for s in history.sessions for u, a, _ in s.turns
    )
    lines = [json.loads(line) for line in exported.split(b"\n") if line.strip()]
    extras = history.extras
    places = [f"User lives in {place}" for place in extras.moves]
    told = {*places, "User eats meat every day", "User no longer eats meat", "User likes jazz"}
    stored = {line["content"] for line in lines if line["kind"] == "fact"} - told
    # Every exported fact is one that was added (stripped), and some fact is there when any
    # was added: two alike may merge into one (a duplicate reinforces the fact it repeats).
    assert stored <= {content.strip() for content, *_ in history.facts}
    assert bool(stored) == bool(history.facts)
    validity = {line["content"]: line["validity"] for line in lines if line["kind"] == "fact"}
    assert [validity[p] for p in places] == ["superseded"] * len(places[:-1]) + ["active"][
        : len(places[-1:])
    ]
    # The model writes the profile from what the user said in an ended session (and an
    # app's note, when it can); the example of every kind has each kind of line.
    spoke = [s for s in history.sessions if any(u.strip() for u, _, _ in s.turns)]
    assert ("profile" in original) == bool(spoke)
    if extras.linked and extras.rules and extras.entities and extras.episodes and spoke:
        kinds = {"profile", "turn", "fact", "note", "entity", "rule", "episode", "link"}
        assert set(original) == kinds
    assert len(original.get("rule", [])) == len(extras.rules)
    assert len(original.get("entity", [])) == len(extras.entities)
    assert len(original.get("episode", [])) == len(extras.episodes)
    assert _comparable(again) == original
    assert _comparable(by_cli_again) == original
    assert (twice["imported"], twice["errors"]) == (0, [])  # everything was there already


@settings(
    max_examples=6,
    # The same examples on every run: CI answers for this commit's code, not a new draw.
    derandomize=True,
    report_multiple_bugs=False,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(_histories)
# Always: a side left blank, and line breaks of str.splitlines that JSON lines do not break at.
@example(History([Session("s1", "travel", [("", "line\u2028break\x85nel", {"k": [1]})])]))
# Every kind at once: the history Lyon -> Lisbon -> Porto, a retraction, a fact said twice,
# rules with feedback, entities and a merge, episodes, links, an app's note and the profile.
@example(
    History(
        [Session("trip.2024", "travel", [("I moved to Porto last month", "Lovely!", {})])],
        [("User is learning Portuguese", "goal", True, "travel")],
        Extras(
            moves=["Lyon", "Lisbon", "Porto"],
            retracted=True,
            repeated=True,
            rules=[("Answer in Portuguese when asked", [True, False])],
            entities=[("Ana Souza", "person"), ("Ana", "person")],
            merged=True,
            episodes=[("Met Ana at the fair", "travel")],
            linked=True,
        ),
    )
)
# A fact's content is stored stripped; two alike merge.
@example(History([], [("0 ", None, False, "global")]))
@example(History([], [("😀" * 1000, None, False, "global"), ("😀" * 7000, None, False, "global")]))
def test_what_the_server_accepts_it_exports_and_imports_into_a_fresh_server_unchanged(
    history: History,
) -> None:
    anyio.run(_round_trip, history)


async def test_a_turn_with_both_sides_blank_is_refused_and_one_blank_side_is_not_archived(
    fake: FakeOllama,
) -> None:
    async with _server(fake) as address:
        async with connect(f"ws://{address}/ws/s1?token=ka") as connection:
            client = Client(connection)
            await client.until("ready")
            await client.send(type="turn", id="t1", user=" \n", assistant="")
            refused = await client.receive()
            await client.send(type="turn", id="t2", user="\t", assistant="Welcome back!")
            acked = await client.receive()
        exported = _comparable(await _export(address, "ka"))
    assert refused["type"] == "error"
    assert (refused["id"], refused["code"]) == ("t1", "bad_request")
    assert "both are blank" in refused["message"]
    assert acked == {"type": "ack", "id": "t2", "turn": 1}
    assert [json.loads(t)["text"] for t in exported["turn"]] == ["Welcome back!"]


def test_the_socket_refuses_what_an_import_would_refuse_with_the_same_check() -> None:
    long = "x" * (MAX_TEXT + 1)
    refused = {
        '{"type": "chat", "id": "c", "content": " "}': "`content` is blank",
        '{"type": "remember", "id": "r", "content": "\\n"}': "`content` is blank",
        f'{{"type": "remember", "id": "r", "content": "{long}"}}': "`content` is longer",
        f'{{"type": "turn", "id": "t", "user": "{long}", "assistant": "ok"}}': "`user` is longer",
        '{"type": "turn", "id": "t", "user": "", "assistant": "\\t"}': "both are blank",
    }
    for frame, message in refused.items():
        with pytest.raises(msgspec.ValidationError, match=message):
            decode_client(frame)
    assert decode_client('{"type": "turn", "id": "t", "user": "", "assistant": "Hi!"}')
    for text in ("", " \n", "x" * (MAX_TEXT + 1)):
        line = {"kind": "turn", "id": "l", "session_id": "s", "speaker": "user", "role": "user"}
        raw = json.dumps(line | {"text": text, "at": "2024-06-02T12:00:00Z"}).encode()
        with pytest.raises(ValueError, match="text"):
            parse_line(raw, Settings().categories)
