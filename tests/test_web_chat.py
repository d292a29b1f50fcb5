"""The chat page in a real browser: protocol v1 over the page's WebSocket, against the real
server (uvicorn, LanceDB on a temp dir) and the fake Ollama."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from testing.fake_ollama import Reply
from tests.browser import WAIT, Site, open_chat, running_site, say


@pytest.fixture(autouse=True)
def _patient() -> None:
    expect.set_options(timeout=WAIT)


def record_bus(page: Page, event: str) -> None:
    """Keep the details of the page's bus ``event``s from now on, as a JSON list in the
    body's ``data-<event>`` attribute (``recorded`` reads it; ``expect`` can wait on it)."""
    page.evaluate(
        """async (event) => {
        const { bus } = await import("/web/api.js");
        const seen = [];
        bus.addEventListener(event, ({ detail }) => {
            seen.push(detail);
            document.body.setAttribute(`data-${event}`, JSON.stringify(seen));
        });
    }""",
        event,
    )


def recorded(page: Page, event: str) -> list[Any]:
    details: list[Any] = json.loads(page.locator("body").get_attribute(f"data-{event}") or "[]")
    return details


def archived_turns(url: str, key: str | None = None) -> list[dict[str, Any]]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    answer = httpx.get(f"{url}/memory/long-term", params={"kind": "turns"}, headers=headers)
    answer.raise_for_status()
    items: list[dict[str, Any]] = answer.json()["items"]
    return items


def extraction(**fact: Any) -> dict[str, Any]:
    return {"facts": [fact], "memory_update": {"should_store": True}, "analysis": {}}


def test_a_chat_streams_the_models_reply_into_the_page_and_the_turn_is_archived(
    site: Site, page: Page
) -> None:
    session = open_chat(page, site.url)
    page.evaluate(
        """() => {
        window.seen = [];
        new MutationObserver(() => {
            const reply = document.querySelector(".msg.assistant .text");
            if (reply) window.seen.push(reply.textContent);
        }).observe(document.getElementById("conversation"),
                   {childList: true, subtree: true, characterData: true});
    }"""
    )
    site.fake.script(Reply("Hello Ada, nice to meet you again today!", chunk_delay=0.05))
    say(page, "Hi, I'm Ada")
    expect(page.locator(".msg.user")).to_have_text("You: Hi, I'm Ada")
    reply = page.locator(".msg.assistant")
    expect(reply).to_have_attribute("data-turn", "1")
    expect(reply.locator(".text")).to_have_text("Hello Ada, nice to meet you again today!")
    growing = page.evaluate("window.seen.filter(t => t.length > 0)")
    assert len(set(growing)) > 2, growing  # it grew piece by piece, as deltas arrived
    turns = [t for t in archived_turns(site.url) if t["session_id"] == session]
    assert sorted((t["role"], t["text"]) for t in turns) == [
        ("assistant", "Hello Ada, nice to meet you again today!"),
        ("user", "Hi, I'm Ada"),
    ]


def test_without_a_model_the_page_says_so_in_words_and_keeps_the_message(
    tmp_path: Path, page: Page
) -> None:
    with running_site(tmp_path, llm_url="http://127.0.0.1:9") as site:
        session = open_chat(page, site.url)
        say(page, "Is anyone there?")
        error = page.locator(".note.error")
        expect(error).to_have_attribute("data-code", "llm_unavailable")
        expect(error).to_contain_text("language model can't be reached")
        assert "{" not in error.inner_text()
        expect(page.locator(".msg.assistant")).to_have_count(0)
        expect(page.locator(".msg.user")).to_contain_text("Is anyone there?")
        turns = archived_turns(site.url)
    assert [(t["session_id"], t["text"]) for t in turns] == [(session, "Is anyone there?")]


def test_the_page_reconnects_after_a_server_restart_and_resumes_the_session(
    tmp_path: Path, page: Page
) -> None:
    with running_site(tmp_path) as first:
        session = open_chat(page, first.url)
        first.fake.script("First answer.")
        say(page, "Before the restart")
        expect(page.locator(".msg.assistant")).to_have_attribute("data-turn", "1")
    expect(page.locator("#chat")).not_to_have_attribute("data-state", "live")
    port = urlsplit(first.url).port
    assert port is not None
    with running_site(tmp_path, port=port) as second:
        expect(page.locator(".note.reconnected")).to_have_text(
            "Reconnected: session resumed after 1 turn."
        )
        second.fake.script("Second answer.")
        say(page, "After the restart")
        expect(page.locator(".msg.assistant").nth(1)).to_have_attribute("data-turn", "2")
        expect(page.locator(".msg.assistant").nth(1).locator(".text")).to_have_text(
            "Second answer."
        )
        turns = {(t["turn"], t["role"]) for t in archived_turns(second.url)}
    assert page.locator("#session-id").input_value() == session
    assert turns == {(1, "user"), (1, "assistant"), (2, "user"), (2, "assistant")}


