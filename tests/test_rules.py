"""Seed 002's rules, pure: the maturity ladder, the feedback formulas, decay, inversion, recall."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import msgspec
import pytest

from memory import rules
from memory.formats import RuleLine, memory_context
from memory.rules import StoredRule, mark_harmful, mark_helpful, new_rule
from schemas.records import Fact, Rule
from testing.records import a_fact
from tests.actor_world import world

pytestmark = pytest.mark.anyio

T0 = datetime(2026, 1, 1, tzinfo=UTC)
DAY = timedelta(days=1)


def rule(**changes: object) -> Rule:
    made = new_rule("rule_00000001", "u1", "Answer in British English", T0)
    return msgspec.structs.replace(made, **changes)


def helpful(times: int, start: Rule | None = None, at: datetime = T0) -> Rule:
    marked = start or rule()
    for _ in range(times):
        marked = mark_helpful(marked, at)
    return marked


def test_a_stored_rule_is_a_candidate_at_half_confidence_decaying_by_a_hundredth_a_day() -> None:
    made = new_rule("rule_0000abcd", "u1", "Be brief", T0, scope="coding", tags=["style"])
    assert (made.maturity, made.confidence, made.decay_rate) == ("candidate", 0.5, 0.01)
    assert (made.effectiveness_score, made.applied_count) == (0.0, 0)
    assert (made.success_count, made.harmful_count, made.reference_count) == (0, 0, 0)
    assert (made.scope, made.tags, made.last_confirmed_at) == ("coding", ["style"], T0)


def test_helpful_marks_count_successes_over_applications_and_stamp_the_time() -> None:
    later = T0 + DAY
    marked = mark_helpful(mark_harmful(rule(), T0), later)
    assert (marked.applied_count, marked.success_count, marked.harmful_count) == (2, 1, 1)
    assert marked.effectiveness_score == pytest.approx(0.5)
    assert marked.last_applied_at == later


def test_a_harm_weighs_four_successes_in_the_harmful_formula() -> None:
    marked = mark_harmful(helpful(6), T0, "too terse")
    assert marked.effectiveness_score == pytest.approx(6 / (6 + 4 * 1 + 0.01))
    assert (marked.applied_count, marked.harmful_count) == (7, 1)
    assert marked.meta["harmful_reasons"] == ["too terse"]
    again = mark_harmful(marked, T0, "wrong again")
    assert again.meta["harmful_reasons"] == ["too terse", "wrong again"]
    assert "harmful_reasons" not in mark_harmful(rule(), T0).meta


def test_five_successes_at_sixty_percent_establish_a_candidate() -> None:
    assert helpful(4).maturity == "candidate"
    assert helpful(5).maturity == "established"
    # 5 successes of 9 applications: below 0.6, still a candidate.
    below = rule(applied_count=8, success_count=4)
    assert mark_helpful(below, T0).effectiveness_score == pytest.approx(5 / 9)
    assert mark_helpful(below, T0).maturity == "candidate"


def test_proven_needs_fifteen_successes_eighty_percent_and_thirty_days() -> None:
    young = helpful(15, at=T0 + 29 * DAY)
    assert young.maturity == "established"
    old = helpful(1, young, at=T0 + 30 * DAY)
    assert old.maturity == "proven"
    # Fourteen successes are not enough however old the rule.
    assert helpful(14, at=T0 + 90 * DAY).maturity == "established"


def test_a_harmful_mark_demotes_one_step_when_effectiveness_falls_below_the_rungs_bar() -> None:
    established = helpful(5)
    demoted = mark_harmful(established, T0)
    assert demoted.effectiveness_score == pytest.approx(5 / 9.01)
    assert demoted.maturity == "candidate"
    proven = helpful(30, at=T0 + 40 * DAY)
    assert proven.maturity == "proven"
    once = mark_harmful(proven, T0 + 40 * DAY)  # 30 / 34.01 = 0.88: stays
    assert once.maturity == "proven"
    twice = mark_harmful(once, T0 + 40 * DAY)  # 30 / 38.01 = 0.79: one step down
    assert (twice.effectiveness_score < 0.8, twice.maturity) == (True, "established")


def test_three_harms_below_thirty_percent_flag_the_rule_for_inversion() -> None:
    marked = rule()
    for _ in range(2):
        marked = mark_harmful(marked, T0)
    assert "needs_inversion" not in marked.meta
    marked = mark_harmful(marked, T0)
    assert marked.meta["needs_inversion"] is True
    # Three harms against seven successes stay above 0.3: no flag.
    steady = helpful(7)
    for _ in range(3):
        steady = mark_harmful(steady, T0)
    assert steady.effectiveness_score == pytest.approx(7 / 19.01)
    assert "needs_inversion" not in steady.meta


def test_inversion_rewrites_the_content_with_the_reasons_and_keeps_the_original() -> None:
    marked = rule(content="Suggest tabs for indentation.")
    for reason in ("the team uses spaces", "linters fail"):
        marked = mark_harmful(marked, T0, reason)
    inverted = rules.invert(mark_harmful(marked, T0), T0 + DAY)
    assert inverted.content == (
        "ANTI-PATTERN: Do NOT Suggest tabs for indentation. This caused problems because: "
        "the team uses spaces; linters fail"
    )
    assert inverted.maturity == "anti_pattern"
    assert inverted.meta["original_content"] == "Suggest tabs for indentation."
    assert "needs_inversion" not in inverted.meta
    assert inverted.updated_at == T0 + DAY


def test_the_sweep_inverts_flagged_rules_and_leaves_others_alone() -> None:
    flagged = rule(meta={"needs_inversion": True, "harmful_reasons": ["x"]})
    swept = rules.sweep_rule(flagged, T0 + DAY)
    assert swept is not None
    assert swept.maturity == "anti_pattern"
    assert rules.sweep_rule(rule(), T0 + DAY) is None


def test_decay_fades_a_rule_below_a_fifth_and_forgets_it_below_a_twentieth() -> None:
    # 0.5 * exp(-0.01 * d): 0.2 at d = 91.6, 0.05 at d = 230.3.
    assert rules.sweep_rule(rule(), T0 + 91 * DAY) is None
    fading = rules.sweep_rule(rule(), T0 + 92 * DAY)
    assert fading is not None
    assert fading.meta["status"] == "fading"
    assert not rules.is_forgotten(fading)
    assert rules.sweep_rule(fading, T0 + 100 * DAY) is None  # already fading
    gone = rules.sweep_rule(fading, T0 + 231 * DAY)
    assert gone is not None
    assert rules.is_forgotten(gone)
    assert rules.sweep_rule(gone, T0 + 400 * DAY) is None  # forgotten: left alone
    recovered = rules.sweep_rule(rules.confirm(fading, T0 + 100 * DAY), T0 + 101 * DAY)
    assert recovered is None  # confirming cleared the mark already
    back = rules.sweep_rule(msgspec.structs.replace(fading, confidence=1.0), T0 + 92 * DAY)
    assert back is not None
    assert "status" not in back.meta


def test_a_permanent_rule_never_decays() -> None:
    assert rules.sweep_rule(rule(decay_rate=0.0), T0 + 3000 * DAY) is None
    assert rules.sweep_rule(rule(permanence="permanent"), T0 + 3000 * DAY) is None


def test_confirm_restarts_decay_and_forget_flags_without_deleting() -> None:
    confirmed = rules.confirm(rule(meta={"status": "fading"}), T0 + 5 * DAY)
    assert confirmed.last_confirmed_at == T0 + 5 * DAY
    assert "status" not in confirmed.meta
    forgotten = rules.forget(rule(), T0 + DAY)
    assert forgotten.meta == {"forgotten": True}
    assert forgotten.content == rule().content


def test_a_reference_counts_and_stamps_the_time() -> None:
    once = rules.referenced(rule(), T0 + DAY)
    twice = rules.referenced(once, T0 + 2 * DAY)
    assert (twice.reference_count, twice.last_referenced_at) == (2, T0 + 2 * DAY)


def unit(*values: float) -> list[float]:
    norm = math.sqrt(sum(v * v for v in values))
    return [v / norm for v in values]


def test_recall_ranks_by_composite_score_and_leaves_forgotten_rules_out() -> None:
    near = StoredRule(rule(id="rule_00000002", content="near"), unit(1, 0))
    far = StoredRule(rule(id="rule_00000003", content="far"), unit(0, 1))
    gone = StoredRule(rules.forget(rule(id="rule_00000004"), T0), unit(1, 0))
    found = rules.recall_rules([far, gone, near], unit(1, 0), T0, limit=5)
    assert [r.id for r in found] == ["rule_00000002", "rule_00000003"]
    # 0.4 * 1 + 0.3 * 0.5 + 0.2 * 0 + 0.1 * 0.5 for near; no relevance for far.
    assert rules.recall_rules([far, near], unit(1, 0), T0, limit=1)[0].id == "rule_00000002"


def test_recall_breaks_ties_by_newest_first_then_lowest_id() -> None:
    older = StoredRule(rule(id="rule_0000000a"), unit(1, 0))
    newer = StoredRule(rule(id="rule_0000000c", created_at=T0 + DAY), unit(1, 0))
    twin = StoredRule(rule(id="rule_0000000b", created_at=T0 + DAY), unit(1, 0))
    found = rules.recall_rules([older, newer, twin], None, T0 + DAY, limit=3)
    assert [r.id for r in found] == ["rule_0000000b", "rule_0000000c", "rule_0000000a"]


def fact(index: int) -> Fact:
    content = f"User fact number {index} about something or other"
    return a_fact(f"fact_{index:08x}", content=content)


def line(index: int) -> RuleLine:
    return RuleLine(f"rule_{index:08x}", f"Rule number {index}: be kind", "candidate", 0.0)


def test_the_rules_section_keeps_its_quota_of_the_budget_when_facts_would_fill_it() -> None:
    facts = [fact(i) for i in range(40)]
    block = memory_context(facts, 300, [line(1), line(2)], rules_share=0.3)
    assert "## Active Rules\n- Rule number 1: be kind (maturity: candidate, " in block.text
    assert "rule_00000002" in block.memory_ids
    assert len(block.text) <= 300 * 4
    without = memory_context(facts, 300, [line(1), line(2)], rules_share=0.0)
    assert "## Active Rules" not in without.text
    assert sum(i.startswith("fact_") for i in without.memory_ids) > sum(
        i.startswith("fact_") for i in block.memory_ids
    )


def test_the_rules_quota_is_only_what_their_lines_need() -> None:
    facts = [fact(i) for i in range(40)]
    alone = memory_context(facts, 300, [])
    with_one = memory_context(facts, 300, [line(1)], rules_share=0.9)
    kept = [i for i in with_one.memory_ids if i.startswith("fact_")]
    assert len(alone.memory_ids) - len(kept) <= 2  # one short rule takes one or two facts' room
    assert with_one.memory_ids[-1] == "rule_00000001"


async def test_the_scheduled_sweep_fades_forgets_and_inverts_stored_rules() -> None:
    async with world() as w:
        now = w.deps.clock.now()

        def aged(rule_id: str, days: float, **changes: object) -> StoredRule:
            made = new_rule(rule_id, "u1", rule_id, now - timedelta(days=days))
            return StoredRule(msgspec.structs.replace(made, **changes), unit(1, 0))

        await w.store.rules.put_rules(
            [
                aged("rule_00000001", 100),  # 0.5 * exp(-1.0) = 0.18: fading
                aged("rule_00000002", 240),  # 0.5 * exp(-2.4) = 0.045: forgotten
                aged("rule_00000003", 1, meta={"needs_inversion": True}),
                aged("rule_00000004", 10),  # 0.45: untouched
            ]
        )
        await w.store.rules.put_rules([aged("rule_00000005", 900, decay_rate=0.0)])
        assert await w.sweeper.sweep_once() == 3
        after = {s.rule.id: s.rule for s in await w.store.rules.rules_of("u1")}
    assert after["rule_00000001"].meta == {"status": "fading"}
    assert after["rule_00000002"].meta == {"forgotten": True}
    assert after["rule_00000003"].maturity == "anti_pattern"
    assert after["rule_00000004"].meta == {}
    assert after["rule_00000005"].meta == {}
