"""A model's facts are proposals: each is checked against what the user said before it is kept.

``review`` takes the facts a model extracted from some turns, the user's words in
those turns and what the rule-based reader found in them, and returns what stands:

- a fact about a person other than the user whom the user did not name (a word they
  wrote capitalised inside a sentence) or refer to ("my sister") is dropped
  (``subject_not_said``); so is one whose predicate is a sentence rather than a name
  (``predicate_not_a_name``), one whose value is mostly not the user's words or is a
  sentence (``value_not_said``), and one that carries markup of the prompt
  (``markup``);
- a fact whose value is said only in questions or hedged clauses ("maybe", "if",
  "thinking about") is dropped (``not_stated``); a negation the user did not say,
  too (``negation_not_said``); a fact about the user read from a clause about
  someone else, too (``someone_else``);
- its predicate is mapped into the vocabulary (an alias or a near spelling, such as
  ``works_on`` for ``works_at``, becomes the known name); a predicate outside it
  accumulates (``cardinality`` ``many``) and never supersedes, and
  ``updates_previous`` is believed only for a one-valued predicate in a clause that
  says so ("now", "moved", "switched");
- the reader's facts all stand: where the model reads the same value or the same
  one-valued slot differently (``allergic_to peanuts`` read as ``has_pet peanuts``)
  the model's fact is dropped (``reader_disagrees``); where it reads the same fact,
  the model's (often better worded) stands for both.

So a model can only add to what the reader knows. Pure and deterministic.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import msgspec

from memory.clauses import Clause, clauses
from memory.lexicon import HEDGES, RELATIONS
from memory.predicates import Vocabulary, canonical_subject, normalize_predicate, value_words
from memory.tokens import is_cjk
from schemas.llm import ExtractedFact
from schemas.records import Fact

__all__ = ["REASONS", "Dropped", "Reviewed", "not_overtaken", "review"]

#: Why a model's fact was dropped, in the order the checks run.
REASONS = (
    "unreadable",
    "markup",
    "subject_not_said",
    "predicate_not_a_name",
    "value_not_said",
    "not_stated",
    "negation_not_said",
    "someone_else",
    "reader_disagrees",
)
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
_FIRST_PERSON = frozenset("i i'm i've i'd my me mine myself we our us".split())
_NEGATIONS = frozenset("not no never longer anymore stopped quit without cannot".split())
_UPDATES = frozenset("now moved switched changed anymore longer instead new since became".split())
_CJK_HEDGES = ("可能", "也许", "如果", "大概", "或许", "打算", "考虑", "要是")
_CJK_NEGATIONS = ("不", "没", "别", "戒")
_CJK_UPDATES = ("现在", "改", "搬", "换", "已经", "不再")
#: How close a predicate's spelling must be to a known name to be taken for it.
_NEAR = 0.8
#: A predicate of more words than this is a sentence, not a name.
_PREDICATE_WORDS = 3
#: A person's name or relation of more words than this is no name.
_SUBJECT_WORDS = 3
#: A value of more words than this is a sentence, not a value; at least this share of
#: a value's words must be the user's.
_VALUE_WORDS = 8
_SAID_SHARE = 0.5
#: A capitalised word that does not start a sentence: a name.
_NAME = re.compile(r"(?<=[\w,;'\u2019)] )[A-Z][\w'-]*")


@dataclass(frozen=True, slots=True)
class Dropped:
    reason: str
    content: str


@dataclass(frozen=True, slots=True)
class Reviewed:
    """What stands of one extraction."""

    #: The model's facts that add to the reader's, mapped into the vocabulary.
    model: list[ExtractedFact]
    #: The reader's facts, stored beside them.
    reader: list[ExtractedFact]
    dropped: list[Dropped]


@dataclass(frozen=True, slots=True)
class _Said:
    """The user's words in the turns a model read."""

    text: str
    words: frozenset[str]
    clauses: tuple[Clause, ...]
    #: Words the user wrote capitalised inside a sentence (names), casefolded.
    names: frozenset[str]

    @staticmethod
    def of(user_texts: Sequence[str]) -> _Said:
        text = "\n".join(user_texts)
        return _Said(
            text=text.casefold(),
            words=frozenset(value_words(text)),
            clauses=tuple(c for t in user_texts for c in clauses(t)),
            names=frozenset(m.group().casefold() for m in _NAME.finditer(text)),
        )

    def has(self, word: str) -> bool:
        return word in self.text if any(is_cjk(c) for c in word) else word in self.words

    def share_of(self, phrase: str | None) -> float:
        words = value_words(phrase)
        return sum(self.has(w) for w in words) / len(words) if words else 0.0

    def person(self, subject: str, relation: str | None) -> bool:
        """``subject`` is someone the user named or referred to: a name they wrote (or
        Chinese they wrote), or a relation ("sister") they used."""
        words = value_words(subject)
        if not words or len(words) > _SUBJECT_WORDS:
            return False
        if any(is_cjk(c) for c in subject):
            return subject.casefold() in self.text
        named = all(w in self.names or (w in RELATIONS and self.has(w)) for w in words)
        related = relation is not None and any(
            w in RELATIONS and self.has(w) for w in value_words(relation)
        )
        return named or (related and all(self.has(w) for w in words))

    def clauses_with(self, value: str) -> list[Clause]:
        words = value_words(value)
        return [c for c in self.clauses if any(_in_clause(w, c) for w in words)]


