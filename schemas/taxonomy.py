"""The fact category taxonomy: names, context headings, priorities, expiry, eviction, boosts."""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

__all__ = ["CATEGORY_ALIASES", "DEFAULT_CATEGORIES", "PERMANENCE_DECAY", "CategorySpec"]


class CategorySpec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    name: str
    #: The heading of this category's section in the ``about-user`` context format.
    heading: str
    #: Lower comes first in context blocks (seed 004: project > preference > identity).
    priority: int
    #: Days after ``last_seen`` when an unpinned fact expires (None: never).
    expiry_days: Annotated[float, Meta(gt=0)] | None = None
    #: Seed 004's eviction weight: score = age_days * weight / confidence.
    eviction_weight: Annotated[float, Meta(ge=0)] = 0.5
    #: Seed 001's ``category_boost`` in the retrieval score.
    retrieval_boost: Annotated[float, Meta(gt=0)] = 1.0


#: Seed 000's six categories plus seed 004's identity and project.
DEFAULT_CATEGORIES: tuple[CategorySpec, ...] = (
    CategorySpec(
        name="project", heading="Current work:", priority=1, expiry_days=60, eviction_weight=0.8
    ),
    CategorySpec(
        name="preference",
        heading="Preferences:",
        priority=2,
        expiry_days=180,
        eviction_weight=0.3,
        retrieval_boost=1.5,
    ),
    CategorySpec(
        name="identity", heading="About user:", priority=3, expiry_days=365, eviction_weight=0.5
    ),
    CategorySpec(name="goal", heading="Goals:", priority=4, expiry_days=180, eviction_weight=0.6),
    CategorySpec(name="correction", heading="Corrections:", priority=5, eviction_weight=0.4),
    CategorySpec(name="knowledge", heading="Knowledge:", priority=6, eviction_weight=0.5),
    CategorySpec(
        name="behavior", heading="Habits:", priority=7, expiry_days=365, eviction_weight=0.4
    ),
    CategorySpec(
        name="context", heading="Context:", priority=8, expiry_days=60, eviction_weight=0.8
    ),
)

#: Seed 001's categories map onto the taxonomy.
CATEGORY_ALIASES: dict[str, str] = {"fact": "knowledge", "pattern": "behavior"}

#: Seed 002: permanence level -> exponential decay rate per day.
PERMANENCE_DECAY: dict[str, float] = {
    "permanent": 0.0,
    "stable": 0.002,
    "standard": 0.008,
    "volatile": 0.03,
    "ephemeral": 0.1,
}