def test_a_learned_fact_reaches_the_page_as_memory_changed_and_a_remembered_note(
    site: Site, page: Page
) -> None:
    open_chat(page, site.url)
    record_bus(page, "memory-changed")
    site.fake.script("Lisbon is lovely.")
    site.fake.script_json(
        extraction(
            content="User lives in Lisbon",
            category="identity",
            confidence=0.9,
            subject="user",
            predicate="lives_in",
            value="Lisbon",
        )
    )
    say(page, "I live in Lisbon")
    expect(page.locator(".note.remembered")).to_have_text("Remembered: User lives in Lisbon")
    changes = recorded(page, "memory-changed")
    assert [fact["content"] for change in changes for fact in change["added"]] == [
        "User lives in Lisbon"
    ]


def test_with_api_keys_the_page_asks_for_the_key_once_and_keeps_it(
    tmp_path: Path, page: Page
) -> None:
    with running_site(tmp_path, api_keys={"ada-secret": "ada"}) as site:
        page.goto(site.url)
        dialog = page.get_by_role("dialog", name="API key")
        expect(dialog).to_be_visible()
        dialog.get_by_label("Key").fill("not-the-key")
        dialog.get_by_role("button", name="Save key").click()
        expect(dialog.get_by_role("alert")).to_have_text("That key was refused.")
        dialog.get_by_label("Key").fill("ada-secret")
        dialog.get_by_role("button", name="Save key").click()
        expect(dialog).to_be_hidden()
        expect(page.locator("#chat")).to_have_attribute("data-state", "live")
        site.fake.script("Hello, Ada.")
        say(page, "Hi")
        expect(page.locator(".msg.assistant")).to_have_attribute("data-turn", "1")
        page.reload()
        expect(page.locator("#chat")).to_have_attribute("data-state", "live")
        expect(dialog).to_be_hidden()
        assert page.evaluate("localStorage.getItem('mnemo.key')") == "ada-secret"
        expect(page.locator(".msg.assistant")).to_have_text("mnemo: Hello, Ada.")
        page.get_by_role("button", name="API key").click()
        expect(dialog).to_be_visible()
        page.keyboard.press("Escape")
        expect(dialog).to_be_hidden()
        assert [t["text"] for t in archived_turns(site.url, "ada-secret")] == ["Hello, Ada.", "Hi"]


def test_at_phone_width_the_chat_fits_and_works_from_the_keyboard(
    site: Site, browser: Browser
) -> None:
    context = browser.new_context(viewport={"width": 375, "height": 720})
    page = context.new_page()
    try:
        open_chat(page, site.url)
        assert page.evaluate("document.documentElement.scrollWidth") <= 375
        message = page.get_by_label("Message", exact=True)
        message.focus()
        page.keyboard.type("first line")
        page.keyboard.press("Shift+Enter")
        page.keyboard.type("second line")
        expect(message).to_have_value("first line\nsecond line")
        expect(page.locator(".msg")).to_have_count(0)
        site.fake.script("Two lines, got it.")
        page.keyboard.press("Enter")
        expect(page.locator(".msg.user .text")).to_have_text("first line\nsecond line")
        expect(page.locator(".msg.assistant")).to_have_attribute("data-turn", "1")
        expect(message).to_be_focused()
        expect(message).to_have_value("")
        log = page.get_by_role("log", name="Conversation")
        expect(log).to_have_attribute("aria-live", "polite")
        assert page.evaluate("document.documentElement.scrollWidth") <= 375
    finally:
        context.close()


def test_a_refused_session_is_explained_once_in_words_while_the_page_retries(
    tmp_path: Path, page: Page
) -> None:
    with running_site(tmp_path, max_sessions_per_user=1) as site:
        open_chat(page, site.url)
        site.fake.script("Hi.")
        say(page, "Hello")  # the first session is live on the server until it idles out
        expect(page.locator(".msg.assistant")).to_have_attribute("data-turn", "1")
        page.get_by_role("button", name="New chat").click()
        error = page.locator(".note.error")
        expect(error).to_have_attribute("data-code", "too_many_sessions")
        expect(error).to_contain_text("too many open sessions")
        expect(page.locator("#chat")).to_have_attribute("data-state", "waiting")
        expect(page.locator("#status")).to_have_text("offline, reconnecting…")
        page.evaluate(
            """() => {
            const chat = document.getElementById("chat"), states = [];
            new MutationObserver(() => {
                states.push(chat.dataset.state);
                document.body.dataset.states = states.join();
            }).observe(chat, {attributes: true, attributeFilter: ["data-state"]});
        }"""
        )
        page.get_by_role("button", name="Retry now").click()
        expect(page.locator("body")).to_have_attribute(
            "data-states", re.compile("^connecting,waiting")
        )
        expect(error).to_have_count(1)  # refused again, said once


