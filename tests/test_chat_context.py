"""chat_context in process: a chat prompt's facts, conversation and app notes, the welcome,
the budgets, compaction, and memory that overflows or fails open."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from actors.context import ChatContext, chat_context
from actors.errors import ArchiveUnavailable
from memory import formats
from memory.recall import format_recalled
from memory.tokens import estimate_tokens
from schemas.llm import PromptMessage
from tests.context_world import _add, _fact, _message, _note, _World, _world

pytestmark = pytest.mark.anyio

# -- chat_context --------------------------------------------------------------------------


async def _chat(w: _World, query: str, system: int = 20, **kw: Any) -> ChatContext:
    kw = {"scope": None, "topic": None, "history": ()} | kw
    return await chat_context(w.builder, "u1", query, system_tokens=system, **kw)


async def test_a_chat_gets_facts_then_the_recalled_conversation_and_the_app_notes() -> None:
    w = _world(retrieval_limit=2)
    _add(
        w,
        *(_fact(n, f"User cooks curry {n}") for n in range(1, 4)),
        _fact(4, "User is Ann", "identity"),
    )
    w.store.messages = [_message(1, "curry again", scope="app"), _message(2, "curry today")]
    note = _note(w, "note_1", "app", "Talked curry")
    history = [PromptMessage("user", "curry today")]
    chat = await _chat(w, "curry", scope="app", topic="spices", history=history)
    facts = [
        x.fact
        for x in await w.builder.recall_facts("u1", "curry", scope="app", limit=2, topic="spices")
    ]
    budget = formats.about_user_budget(8192, 20 + estimate_tokens("curry today"), 1024)
    about = formats.about_user(facts, w.builder.settings.categories, budget)
    recalled = format_recalled([w.store.messages[0]], budget)
    notes = formats.app_memories("app", [note])
    assert chat.memory_text == "\n\n".join([about.text, notes.text, recalled.text])
    assert (chat.memory_tokens, chat.notes) == (about.tokens + notes.tokens + recalled.tokens, 1)
    assert (chat.history, chat.compaction_stage) == (history, 0)
    assert w.keeper.touched[-1] == ("u1", about.memory_ids)
    assert len(about.memory_ids) == 2
    assert (w.facts.calls[0]["text"], w.facts.calls[0]["scope"]) == ("curry spices", "app")
    assert w.store.searches[0][3] == "app"


async def test_a_chat_without_a_scope_reads_no_notes_and_drops_impersonal_identity() -> None:
    w = _world()
    _add(w, _fact(1, "User is Ann from Lyon", "identity"), _fact(2, "User bakes Lyon bread"))
    _note(w, "note_1", "global", "Lyon")
    chat = await _chat(w, "Lyon bread")
    personal = await _chat(w, "my Lyon")
    assert "Lyon bread" in chat.memory_text
    assert "Ann" not in chat.memory_text
    assert chat.notes == 0
    assert "memories for app" not in chat.memory_text
    assert "Ann" in personal.memory_text


async def test_a_new_user_is_welcomed_and_a_known_one_with_nothing_recalled_is_not() -> None:
    w = _world()
    chat = await _chat(w, "hello")
    assert chat.memory_text == w.builder.settings.welcome_prompt
    assert chat.memory_tokens == estimate_tokens(chat.memory_text)
    _add(w, _fact(1, "User once said hi", confidence=0.01))
    assert (await _chat(w, "hello")).memory_text == ""


async def test_a_chat_whose_fact_search_fails_still_gets_the_conversation_and_no_welcome(
    caplog: pytest.LogCaptureFixture,
) -> None:
    w = _world()
    w.store.messages = [_message(1, "we spoke of kites")]
    w.facts.error = ArchiveUnavailable("disk gone (fake)")
    with caplog.at_level(logging.WARNING, "mnemo.context"):
        chat = await _chat(w, "kites")
    assert caplog.messages == ["no facts for chat of user u1: disk gone (fake)"]
    assert chat.memory_text == format_recalled(w.store.messages, 500).text
    assert w.store.searches[0][1] is w.facts.calls[0]["vector"]  # embedded once for both


def _rivers() -> _World:
    w = _world(chat_context_tokens=1300)
    rivers = (
        _fact(n, f"User knows a fact about rivers number {n}", importance=9 - n)
        for n in range(1, 9)
    )
    _add(w, *rivers)
    w.store.messages = [_message(1, "rivers " * 10)]
    return w


async def test_rendered_memory_that_overflows_the_context_loses_the_conversation_first() -> None:
    w = _rivers()
    roomy = await _chat(w, "rivers", system=1205)  # room: 95 tokens, all of it used
    assert estimate_tokens("\n\n" + roomy.memory_text) == 95
    assert "past conversation" in roomy.memory_text
    chat = await _chat(w, "rivers", system=1210)  # room: 90 tokens
    facts = [x.fact for x in await w.builder.recall_facts("u1", "rivers", scope=None, limit=5)]
    about = formats.about_user(facts, w.builder.settings.categories, 150)
    assert (chat.memory_text, chat.memory_tokens) == (about.text, about.tokens)
    assert chat.compaction_stage == 2
    assert w.keeper.touched[-1][1] == about.memory_ids


async def test_rendered_memory_that_still_overflows_loses_its_worst_facts() -> None:
    w = _rivers()
    history = [PromptMessage("user", "w" * 400)]  # 100 tokens
    chat = await _chat(w, "rivers", system=1150, history=history)  # room: 50 tokens
    facts = [x.fact for x in await w.builder.recall_facts("u1", "rivers", scope=None, limit=5)]
    shown = formats.about_user(facts[:3], w.builder.settings.categories, 150)
    one_more = formats.about_user(facts[:4], w.builder.settings.categories, 150)
    assert (chat.memory_text, chat.memory_tokens) == (shown.text, shown.tokens)
    assert estimate_tokens("\n\n" + shown.text) <= 50 < estimate_tokens("\n\n" + one_more.text)
    assert w.keeper.touched[-1] == ("u1", shown.memory_ids)


async def test_the_about_user_budget_is_a_quarter_of_what_the_prompt_and_reply_leave() -> None:
    w = _world(chat_context_tokens=2000)
    history = [PromptMessage("user", "h" * 800)]  # 200 tokens: (2000 - 20 - 200 - 1024) // 4
    cats = w.builder.settings.categories
    first = next(  # a fact whose block is exactly the budget
        f
        for n in range(400, 800)
        if formats.about_user([f := _fact(1, "x" * n, importance=10.0)], cats, 999).tokens == 189
    )
    _add(w, first, _fact(2, "User hums", importance=1.0))
    chat = await _chat(w, "zzz", history=history)
    assert chat.memory_text == formats.about_user([first], cats, 189).text


async def test_compaction_counts_the_optional_blocks_and_uses_the_configured_threshold() -> None:
    w = _world(chat_context_tokens=2000)
    _add(w, _fact(1, "User cooks curry"))
    w.store.messages = [_message(1, "curry again")]
    note = _note(w, "note_1", "app", "Curry")
    extras = (
        formats.app_memories("app", [note]).tokens + format_recalled(w.store.messages, 150).tokens
    )
    system = 1600 - extras - estimate_tokens("User cooks curry")  # at 80 %: compacted
    assert (await _chat(w, "curry", scope="app", system=system)).compaction_stage == 2
    assert (await _chat(w, "curry", scope="app", system=system - 1)).compaction_stage == 0
    w = _world(compaction_threshold=0.5)
    history = [PromptMessage("user" if n % 2 else "assistant", "w" * 2000) for n in range(1, 11)]
    chat = await _chat(w, "hello", history=history)  # 5000 tokens: over 50 % of 8192
    assert (chat.compaction_stage, len(chat.history)) == (1, 8)


async def test_when_compaction_leaves_out_the_optional_blocks_the_prompt_has_none() -> None:
    w = _world(chat_context_tokens=1300)
    _add(w, *(_fact(n, f"User knows rivers {n} " + "r" * 380) for n in range(1, 6)))
    w.store.messages = [_message(1, "rivers again")]
    _note(w, "note_1", "app", "Rivers")
    facts = w.facts.facts.values()
    system = 1300 - sum(estimate_tokens(s.fact.content) for s in facts)  # no room for extras
    chat = await _chat(w, "rivers", scope="app", system=system)
    assert chat.compaction_stage == 3
    assert chat.memory_text.startswith(formats.ABOUT_USER_HEADING)
    assert "past conversation" not in chat.memory_text
    assert "memories for app" not in chat.memory_text
    assert chat.notes == 0
