"""The four named context formats: ranked memories turned into prompt text within a budget.

Every builder takes items already ranked best first and only orders, formats and
trims them. Each returns a :class:`Block`: the text, its ``estimate_tokens`` and
the ids of the memories that made it in. Newlines and runs of whitespace inside
a memory are collapsed to single spaces so that one memory is always one line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

from memory.tokens import estimate_tokens
from schemas.records import AppNote, Fact, UserProfile
from schemas.taxonomy import CategorySpec

__all__ = [
    "ABOUT_USER_HEADING",
    "APP_BLOCK_MAX_CHARS",
    "DEFAULT_MAX_TOKENS",
    "FORMATS",
    "MAX_ABOUT_USER_TOKENS",
    "MEMORY_CONTEXT_HEADING",
    "MIN_ABOUT_USER_TOKENS",
    "NOTE_MAX_CHARS",
    "RULES_SHARE",
    "TRUNCATION_MARK",
    "Block",
    "RuleLine",
    "about_user",
    "about_user_budget",
    "app_memories",
    "clip_note",
    "memory_context",
    "newest_notes",
    "rank_key",
    "user_context",
]

#: Names a ``context`` request may ask for in ``format``: seeds 000, 002, 003, 004.
FORMATS = ("user-context", "memory-context", "app-memories", "about-user")

#: Seed 000's default budget, also used when the model's context size is unknown.
DEFAULT_MAX_TOKENS = 2000
#: Seed 004's clamp for the about-user budget.
MIN_ABOUT_USER_TOKENS = 150
MAX_ABOUT_USER_TOKENS = 500

#: Seed 000: appended when the text had to be cut at the character level.
TRUNCATION_MARK = "\n..."
MEMORY_CONTEXT_HEADING = "# Memory Context"
ABOUT_USER_HEADING = "## What you know about this user"

_APP_INTRO = "The following are memories from previous conversations with this app:"
_APP_OUTRO = "Use these memories to provide context-aware responses."


@dataclass(frozen=True, slots=True)
class Block:
    """A formatted context block, its token estimate and the ids of the memories in it."""

    text: str
    tokens: int
    memory_ids: list[str] = field(default_factory=list)
    #: Memories were found but none fits the budget: the budget that shows the smallest
    #: part (its first line); 0 otherwise.
    needed: int = 0


#: Seed 002's section quota: the share of a memory-context budget kept for rules.
RULES_SHARE = 0.3


@dataclass(frozen=True, slots=True)
class RuleLine:
    """One of seed 002's active rules, as the memory-context format shows it."""

    id: str
    content: str
    maturity: str
    effectiveness: float


def rank_key(score: float, fact: Fact) -> tuple[float, float, str]:
    """Sort key for seed 002's stable order: score desc, then created_at desc, then id asc."""
    return (-score, -fact.created_at.timestamp(), fact.id)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _block(text: str, memory_ids: list[str]) -> Block:
    return Block(text, estimate_tokens(text), memory_ids)


def _longest_fitting(count: int, render: Callable[[int], str], budget: int) -> int:
    """The largest ``k`` in ``[0, count]`` whose ``render(k)`` fits in ``budget`` tokens.

    ``render(k + 1)`` must hold all of ``render(k)`` and more, so the estimate only
    grows with ``k`` and a binary search finds the answer (``0`` if nothing fits).
    """
    low, high = 0, count
    while low < high:
        middle = (low + high + 1) // 2
        if estimate_tokens(render(middle)) <= budget:
            low = middle
        else:
            high = middle - 1
    return low


# -- user-context (seed 000) ---------------------------------------------------------------


def _profile_sections(profile: UserProfile | None) -> list[str]:
    if profile is None:
        return []
    groups = (
        (
            "User Context:",
            (
                ("Work", profile.work),
                ("Personal", profile.personal),
                ("Top of mind", profile.top_of_mind),
            ),
        ),
        (
            "History:",
            (
                ("Recent", profile.recent),
                ("Earlier", profile.earlier),
                ("Background", profile.background),
            ),
        ),
    )
    sections = []
    for heading, fields in groups:
        lines = [f"- {label}: {_one_line(value)}" for label, value in fields if value.strip()]
        if lines:
            sections.append("\n".join([heading, *lines]))
    return sections


def _truncate(text: str, max_tokens: int) -> str:
    """The longest prefix of ``text`` that fits with the mark appended, or ``""``."""
    length = _longest_fitting(len(text), lambda n: text[:n] + TRUNCATION_MARK, max_tokens)
    prefix = text[:length].rstrip()
    return prefix + TRUNCATION_MARK if prefix else ""


