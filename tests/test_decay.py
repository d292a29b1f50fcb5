"""How a stored fact ages: decay (seed 002), sweeps and expiry, eviction score, access, pins."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import pytest

from memory.decay import (
    decay_rate_for,
    effective_confidence,
    eviction_score,
    pin,
    sweep_fact,
    touch_accessed,
)
from memory.facts import Changes, sweep
from schemas.records import Fact
from schemas.taxonomy import DEFAULT_CATEGORIES, CategorySpec

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
DAY = timedelta(days=1)


def make_fact(fact_id: str = "fact_00000001", **fields: Any) -> Fact:
    """An active, standard fact seen and confirmed just now (so its effective confidence is its
    confidence), in a category without expiry."""
    base: dict[str, Any] = {
        "user_id": "u1",
        "content": "Knows Rust",
        "category": "knowledge",
        "confidence": 1.0,
        "created_at": NOW - 400 * DAY,
        "updated_at": NOW - 400 * DAY,
        "last_seen": NOW,
        "last_confirmed_at": NOW,
    }
    base.update(fields)
    return Fact(id=fact_id, **base)


# -- permanence and decay ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("permanence", "rate"),
    [
        pytest.param("permanent", 0.0, id="permanent"),
        pytest.param("stable", 0.002, id="stable"),
        pytest.param("standard", 0.008, id="standard"),
        pytest.param("volatile", 0.03, id="volatile"),
        pytest.param("ephemeral", 0.1, id="ephemeral"),
    ],
)
def test_permanence_maps_to_its_decay_rate(permanence: str, rate: float) -> None:
    assert decay_rate_for(permanence) == rate


@pytest.mark.parametrize("permanence", ["", "Standard", "forever"])
def test_unknown_permanence_raises_value_error_listing_the_levels(permanence: str) -> None:
    with pytest.raises(ValueError, match=r"unknown permanence") as caught:
        decay_rate_for(permanence)
    assert str(caught.value).endswith(
        "valid levels: permanent, stable, standard, volatile, ephemeral"
    )


@pytest.mark.parametrize(
    ("permanence", "expected"),
    [
        pytest.param("permanent", 1.0, id="permanent-1.0"),
        pytest.param("stable", math.exp(-0.2), id="stable-exp(-0.2)"),
        pytest.param("standard", math.exp(-0.8), id="standard-exp(-0.8)"),
        pytest.param("volatile", math.exp(-3.0), id="volatile-exp(-3)"),
        pytest.param("ephemeral", math.exp(-10.0), id="ephemeral-exp(-10)"),
    ],
)
def test_effective_confidence_after_100_days_from_one(permanence: str, expected: float) -> None:
    fact = make_fact(
        permanence=permanence,
        decay_rate=decay_rate_for(permanence),
        last_confirmed_at=NOW - 100 * DAY,
    )
    assert effective_confidence(fact, NOW) == pytest.approx(expected, rel=1e-12)


def test_effective_confidence_scales_the_base_confidence() -> None:
    fact = make_fact(confidence=0.5, last_confirmed_at=NOW - 12 * timedelta(hours=1))
    assert effective_confidence(fact, NOW) == pytest.approx(0.5 * math.exp(-0.004))


def test_permanent_fact_keeps_its_confidence_unchanged() -> None:
    fact = make_fact(confidence=0.37, decay_rate=0.0, last_confirmed_at=NOW - 3650 * DAY)
    assert effective_confidence(fact, NOW) == 0.37


@pytest.mark.parametrize("rate", [0.0, 0.008], ids=["permanent", "standard"])
def test_never_confirmed_fact_has_zero_effective_confidence(rate: float) -> None:
    fact = make_fact(decay_rate=rate, last_confirmed_at=None)
    assert effective_confidence(fact, NOW) == 0.0


def test_confirmation_in_the_future_does_not_raise_confidence() -> None:
    fact = make_fact(confidence=0.6, last_confirmed_at=NOW + 5 * DAY)
    assert effective_confidence(fact, NOW) == 0.6


# -- the decay sweep ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("confidence", "status", "validity", "new_status"),
    [
        pytest.param(0.01, None, "expired", None, id="0.01-expires"),
        pytest.param(0.049, None, "expired", None, id="0.049-expires"),
        pytest.param(0.049, "fading", "expired", "fading", id="fading-0.049-expires"),
        pytest.param(0.05, None, "active", "fading", id="0.05-fades"),
        pytest.param(0.199, None, "active", "fading", id="0.199-fades"),
        pytest.param(0.2, "fading", "active", None, id="fading-back-at-0.2-clears"),
        pytest.param(0.9, "fading", "active", None, id="fading-back-at-0.9-clears"),
    ],
)
def test_sweep_transitions_at_the_0_05_and_0_2_boundaries(
    confidence: float, status: str | None, validity: str, new_status: str | None
) -> None:
    fact = make_fact(confidence=confidence, status=status)
    changes = sweep([fact], categories=DEFAULT_CATEGORIES, now=NOW)
    assert changes == Changes(
        updated=[
            msgspec.structs.replace(fact, validity=validity, status=new_status, updated_at=NOW)
        ]
    )


@pytest.mark.parametrize(
    ("confidence", "status"),
    [
        pytest.param(0.2, None, id="0.2-stays-active"),
        pytest.param(1.0, None, id="1.0-stays-active"),
        pytest.param(0.1, "fading", id="still-fading"),
    ],
)
def test_sweep_leaves_unchanged_facts_out(confidence: float, status: str | None) -> None:
    fact = make_fact(confidence=confidence, status=status)
    assert sweep([fact], categories=DEFAULT_CATEGORIES, now=NOW) == Changes()


@pytest.mark.parametrize(
    ("days", "outcome"),
    [
        pytest.param(100, None, id="100-days-0.449-unchanged"),
        pytest.param(200, None, id="200-days-0.2019-unchanged"),
        pytest.param(202, ("active", "fading"), id="202-days-0.1987-fades"),
        pytest.param(374, ("active", "fading"), id="374-days-0.0502-fades"),
        pytest.param(375, ("expired", None), id="375-days-0.0498-expires"),
        pytest.param(400, ("expired", None), id="400-days-0.0408-expires"),
    ],
)
def test_sweep_decays_a_standard_fact_from_its_last_confirmation(
    days: int, outcome: tuple[str, str | None] | None
) -> None:
    fact = make_fact(last_seen=NOW - days * DAY, last_confirmed_at=NOW - days * DAY)
    changed = sweep_fact(fact, expiry_days=None, now=NOW)
    if outcome is None:
        assert changed is None
    else:
        assert changed is not None
        assert (changed.validity, changed.status, changed.updated_at) == (*outcome, NOW)


@pytest.mark.parametrize(
    ("days", "outcome"),
    [
        pytest.param(16, None, id="16-days-0.2019-unchanged"),
        pytest.param(17, ("active", "fading"), id="17-days-0.1827-fades"),
        pytest.param(29, ("active", "fading"), id="29-days-0.0550-fades"),
        pytest.param(30, ("expired", None), id="30-days-0.0498-expires"),
    ],
)
def test_sweep_decays_an_ephemeral_fact_in_weeks(
    days: int, outcome: tuple[str, str | None] | None
) -> None:
    fact = make_fact(
        permanence="ephemeral",
        decay_rate=0.1,
        last_seen=NOW - days * DAY,
        last_confirmed_at=NOW - days * DAY,
    )
    changed = sweep_fact(fact, expiry_days=None, now=NOW)
    if outcome is None:
        assert changed is None
    else:
        assert changed is not None
        assert (changed.validity, changed.status) == outcome


def test_never_confirmed_fact_expires_in_the_sweep() -> None:
    fact = make_fact(last_confirmed_at=None)
    [changed] = sweep([fact], categories=DEFAULT_CATEGORIES, now=NOW).updated
    assert changed.validity == "expired"


@pytest.mark.parametrize(
    "fields",
    [
        pytest.param({"permanence": "permanent", "decay_rate": 0.0}, id="permanent"),
        pytest.param({"decay_rate": 0.0}, id="zero-decay-rate"),
        pytest.param({"validity": "superseded"}, id="superseded"),
        pytest.param({"validity": "expired"}, id="already-expired"),
        pytest.param({"validity": "retracted"}, id="retracted"),
    ],
)
def test_sweep_skips_permanent_and_inactive_facts(fields: dict[str, Any]) -> None:
    fact = make_fact(confidence=0.01, category="project", last_seen=NOW - 400 * DAY, **fields)
    assert sweep([fact], categories=DEFAULT_CATEGORIES, now=NOW) == Changes()


def test_pinned_fact_fades_but_never_expires_by_decay() -> None:
    fact = make_fact(confidence=0.01, pinned=True)
    [changed] = sweep([fact], categories=DEFAULT_CATEGORIES, now=NOW).updated
    assert (changed.validity, changed.status) == ("active", "fading")


# -- category expiry ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("category", "days", "expired"),
    [
        pytest.param("project", 60, False, id="project-60-days-kept"),
        pytest.param("project", 61, True, id="project-61-days-expired"),
        pytest.param("context", 61, True, id="context-61-days-expired"),
        pytest.param("preference", 180, False, id="preference-180-days-kept"),
        pytest.param("preference", 181, True, id="preference-181-days-expired"),
        pytest.param("identity", 365, False, id="identity-365-days-kept"),
        pytest.param("identity", 366, True, id="identity-366-days-expired"),
        pytest.param("knowledge", 5000, False, id="knowledge-never"),
        pytest.param("correction", 5000, False, id="correction-never"),
        pytest.param("retired-category", 5000, False, id="unknown-category-never"),
    ],
)
def test_unseen_fact_expires_after_its_category_expiry(
    category: str, days: int, expired: bool
) -> None:
    # Confirmed just now: decay leaves it alone, only last_seen's age counts.
    fact = make_fact(category=category, last_seen=NOW - days * DAY)
    changes = sweep([fact], categories=DEFAULT_CATEGORIES, now=NOW)
    if expired:
        assert changes.updated == [
            msgspec.structs.replace(fact, validity="expired", updated_at=NOW)
        ]
    else:
        assert changes == Changes()


def test_pinned_fact_never_expires_by_category_age() -> None:
    fact = make_fact(category="project", pinned=True, last_seen=NOW - 400 * DAY)
    assert sweep([fact], categories=DEFAULT_CATEGORIES, now=NOW) == Changes()


def test_configured_expiry_days_are_used() -> None:
    short = [CategorySpec(name="knowledge", heading="K:", priority=1, expiry_days=7)]
    fact = make_fact(last_seen=NOW - 8 * DAY)
    [changed] = sweep([fact], categories=short, now=NOW).updated
    assert changed.validity == "expired"


def test_sweep_returns_only_changed_facts_in_order() -> None:
    facts = [
        make_fact("fact_00000001", confidence=0.9),
        make_fact("fact_00000002", confidence=0.1),
        make_fact("fact_00000003", category="project", last_seen=NOW - 90 * DAY),
        make_fact("fact_00000004", confidence=0.01),
    ]
    changes = sweep(facts, categories=DEFAULT_CATEGORIES, now=NOW)
    assert [(f.id, f.validity, f.status) for f in changes.updated] == [
        ("fact_00000002", "active", "fading"),
        ("fact_00000003", "expired", None),
        ("fact_00000004", "expired", None),
    ]
    assert (changes.added, changes.superseded, changes.removed) == ([], [], [])


# -- eviction score ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("days", "weight", "confidence", "score"),
    [
        pytest.param(10, 0.8, 0.5, 16.0, id="10-days-project-0.5"),
        pytest.param(100, 0.3, 0.5, 60.0, id="100-days-preference-0.5"),
        pytest.param(10, 0.5, 0.0, 500.0, id="zero-confidence-floored-at-0.01"),
        pytest.param(0, 0.8, 0.5, 0.0, id="seen-now"),
        pytest.param(-3, 0.8, 0.5, 0.0, id="seen-in-the-future"),
    ],
)
def test_eviction_score_is_age_times_weight_over_confidence(
    days: int, weight: float, confidence: float, score: float
) -> None:
    fact = make_fact(confidence=confidence, last_seen=NOW - days * DAY)
    assert eviction_score(fact, weight, NOW) == pytest.approx(score)


# -- access and pins ---------------------------------------------------------------------


def test_touch_accessed_counts_an_access_and_stamps_it() -> None:
    facts = [make_fact("fact_00000001"), make_fact("fact_00000002", access_count=4)]
    touched = touch_accessed(facts, NOW)
    assert [(f.id, f.access_count, f.last_accessed) for f in touched] == [
        ("fact_00000001", 1, NOW),
        ("fact_00000002", 5, NOW),
    ]
    assert [f.updated_at for f in touched] == [f.updated_at for f in facts]


@pytest.mark.parametrize(
    ("pinned_before", "pinned", "count"),
    [
        pytest.param(False, True, 0, id="pin-first"),
        pytest.param(False, True, 9, id="pin-tenth"),
        pytest.param(True, False, 10, id="unpin-at-cap"),
    ],
)
def test_pin_and_unpin_within_the_cap(pinned_before: bool, pinned: bool, count: int) -> None:
    fact = make_fact(pinned=pinned_before)
    changed = pin(fact, pinned, count, 10, now=NOW)
    assert changed == msgspec.structs.replace(fact, pinned=pinned, updated_at=NOW)


def test_pinning_past_the_cap_raises_value_error() -> None:
    with pytest.raises(ValueError, match=r"^at most 10 pinned facts$"):
        pin(make_fact(), True, 10, 10)


def test_pinning_a_pinned_fact_at_the_cap_changes_nothing() -> None:
    fact = make_fact(pinned=True)
    assert pin(fact, True, 10, 10, now=NOW) is fact


def test_pin_without_now_keeps_updated_at() -> None:
    fact = make_fact()
    assert pin(fact, True, 0, 10).updated_at == fact.updated_at


def test_a_fast_decaying_fact_loses_a_factor_of_e_a_day() -> None:
    fact = make_fact(decay_rate=1.0, confidence=0.8, last_confirmed_at=NOW - timedelta(days=1))
    assert effective_confidence(fact, NOW) == pytest.approx(0.8 * math.exp(-1.0))


def test_a_permanent_fact_is_never_swept_whatever_its_decay_rate() -> None:
    old = NOW - timedelta(days=3000)
    fact = make_fact(permanence="permanent", decay_rate=0.5, last_confirmed_at=old, last_seen=old)
    assert sweep_fact(fact, expiry_days=None, now=NOW) is None