def _in_clause(word: str, clause: Clause) -> bool:
    if any(is_cjk(c) for c in word):
        return word in clause.text
    return word in value_words(clause.text)


def _tokens(clause: Clause) -> set[str]:
    return set(_WORD.findall(clause.text.casefold().replace("\u2019", "'")))


def _has(clause: Clause, english: frozenset[str], chinese: Sequence[str]) -> bool:
    return bool(_tokens(clause) & english) or any(c in clause.text for c in chinese)


def _hedged(clause: Clause) -> bool:
    return clause.question or _has(clause, HEDGES, _CJK_HEDGES)


def _negated(clause: Clause) -> bool:
    return _has(clause, _NEGATIONS, _CJK_NEGATIONS) or "n't" in clause.text.casefold()


def _first_person(clause: Clause) -> bool:
    return bool(_tokens(clause) & _FIRST_PERSON) or "我" in clause.text


def _about_someone(clause: Clause) -> bool:
    return bool(_tokens(clause) & RELATIONS)


class _Predicates:
    """Maps a model's predicate onto the vocabulary: its name, an alias, or a near one."""

    def __init__(self, vocabulary: Vocabulary) -> None:
        self.vocabulary = vocabulary
        self._names = {
            normalize_predicate(name): spec.name
            for spec in vocabulary.specs
            for name in (spec.name, *spec.aliases)
        }

    def known(self, predicate: str) -> str | None:
        spec = self.vocabulary.spec(predicate)
        if spec is not None:
            return spec.name
        near = difflib.get_close_matches(normalize_predicate(predicate), self._names, 1, _NEAR)
        return self._names[near[0]] if near else None


def review(
    proposed: Sequence[ExtractedFact],
    user_texts: Sequence[str],
    reader: Sequence[ExtractedFact],
    vocabulary: Vocabulary,
) -> Reviewed:
    """What stands of a model's ``proposed`` facts about turns in which the user wrote
    ``user_texts`` and the rule-based reader found ``reader`` (see the module docstring)."""
    said = _Said.of(user_texts)
    predicates = _Predicates(vocabulary)
    kept: list[ExtractedFact] = []
    dropped: list[Dropped] = []
    confirmed: set[int] = set()
    for fact in proposed:
        reason, mapped = _check(fact, said, predicates)
        if mapped is not None:
            reason, mapped, same = _meet(mapped, reader, vocabulary)
            confirmed.update(same)
        if reason is not None or mapped is None:
            dropped.append(Dropped(reason or "unreadable", fact.content))
        else:
            kept.append(mapped)
    rest = [r for i, r in enumerate(reader) if i not in confirmed]
    return Reviewed(model=kept, reader=rest, dropped=dropped)


