"""Uninstalling an app (``DELETE /apps/{app}``): its sessions end, its notes stay unless
purged; and a note still being written when its app's notes are deleted never lands.

The model is the one of ``test_app_notes``; a held note call waits on a gate the test
opens, so a purge can run while a note is being written, whatever the timing.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from actors import registry
from testing.fake_ollama import FakeOllama
from tests.app_notes import (
    EXTRACTION,
    NOTE,
    PROFILE,
    Answer,
    NoteModel,
    calls,
    contents,
    converse,
    default_note,
    http,
    notes,
    session,
    wait_calls,
)
from tests.harness import KEYS, make_app, serve, settings_for

pytestmark = pytest.mark.anyio


@pytest.fixture
async def server(tmp_path: Path, fake: FakeOllama, model: NoteModel) -> AsyncIterator[str]:
    async with serve(make_app(settings_for(tmp_path, fake.url, api_keys=KEYS))) as address:
        yield address


@pytest.fixture
def held(model: NoteModel) -> Iterator[threading.Event]:
    """From now on the model answers a note call only once the returned gate is set."""
    gate = threading.Event()

    def note(prompt: str) -> Answer:
        gate.wait(10)
        return default_note(prompt)

    model.note = note
    yield gate
    gate.set()


async def uninstall(server: str, app: str = "calendar", **params: str) -> Any:
    async with http(server) as client:
        response = await client.delete(f"/apps/{app}", params=params)
    assert response.status_code == 200
    return response.json()


async def live_turn(client: Any, fake: FakeOllama, text: str) -> None:
    extractions = len(calls(fake, EXTRACTION))
    await client.send(type="turn", id="t1", user=text, assistant="Noted.")
    await client.until("ack")
    await wait_calls(fake, EXTRACTION, extractions + 1)


async def test_uninstalling_an_app_keeps_its_notes_for_a_later_session_of_it(
    server: str, fake: FakeOllama
) -> None:
    await converse(server, fake, "s1", user="Dentist on Tuesday")
    await converse(server, fake, "t1", app="todo", user="Buy oat milk")
    assert await uninstall(server) == {"success": True, "endedSessions": 0, "deletedCount": 0}
    assert contents(await notes(server)) == {"Note: Dentist on Tuesday"}
    async with session(server, "s2", app="calendar") as client:
        await client.send(type="context", id="q", query="dentist", format="app-memories")
        block, _ = await client.until("context")
    assert "Note: Dentist on Tuesday" in block["text"]
    assert contents(await notes(server, "todo")) == {"Note: Buy oat milk"}


async def test_uninstalling_ends_the_apps_live_sessions_and_they_leave_their_notes(
    server: str, fake: FakeOllama
) -> None:
    async with (
        session(server, "s1", app="calendar") as calendar,
        session(server, "t1", app="todo") as todo,
    ):
        await live_turn(calendar, fake, "Standup at 9")
        await live_turn(todo, fake, "Buy oat milk")
        assert await uninstall(server) == {
            "success": True,
            "endedSessions": 1,
            "deletedCount": 0,
        }
        await wait_calls(fake, PROFILE, 1)
        assert contents(await notes(server)) == {"Note: Standup at 9"}
        assert await notes(server, "todo") == []  # the other app's session is still on
        await todo.send(type="ping")
        await todo.until("pong")


async def test_uninstalling_with_purge_deletes_its_notes_and_the_sessions_it_ends_write_none(
    server: str, fake: FakeOllama
) -> None:
    await converse(server, fake, "s1", user="Dentist on Tuesday")
    await converse(server, fake, "t1", app="todo", user="Buy oat milk")
    async with session(server, "s2", app="calendar") as client:
        await live_turn(client, fake, "Gym on Friday")
        answer = await uninstall(server, purge="true")
        await wait_calls(fake, PROFILE, 3)  # the ended session's background work is over
    assert answer == {"success": True, "endedSessions": 1, "deletedCount": 1}
    assert len(calls(fake, NOTE)) == 2
    assert await notes(server) == []
    assert contents(await notes(server, "todo")) == {"Note: Buy oat milk"}


async def test_a_session_that_ends_after_its_app_was_uninstalled_with_purge_writes_no_note(
    server: str, fake: FakeOllama, model: NoteModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The uninstall answers before a slow end is over (here: its extraction is held past
    the registry's wait); the end that comes later still writes no note."""
    await converse(server, fake, "s1", user="Dentist on Tuesday")
    gate = threading.Event()

    def responder(path: str, body: dict[str, Any]) -> Answer:
        if "format" in body and EXTRACTION in body["messages"][0]["content"]:
            gate.wait(10)
        return model(path, body)

    monkeypatch.setattr(fake, "responder", responder)
    monkeypatch.setattr(registry, "END_TIMEOUT", 0.5)
    try:
        async with session(server, "s2", app="calendar") as client:
            await live_turn(client, fake, "Gym on Friday")  # its extraction is held
            answer = await uninstall(server, purge="true")
            gate.set()
            await wait_calls(fake, PROFILE, 2)
    finally:
        gate.set()
    assert answer == {"success": True, "endedSessions": 0, "deletedCount": 1}
    assert len(calls(fake, NOTE)) == 1
    assert await notes(server) == []


