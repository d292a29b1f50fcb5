"""A ``context`` reply whose budget is too small for what matched says so: ``budget_needed``
is the budget that shows the smallest part, and asking with it shows that part."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory.formats import Block, about_user, memory_context, user_context
from memory.recall import format_recalled
from memory.tokens import estimate_tokens
from schemas.records import ArchivedMessage, Fact
from schemas.settings import Settings
from testing.fake_ollama import FakeOllama
from tests.format_facts import fact
from tests.harness import Client, make_app, serve, settings_for

pytestmark = pytest.mark.anyio

NOW = datetime(2024, 6, 2, 12, tzinfo=UTC)


def _fact(content: str) -> Fact:
    return fact("fact_1", content)


def _message(text: str) -> ArchivedMessage:
    return ArchivedMessage(
        id="msg_1",
        user_id="u",
        session_id="s",
        scope="global",
        turn=1,
        role="user",
        speaker="user",
        text=text,
        at=NOW,
    )


def test_every_budgeted_format_names_the_budget_its_first_line_needs_and_fits_in_it() -> None:
    fact = _fact("User likes green tea in the morning")
    categories = Settings().categories
    blocks: dict[str, Callable[[int], Block]] = {
        "about-user": lambda budget: about_user([fact], categories, budget),
        "user-context": lambda budget: user_context(None, [fact], budget),
        "memory-context": lambda budget: memory_context([fact], budget),
    }
    for name, render in blocks.items():
        small = render(5)
        assert small.memory_ids == [], name
        assert small.needed > 5, name
        enough = render(small.needed)
        assert (enough.memory_ids, enough.needed) == (["fact_1"], 0), name
        assert render(small.needed - 1).memory_ids == [], name
    recalled = format_recalled([_message("We landed in Porto at noon")], 5)
    assert (recalled.text, recalled.needed > 5) == ("", True)
    assert format_recalled([_message("We landed in Porto at noon")], recalled.needed).memory_ids
    assert estimate_tokens(user_context(None, [fact], 5).text) <= 5


def test_a_block_with_nothing_to_show_needs_no_budget() -> None:
    assert about_user([], Settings().categories, 5).needed == 0
    assert user_context(None, [], 5).needed == 0
    assert memory_context([], 1).needed == 0
    assert format_recalled([], 5).needed == 0
    assert about_user([_fact("User likes tea")], Settings().categories, 500).needed == 0


@pytest.fixture
async def server(tmp_path: Path, fake: FakeOllama) -> AsyncIterator[str]:
    async with serve(make_app(settings_for(tmp_path, fake.url))) as address:
        yield address


@pytest.mark.parametrize("format", ["about-user", "user-context", "memory-context", "conversation"])
async def test_a_context_request_over_a_too_small_budget_says_which_budget_would_do(
    server: str, format: str
) -> None:
    async with Client.connect(server, "s1") as client:
        await client.until("ready")
        await client.send(type="remember", id="r", content="User likes green tea", pinned=True)
        await client.until("memory")
        await client.send(type="turn", id="t", user="I drink green tea daily", assistant="Nice")
        await client.until("ack")
        # What the turn teaches arrives as a memory frame: asked before it, the smallest
        # part could change between the two requests.
        await client.until("memory")
        ask = {"type": "context", "query": "green tea", "format": format}
        await client.send(**ask, id="small", budget=10)
        small, _ = await client.until("context")
        await client.send(**ask, id="enough", budget=small["budget_needed"])
        enough, _ = await client.until("context")
        await client.send(**ask, id="roomy", budget=2000)
        roomy, _ = await client.until("context")
    assert small["memory_ids"] == []
    assert small["budget_needed"] > 10
    assert enough["memory_ids"]  # the smallest part: for a conversation, its shortest line
    assert enough["text"]
    assert "tea" in roomy["text"]
    assert "budget_needed" not in enough
    assert "budget_needed" not in roomy
