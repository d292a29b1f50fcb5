"""The Memory Panel of seed 004 in a real browser: what the screen shows and what the
store holds afterwards (read back over REST)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from tests.browser import Site, running_site

#: Shortened undo windows for the tests that are not about their length; the tests
#: about the seed's 4 s and 8 s keep the page's defaults.
QUICK = """async () => {
    const panel = await import('/web/panel.js');
    panel.delays.undo = 1200;
    panel.delays.clear = 1200;
}"""
FACTS = "/memory/long-term"
TOAST = "div.mp-toast"


@pytest.fixture(autouse=True)
def _patient() -> None:
    expect.set_options(timeout=15_000)  # two loaded cores: wait, never fail early


@pytest.fixture
def rest(site: Site) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=site.url, timeout=30) as client:
        yield client


def add(rest: httpx.Client, content: str, **fields: Any) -> dict[str, Any]:
    answer = rest.post(FACTS, json={"content": content, **fields})
    assert answer.status_code == 201, answer.text
    fact: dict[str, Any] = [*answer.json()["added"], *answer.json()["updated"]][0]
    return fact


def stored(rest: httpx.Client) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = rest.get(FACTS, params={"kind": "facts", "limit": 200}).json()[
        "items"
    ]
    return items


def wait_for_store(rest: httpx.Client, check: Any, timeout: float = 20) -> list[dict[str, Any]]:
    """The facts once ``check(facts)`` holds (polled: the page's REST calls run on their own)."""
    deadline = time.monotonic() + timeout
    while True:
        facts = stored(rest)
        if check(facts) or time.monotonic() > deadline:
            assert check(facts), facts
            return facts
        time.sleep(0.1)


def open_panel(page: Page, site: Site, *, quick: bool = True) -> Locator:
    page.goto(site.url)
    expect(page.locator("#memory-pill")).to_be_visible()
    if quick:
        page.evaluate(QUICK)
    page.locator("#memory-pill").click()
    sheet = page.get_by_role("dialog", name="Memories")
    expect(sheet).to_be_visible()
    return sheet


def card(page: Page, content: str) -> Locator:
    return page.locator(".mp-card", has_text=content)


def test_the_pill_counts_the_facts_and_its_sheet_closes_outside_on_escape_and_by_shortcut(
    site: Site, rest: httpx.Client, page: Page
) -> None:
    for content in ("My name is Ada", "I prefer short answers", "I am building a chat app"):
        add(rest, content)
    page.goto(site.url)
    pill = page.locator("#memory-pill")
    expect(pill).to_have_text("3 memories ↗")
    sheet = page.get_by_role("dialog", name="Memories")
    expect(sheet).to_be_hidden()

    pill.click()
    expect(sheet).to_be_visible()
    expect(sheet).to_have_attribute("aria-modal", "true")
    expect(pill).to_have_attribute("aria-expanded", "true")
    expect(page.locator(".mp-backdrop")).to_be_visible()  # the conversation, dimmed
    expect(sheet).to_be_in_viewport(ratio=1)  # slid in, at the right
    box = sheet.bounding_box()
    assert box is not None
    assert box["x"] + box["width"] == pytest.approx(1100, abs=1)
    page.mouse.click(100, 400)  # outside the sheet
    expect(sheet).to_be_hidden()
    expect(pill).to_be_focused()

    page.keyboard.press("Control+Shift+M")
    expect(sheet).to_be_visible()
    page.keyboard.press("Escape")
    expect(sheet).to_be_hidden()
    expect(pill).to_be_focused()
    page.keyboard.press("Control+Shift+M")
    expect(sheet).to_be_visible()
    page.keyboard.press("Control+Shift+M")
    expect(sheet).to_be_hidden()
    expect(pill).to_have_attribute("aria-expanded", "false")


def test_cards_are_grouped_by_category_with_its_colour_and_a_confidence_bar_not_a_number(
    site: Site, rest: httpx.Client, page: Page
) -> None:
    add(rest, "Building a memory server", category="project")
    add(rest, "Likes green tea", category="preference")
    add(rest, "Prefers dark mode", category="preference")
    add(rest, "Is called Ada", category="identity")
    add(rest, "Wants to run a marathon", category="goal")
    sheet = open_panel(page, site)

    groups = sheet.locator(".mp-group")
    expect(groups).to_have_count(4)
    assert [groups.nth(i).get_attribute("data-category") for i in range(4)] == [
        "project",
        "preference",
        "identity",
        "goal",
    ]
    expect(groups.nth(1).locator(".mp-sep")).to_contain_text("Preferences")
    expect(groups.nth(1).locator(".mp-card")).to_have_count(2)
    accents = {
        "Building a memory server": "rgb(8, 145, 178)",  # blue/cyan
        "Likes green tea": "rgb(124, 58, 237)",  # purple
        "Is called Ada": "rgb(22, 163, 74)",  # green
        "Wants to run a marathon": "rgb(219, 39, 119)",
    }
    for content, colour in accents.items():
        expect(card(page, content)).to_have_css("border-left-color", colour)
        expect(card(page, content)).to_have_text(content)  # the text only: no number
    fact = card(page, "Likes green tea")
    meter = fact.get_by_role("meter", name="Confidence")
    expect(meter).to_have_attribute("aria-valuetext", "medium")
    # Measured in one step in the page: the list re-renders when the facts' events
    # arrive, and two separate reads could straddle a re-render.
    height, share = meter.evaluate(
        """m => {
            const track = m.getBoundingClientRect();
            const fill = m.querySelector('.mp-fill').getBoundingClientRect();
            return [track.height, fill.width / track.width];
        }"""
    )
    assert 0 < height <= 4
    assert share == pytest.approx(0.6, abs=0.02)  # manual: 0.6

    # Category tabs filter; there is no text search.
    sheet.get_by_role("tab", name=re.compile("^Preferences")).click()
    expect(sheet.locator(".mp-card")).to_have_count(2)
    expect(sheet.get_by_role("tab", name=re.compile("^Preferences"))).to_have_attribute(
        "aria-selected", "true"
    )
    sheet.get_by_role("tab", name=re.compile("^All")).click()
    expect(sheet.locator(".mp-card")).to_have_count(5)
    expect(sheet.locator("input[type=search], [role=search]")).to_have_count(0)


def test_a_click_edits_inline_enter_saves_to_the_store_with_a_green_pulse_and_escape_cancels(
    site: Site, rest: httpx.Client, page: Page
) -> None:
    fact = add(rest, "I live in Lyon")
    open_panel(page, site)

    card(page, "I live in Lyon").locator(".mp-text").click()
    field = page.get_by_role("textbox", name="Edit memory")
    expect(field).to_be_focused()
    field.fill("I live in Paris")
    field.press("Enter")
    saved = card(page, "I live in Paris")
    expect(saved).to_have_class(re.compile(r"\bmp-saved\b"))  # the pulse on the left border
    assert rest.get(f"{FACTS}/{fact['id']}").json()["content"] == "I live in Paris"

    saved.locator(".mp-text").click()
    field.fill("I live in Rome")
    field.press("Escape")
    expect(field).to_be_hidden()
    expect(card(page, "I live in Paris").locator(".mp-text")).to_be_focused()
    expect(page.get_by_role("dialog", name="Memories")).to_be_visible()  # Escape left it open
    assert rest.get(f"{FACTS}/{fact['id']}").json()["content"] == "I live in Paris"


def test_a_double_click_opens_a_textarea_and_a_category_selector_that_save_both(
    site: Site, rest: httpx.Client, page: Page
) -> None:
    fact = add(rest, "Learning Rust", category="knowledge")
    sheet = open_panel(page, site)

    card(page, "Learning Rust").locator(".mp-text").dblclick()
    area = sheet.get_by_role("textbox", name="Memory")
    expect(area).to_be_focused()
    expect(sheet.get_by_role("textbox", name="Edit memory")).to_have_count(0)  # not tier 1
    area.fill("Learning Rust to write a game engine")
    sheet.get_by_role("combobox", name="Category").select_option("goal")
    sheet.get_by_role("button", name="Save").click()

    moved = sheet.locator('.mp-group[data-category="goal"] .mp-card')
    expect(moved).to_have_text("Learning Rust to write a game engine")
    expect(moved).to_have_class(re.compile(r"\bmp-saved\b"))
    after = rest.get(f"{FACTS}/{fact['id']}").json()
    assert (after["content"], after["category"]) == ("Learning Rust to write a game engine", "goal")


def test_manage_mode_selects_with_checkboxes_and_its_bar_deletes_pins_and_moves_in_bulk(
    site: Site, rest: httpx.Client, page: Page
) -> None:
    for content in ("Owns a cat", "Owns a dog", "Owns a bike", "Owns a boat"):
        add(rest, content, category="knowledge")
    sheet = open_panel(page, site)
    bar = sheet.get_by_role("toolbar", name="Selected memories")
    expect(bar).to_be_hidden()
    sheet.get_by_role("button", name="Manage").click()
    expect(bar).to_be_visible()
    expect(bar.get_by_role("button", name="Delete")).to_be_disabled()

    sheet.get_by_role("checkbox", name=re.compile("Owns a cat")).check()
    sheet.get_by_role("checkbox", name=re.compile("Owns a dog")).check()
    expect(bar).to_contain_text("2 selected")
    bar.get_by_role("button", name="Delete").click()
    expect(sheet.locator(".mp-card")).to_have_count(2)
    expect(page.locator("#memory-pill")).to_have_text("2 memories ↗")
    wait_for_store(rest, lambda facts: len(facts) == 2)
    assert {f["content"] for f in stored(rest)} == {"Owns a bike", "Owns a boat"}

    sheet.get_by_role("checkbox", name=re.compile("Owns a bike")).check()
    sheet.get_by_role("checkbox", name=re.compile("Owns a boat")).check()
    bar.get_by_role("button", name="Pin", exact=True).click()
    wait_for_store(rest, lambda facts: all(f["pinned"] for f in facts))
    bar.get_by_role("combobox", name="Move selected to category").select_option("preference")
    wait_for_store(rest, lambda facts: all(f["category"] == "preference" for f in facts))
    expect(sheet.locator('.mp-group[data-category="preference"] .mp-card')).to_have_count(2)


def test_a_deleted_fact_undone_within_four_seconds_never_reaches_the_store_else_goes_at_four(
    site: Site, rest: httpx.Client, page: Page
) -> None:
    kept = add(rest, "Plays the cello")
    add(rest, "Speaks Portuguese")
    deletes: list[str] = []
    page.on("request", lambda r: deletes.append(r.url) if r.method == "DELETE" else None)
    sheet = open_panel(page, site, quick=False)  # the seed's own 4 seconds

    cello = card(page, "Plays the cello")
    cello.hover()
    cello.get_by_role("button", name="Delete").click()  # no dialog: gone at once
    expect(cello).to_have_count(0)
    toast = sheet.locator(TOAST, has_text="Deleted")
    expect(toast).to_contain_text("Plays the cello")
    expect(page.locator("#memory-pill")).to_have_text("1 memory ↗")
    toast.get_by_role("button", name="Undo").click()
    expect(cello).to_be_visible()
    time.sleep(4.5)
    assert deletes == []
    assert rest.get(f"{FACTS}/{kept['id']}").status_code == 200

    cello.hover()
    cello.get_by_role("button", name="Delete").click()
    deleted_at = time.monotonic()
    expect(toast).to_be_visible()
    time.sleep(max(0.0, deleted_at + 3.0 - time.monotonic()))
    page.wait_for_timeout(10)  # deliver the page's events so far
    assert deletes == []
    assert len(stored(rest)) == 2
    expect(toast).to_be_hidden(timeout=20_000)
    wait_for_store(rest, lambda facts: [f["content"] for f in facts] == ["Speaks Portuguese"])
    page.wait_for_timeout(10)
    assert deletes == [f"{site.url}{FACTS}/{kept['id']}"]


def test_a_pinned_card_shows_its_pin_unhovered_the_others_on_hover_and_the_cap_is_told_kindly(
    site: Site, rest: httpx.Client, page: Page
) -> None:
    pinned = [add(rest, f"Pinned fact number {n}", pinned=True) for n in range(10)]
    loose = add(rest, "The eleventh fact")
    sheet = open_panel(page, site)
    eleventh = card(page, "The eleventh fact")
    pin = eleventh.get_by_role("button", name="Pin", exact=True)

    page.mouse.move(5, 5)
    expect(pin).to_be_hidden()
    third = card(page, "Pinned fact number 3")
    expect(third.get_by_role("button", name="Unpin")).to_be_visible()  # pinned: seen at once
    expect(third.get_by_role("button", name="Unpin")).to_have_css("color", "rgb(249, 115, 22)")
    expect(third.get_by_role("button", name="Delete")).to_be_hidden()
    eleventh.hover()
    expect(pin).to_be_visible()
    expect(third).to_have_css(
        "box-shadow", re.compile(r"rgb\(249, 115, 22\) 1px 0px 0px 0px inset")
    )
    expect(eleventh).to_have_css("box-shadow", "none")

    pin.click()
    expect(sheet.get_by_role("alert")).to_have_text(
        "You can pin at most 10 memories. Unpin one to pin this one."
    )
    assert rest.get(f"{FACTS}/{loose['id']}").json()["pinned"] is False

    first = card(page, "Pinned fact number 0")
    first.hover()
    first.get_by_role("button", name="Unpin").click()
    expect(first).to_have_css("box-shadow", "none")
    assert rest.get(f"{FACTS}/{pinned[0]['id']}").json()["pinned"] is False
    eleventh.hover()
    pin.click()
    expect(eleventh).to_have_class(re.compile(r"\bpinned\b"))
    assert rest.get(f"{FACTS}/{loose['id']}").json()["pinned"] is True


def test_the_composer_remembers_a_fact_the_server_classifies(
    site: Site, rest: httpx.Client, page: Page
) -> None:
    sheet = open_panel(page, site)
    composer = sheet.get_by_role("textbox", name="Remember something")
    expect(composer).to_have_attribute("placeholder", "+ Remember something...")
    composer.fill("I prefer tea over coffee")
    composer.press("Enter")

    added = sheet.locator('.mp-group[data-category="preference"] .mp-card')
    expect(added).to_have_text("I prefer tea over coffee")
    expect(composer).to_have_value("")
    expect(page.locator("#memory-pill")).to_have_text("1 memory ↗")
    [fact] = stored(rest)
    assert (fact["content"], fact["category"]) == ("I prefer tea over coffee", "preference")


def test_highlighting_text_of_an_ai_reply_offers_a_remember_action_that_stores_it(
    site: Site, rest: httpx.Client, page: Page
) -> None:
    page.goto(site.url)
    expect(page.locator("#memory-pill")).to_have_text("0 memories ↗")
    page.evaluate(
        """() => {
        const chat = document.getElementById('chat');
        for (const [who, text] of [['user', 'Any dessert ideas?'],
            ['assistant', 'Since you are allergic to peanuts, try a lemon tart.']]) {
          const message = document.createElement('div');
          message.className = `msg ${who}`;
          message.textContent = text;
          chat.append(message);
        }
    }"""
    )
    select = """([kind, start, end]) => {
        const text = document.querySelector(`#chat .msg.${kind}`).firstChild;
        const range = document.createRange();
        range.setStart(text, start);
        range.setEnd(text, end);
        getSelection().removeAllRanges();
        getSelection().addRange(range);
    }"""
    remember = page.get_by_role("button", name="Remember", exact=True)
    page.evaluate(select, ["user", 0, 9])  # a user message: nothing offered
    page.wait_for_timeout(300)
    expect(remember).to_be_hidden()

    page.evaluate(select, ["assistant", 6, 33])
    expect(remember).to_be_visible()
    reply = page.locator("#chat .msg.assistant").bounding_box()
    floating = remember.bounding_box()
    assert reply is not None
    assert floating is not None
    assert reply["y"] - 60 < floating["y"] < reply["y"] + reply["height"] + 60  # by the text
    # Drawn, not an emoji: no emoji font needed (without one, an emoji is an empty box).
    expect(remember).to_have_text("Remember")
    expect(remember.locator("svg path")).to_have_count(1)
    remember.click()
    expect(remember).to_be_hidden()
    expect(page.locator("#memory-pill")).to_have_text("1 memory ↗")
    expect(page.get_by_role("status").filter(has_text="Remembered")).to_be_visible()
    [fact] = stored(rest)
    assert fact["content"] == "you are allergic to peanuts"


def test_clear_all_confirms_the_exact_count_and_an_undo_within_the_wait_wipes_nothing(
    site: Site, rest: httpx.Client, page: Page
) -> None:
    for n in range(12):
        add(rest, f"Remembered thing {n}")
    sheet = open_panel(page, site)
    clear = sheet.get_by_role("button", name="Clear all")
    expect(clear).to_have_css("color", "rgb(110, 110, 115)")  # muted, not red
    clear.click()
    expect(sheet.get_by_role("group", name="Clear all memories")).to_contain_text(
        "This will remove all 12 facts"
    )
    sheet.get_by_role("group", name="Clear all memories").get_by_role(
        "button", name="Clear all"
    ).click()
    expect(sheet.locator(".mp-card")).to_have_count(0)  # the view clears at once
    expect(sheet.locator(".mp-empty")).to_contain_text("No memories yet.")
    expect(page.locator("#memory-pill")).to_have_text("0 memories ↗")
    bar = sheet.locator(".mp-bar")
    expect(bar).to_contain_text("Memory cleared")
    bar.get_by_role("button", name="Undo").click()
    expect(sheet.locator(".mp-card")).to_have_count(12)
    time.sleep(2)  # past the (shortened) wait
    assert len(stored(rest)) == 12
    expect(page.locator("#memory-pill")).to_have_text("12 memories ↗")


def test_clear_all_wipes_the_store_after_eight_seconds_behind_a_bar_then_shows_the_empty_state(
    site: Site, rest: httpx.Client, page: Page
) -> None:
    for n in range(3):
        add(rest, f"Remembered thing {n}")
    wipes: list[str] = []
    page.on(
        "request",
        lambda r: wipes.append(r.url) if r.method == "DELETE" and r.url.endswith(FACTS) else None,
    )
    sheet = open_panel(page, site, quick=False)  # the seed's own 8 seconds
    sheet.get_by_role("button", name="Clear all").click()
    expect(sheet.get_by_role("group", name="Clear all memories")).to_contain_text(
        "This will remove all 3 facts"
    )
    sheet.get_by_role("group", name="Clear all memories").get_by_role(
        "button", name="Clear all"
    ).click()
    cleared_at = time.monotonic()
    bar = sheet.locator(".mp-bar")
    expect(bar).to_contain_text(re.compile(r"Memory cleared\s*Undo\s*[5-8]s"))
    expect(bar.locator(".mp-drain")).to_be_attached()  # the progress bar
    expect(bar.get_by_role("button", name="Undo")).to_be_focused()
    time.sleep(max(0.0, cleared_at + 6.5 - time.monotonic()))
    page.wait_for_timeout(10)  # deliver the page's events so far
    assert wipes == []
    assert len(stored(rest)) == 3
    expect(bar).to_be_hidden(timeout=25_000)
    wait_for_store(rest, lambda facts: facts == [])
    page.wait_for_timeout(10)
    assert len(wipes) == 1
    empty = sheet.locator(".mp-empty")
    expect(empty).to_contain_text("No memories yet.")
    expect(empty).to_contain_text("I'll learn as we talk.")
    expect(empty.locator("svg")).to_be_visible()  # the illustration


def test_the_panel_refreshes_when_the_tab_is_visible_again_and_when_the_chat_learns(
    site: Site, rest: httpx.Client, page: Page
) -> None:
    add(rest, "Drinks oat milk")
    page.goto(site.url)
    pill = page.locator("#memory-pill")
    expect(pill).to_have_text("1 memory ↗")
    add(rest, "Cycles to work")  # another tab or client
    page.wait_for_timeout(500)
    expect(pill).to_have_text("1 memory ↗")  # no polling

    page.evaluate("() => document.dispatchEvent(new Event('visibilitychange'))")
    expect(pill).to_have_text("2 memories ↗")

    add(rest, "Reads science fiction")
    page.evaluate(
        """async () => (await import('/web/api.js')).bus.dispatchEvent(
            new CustomEvent('memory-changed', {detail: null}))"""
    )
    expect(pill).to_have_text("3 memories ↗")
    pill.click()
    expect(card(page, "Reads science fiction")).to_be_visible()


def test_a_redraw_while_someone_moves_by_keyboard_keeps_their_focus_where_it_was(
    site: Site, rest: httpx.Client, page: Page
) -> None:
    add(rest, "Owns a piano")
    add(rest, "Likes sushi", category="preference")
    sheet = open_panel(page, site)
    redraw = """async () => (await import('/web/api.js')).bus.dispatchEvent(
        new CustomEvent('memory-changed', {detail: null}))"""

    card(page, "Owns a piano").locator(".mp-text").focus()
    page.keyboard.press("Tab")  # to its Pin button, shown while focus is in the card
    pin = card(page, "Owns a piano").get_by_role("button", name="Pin")
    expect(pin).to_be_focused()
    add(rest, "Collects stamps")  # learned meanwhile: the list is drawn again
    page.evaluate(redraw)
    expect(card(page, "Collects stamps")).to_be_visible()
    expect(pin).to_be_focused()  # the same button of the same fact, in the new drawing

    tab = sheet.get_by_role("tab", name=re.compile("^Preferences"))
    tab.focus()
    add(rest, "Reads poetry")
    page.evaluate(redraw)
    expect(card(page, "Reads poetry")).to_be_visible()
    expect(sheet.get_by_role("tab", name=re.compile("^Preferences"))).to_be_focused()


def test_the_keyboard_reaches_everything_and_focus_stays_in_the_sheet_until_it_returns(
    site: Site, rest: httpx.Client, page: Page
) -> None:
    fact = add(rest, "Owns a piano")
    add(rest, "Likes sushi", category="preference")
    page.goto(site.url)
    pill = page.locator("#memory-pill")
    expect(pill).to_have_text("2 memories ↗")
    pill.focus()
    page.keyboard.press("Enter")
    sheet = page.get_by_role("dialog", name="Memories")
    expect(sheet).to_be_visible()

    inside = "() => document.getElementById('memory-panel').contains(document.activeElement)"
    reached: set[str] = set()
    for key in ["Tab"] * 20 + ["Shift+Tab"] * 20:
        page.keyboard.press(key)
        assert page.evaluate(inside), key
        reached.add(page.evaluate("() => document.activeElement.getAttribute('aria-label') ?? ''"))
    assert {"Close memories", "Pin", "Delete", "Rewrite", "Remember something"} <= reached

    text = card(page, "Owns a piano").locator(".mp-text")
    text.focus()
    expect(text).to_have_css("outline-style", "solid")  # focus is visible
    page.keyboard.press("Enter")
    field = sheet.get_by_role("textbox", name="Edit memory")
    expect(field).to_be_focused()
    field.fill("Owns a grand piano")
    page.keyboard.press("Enter")
    expect(card(page, "Owns a grand piano")).to_be_visible()
    assert rest.get(f"{FACTS}/{fact['id']}").json()["content"] == "Owns a grand piano"

    page.keyboard.press("Escape")
    expect(sheet).to_be_hidden()
    expect(pill).to_be_focused()


def test_the_sheet_fits_a_phone_in_the_dark_without_motion(
    site: Site, rest: httpx.Client, browser: Browser
) -> None:
    add(rest, "Lives by the sea")
    context = browser.new_context(
        viewport={"width": 375, "height": 700},
        color_scheme="dark",
        reduced_motion="reduce",
        is_mobile=True,
        has_touch=True,
    )
    page = context.new_page()
    try:
        sheet = open_panel(page, site)
        box = sheet.bounding_box()
        assert box is not None
        assert (box["x"], box["width"]) == (0, 375)
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 375
        expect(sheet).to_have_css("background-color", "rgb(31, 31, 34)")
        expect(sheet).to_have_css("animation-name", "none")
        fact = card(page, "Lives by the sea")
        expect(fact.get_by_role("button", name="Pin")).to_be_visible()  # no hover on phones
        expect(sheet.get_by_role("button", name="Close memories")).to_be_in_viewport()
        expect(sheet.get_by_role("textbox", name="Remember something")).to_be_in_viewport()
    finally:
        context.close()


def test_tabs_that_run_off_the_edge_show_an_arrow_there_that_scrolls_to_the_others(
    site: Site, rest: httpx.Client, browser: Browser
) -> None:
    for category, content in [
        ("project", "Building a memory server"),
        ("preference", "Likes green tea"),
        ("identity", "Lives in Porto"),
        ("goal", "Wants to run a marathon"),
        ("correction", "The cat is called Tom, not Tim"),
        ("knowledge", "Knows Rust well"),
        ("behavior", "Writes late at night"),
        ("context", "Moving house in May"),
    ]:
        add(rest, content, category=category)
    context = browser.new_context(viewport={"width": 390, "height": 760})
    page = context.new_page()
    try:
        sheet = open_panel(page, site)
        tabs = sheet.get_by_role("tablist", name="Categories")
        expect(tabs.get_by_role("tab")).to_have_count(9)
        before, after = sheet.locator(".mp-tabs-before"), sheet.locator(".mp-tabs-after")
        expect(after).to_be_visible()
        expect(before).to_be_hidden()
        expect(tabs).to_have_css("mask-image", re.compile("linear-gradient"))
        after.click()
        expect(before).to_be_visible()
        assert tabs.evaluate("node => node.scrollLeft") > 0
        tabs.get_by_role("tab").last.click()  # the last one, now in view
        expect(after).to_be_hidden()
        expect(tabs.get_by_role("tab").last).to_have_attribute("aria-selected", "true")
    finally:
        context.close()


def test_with_every_tab_in_view_no_arrow_shows(site: Site, rest: httpx.Client, page: Page) -> None:
    add(rest, "Likes green tea", category="preference")
    sheet = open_panel(page, site)
    expect(sheet.get_by_role("tab")).to_have_count(2)
    expect(sheet.locator(".mp-tabs-after")).to_be_hidden()
    expect(sheet.locator(".mp-tabs-before")).to_be_hidden()


def test_with_the_server_gone_the_open_panel_says_in_words_it_cant_reach_it(
    tmp_path: Path, page: Page
) -> None:
    with running_site(tmp_path) as site:
        httpx.post(f"{site.url}{FACTS}", json={"content": "Plays the cello"})
        sheet = open_panel(page, site)
        expect(card(page, "Plays the cello")).to_be_visible()
        page.keyboard.press("Escape")
    page.locator("#memory-pill").click()  # the server has stopped
    expect(sheet.get_by_role("alert")).to_have_text(
        f"Can't reach mnemo at {site.url}: is mnemo serve running?"
    )
    expect(page.locator("body")).not_to_contain_text("Failed to fetch")
