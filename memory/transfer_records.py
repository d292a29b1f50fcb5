"""Records as the lines of an export, and the lines of an export as records again. Pure.

Every record is written whole (its user aside): an import of the export restores the
same ids and the same fields. An archived message is named by its line's ``id``
(``memory.transfer.transfer_id``), wherever it is named: a link's end, a fact's or a
rule's ``source_episode_id``; ``Names`` turns those names back into the importing
user's message ids.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import msgspec

from schemas.records import (
    AppNote,
    ArchivedMessage,
    Entity,
    Episode,
    Fact,
    MemoryLink,
    Rule,
    RuleApplication,
    UserProfile,
)
from schemas.transfer import (
    EntityLine,
    EpisodeLine,
    FactLine,
    LinkLine,
    NoteLine,
    ProfileLine,
    RuleLine,
)

__all__ = [
    "entity_from_line",
    "entity_line",
    "episode_from_line",
    "episode_line",
    "fact_from_line",
    "fact_line",
    "is_record",
    "link_from_line",
    "link_line",
    "note_from_line",
    "note_line",
    "profile_from_line",
    "profile_line",
    "rule_from_line",
    "rule_line",
    "turn_line",
]

_R = TypeVar("_R", bound=msgspec.Struct)
#: A message's name in an export from its id (``transfer_id``), or the other way round.
Rename = Callable[[str], str]
#: The fields of a fact an export writes first, as it always has.
_FACT_FIRST = (
    "id",
    "content",
    "category",
    "confidence",
    "created_at",
    "scope",
    "meta",
    "pinned",
    "validity",
    "mention_count",
    "subject",
    "predicate",
)


def _fields(record: msgspec.Struct) -> dict[str, Any]:
    """The record's fields but its user's, in its order."""
    fields = msgspec.structs.asdict(record)
    fields.pop("user_id", None)
    return fields


def _record(kind: type[_R], user_id: str, fields: Mapping[str, Any]) -> _R:
    return msgspec.convert({**fields, "user_id": user_id}, kind, from_attributes=True)


def _episode_name(item_id: str | None, rename: Rename) -> str | None:
    """An episode's name in an export: a directly stored one's id as it is, a message's
    its line's ``id``."""
    if item_id is None or not item_id.startswith("msg_"):
        return item_id
    return rename(item_id)


def _episode_id(name: str | None, rename: Rename) -> str | None:
    """An episode's id from its name in an export (``rename`` knows the user's)."""
    return None if name is None else rename(name)


def is_record(line: FactLine) -> bool:
    """Whether a fact line is a record of an export (it carries ``updated_at``), rather
    than a fact to learn."""
    return line.updated_at is not None


def turn_line(message: ArchivedMessage, name: str) -> dict[str, Any]:
    """An archived message as its export names it (``name``, its ``transfer_id``)."""
    return {
        "kind": "turn",
        "id": name,
        "session_id": message.session_id,
        "speaker": message.speaker,
        "role": message.role,
        "text": message.text,
        "at": message.at,
        "scope": message.scope,
        "meta": message.meta,
        "turn": message.turn,
    }


def fact_line(fact: Fact, rename: Rename) -> dict[str, Any]:
    fields = _fields(fact)
    fields["source_episode_id"] = _episode_name(fact.source_episode_id, rename)
    first = {("at" if key == "created_at" else key): fields.pop(key) for key in _FACT_FIRST}
    return {"kind": "fact", **first, **fields}


def fact_from_line(line: FactLine, user_id: str, rename: Rename) -> Fact:
    """The fact a record line (``is_record``) restores."""
    fields = msgspec.structs.asdict(line)
    created = line.at or line.updated_at
    fields |= {
        "created_at": created,
        "last_seen": line.last_seen or created,
        "source_episode_id": _episode_id(line.source_episode_id, rename),
    }
    return _record(Fact, user_id, fields)


def rule_line(
    rule: Rule, applications: Sequence[RuleApplication], rename: Rename
) -> dict[str, Any]:
    fields = _fields(rule)
    fields["source_episode_id"] = _episode_name(rule.source_episode_id, rename)
    done = [
        {"id": a.id, "outcome": a.outcome, "at": a.at, "context": a.context}
        for a in sorted(applications, key=lambda a: (a.at, a.id))
    ]
    return {"kind": "rule", **fields, "applications": done}


def rule_from_line(
    line: RuleLine, user_id: str, rename: Rename
) -> tuple[Rule, list[RuleApplication]]:
    fields = msgspec.structs.asdict(line)
    fields.pop("applications")
    fields["source_episode_id"] = _episode_id(line.source_episode_id, rename)
    rule = _record(Rule, user_id, fields)
    applications = [
        RuleApplication(
            id=a.id, user_id=user_id, rule_id=rule.id, outcome=a.outcome, at=a.at, context=a.context
        )
        for a in line.applications
    ]
    return rule, applications


def entity_line(entity: Entity) -> dict[str, Any]:
    return {"kind": "entity", **_fields(entity)}


def entity_from_line(line: EntityLine, user_id: str) -> Entity:
    return _record(Entity, user_id, msgspec.structs.asdict(line))


def episode_line(episode: Episode) -> dict[str, Any]:
    return {"kind": "episode", **_fields(episode)}


def episode_from_line(line: EpisodeLine, user_id: str) -> Episode:
    return _record(Episode, user_id, msgspec.structs.asdict(line))


def link_line(link: MemoryLink, rename: Rename) -> dict[str, Any]:
    fields = _fields(link)
    if link.source_type == "episode":
        fields["source_id"] = _episode_name(link.source_id, rename)
    if link.target_type == "episode":
        fields["target_id"] = _episode_name(link.target_id, rename)
    return {"kind": "link", **fields}


def link_from_line(line: LinkLine, user_id: str, rename: Rename) -> MemoryLink:
    fields = msgspec.structs.asdict(line)
    if line.source_type == "episode":
        fields["source_id"] = rename(line.source_id)
    if line.target_type == "episode":
        fields["target_id"] = rename(line.target_id)
    return _record(MemoryLink, user_id, fields)


def note_line(note: AppNote) -> dict[str, Any]:
    fields = _fields(note)
    first = {"id": fields.pop("id"), "app_id": fields.pop("app_id")}
    first |= {"content": fields.pop("content"), "at": fields.pop("created_at")}
    return {"kind": "note", **first, **fields}


def note_from_line(line: NoteLine, user_id: str) -> AppNote:
    fields = msgspec.structs.asdict(line)
    fields |= {"created_at": line.at, "updated_at": line.updated_at or line.at}
    return _record(AppNote, user_id, fields)


def profile_line(profile: UserProfile) -> dict[str, Any]:
    return {"kind": "profile", **_fields(profile)}


def profile_from_line(line: ProfileLine, user_id: str) -> UserProfile:
    return _record(UserProfile, user_id, msgspec.structs.asdict(line))