@pytest.mark.parametrize("path", ["/apps/calendar/memories", "/memory/long-term"])
async def test_a_note_still_being_written_when_its_notes_are_deleted_never_lands(
    server: str, fake: FakeOllama, held: threading.Event, path: str
) -> None:
    async with session(server, "s1", app="calendar") as client:
        await live_turn(client, fake, "Dentist on Tuesday")
        await client.send(type="end")
        with anyio.fail_after(10):
            await client.connection.wait_closed()
    await wait_calls(fake, NOTE, 1)
    async with http(server) as client:
        assert (await client.delete(path)).status_code == 200
    held.set()
    await wait_calls(fake, PROFILE, 1)  # the note was stored or dropped before this call
    assert await notes(server) == []
    # Clearing everything also drops the profile of that conversation; deleting the
    # app's notes leaves the profile, which is not the app's.
    if path == "/memory/long-term":
        await anyio.sleep(0.5)
        assert not await profile_stored(server)
    else:
        with anyio.fail_after(10):
            while not await profile_stored(server):
                await anyio.sleep(0.05)


async def profile_stored(server: str) -> bool:
    async with http(server) as client:
        return '"kind":"profile"' in (await client.get("/memory/export")).text


async def test_uninstalling_touches_no_other_users_sessions_or_notes(
    server: str, fake: FakeOllama
) -> None:
    await converse(server, fake, "s1", user="Dentist on Tuesday")
    async with session(server, "s2", app="calendar") as client:
        async with http(server, "key-bob") as bob:
            response = await bob.delete("/apps/calendar", params={"purge": "true"})
        assert response.json() == {"success": True, "endedSessions": 0, "deletedCount": 0}
        await client.send(type="ping")
        await client.until("pong")
    assert contents(await notes(server)) == {"Note: Dentist on Tuesday"}


async def test_uninstall_answers_400_to_a_purge_other_than_true_or_false_and_401_without_a_key(
    server: str, fake: FakeOllama
) -> None:
    await converse(server, fake, "s1", user="Dentist on Tuesday")
    async with http(server) as client:
        bad = await client.delete("/apps/calendar", params={"purge": "yes"})
    async with httpx.AsyncClient(base_url=f"http://{server}") as anonymous:
        unauthenticated = await anonymous.delete("/apps/calendar")
    assert bad.status_code == 400
    assert bad.json()["error"]["code"] == "bad_request"
    assert unauthenticated.status_code == 401
    assert contents(await notes(server)) == {"Note: Dentist on Tuesday"}
