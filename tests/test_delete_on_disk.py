"""Delete means gone: after every kind of delete the deleted text is nowhere in the data
directory's bytes (tables, old versions, journal), nor in a neighbour's search text.

Each test first checks that the text is on disk (the scan can see it), then deletes.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from testing.fake_ollama import FakeOllama
from tests.app_notes import NoteModel
from tests.harness import Client, make_app, serve, settings_for
from tests.import_lines import fact as imported_fact
from tests.import_lines import turn as imported_turn

pytestmark = pytest.mark.anyio

PROFILE_TEXT = "zqprofile talks about orchids"


class _Model(NoteModel):
    """Seed 003's fake model, with a profile that names something only it says."""

    def __call__(self, path: str, body: dict[str, Any]) -> Any:
        answer = super().__call__(path, body)
        if answer == {"recent": "talked about plans"}:
            return {"recent": PROFILE_TEXT}
        return answer


@pytest.fixture
async def server(tmp_path: Path, fake: FakeOllama) -> AsyncIterator[str]:
    fake.json_default = None
    fake.responder = _Model()
    settings = settings_for(tmp_path, fake.url, snapshot_interval=0.05)
    async with serve(make_app(settings)) as address:
        yield address


def on_disk(root: Path) -> bytes:
    """Every file's bytes under the data directory."""
    return b"".join(p.read_bytes() for p in root.rglob("*") if p.is_file())


async def wait_on_disk(root: Path, text: bytes) -> None:
    with anyio.fail_after(20):
        while text not in on_disk(root):
            await anyio.sleep(0.05)


