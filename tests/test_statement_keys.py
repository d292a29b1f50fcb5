"""A turn is found by its text and what its speaker says of themselves (``memory.keys``), one
vector."""

# ruff: noqa: RUF001

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import msgspec
import numpy as np
import pytest

from memory.hashing import HashEmbedder
from memory.keys import STATEMENT_WEIGHT, mixed, statement_text
from memory.recall import search_text
from memory.text import query_text
from schemas.records import ArchivedMessage, Role
from tests.fake_ollama import FakeOllama
from tests.harness import make_app, serve, settings_for
from tests.test_import_rest import http, jsonl, post

TEXT = (
    "Can you help me plan my week? I have a report due Friday and a marketing"
    " campaign. I attend yoga classes three times a week."
)
AT = "2024-03-12T18:00:00Z"


def message(role: Role = "user", text: str = TEXT) -> ArchivedMessage:
    return ArchivedMessage(
        id="m",
        user_id="ann",
        session_id="week",
        scope="global",
        turn=1,
        role=role,
        speaker="Ann" if role == "user" else "assistant",
        text=text,
        at=datetime(2024, 3, 12, 18, tzinfo=UTC),
    )


def test_a_users_message_is_keyed_by_what_they_say_of_themselves_and_a_reply_by_none() -> None:
    assert statement_text(message()) == (
        "Ann: I have a report due Friday and a marketing campaign."
        " I attend yoga classes three times a week."
    )
    assert statement_text(message("assistant", "I think you attend yoga often, Ann.")) == ""
    other = msgspec.structs.replace(
        message(text="Guess what? I moved to Porto with my family in May!"),
        role="other",
        speaker="Caroline",
    )
    assert statement_text(other) == "Caroline: I moved to Porto with my family in May!"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Questions and requests are no statements, wherever the person is in them.
        ("Can you help me plan my week and my weekend too?", ""),
        ("Could you suggest a gift for my sister, who turns thirty", ""),
        (
            "I'm looking for a good tent. My old one leaks whenever it rains in the mountains.",
            "My old one leaks whenever it rains in the mountains.",
        ),
        (
            "I am wondering which is better; I prefer the light ones for long hikes.",
            "I prefer the light ones for long hikes.",
        ),
        ("Do you know my name and my address by now", ""),
        (
            "Please remind me tomorrow morning. We moved house last weekend, to Leeds.",
            "We moved house last weekend, to Leeds.",
        ),
        (
            "What is my schedule like next week? Mine is busy with two trips to Berlin.",
            "Mine is busy with two trips to Berlin.",
        ),
        ("I would like you to recommend a book about sailing", ""),
        # No one in the first person: nothing said of oneself.
        ("The weather is nice today. It rained a lot yesterday in the city.", ""),
        # Every sentence on its own; a line break ends one too.
        (
            "Thanks!\nI got a puppy last week from a shelter.\nHe is called Rex.",
            "I got a puppy last week from a shelter.",
        ),
        # Too short to say anything on its own.
        ("Yes, I did!", ""),
        ("I finished it myself.", ""),
        # Chinese: 我, and the same questions and requests.
        ("我最近搬到了上海。你能推荐一些餐厅吗？我喜欢吃辣。", "我最近搬到了上海。 我喜欢吃辣。"),
        ("请帮我订一张去北京的火车票，我明天早上要出发。", ""),
        ("我下个月该买哪个手机比较好呢", ""),
        ("我有没有说过我的生日是几月几号", ""),
    ],
)
def test_the_statements_are_the_first_person_sentences_that_ask_nothing(
    text: str, expected: str
) -> None:
    assert statement_text(message(text=text)) == (f"Ann: {expected}" if expected else "")


def test_the_statements_vector_is_added_at_its_weight_and_the_sum_is_unit_length() -> None:
    text, statements = [1.0, 0.0], [0.0, 1.0]
    [keyed, plain] = mixed([text, text], [statements, None])
    expected = np.array([1.0, STATEMENT_WEIGHT]) / np.hypot(1.0, STATEMENT_WEIGHT)
    assert np.allclose(keyed, expected)
    assert plain == text
    assert mixed([[0.0, 0.0]], [[0.0, 0.0]]) == [[0.0, 0.0]]


@pytest.mark.anyio
async def test_an_imported_turn_is_found_by_its_text_and_its_statements_in_one_vector(
    tmp_path: Path, fake: FakeOllama
) -> None:
    settings = settings_for(tmp_path, fake.url, api_keys={"ka": "ann"})
    line = {"kind": "turn", "id": "t1", "session_id": "week", "speaker": "Ann"}
    async with serve(make_app(settings)) as address:
        reply = await post(address, jsonl([line | {"role": "user", "text": TEXT, "at": AT}]))
        assert reply["errors"] == []
        query = "How often do I attend yoga classes?"
        params = {"q": query, "kind": "turns", "mode": "semantic"}
        async with http(address) as client:
            response = await client.get("/memory/search", params=params)
    [hit] = response.json()["hits"]
    embedder = HashEmbedder()
    [asked, plain, statements] = await embedder.embed(
        [query_text(query), search_text(message()), statement_text(message())]
    )
    [keyed] = mixed([plain], [statements])
    # The cosine the server found is the keyed vector's, not the text's alone.
    assert hit["score"] == pytest.approx(float(np.dot(asked, keyed)), abs=1e-5)
    assert abs(hit["score"] - float(np.dot(asked, plain))) > 0.01
