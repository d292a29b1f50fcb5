"""Reading a consolidation answer (seed 002), pure: never raises, reports in ``parse_errors``.

The JSON is taken from a fenced ```` ```json ```` block, else from the outermost balanced
``{...}``. Entries missing what they need are skipped, each with its reason.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from schemas.taxonomy import PERMANENCE_DECAY

__all__ = ["ConsolidationResult", "NewFact", "NewRule", "parse_consolidation"]

NO_JSON = "No JSON block found in consolidation output"
_FENCED = re.compile(r"```(?:json)?\s*\n?(.*?)```", re.DOTALL | re.IGNORECASE)
#: A memory id mnemo makes (the seed's UUIDs).
_MEMORY_ID = re.compile(r"^(?:fact|rule)_[0-9a-f]{8}$")


@dataclass(frozen=True, slots=True)
class NewFact:
    subject: str
    predicate: str
    content: str
    importance: float = 5.0
    permanence: str = "standard"
    tags: tuple[str, ...] = ()
    #: For ``updated_facts``: the fact it updates.
    target_id: str | None = None


@dataclass(frozen=True, slots=True)
class NewRule:
    content: str
    tags: tuple[str, ...] = ()


@dataclass(slots=True)
class ConsolidationResult:
    new_facts: list[NewFact] = field(default_factory=list)
    updated_facts: list[NewFact] = field(default_factory=list)
    new_rules: list[NewRule] = field(default_factory=list)
    confirmations: list[str] = field(default_factory=list)
    parse_errors: list[str] = field(default_factory=list)


def _outermost_object(text: str) -> str | None:
    """The first ``{`` and its balanced ``}`` (braces in JSON strings do not count)."""
    start = text.find("{")
    if start < 0:
        return None
    depth, in_string, escaped = 0, False, False
    for index in range(start, len(text)):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return text[start : index + 1]
    return None


def _decode(text: str) -> dict[str, Any] | None:
    candidates = [m.group(1) for m in _FENCED.finditer(text)]
    bare = _outermost_object(text)
    candidates += [bare] if bare is not None else []
    for candidate in candidates:
        try:
            decoded = json.loads(candidate)
        except (ValueError, RecursionError):
            continue
        if isinstance(decoded, dict):
            return decoded
    return None


def _text(entry: dict[str, Any], name: str) -> str | None:
    value = entry.get(name)
    return value.strip() if isinstance(value, str) and value.strip() else None


def _tags(entry: dict[str, Any]) -> tuple[str, ...]:
    tags = entry.get("tags")
    if not isinstance(tags, list):
        return ()
    return tuple(t.strip() for t in tags if isinstance(t, str) and t.strip())


def _fact(entry: Any, where: str, errors: list[str], updated: bool) -> NewFact | None:
    if not isinstance(entry, dict):
        errors.append(f"{where}: not an object")
        return None
    needed = ["subject", "predicate", "content"]
    missing = [n for n in needed if _text(entry, n) is None]
    target = _text(entry, "target_id") if updated else None
    if updated and (target is None or not _MEMORY_ID.match(target)):
        missing.insert(0, "target_id (a fact_ or rule_ id)")
    if missing:
        errors.append(f"{where}: missing or empty {', '.join(missing)}")
        return None
    importance = entry.get("importance", 5.0)
    if isinstance(importance, bool) or not isinstance(importance, int | float):
        importance = 5.0
    permanence = entry.get("permanence")
    return NewFact(
        subject=str(_text(entry, "subject")),
        predicate=str(_text(entry, "predicate")),
        content=str(_text(entry, "content")),
        importance=min(10.0, max(1.0, float(importance))),
        permanence=permanence if permanence in PERMANENCE_DECAY else "standard",
        tags=_tags(entry),
        target_id=target,
    )


def _list(decoded: dict[str, Any], name: str, errors: list[str]) -> list[Any]:
    value = decoded.get(name, [])
    if not isinstance(value, list):
        errors.append(f"{name}: not a list")
        return []
    return value


def parse_consolidation(text: str) -> ConsolidationResult:
    """The actions of a consolidation answer; ``parse_errors`` says what was skipped."""
    result = ConsolidationResult()
    decoded = _decode(text)
    if decoded is None:
        result.parse_errors.append(NO_JSON)
        return result
    errors = result.parse_errors
    for index, entry in enumerate(_list(decoded, "new_facts", errors)):
        if (made := _fact(entry, f"new_facts[{index}]", errors, updated=False)) is not None:
            result.new_facts.append(made)
    for index, entry in enumerate(_list(decoded, "updated_facts", errors)):
        if (made := _fact(entry, f"updated_facts[{index}]", errors, updated=True)) is not None:
            result.updated_facts.append(made)
    for index, entry in enumerate(_list(decoded, "new_rules", errors)):
        content = _text(entry, "content") if isinstance(entry, dict) else None
        if content is None:
            errors.append(f"new_rules[{index}]: missing or empty content")
            continue
        result.new_rules.append(NewRule(content, _tags(entry)))
    for index, entry in enumerate(_list(decoded, "confirmations", errors)):
        if isinstance(entry, str) and _MEMORY_ID.match(entry.strip()):
            result.confirmations.append(entry.strip())
        else:
            errors.append(f"confirmations[{index}]: not a fact_ or rule_ id: {entry!r:.60}")
    return result