def rest(server: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(base_url=f"http://{server}", timeout=30)


async def turn(server: str, session: str, user: str, assistant: str, app: str = "") -> None:
    async with Client.connect(server, session + (f"?app={app}" if app else "")) as client:
        await client.receive()
        await client.send(type="turn", id="t", user=user, assistant=assistant)
        await client.until("ack")


async def messages(server: str) -> list[dict[str, Any]]:
    async with rest(server) as client:
        listed = await client.get("/memory/long-term", params={"kind": "turns"})
    items: list[dict[str, Any]] = listed.json()["items"]
    return items


async def test_a_deleted_message_is_gone_from_disk_and_from_the_reply_that_answered_it(
    server: str, tmp_path: Path
) -> None:
    secret = "zqsecret my locker code is nine"
    await turn(server, "s1", secret, "I will keep that in mind")
    await turn(server, "s1", "what about lunch", "soup")
    await wait_on_disk(tmp_path, secret.encode())
    [asked] = [m for m in await messages(server) if m["text"] == secret]
    async with rest(server) as client:
        deleted = await client.delete(f"/memory/long-term/{asked['id']}")
        found = await client.get("/memory/search", params={"q": "zqsecret", "mode": "keyword"})
        reply = await client.get("/memory/search", params={"q": "keep in mind", "limit": 5})
    assert deleted.status_code == 200
    assert secret.encode() not in on_disk(tmp_path)
    assert b"zqsecret" not in on_disk(tmp_path)
    assert found.json()["hits"] == []
    assert "I will keep that in mind" in [hit["text"] for hit in reply.json()["hits"]]
    assert b"I will keep that in mind" in on_disk(tmp_path)  # its neighbour stays


async def test_a_deleted_fact_is_gone_from_disk(server: str, tmp_path: Path) -> None:
    async with rest(server) as client:
        created = await client.post(
            "/memory/long-term", json={"content": "User keeps zqfact bees", "pinned": True}
        )
        [fact] = created.json()["added"]
        await wait_on_disk(tmp_path, b"zqfact")
        deleted = await client.delete(f"/memory/long-term/{fact['id']}")
    assert deleted.status_code == 200
    assert b"zqfact" not in on_disk(tmp_path)


async def test_a_deleted_message_or_fact_among_many_in_one_data_file_is_gone_from_disk(
    server: str, tmp_path: Path
) -> None:
    """One import writes forty rows into one data file: a delete hides one row of it, and
    a compaction would leave the file as it is (under a tenth of it deleted)."""
    lines = [imported_turn(f"m{n}", f"walk {n}", session_id="imp") for n in range(40)]
    lines += [imported_fact(f"f{n}", f"Owns lamp {n}") for n in range(40)]
    lines[7]["text"] = "zqturn my bank pin is 4411"
    lines[47]["content"] = "zqfact hides a key under the mat"
    body = "".join(json.dumps(line) + "\n" for line in lines)
    async with rest(server) as client:
        imported = await client.post(
            "/memory/import", content=body, headers={"Content-Type": "application/x-ndjson"}
        )
        assert imported.json()["errors"] == [], imported.text
        await wait_on_disk(tmp_path, b"zqturn")
        await wait_on_disk(tmp_path, b"zqfact")
        held = await messages(server)
        turn = next(m for m in held if m["text"].startswith("zqturn"))
        facts = (await client.get("/memory/long-term", params={"kind": "facts"})).json()
        fact = next(f for f in facts["items"] if f["content"].startswith("zqfact"))
        assert (await client.delete(f"/memory/long-term/{turn['id']}")).status_code == 200
        assert (await client.delete(f"/memory/long-term/{fact['id']}")).status_code == 200
        on_disk_now = on_disk(tmp_path)
        assert b"zqturn" not in on_disk_now
        assert b"zqfact" not in on_disk_now
        left = await client.get("/memory/long-term", params={"kind": "facts", "limit": 100})
    assert left.json()["total"] == facts["total"] - 1  # the file's other rows all stay
    assert len(await messages(server)) == len(held) - 1


async def wait_note(server: str, app: str) -> dict[str, Any]:
    async with rest(server) as client:
        with anyio.fail_after(20):
            while True:
                notes = (await client.get(f"/apps/{app}/memories")).json()["memories"]
                if notes:
                    note: dict[str, Any] = notes[0]
                    return note
                await anyio.sleep(0.05)


async def end_app_session(server: str, app: str, user: str) -> None:
    async with Client.connect(server, f"s-{app}?app={app}") as client:
        await client.receive()
        await client.send(type="turn", id="t", user=user, assistant="ok")
        await client.until("ack")
        await client.send(type="end")
        with anyio.fail_after(20):
            await client.connection.wait_closed()


async def test_a_deleted_app_note_is_gone_from_disk(server: str, tmp_path: Path) -> None:
    await end_app_session(server, "garden", "zqnote plant tulips")
    note = await wait_note(server, "garden")
    assert note["content"] == "Note: zqnote plant tulips"
    await wait_on_disk(tmp_path, b"Note: zqnote")
    async with rest(server) as client:
        deleted = await client.delete(f"/apps/garden/memories/{note['id']}")
    assert deleted.json() == {"success": True}
    assert b"Note: zqnote" not in on_disk(tmp_path)


async def test_an_ended_sessions_working_memory_is_gone_from_disk_when_end_answers(
    server: str, tmp_path: Path
) -> None:
    async with Client.connect(server, "s1") as client:
        await client.receive()
        await client.send(type="set", topic="zqtopic sailing", variables={"boat": "zqboat"})
        await wait_on_disk(tmp_path, b"zqtopic sailing")
        await client.send(type="set", topic="zqtopic rowing")  # one more version
        await wait_on_disk(tmp_path, b"zqtopic rowing")
        await client.send(type="end")
        with anyio.fail_after(20):
            await client.connection.wait_closed()
    disk = on_disk(tmp_path)
    assert b"zqtopic" not in disk
    assert b"zqboat" not in disk


async def test_delete_all_leaves_nothing_of_the_users_long_term_memory_on_disk(
    server: str, tmp_path: Path
) -> None:
    await turn(server, "s1", "zqall one", "zqall two")
    await end_app_session(server, "garden", "zqall three")
    await wait_note(server, "garden")
    async with rest(server) as client:
        await client.post("/memory/long-term", json={"content": "User likes zqall tea"})
    await wait_on_disk(tmp_path, PROFILE_TEXT.encode())
    assert on_disk(tmp_path).count(b"zqall") >= 4
    async with rest(server) as client:
        cleared = await client.delete("/memory/long-term")
    disk = on_disk(tmp_path)
    assert cleared.status_code == 200
    assert b"zqall" not in disk
    assert PROFILE_TEXT.encode() not in disk
