"""Reading the examples of README.md and docs/*.md, and comparing what they show with
what the server answered (``tests/test_docs_examples.py`` runs them; its docstring
has the convention)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "EXTRACTION",
    "ID_PATTERN",
    "REPLY",
    "ROOT",
    "Block",
    "Transcript",
    "blocks_of",
    "documents",
    "loads_shown",
    "mismatch",
    "normalized",
    "shown_json",
    "transcript",
]

ROOT = Path(__file__).resolve().parent.parent
#: What the fake Ollama of the docs' examples answers: a chat reply, and an extraction.
REPLY = "Hello, Ada!"
EXTRACTION = {
    "facts": [
        {
            "content": "User loves green tea",
            "category": "preference",
            "confidence": 0.9,
            "subject": "user",
            "predicate": "likes",
            "value": "green tea",
        }
    ],
    "memory_update": {"should_store": True},
    "analysis": {},
}

_MARKER = re.compile(r"^<!-- (example|not-executed): (.+?) -->$")
#: ``...`` where a JSON value would be: any value (a wildcard the docs write as is).
_ELLIPSIS = re.compile(r"(?<=[:\[,])(\s*)\.\.\.(?=\s*[,\]}])")
#: ``, ...}`` closing an object: more keys than shown.
_MORE_KEYS = re.compile(r",\s*\.\.\.\s*}")
#: Ids the server makes: messages, facts, notes, rules, entities.
ID_PATTERN = (
    r"\b(?:msg_[0-9a-f]{16}|fact_[0-9a-f]{8}|note_[0-9a-f]{8}|rule_[0-9a-f]{8}|ent_[0-9a-f]{8})\b"
)
_VARYING = (
    (re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})?"), "<time>"),
    (re.compile(r"\d{4}-\d{2}-\d{2}"), "<date>"),
    (re.compile(ID_PATTERN), "<id>"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<uuid>"),
)


@dataclass(frozen=True)
class Block:
    """One fenced code block: where it is, its info string, its text and its marker."""

    path: str
    line: int
    info: str
    body: str
    #: ("example", "ws /ws/s1") or ("not-executed", reason); None: unmarked.
    marker: tuple[str, str] | None

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks_of(path: Path) -> list[Block]:
    """Every fenced block of ``path``, with the marker on the last non-blank line before it."""
    found: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    before = ""
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("```"):
            end = next(i for i in range(index + 1, len(lines)) if lines[i].startswith("```"))
            marker = _MARKER.match(before.strip())
            found.append(
                Block(
                    path=str(path.relative_to(ROOT)),
                    line=index + 1,
                    info=line[3:].strip(),
                    body="\n".join(lines[index + 1 : end]),
                    marker=(marker[1], marker[2]) if marker else None,
                )
            )
            before, index = "", end + 1
            continue
        if line.strip():
            before = line
        index += 1
    return found


def normalized(text: str) -> str:
    """``text`` with what changes from run to run (times, dates, ids) replaced by names."""
    for pattern, name in _VARYING:
        text = pattern.sub(name, text)
    return text


def shown_json(text: str) -> str:
    """JSON as the docs show it, made JSON: a bare ``...`` value stands for any value,
    ``, ...}`` for more keys than shown."""
    return _ELLIPSIS.sub(r'\1"..."', _MORE_KEYS.sub(',"...":"..."}', text))


def loads_shown(text: str) -> Any:
    return json.loads(shown_json(text))


def mismatch(shown: Any, actual: Any, where: str = "$") -> str | None:
    """Why ``actual`` is not what the docs show, or None. ``"..."`` matches anything
    (``["..."]`` any list);
    in a longer string ``...`` matches any text; latencies (``ms``, ``*_ms``) match any
    number; objects must have exactly the shown keys
    (unless one of them is ``"...": "..."``); times, dates and ids are normalized."""
    if shown == "...":
        return None
    if isinstance(shown, dict):
        if not isinstance(actual, dict):
            return f"{where}: {actual!r} is no object"
        open_ended = shown.get("...") == "..."
        keys = set(shown) - {"..."}
        if not open_ended and keys != set(actual):
            return f"{where}: keys {sorted(actual)} are not the documented {sorted(keys)}"
        missing = keys - set(actual)
        if missing:
            return f"{where}: {sorted(missing)} missing"
        for key in sorted(keys):
            if _latency(key, shown[key], actual[key]):
                continue
            found = mismatch(shown[key], actual[key], f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(shown, list):
        if shown == ["..."] and isinstance(actual, list):
            return None
        if not isinstance(actual, list) or len(shown) != len(actual):
            return f"{where}: {actual!r} is not {len(shown)} items like {shown!r}"
        for i, (s, a) in enumerate(zip(shown, actual, strict=True)):
            found = mismatch(s, a, f"{where}[{i}]")
            if found:
                return found
        return None
    if isinstance(shown, str) and isinstance(actual, str):
        pattern = ".*".join(re.escape(part) for part in normalized(shown).split("..."))
        if re.fullmatch(pattern, normalized(actual), re.DOTALL):
            return None
        return f"{where}: {actual!r} is not {shown!r}"
    if shown != actual or type(shown) is not type(actual):
        return f"{where}: {actual!r} is not {shown!r}"
    return None


def _latency(key: str, shown: Any, actual: Any) -> bool:
    """Milliseconds (``ms``, ``*_ms``) differ from run to run: any number matches."""
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (shown, actual))
    return (key == "ms" or key.endswith("_ms")) and numbers


@dataclass(frozen=True)
class Step:
    """A ``->`` frame to send, a ``<-`` frame to receive, or ``<- close CODE``."""

    send: bool
    frame: Any
    line: str


@dataclass(frozen=True)
class Transcript:
    path: str
    steps: list[Step]


def transcript(block: Block) -> Transcript:
    """A WebSocket transcript: ``-> {frame}`` sent, ``<- {frame}`` received, each line's
    JSON possibly followed by a comment; ``<- close 1000``: the server closes so."""
    path = block.marker[1].split()[1] if block.marker else ""
    steps: list[Step] = []
    decoder = json.JSONDecoder()
    for line in block.body.splitlines():
        if not line.strip():
            continue
        arrow, _, rest = line.partition(" ")
        assert arrow in ("->", "<-"), f"{block.where}: a transcript line is -> or <-: {line}"
        if rest.startswith("close "):
            steps.append(Step(send=False, frame=int(rest.split()[1]), line=line))
            continue
        frame, _ = decoder.raw_decode(shown_json(rest))
        steps.append(Step(send=arrow == "->", frame=frame, line=line))
    return Transcript(path=path, steps=steps)
