"""How ``bench.longmemeval`` scores a ranking: the benchmark's rules, and the knowledge-update
rates by session and by turn."""

from __future__ import annotations

from typing import Any

from bench.longmemeval import ku_rates, measures, score_question, select, sessions_of


def _record(question_id: str = "q1", qtype: str = "knowledge-update") -> dict[str, Any]:
    """Two sessions of two turns each; the user's first turn of each is evidence."""

    def turns(said: str) -> list[dict[str, Any]]:
        return [
            {"role": "user", "content": said, "has_answer": True},
            {"role": "assistant", "content": "Noted."},
        ]

    return {
        "question_id": question_id,
        "question_type": qtype,
        "haystack_session_ids": ["old", "new"],
        "haystack_sessions": [turns("I have three bikes."), turns("I have four bikes now.")],
        "answer_session_ids": ["old", "new"],
    }


def test_recall_all_counts_a_question_only_when_every_evidence_item_is_in_the_top_k() -> None:
    ranked = [f"t{i}" for i in range(12)]
    both_in_5 = measures(ranked, {"t0", "t4"}, corpus=12)
    one_at_7 = measures(ranked, {"t0", "t7"}, corpus=12)
    assert (both_in_5["recall_all@5"], both_in_5["recall_all@10"]) == (1.0, 1.0)
    assert (one_at_7["recall_all@5"], one_at_7["recall_all@10"]) == (0.0, 1.0)
    assert measures(ranked, {"t0"}, corpus=12)["ndcg_any@5"] == 1.0
    assert 0.0 < measures(ranked, {"t3"}, corpus=12)["ndcg_any@5"] < 1.0


def test_a_session_ranks_where_its_best_ranked_turn_does() -> None:
    assert sessions_of(["b:4", "a:0", "b:0", "c:2", "a:6"]) == ["b", "a", "c"]


def test_only_user_turns_with_the_answer_are_turn_evidence() -> None:
    record = _record()
    # The assistant's turns are hits a context would hold, not evidence.
    served = ["new:1", "new:0", "old:0"]
    scored = score_question(record, ["new:0", "old:0"], served)
    assert scored["turn"]["recall_all@5"] == 1.0
    assert scored["session"]["recall_all@5"] == 1.0
    assert score_question(record, ["new:0"], ["new:0"])["turn"]["recall_all@5"] == 0.0


def test_knowledge_update_rates_compare_the_current_and_stale_statements_by_session_and_turn() -> (
    None
):
    label = {
        "current_session_id": "new",
        "current_turn_idx": [2],
        "stale_session_id": "old",
        "stale_turn_idx": [0],
    }
    # The newer conversation ranks first by another of its turns, while the stale
    # statement ranks above the current one: right by session, wrong by turn.
    turns = ["new:0", "old:0", "x:0", "y:0", "z:0", "new:2"]
    rates = ku_rates(sessions_of(turns), turns, label)
    assert rates == {
        "current_above_stale": 1.0,
        "current_in_top5": 1.0,
        "current_turn_above_stale": 0.0,
        "current_turn_in_top5": 0.0,
    }
    current_first = ["new:2", "old:0"]
    assert ku_rates(sessions_of(current_first), current_first, label) == dict.fromkeys(rates, 1.0)
    # Neither statement found: neither is above the other.
    assert ku_rates([], [], label)["current_turn_above_stale"] == 0.0


def test_select_skips_abstention_questions_and_takes_at_most_the_count_asked_per_type() -> None:
    records = [
        _record("a"),
        _record("b_abs"),
        _record("c"),
        _record("d", "multi-session"),
        _record("e", "multi-session"),
    ]
    assert [r["question_id"] for r in select(records, "", None)] == ["a", "c", "d", "e"]
    assert [r["question_id"] for r in select(records, "", 1)] == ["a", "d"]
    chosen = select(records, "multi-session=1", None)
    assert [r["question_id"] for r in chosen] == ["d"]