def user_context(
    profile: UserProfile | None, facts: Sequence[Fact], max_tokens: int = DEFAULT_MAX_TOKENS
) -> Block:
    """Seed 000's block: ``User Context:``, ``History:`` and ``Facts:`` sections.

    Layout, sections separated by one blank line, empty lines and sections left out::

        User Context:
        - Work: ...
        - Personal: ...
        - Top of mind: ...

        History:
        - Recent: ...
        - Earlier: ...
        - Background: ...

        Facts:
        - [{category} | {confidence:.2f}] {content}

    Facts are sorted by confidence desc (then created_at desc, id asc). Over
    ``max_tokens``, facts go from the lowest confidence up; if the profile sections
    alone are still over, the text is cut at a character and ``"\\n..."`` appended,
    the mark included in the budget. ``memory_ids`` lists the facts kept (the
    profile has no memory id). Nothing to show, or a budget below one token: an
    empty block.
    """
    sections = _profile_sections(profile)
    ranked = sorted(facts, key=lambda fact: rank_key(fact.confidence, fact))
    lines = [
        f"- [{fact.category} | {fact.confidence:.2f}] {_one_line(fact.content)}" for fact in ranked
    ]

    def render(kept: int) -> str:
        facts_section = ["\n".join(["Facts:", *lines[:kept]])] if kept else []
        return "\n\n".join([*sections, *facts_section])

    kept = _longest_fitting(len(lines), render, max_tokens)
    text = render(kept)
    if estimate_tokens(text) > max_tokens:
        text = _truncate(text, max_tokens)
    block = _block(text, [fact.id for fact in ranked[:kept]])
    if text or not (sections or lines):
        return block
    smallest = sections[0][:1] + TRUNCATION_MARK if sections else render(1)
    return replace(block, needed=estimate_tokens(smallest))


# -- memory-context (seed 002) -------------------------------------------------------------


def _key_fact_line(fact: Fact) -> str:
    subject = fact.subject or "user"
    predicate = fact.predicate or fact.category
    content = _one_line(fact.content)
    return f"- [{subject}] [{predicate}]: {content} (confidence: {fact.confidence:.2f})"


def _rule_line(rule: RuleLine) -> str:
    content = _one_line(rule.content)
    return f"- {content} (maturity: {rule.maturity}, effectiveness: {rule.effectiveness:.2f})"


