"""What the rule-based extractor finds in a clause, before it becomes an ``ExtractedFact``.

``Speaker`` is who a clause is about: the user, or a person the user named
("my sister Ana"); ``People`` remembers the people a message introduced so
that a later "she" or "Ana" in the same message finds them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

__all__ = ["USER", "People", "Speaker", "Statement"]


@dataclass(frozen=True, slots=True)
class Speaker:
    """Who a statement is about: ``name`` None and ``relation`` None is the user."""

    name: str | None = None
    relation: str | None = None

    @property
    def is_user(self) -> bool:
        return self.name is None and self.relation is None

    @property
    def subject(self) -> str:
        """The fact's ``subject``: ``user``, the person's name, or their relation."""
        return "user" if self.is_user else (self.name or self.relation or "user")

    def english(self) -> str:
        """``User``, ``User's sister Ana``, ``User's sister``."""
        if self.is_user:
            return "User"
        return " ".join(p for p in ("User's", self.relation, self.name) if p)

    def chinese(self) -> str:
        """``用户``, ``用户的妹妹安娜``."""
        if self.is_user:
            return "用户"
        return "用户的" + (self.relation or "") + (self.name or "")


USER = Speaker()


@dataclass(frozen=True, slots=True)
class Statement:
    """One fact found in a clause. ``category`` None: the predicate's own."""

    predicate: str
    value: str
    content: str
    speaker: Speaker = USER
    key: str | None = None
    negated: bool = False
    updates_previous: bool = False
    category: str | None = None
    #: Only for a predicate outside the vocabulary that holds one value ("my grade is 7a").
    cardinality: Literal["one", "many"] | None = None


@dataclass(slots=True)
class People:
    """One message's cast: the people it introduces by name, the subject of the last
    clause (Chinese clauses without one inherit it), whether that clause named a pet
    (an age said next is the pet's), the last other person ("she"), and whether the
    message talks about work ("I'm at Spotify now" is then an employer)."""

    by_name: dict[str, Speaker] = field(default_factory=dict)
    last: Speaker | None = None
    pet: bool = False
    other: Speaker | None = None
    about_work: bool = False
    #: The message being read.
    text: str = ""

    def meet(self, speaker: Speaker) -> Speaker:
        name = speaker.name
        if name:
            known = self.by_name.get(name.casefold())
            if known is not None and speaker.relation is None:
                speaker = known
            self.by_name[name.casefold()] = speaker
        self.last = speaker
        if not speaker.is_user:
            self.other = speaker
        return speaker

    def named(self, word: str) -> Speaker | None:
        return self.by_name.get(word.casefold())