def test_a_session_and_app_chosen_in_the_header_are_where_the_turns_go(
    site: Site, page: Page
) -> None:
    open_chat(page, site.url)
    record_bus(page, "session")
    page.get_by_label("App").fill("travel")
    page.get_by_label("Session", exact=True).fill("trip.2026")
    page.get_by_label("Session", exact=True).press("Enter")
    expect(page.locator("body")).to_have_attribute(  # the last session the page opened
        "data-session", re.compile(r'\{"session_id":"trip.2026","scope":"travel"\}\]$')
    )
    expect(page.locator("#chat")).to_have_attribute("data-state", "live")
    site.fake.script("Bon voyage!")
    say(page, "Packing for Porto")
    expect(page.locator(".msg.assistant")).to_have_attribute("data-turn", "1")
    turns = archived_turns(site.url)
    assert {(t["session_id"], t["scope"]) for t in turns} == {("trip.2026", "travel")}
    page.get_by_label("Session", exact=True).fill("no spaces allowed")
    page.get_by_label("Session", exact=True).press("Enter")
    expect(page.get_by_label("Session", exact=True)).to_have_attribute("aria-invalid", "true")
    expect(page.locator(".msg.assistant")).to_have_count(1)  # still in trip.2026


def test_after_a_refused_key_and_the_right_one_the_pill_shows_and_no_raw_error_covers_the_page(
    tmp_path: Path, page: Page
) -> None:
    with running_site(tmp_path, api_keys={"ada-secret": "ada"}) as site:
        stored = httpx.post(
            f"{site.url}/memory/long-term",
            json={"content": "My name is Ada"},
            headers={"Authorization": "Bearer ada-secret"},
        )
        assert stored.status_code == 201
        page.goto(site.url)
        dialog = page.get_by_role("dialog", name="API key")
        dialog.get_by_label("Key").fill("not-the-key")
        dialog.get_by_role("button", name="Save key").click()
        expect(dialog.get_by_role("alert")).to_have_text("That key was refused.")
        # While a key is wanted the header says so, never "connected".
        expect(page.locator("#chat")).to_have_attribute("data-state", "needs-key")
        page.wait_for_load_state("networkidle")
        expect(page.locator("#status")).to_have_text("needs an API key")
        dialog.get_by_label("Key").fill("ada-secret")
        dialog.get_by_role("button", name="Save key").click()
        expect(page.locator("#chat")).to_have_attribute("data-state", "live")
        expect(page.locator("#status")).to_have_text("connected")
        expect(page.locator("#memory-pill")).to_have_text("1 memory ↗")
        page.wait_for_load_state("networkidle")
        expect(page.locator(".mp-notice")).to_be_hidden()
        expect(page.locator("body")).not_to_contain_text("Authorization")


def test_a_key_declined_leaves_the_banner_asking_and_a_key_given_later_fills_the_pill(
    tmp_path: Path, page: Page
) -> None:
    with running_site(tmp_path, api_keys={"ada-secret": "ada"}) as site:
        page.goto(site.url)
        dialog = page.get_by_role("dialog", name="API key")
        dialog.get_by_role("button", name="Cancel").click()
        expect(page.locator(".link-banner")).to_have_text(
            re.compile("^This server needs an API key to chat.")
        )
        expect(page.locator("#status")).to_have_text("needs an API key")
        page.wait_for_load_state("networkidle")
        expect(page.locator(".mp-notice")).to_be_hidden()  # the banner says it, once
        page.get_by_role("button", name="Enter key").click()
        dialog.get_by_label("Key").fill("ada-secret")
        dialog.get_by_role("button", name="Save key").click()
        expect(page.locator("#chat")).to_have_attribute("data-state", "live")
        expect(page.locator("#memory-pill")).to_have_text("0 memories ↗")


def test_with_the_server_down_the_banner_says_in_words_where_it_tried(
    tmp_path: Path, page: Page
) -> None:
    with running_site(tmp_path) as site:
        open_chat(page, site.url)
    banner = page.locator(".link-banner")
    expect(banner).to_contain_text(
        f"Can't reach mnemo at {site.url}: is mnemo serve running? Trying again in"
    )
    expect(page.locator("#status")).to_have_text("offline, reconnecting…")
    expect(page.locator("body")).not_to_contain_text("Failed to fetch")


def test_the_session_field_shows_a_whole_new_id_at_1280_px(site: Site, browser: Browser) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    try:
        session = open_chat(page, site.url)
        assert re.fullmatch(r"chat-\d{8}-[0-9a-f]{6}", session)
        field = page.locator("#session-id")
        assert field.evaluate("node => node.scrollWidth <= node.clientWidth")
    finally:
        context.close()
