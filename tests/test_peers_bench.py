"""``bench.peers``' pieces, without mem0: a real ``mnemo serve`` (hash embedder) and the
bench's worker loop over a stand-in for mem0's ``Memory`` (``tests/fake_peer.py``)."""

from __future__ import annotations

import io
import json
import sys
from typing import Any

import pytest

from bench.peers import mnemo_env, pick, run
from bench.peers_mem0 import serve
from tests.fake_peer import FakeMemory


def _record(question_id: str) -> dict[str, Any]:
    """Two sessions of a user; the answer is the user's first turn of the second."""
    chatter = [
        {"role": "user", "content": "Can you suggest a recipe for lentil soup?"},
        {"role": "assistant", "content": "Sure: lentils, onions, cumin and stock."},
        {"role": "user", "content": "How long should it simmer on the stove?"},
        {"role": "assistant", "content": "About thirty minutes, until the lentils are soft."},
    ]
    answer = [
        {
            "role": "user",
            "content": "My sister Beatrice moved to Lisbon last spring.",
            "has_answer": True,
        },
        {"role": "assistant", "content": "Lovely, Lisbon is a beautiful city."},
        {"role": "user", "content": "Any tips for a weekend of hiking in the Alps?"},
    ]
    return {
        "question_id": question_id,
        "question_type": "single-session-user",
        "question": "Which city did my sister Beatrice move to?",
        "question_date": "2023/06/01 (Thu) 10:00",
        "haystack_session_ids": ["soup", "family"],
        "haystack_dates": ["2023/05/01 (Mon) 09:00", "2023/05/20 (Sat) 02:21"],
        "haystack_sessions": [chatter, answer],
        "answer_session_ids": ["family"],
    }


def test_the_worker_stores_each_message_with_its_id_and_answers_searches_with_ids_and_roles() -> (
    None
):
    requests = io.StringIO(
        json.dumps(
            {
                "op": "add",
                "user": "u0",
                "turns": [
                    {"id": "s:0", "role": "user", "text": "I keep bees on the roof"},
                    {"id": "s:1", "role": "assistant", "text": "How many hives?"},
                ],
            }
        )
        + "\n"
        + json.dumps(
            {"op": "add", "user": "u1", "turns": [{"id": "t:0", "role": "user", "text": "bees"}]}
        )
        + "\n"
        + json.dumps({"op": "search", "user": "u0", "query": "bees on the roof", "limit": 5})
        + "\n"
    )
    answers = io.StringIO()
    serve(FakeMemory(), {"about": 1}, requests, answers)
    ready, added, other, found = (json.loads(line) for line in answers.getvalue().splitlines())
    assert ready == {"ready": {"about": 1}}
    assert (added["added"], other["added"]) == (2, 1)
    assert added["seconds"] >= 0.0
    assert found["hits"][0] == {"id": "s:0", "role": "user"}
    assert {hit["id"] for hit in found["hits"]} == {"s:0", "s:1"}  # never another user's
    assert found["ms"] >= 0.0


def test_the_worker_refuses_a_request_it_does_not_know() -> None:
    requests = io.StringIO(json.dumps({"op": "forget", "user": "u0"}) + "\n")
    with pytest.raises(ValueError, match="forget"):
        serve(FakeMemory(), {}, requests, io.StringIO())


def test_the_users_are_every_tenth_record_of_the_dev_split() -> None:
    records = [{"question_id": str(i)} for i in range(100)]
    assert [r["question_id"] for r in pick(records, 3)] == ["0", "10", "20"]


def test_a_run_ingests_searches_and_scores_both_sides_on_the_same_messages() -> None:
    records = [_record("q0"), _record("q1")]
    result = run(
        records,
        ["What soup did I make?", "Where are the Alps?"],
        peer_command=[sys.executable, "-m", "tests.fake_peer"],
        mnemo=mnemo_env(len(records), "hash"),
        warm=4,
    )
    assert result["messages"] == 14
    assert result["users"] == ["q0", "q1"]
    for side in ("mnemo", "mem0"):
        figures = result[side]
        assert figures["ingest"]["messages"] == 14
        assert figures["ingest"]["messages_per_s"] > 0
        assert figures["ingest"]["cpu_ms_per_message"] >= 0
        assert (figures["first_search_ms"]["n"], figures["warm_search_ms"]["n"]) == (2, 4)
        # The evidence turn is found first, by its id, on both sides: hits map back to
        # the benchmark's turns and are scored as the benchmark does.
        assert [turns[0] for turns in figures["ranked_user_turns"]] == ["family:0", "family:0"]
        assert figures["recall"]["turn_recall_all@5"] == 1.0
        assert figures["recall"]["questions_turn_level"] == 2
        assert figures["memory_mib"]["after_search"]["rss_mib"] > 0
    # The server's import and LanceDB writes take CPU clock ticks (the stand-in's few
    # dot products may not).
    assert result["mnemo"]["ingest"]["cpu_ms_per_message"] > 0
    assert set(result["ratios_mem0_to_mnemo"]) >= {"ingest messages/s", "warm search p50 ms"}
