"""A deterministic fact extractor for when the model is unreachable: a small reading pipeline.

A message is cut into clauses (``memory.clauses``); each clause is read for
who it is about, its verb group and its predicate (``memory.english``,
``memory.chinese``); each statement becomes an ``ExtractedFact`` with the
structure the merge rules need (subject, canonical predicate, value, negation,
``updates_previous``). Questions, conditions, hedges, requests and reported
speech give nothing; facts about other people are about them, never the user.
Deterministic and linear in the text (at most ``MAX_CHARS`` are read).
"""

from __future__ import annotations

import math
import re

from memory.chinese import chinese_statements
from memory.clauses import clauses
from memory.english import english_statements
from memory.predicates import Vocabulary
from memory.statements import People, Statement
from memory.tokens import is_cjk
from schemas.llm import ExtractedFact

__all__ = ["extract_facts", "structure_of"]

_VOCABULARY = Vocabulary()
_WORK = re.compile(
    r"\b(?:jobs?|work|working|company|hired|employer|position|role|joined|offer|career|office)\b"
    r"|工作|上班|公司|跳槽|入职",
    re.IGNORECASE,
)
#: Facts about other people go in this category (not under the user's own headings).
_OTHERS = "knowledge"
#: A longer value is a misreading (a run-on sentence), not a fact.
_MAX_VALUE = 80
_MAX_CHINESE_VALUE = 30


def _fact(statement: Statement, confidence: float) -> ExtractedFact:
    speaker = statement.speaker
    category = statement.category
    if category is None:
        spec = _VOCABULARY.spec(statement.predicate)
        category = spec.category if spec is not None else "knowledge"
    if not speaker.is_user:
        category = _OTHERS
    return ExtractedFact(
        content=statement.content[:500],
        category=category,
        confidence=confidence,
        subject=speaker.subject[:100],
        relation=speaker.relation,
        predicate=statement.predicate[:64],
        value=statement.value[:300],
        key=statement.key,
        negated=statement.negated,
        updates_previous=statement.updates_previous,
        cardinality=statement.cardinality,
    )


def extract_facts(
    user_text: str, *, confidence: float = 0.6, people: People | None = None
) -> list[ExtractedFact]:
    """Facts the user states about themselves and the people in their life, in text order,
    without duplicates. ``people``: the cast of the conversation so far (the same object
    for every message of a session), so that "she" or "Ana" in a later message finds the
    person named before; it learns the people this message names.

    Never raises for any ``user_text``; raises ``ValueError`` if ``confidence``
    is outside 0..1.
    """
    if not 0.0 <= confidence <= 1.0 or math.isnan(confidence):
        raise ValueError(f"confidence must be within 0..1, not {confidence!r}")
    text = user_text[:4000]
    if people is None:
        people = People()
    people.text, people.about_work, people.last = text, _WORK.search(text) is not None, None
    seen: set[str] = set()
    facts: list[ExtractedFact] = []
    for clause in clauses(user_text):
        chinese = any(is_cjk(char) for char in clause.text)
        read = chinese_statements if chinese else english_statements
        for statement in read(clause, people):
            if len(statement.value) > (_MAX_CHINESE_VALUE if chinese else _MAX_VALUE):
                continue
            key = statement.content.casefold()
            if key not in seen:
                seen.add(key)
                facts.append(_fact(statement, confidence))
    return facts


def structure_of(content: str) -> ExtractedFact | None:
    """The structure of one fact written by hand ("User lives in Porto", "Lives in Porto",
    "I'm vegetarian", "住在北京"): the single fact the extractor reads in it, else None."""
    found = extract_facts(content)
    if not found and content[:1].isalpha():
        chinese = is_cjk(content[0])
        prefixed = "用户" + content if chinese else "User " + content[0].lower() + content[1:]
        found = extract_facts(prefixed)
    return found[0] if len(found) == 1 else None
