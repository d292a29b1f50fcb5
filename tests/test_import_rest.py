"""`POST /memory/import` end to end: JSON lines streamed into a real server on LanceDB."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from actors.errors import ArchiveUnavailable
from memory.hashing import HashEmbedder
from schemas.records import ArchivedMessage
from server.adapters.lance_store import LanceStore
from server.adapters.ollama import OllamaLlm
from server.app import create_app
from server.rest_import import MAX_LINE_BYTES
from testing.fake_ollama import FakeOllama
from tests.harness import Client, make_app, serve, settings_for
from tests.import_lines import NDJSON, fact, http, jsonl, post, turn

pytestmark = pytest.mark.anyio


@pytest.fixture
async def server(tmp_path: Path, fake: FakeOllama) -> AsyncIterator[str]:
    settings = settings_for(tmp_path, fake.url, api_keys={"ka": "alice", "kb": "bob"})
    async with serve(make_app(settings)) as address:
        yield address


async def items(server: str, kind: str, key: str = "ka") -> list[dict[str, Any]]:
    async with http(server, key) as client:
        response = await client.get("/memory/long-term", params={"kind": kind, "limit": 200})
    found: list[dict[str, Any]] = response.json()["items"]
    return found


async def export(server: str, key: str) -> list[dict[str, Any]]:
    async with http(server, key) as client:
        response = await client.get("/memory/export")
    return [json.loads(line) for line in response.text.splitlines()]


async def test_imported_turns_are_listed_and_found_by_search(server: str) -> None:
    body = jsonl(
        [
            turn("c1-1", "We hiked the Zugspitze trail in April", meta={"dia_id": "D1:1"}),
            turn("c1-2", "Sounds steep! How was the weather?", role="assistant", speaker="Bot"),
        ]
    )
    assert await post(server, body) == {
        "imported": 2,
        "skipped": 0,
        "errors": [],
        "errors_omitted": 0,
    }
    listed = await items(server, "turns")
    assert sorted((m["role"], m["speaker"], m["session_id"], m["at"]) for m in listed) == [
        ("assistant", "Bot", "old-chat", "2024-03-01T09:30:00Z"),
        ("user", "Ann", "old-chat", "2024-03-01T09:30:00Z"),
    ]
    async with http(server) as client:
        response = await client.get("/memory/search", params={"q": "Zugspitze", "kind": "turns"})
    hits = {hit["source_id"]: hit for hit in response.json()["hits"]}
    said = hits["c1-1"]
    assert (said["text"], said["meta"]) == (
        "We hiked the Zugspitze trail in April",
        {"dia_id": "D1:1"},
    )


async def test_imported_facts_keep_category_date_pin_and_resolve_aliases(server: str) -> None:
    body = jsonl(
        [
            fact("f1", "User drinks oolong tea", at="2023-11-05T08:00:00+01:00", pinned=True),
            fact("f2", "Water boils at 100 C at sea level", category="Fact"),
            fact("f3", "User reviews code before lunch", category="pattern", confidence=0.3),
            fact("f4", "User lived in Oslo", category="identity", validity="superseded"),
        ]
    )
    reply = await post(server, body)
    assert (reply["imported"], reply["skipped"], reply["errors"]) == (3, 1, [])
    found = {f["content"]: f for f in await items(server, "facts")}
    assert sorted(found) == [
        "User drinks oolong tea",
        "User reviews code before lunch",
        "Water boils at 100 C at sea level",
    ]
    tea = found["User drinks oolong tea"]
    assert (tea["category"], tea["pinned"], tea["created_at"], tea["extractor"]) == (
        "preference",
        True,
        "2023-11-05T07:00:00Z",
        "import",
    )
    assert found["Water boils at 100 C at sea level"]["category"] == "knowledge"
    # An import copies a record: below the extraction threshold it is still kept.
    assert found["User reviews code before lunch"]["category"] == "behavior"


async def test_importing_the_same_file_again_imports_nothing(server: str) -> None:
    body = jsonl(
        [turn(f"t{n}", f"message number {n}") for n in range(5)] + [fact("f", "User runs")]
    )
    assert (await post(server, body))["imported"] == 6
    again = await post(server, body)
    assert (again["imported"], again["skipped"], again["errors"]) == (0, 6, [])
    assert len(await items(server, "all")) == 6
    [runs] = await items(server, "facts")
    assert (runs["mention_count"], runs["confidence"]) == (1, 0.8)


async def test_a_repeated_id_within_one_file_is_imported_once(server: str) -> None:
    body = jsonl([turn("same", "first"), turn("same", "second"), fact("f", "User sails")])
    body += jsonl([fact("f", "User sails on Lake Geneva", category="goal")])
    reply = await post(server, body)
    assert (reply["imported"], reply["skipped"]) == (2, 2)
    assert [m["text"] for m in await items(server, "turns")] == ["first"]
    assert [f["content"] for f in await items(server, "facts")] == ["User sails"]


async def test_an_imported_duplicate_of_a_stored_fact_is_skipped_not_reinforced(
    server: str,
) -> None:
    async with Client.connect(server, "s1", token="ka") as client:
        await client.receive()
        await client.send(type="remember", id="r", content="User plays the cello")
        await client.until("memory")
    reply = await post(server, jsonl([fact("x", "user plays the cello")]))
    assert (reply["imported"], reply["skipped"]) == (0, 1)
    [cello] = await items(server, "facts")
    assert (cello["content"], cello["mention_count"]) == ("User plays the cello", 1)


async def test_bad_lines_are_reported_by_number_while_good_lines_land(server: str) -> None:
    body = jsonl(
        [
            turn("ok1", "a good line"),
            "{not json",
            {"kind": "poem", "id": "p1"},
            fact("f1", "User likes jazz", category="hobbies"),
            turn("blank", "   "),
            "",
            turn("bad id!", "an id with a space and a bang"),
            turn("no-date", "no timestamp", at=None),
        ]
    )
    body += b'{"kind": "turn", "text": "' + b"x" * MAX_LINE_BYTES + b'"}\n'
    body += jsonl([fact("ok2", "User likes jazz", category="Preference")])
    reply = await post(server, body)
    assert (reply["imported"], reply["skipped"]) == (2, 0)
    errors = {e["line"]: e["message"] for e in reply["errors"]}
    assert sorted(errors) == [2, 3, 4, 5, 7, 8, 9]
    assert "malformed" in errors[2]
    assert errors[3] == "Invalid value 'poem' - at `$.kind`"
    assert "unknown category 'hobbies'" in errors[4]
    assert errors[5] == "text is blank"
    assert "$.id" in errors[7]
    assert "$.at" in errors[8]
    assert errors[9] == f"line longer than {MAX_LINE_BYTES} bytes"
    assert [m["text"] for m in await items(server, "turns")] == ["a good line"]
    assert [f["category"] for f in await items(server, "facts")] == ["preference"]


async def test_each_user_imports_into_their_own_memory_only(server: str) -> None:
    body = jsonl([turn("t1", "Alice's secret garden"), fact("f1", "User grows tomatoes")])
    assert (await post(server, body, "ka"))["imported"] == 2
    assert await items(server, "all", "kb") == []
    async with http(server, "kb") as client:
        response = await client.get("/memory/search", params={"q": "secret garden tomatoes"})
    assert response.json()["hits"] == []
    # The same ids are new for another user, and leave the first user's memory alone.
    assert (await post(server, body, "kb"))["imported"] == 2
    assert len(await items(server, "all", "ka")) == 2


async def test_export_imports_into_another_user_and_back_without_duplicates(
    server: str,
) -> None:
    async with Client.connect(server, "s1", token="ka") as client:
        await client.receive()
        await client.send(type="remember", id="r", content="User plays the cello", pinned=True)
        await client.until("memory")
        await client.send(type="turn", id="t1", user="Bach tonight", assistant="Enjoy")
        await client.until("ack")
    await post(server, jsonl([turn("old-1", "We met in Lisbon", meta={"src": "other-app"})]))
    alice = await export(server, "ka")

    reply = await post(server, jsonl(alice), "kb")
    assert (reply["imported"], reply["skipped"], reply["errors"]) == (4, 0, [])

    def comparable(lines: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        keys = ["kind", "text", "content", "role", "category", "pinned", "meta"]
        keys += ["session_id", "at", "turn"]
        return sorted(tuple(json.dumps(line.get(key)) for key in keys) for line in lines)

    bob = await export(server, "kb")
    assert comparable(bob) == comparable(alice)
    for owner, lines in (("ka", alice), ("ka", bob), ("kb", bob), ("kb", alice)):
        again = await post(server, jsonl(lines), owner)
        assert (again["imported"], again["skipped"]) == (0, 4), owner


async def test_a_large_streamed_import_reports_progress_after_each_batch(server: str) -> None:
    total = 3000

    async def body() -> AsyncIterator[bytes]:
        lines = [turn(f"t{n}", f"line {n} about topic {n % 7}", turn=n) for n in range(total)]
        data = jsonl(lines)
        for start in range(0, len(data), 10_000):  # chunks end mid-line
            yield data[start : start + 10_000]

    headers = {"content-type": NDJSON, "accept": NDJSON}
    async with http(server) as client:
        response = await client.post("/memory/import", content=body(), headers=headers)
        listed = (await client.get("/memory/long-term", params={"kind": "turns"})).json()
    assert response.status_code == 200
    assert response.headers["content-type"].startswith(NDJSON)
    *progress, final = [json.loads(line) for line in response.text.splitlines()]
    assert [p["progress"]["imported"] for p in progress] == list(range(500, total + 1, 500))
    assert [p["progress"]["lines"] for p in progress] == list(range(500, total + 1, 500))
    assert final == {"imported": total, "skipped": 0, "errors": [], "errors_omitted": 0}
    assert listed["total"] == total


async def test_import_needs_a_key_and_json_lines(server: str) -> None:
    body = jsonl([turn("t1", "hello")])
    async with http(server, key=None) as client:
        response = await client.post("/memory/import", content=body)
    assert response.status_code == 401
    async with http(server) as client:
        response = await client.post(
            "/memory/import", content=body, headers={"content-type": "application/json"}
        )
    assert response.status_code == 415
    assert response.json()["error"]["code"] == "unsupported_media_type"
    assert await items(server, "all") == []


class _FullDisk(LanceStore):
    """Takes one append, then fails every other one."""

    appended = 0

    async def append_messages(
        self, rows: Sequence[ArchivedMessage], vectors: Sequence[Sequence[float]]
    ) -> None:
        if self.appended:
            raise ArchiveUnavailable("disk full (test)")
        self.appended += 1
        await super().append_messages(rows, vectors)


async def test_a_store_failure_ends_the_import_with_an_error_and_keeps_earlier_batches(
    tmp_path: Path, fake: FakeOllama
) -> None:
    settings = settings_for(tmp_path, fake.url, api_keys={"ka": "alice"})
    embedder = HashEmbedder()
    store = _FullDisk(tmp_path / "lancedb", embedder=embedder)
    app = create_app(settings, llm=OllamaLlm(fake.url, timeout=2.0), store=store, embedder=embedder)
    body = jsonl([turn(f"t{n}", f"line {n}") for n in range(1200)])
    async with serve(app) as address, http(address) as client:
        streamed = await client.post(
            "/memory/import", content=body, headers={"content-type": NDJSON, "accept": NDJSON}
        )
        plain = await client.post("/memory/import", content=body, headers={"content-type": NDJSON})
        listed = (await client.get("/memory/long-term", params={"kind": "turns"})).json()
    assert [json.loads(line) for line in streamed.text.splitlines()] == [
        {"progress": {"lines": 500, "imported": 500, "skipped": 0}},
        {"error": {"code": "archive_unavailable", "message": "disk full (test)"}},
    ]
    assert plain.status_code == 503
    assert plain.json()["error"]["code"] == "archive_unavailable"
    assert listed["total"] == 500


async def test_imported_turns_move_from_the_journal_into_the_table(
    tmp_path: Path, fake: FakeOllama
) -> None:
    settings = settings_for(
        tmp_path, fake.url, api_keys={"ka": "alice"}, archive_flush_interval=0.05
    )
    async with serve(make_app(settings)) as address:
        reply = await post(address, jsonl(turn(f"t{n}", f"we met on day {n}") for n in range(3)))
        assert reply["imported"] == 3
        journal = tmp_path / "journal"
        with anyio.fail_after(10):
            while any(journal.glob("*.journal")):
                await anyio.sleep(0.05)
    store = LanceStore(tmp_path / "lancedb", embedder=HashEmbedder())
    await store.open()  # no journal: only what the table holds
    try:
        _, total = await store.list_messages("alice", limit=10, offset=0)
    finally:
        await store.aclose()
    assert total == 3


#: An export written before exports held every record: facts first (their ids the lines
#: they came from, history without ``updated_at``), then the profile, turns and notes.
OLD_EXPORT = [
    '{"kind":"fact","id":"fact_52181a1b","content":"User loves green tea","category":"preference",'
    '"confidence":0.6,"at":"2026-11-25T15:20:03.403417Z","scope":"global","meta":{},'
    '"pinned":false,"validity":"active","mention_count":3,"subject":"user","predicate":"likes"}',
    '{"kind":"fact","id":"fact_0000aaaa","content":"User lives in Lyon","category":"identity",'
    '"confidence":0.9,"at":"2026-11-20T10:00:00Z","scope":"global","meta":{},"pinned":false,'
    '"validity":"superseded","mention_count":1,"subject":"user","predicate":"lives_in"}',
    '{"kind":"profile","user_id":"alice","work":"","personal":"tea drinker","top_of_mind":"",'
    '"recent":"","earlier":"","background":"","updated_at":"2026-11-25T15:30:00Z"}',
    '{"kind":"turn","id":"msg_449d8f3a0984b4f2","session_id":"first","speaker":"assistant",'
    '"role":"assistant","text":"Noted.","at":"2026-11-25T15:20:03.303282Z","scope":"global",'
    '"meta":{},"turn":2}',
    '{"kind":"note","id":"note_1a2b3c4d","app_id":"travel","content":"Planned a trip to Porto",'
    '"at":"2026-11-24T09:00:00Z","meta":{}}',
]


async def test_an_export_of_an_earlier_version_still_imports(server: str) -> None:
    reply = await post(server, jsonl(OLD_EXPORT), key="kb")
    # The active fact is learned (the fact rules apply, its count is not taken), the
    # history line without its record is skipped, the rest restored.
    assert reply == {"imported": 4, "skipped": 1, "errors": [], "errors_omitted": 0}
    exported = {line["kind"]: line for line in await export(server, "kb")}
    tea = exported["fact"]
    assert (tea["content"], tea["mention_count"], tea["source_id"]) == (
        "User loves green tea",
        1,
        "fact_52181a1b",
    )
    assert exported["profile"]["personal"] == "tea drinker"
    assert exported["note"]["content"] == "Planned a trip to Porto"
    assert exported["turn"]["id"] == "msg_449d8f3a0984b4f2"
    again = await post(server, jsonl(OLD_EXPORT), key="kb")
    assert (again["imported"], again["errors"]) == (0, [])


def record(n: int, content: str, **fields: Any) -> dict[str, Any]:
    """A fact of an export: with ``updated_at``, restored as it is."""
    at = "2026-11-25T15:20:03Z"
    return fact(f"fact_0000000{n}", content, updated_at=at, at=at) | fields


async def test_restored_records_keep_the_users_bounds_and_links_need_both_ends(
    tmp_path: Path, fake: FakeOllama
) -> None:
    settings = settings_for(tmp_path, fake.url, max_facts=2, max_pinned=1)
    lines = [
        record(1, "User likes tea", pinned=True, mention_count=4),
        record(2, "User likes jazz", pinned=True),
        record(3, "User lives in Lyon", validity="superseded", superseded_by="fact_00000004"),
        record(4, "User lives in Porto", supersedes_id="fact_00000003"),
        {
            "kind": "link",
            "source_type": "fact",
            "source_id": "fact_00000001",
            "target_type": "fact",
            "target_id": "fact_00000009",
            "relation": "supports",
            "created_at": "2026-11-25T15:20:03Z",
        },
    ]
    async with serve(make_app(settings)) as server:
        reply = await post(server, jsonl(lines))
        facts = {line["id"]: line for line in await export(server, "ka") if line["kind"] == "fact"}
    assert (reply["imported"], reply["skipped"]) == (3, 0)
    assert reply["errors"] == [
        {"line": 4, "message": "over the 2 active facts kept (MNEMO_MAX_FACTS)"},
        {"line": 5, "message": "the link names a memory that is not there"},
    ]
    # The history is kept (not active, so not counted), the pin past the cap is not.
    assert sorted(facts) == ["fact_00000001", "fact_00000002", "fact_00000003"]
    assert [facts[i]["pinned"] for i in sorted(facts)] == [True, False, False]
    assert facts["fact_00000001"]["mention_count"] == 4