def memory_context(
    facts: Sequence[Fact],
    token_budget: int,
    rules: Sequence[RuleLine] = (),
    *,
    rules_share: float = RULES_SHARE,
) -> Block:
    """Seed 002's block: ``# Memory Context``, then ``## Key Facts`` and ``## Active Rules``.

    Layout, every line ending in ``"\\n"``, a blank line before each section::

        # Memory Context

        ## Key Facts
        - [{subject}] [{predicate}]: {content} (confidence: {confidence:.2f})

        ## Active Rules
        - {content} (maturity: {maturity}, effectiveness: {effectiveness:.2f})

    A fact without a subject shows ``user``, without a predicate its category.
    The quotas: of ``token_budget * 4`` characters, the rules' section is kept up to
    ``rules_share`` of them (as much as its lines need, no more); facts go in, in
    the given order, until the next one would pass the rest; then rules, in the
    given order, until the next one would pass the whole. Nothing after the first
    item that does not fit in its section is added. With nothing to show the text is
    the heading line alone, as the seed says the output always begins with it;
    below 17 characters of budget, an empty block.
    """
    cap = token_budget * 4
    parts = [MEMORY_CONTEXT_HEADING + "\n"]
    length = len(parts[0])
    fact_items = [("## Key Facts", fact.id, _key_fact_line(fact)) for fact in facts]
    rule_items = [("## Active Rules", rule.id, _rule_line(rule)) for rule in rules]
    items = fact_items + rule_items
    first = len(items[0][0]) + len(items[0][2]) + 3 if items else 0  # "\n{heading}\n{line}\n"
    if length + first > cap:
        block = _block(parts[0] if length <= cap else "", [])
        # Not even the first item fits: the characters it needs, in tokens (rounded up).
        return replace(block, needed=-(-(length + first) // 4)) if items else block
    wanted = 0
    for _, _, line in rule_items:
        need = len(line) + 1 + (len("## Active Rules") + 2 if not wanted else 0)
        if wanted + need > cap * rules_share:
            break
        wanted += need
    ids: list[str] = []
    section = ""
    for items_of_section, limit in ((fact_items, cap - wanted), (rule_items, cap)):
        for heading, item_id, line in items_of_section:
            piece = f"{line}\n" if heading == section else f"\n{heading}\n{line}\n"
            if length + len(piece) > limit:
                break
            parts.append(piece)
            length += len(piece)
            section = heading
            ids.append(item_id)
    return _block("".join(parts), ids)


# -- app-memories (seed 003) ---------------------------------------------------------------


#: Seed 003's sizes: notes of about 200 characters (hard cap below), a block of about 2000.
NOTE_MAX_CHARS = 280
APP_BLOCK_MAX_CHARS = 2000


def newest_notes(notes: Iterable[AppNote], limit: int | None = None) -> list[AppNote]:
    """Seed 003's retrieval order: most recently updated first (ties: newest created, then
    id), at most ``limit``."""
    ordered = sorted(
        notes, key=lambda n: (-n.updated_at.timestamp(), -n.created_at.timestamp(), n.id)
    )
    return ordered if limit is None else ordered[:limit]


def clip_note(text: str, limit: int = NOTE_MAX_CHARS) -> str:
    """One line of at most ``limit`` characters, cut at a word boundary with an ellipsis."""
    line = _one_line(text)
    if len(line) <= limit:
        return line
    cut = line[: limit - 1]
    if " " in cut[limit // 2 :]:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:") + "…"


def app_memories(
    app_name: str, notes: Sequence[AppNote], max_chars: int = APP_BLOCK_MAX_CHARS
) -> Block:
    """Seed 003's block: numbered, dated notes of one app, newest first.

    Layout (no trailing newline)::

        (memories for app: <app_name>)
        The following are memories from previous conversations with this app:

        1. [Created: YYYY-MM-DD] content
        2. [Created: YYYY-MM-DD] content

        Use these memories to provide context-aware responses.

    Ties on created_at go by id. Oldest notes are left out while the block is over
    ``max_chars`` (seed 003: about 2000); notes are clipped to ``NOTE_MAX_CHARS``.
    No notes (or none fits): an empty block.
    """
    ordered = sorted(notes, key=lambda note: (-note.created_at.timestamp(), note.id))
    lines = [
        f"{number}. [Created: {note.created_at.date().isoformat()}] {clip_note(note.content)}"
        for number, note in enumerate(ordered, start=1)
    ]
    head = [f"(memories for app: {app_name})", _APP_INTRO, ""]
    while lines:
        text = "\n".join([*head, *lines, "", _APP_OUTRO])
        if len(text) <= max_chars:
            return _block(text, [note.id for note in ordered[: len(lines)]])
        lines.pop()
    return _block("", [])


# -- about-user (seed 004) -----------------------------------------------------------------


def about_user(facts: Sequence[Fact], categories: Sequence[CategorySpec], budget: int) -> Block:
    """Seed 004's block: one headed section per category, in ascending ``priority``.

    Layout (no trailing newline)::

        ## What you know about this user

        Current work:
        - fact

        Preferences:
        - fact

    ``facts`` come best first (most relevant to the query): within a section they
    keep that order, so the fact that answers the question is its section's first
    line. Facts of a category missing from ``categories`` are left out. Over
    ``budget`` tokens, the worst-ranked facts go first, whatever their section, and
    a section whose lines are all gone loses its heading. Nothing fits or nothing
    to show: an empty block.
    """
    specs: dict[str, CategorySpec] = {}
    for spec in sorted(categories, key=lambda spec: spec.priority):
        specs.setdefault(spec.name, spec)
    ranked = [fact for fact in facts if fact.category in specs]
    order = {name: i for i, name in enumerate(specs)}

    def chosen(kept: int) -> list[Fact]:
        return sorted(ranked[:kept], key=lambda fact: order[fact.category])  # stable

    def render(kept: int) -> str:
        if not kept:
            return ""
        sections: list[list[str]] = []
        current: str | None = None
        for fact in chosen(kept):
            if fact.category != current:
                sections.append([specs[fact.category].heading])
                current = fact.category
            sections[-1].append(f"- {_one_line(fact.content)}")
        return "\n\n".join([ABOUT_USER_HEADING, *("\n".join(lines) for lines in sections)])

    kept = _longest_fitting(len(ranked), render, budget)
    block = _block(render(kept), [fact.id for fact in chosen(kept)])
    return replace(block, needed=estimate_tokens(render(1))) if ranked and not kept else block


def about_user_budget(context_tokens: int | None, used_tokens: int, reserve_for_reply: int) -> int:
    """Seed 004's budget: 25 % of the context left after the prompt and the reply, 150-500.

    Unknown context size: seed 000's 2000 tokens.
    """
    if context_tokens is None:
        return DEFAULT_MAX_TOKENS
    remaining = context_tokens - used_tokens - reserve_for_reply
    return max(MIN_ABOUT_USER_TOKENS, min(MAX_ABOUT_USER_TOKENS, remaining // 4))