def _check(
    fact: ExtractedFact, said: _Said, predicates: _Predicates
) -> tuple[str | None, ExtractedFact | None]:
    fields = (fact.content, fact.subject, fact.value, fact.relation or "")
    if any("<" in f or "episode_content" in f for f in fields):
        return "markup", None
    user = canonical_subject(fact.subject) == "user"
    if not user and not said.person(fact.subject, fact.relation):
        return "subject_not_said", None
    name = predicates.known(fact.predicate)
    if name is None and len(normalize_predicate(fact.predicate).split("_")) > _PREDICATE_WORDS:
        return "predicate_not_a_name", None
    if len(value_words(fact.value)) > _VALUE_WORDS or said.share_of(fact.value) < _SAID_SHARE:
        return "value_not_said", None
    where = said.clauses_with(fact.value)
    if where and all(_hedged(c) for c in where):
        return "not_stated", None
    if fact.negated and where and not any(_negated(c) for c in where):
        return "negation_not_said", None
    if user and where and not any(_first_person(c) or not _about_someone(c) for c in where):
        return "someone_else", None
    one = name is not None and predicates.vocabulary.cardinality(name) == "one"
    updates = fact.updates_previous and one and any(_has(c, _UPDATES, _CJK_UPDATES) for c in where)
    return None, msgspec.structs.replace(
        fact,
        predicate=name or normalize_predicate(fact.predicate)[:64] or fact.predicate,
        # Outside the vocabulary a predicate accumulates, whatever the model said.
        cardinality=None if name is not None else "many",
        updates_previous=updates,
    )


def _meet(
    fact: ExtractedFact, reader: Sequence[ExtractedFact], vocabulary: Vocabulary
) -> tuple[str | None, ExtractedFact | None, list[int]]:
    """The model's fact against the reader's: (why it is dropped, or None; the fact as it
    stands; the reader's facts it confirms, which it stands for). A model's predicate
    outside the vocabulary on a value the reader read takes the reader's structure."""
    confirms: list[int] = []
    known = vocabulary.spec(fact.predicate) is not None
    for i, read in enumerate(reader):
        shared = bool(set(value_words(read.value)) & set(value_words(fact.value)))
        if not _same_subject(read, fact):
            if shared and canonical_subject(fact.subject) == "user":
                return "someone_else", None, []
            continue
        slot = vocabulary.canonical(read.predicate) == vocabulary.canonical(fact.predicate)
        same_slot = slot and read.key == fact.key
        family = vocabulary.family(read.predicate)
        related = same_slot or (family is not None and family == vocabulary.family(fact.predicate))
        if shared and read.negated != fact.negated:
            return "reader_disagrees", None, []
        if shared and not known:
            fact = msgspec.structs.replace(
                fact,
                subject=read.subject,
                relation=read.relation,
                predicate=read.predicate,
                value=read.value,
                key=read.key,
                cardinality=read.cardinality,
            )
            known = True
            confirms.append(i)
        elif shared and related:
            confirms.append(i)
        elif shared and vocabulary.spec(read.predicate) is not None:
            return "reader_disagrees", None, []  # the same words, read as something else
        elif same_slot and vocabulary.cardinality(read.predicate) == "one" and not shared:
            return "reader_disagrees", None, []
    if confirms:  # the reader read it too: no less sure, and in the reader's words
        # (a model often copies the user's whole sentence, which names other facts too)
        best = max(reader[i].confidence for i in confirms)
        fact = msgspec.structs.replace(
            fact, confidence=max(fact.confidence, best), content=reader[confirms[0]].content
        )
    return None, fact, confirms


def _same_subject(a: ExtractedFact, b: ExtractedFact) -> bool:
    return canonical_subject(a.subject) == canonical_subject(b.subject)


def not_overtaken(
    facts: Sequence[ExtractedFact],
    known: Sequence[Fact],
    said_at: datetime,
    vocabulary: Vocabulary,
) -> list[ExtractedFact]:
    """``facts`` a late answer found in turns said at ``said_at`` (a retry of turns whose
    extraction did not finish in their session), without those whose subject and
    predicate a fact of ``known`` (any validity) took up after then: what the user said
    later stands ("I eat meat", retried after "I don't eat meat anymore", adds nothing)."""

    def slot(subject: str | None, predicate: str | None) -> tuple[str, str | None]:
        return canonical_subject(subject), vocabulary.canonical(predicate)

    later = {slot(f.subject, f.predicate) for f in known if f.updated_at > said_at}
    return [f for f in facts if slot(f.subject, f.predicate) not in later]
