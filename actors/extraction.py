"""Fact extraction: the rule-based reader, and a model whose facts may only add to it.

Every extraction runs the rule-based reader (English and Chinese patterns) on the
user's words; its facts are marked ``extractor="rules"``. The model's answer
(schema-constrained, read fact by fact, capped in length) is reviewed against those
words and the reader's facts (``memory.grounding``), and what stands is stored
beside them. With the model unreachable or failing, the reader's facts stand
alone and the turns stay pending, so the model sees them once it is back.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import msgspec

from actors.errors import LlmError, LlmFailure, LlmInvalidOutput, LlmUnavailable, ModelBusy
from actors.model_queue import ModelQueue
from actors.ports import Llm
from memory.grounding import review
from memory.model_answers import answer_tokens, extraction_schema, read_extraction
from memory.predicates import Vocabulary
from memory.prompts import Exchange, classification_prompt, extraction_prompt
from memory.rules_extractor import extract_facts
from memory.statements import People
from schemas.llm import ExtractedFact, Extraction, MemoryUpdate, SessionAnalysis
from schemas.records import Fact
from schemas.settings import Settings

__all__ = ["ExtractionResult", "ExtractionStats", "Extractor"]

_log = logging.getLogger("mnemo.extraction")
_ATTEMPTS = 3


@dataclass(slots=True)
class ExtractionStats:
    """Outcomes of extraction calls (each call counts once), and why the model's facts
    that did not stand were dropped (``memory.grounding.REASONS``, and ``unreadable``)."""

    succeeded: int = 0
    invalid: int = 0
    failed: int = 0
    by_rules: int = 0
    rejected: dict[str, int] = field(default_factory=dict)


class _Classified(msgspec.Struct, frozen=True):
    category: str


@dataclass(frozen=True, slots=True)
class ExtractionResult:
    extraction: Extraction
    #: True when the rule-based reader stood in for a model that could not answer
    #: (unreachable, or failing every attempt): the turns stay pending for the model.
    by_rules: bool
    #: The reader's facts, stored beside the model's (which only add to them).
    reader: list[ExtractedFact] = field(default_factory=list)
    #: How many of the model's facts were dropped, by reason.
    rejected: dict[str, int] = field(default_factory=dict)
    #: Why the model could not answer, when ``by_rules`` for a failure.
    failure: LlmFailure | None = None


class Extractor:
    """Shared by all sessions; its calls wait for their user's turn in ``queue``
    (``actors.model_queue``; by default one of its own, of ``extract_concurrency`` places)."""

    def __init__(
        self,
        llm: Llm,
        settings: Settings,
        *,
        queue: ModelQueue | None = None,
        backoff: float = 0.5,
    ) -> None:
        self._llm, self._settings = llm, settings
        self._queue = queue or ModelQueue(settings.extract_concurrency)
        self._backoff = backoff
        self._categories = [c.name for c in settings.categories]
        self._headings = [(c.name, c.heading) for c in settings.categories]
        self._classes = {
            "type": "object",
            "properties": {"category": {"type": "string", "enum": self._categories}},
            "required": ["category"],
        }
        self._vocabulary = Vocabulary(settings.predicates)
        self._predicates = self._vocabulary.specs
        self.stats = ExtractionStats()

    def prompt_prefix(self) -> tuple[str, str]:
        """(system, start of the user message) every extraction call begins with: what to
        warm a model with so that calls evaluate only their own turns."""
        system, prompt = extraction_prompt(
            [], categories=self._categories, predicates=self._predicates
        )
        return system, prompt

    async def warm_up(self) -> None:
        """Load the extraction model and have it read what every extraction call starts
        with (the system prompt, the start of the conversation), so that the first call
        evaluates only its own turns: a small model on a CPU otherwise spends tens of
        seconds on the first. One token is asked for; never raises."""
        system, prefix = self.prompt_prefix()
        started = anyio.current_time()
        try:
            await self._llm.generate_json(
                prefix,
                model=self._settings.extract_model,
                schema=extraction_schema(turns=1, categories=self._categories),
                system=system,
                max_tokens=1,
            )
        except LlmInvalidOutput:
            pass  # cut at its one token, as asked
        except LlmFailure as exc:
            _log.info("the extraction model was not warmed up: %s", exc)
            return
        _log.info(
            "extraction model %s warmed up in %.1f s",
            self._settings.extract_model,
            anyio.current_time() - started,
        )

    async def extract(
        self,
        user_id: str,
        exchanges: Sequence[Exchange],
        *,
        known_facts: Sequence[Fact] = (),
        people: People | None = None,
    ) -> ExtractionResult:
        """Extract from ``exchanges`` of ``user_id``: the rule-based reader's facts, and the
        model's that stand beside them (``memory.grounding``). A model that cannot answer
        (unreachable, or failing ``_ATTEMPTS`` times) leaves the reader's alone
        (``by_rules``); one whose answer cannot be read, too, but that turn is done.
        Raises ``ModelBusy`` when the user has too many model calls waiting."""
        system, prompt = extraction_prompt(
            exchanges,
            categories=self._categories,
            predicates=self._predicates,
            known_facts=known_facts,
        )
        reader = self._by_rules(exchanges, people)
        schema = extraction_schema(turns=len(exchanges), categories=self._categories)
        limit = answer_tokens(schema, turns=len(exchanges))
        delay = self._backoff
        failure: LlmFailure = LlmError("no attempt")
        for attempt in range(1, _ATTEMPTS + 1):
            try:
                read = read_extraction(await self._ask(user_id, prompt, system, schema, limit))
            except ModelBusy:
                raise  # the turns stay pending, for the retry
            except LlmUnavailable as exc:
                _log.info("extraction model unreachable (%s): using the rule-based extractor", exc)
                self.stats.by_rules += 1
                return ExtractionResult(reader, by_rules=True)
            except (msgspec.DecodeError, LlmInvalidOutput) as exc:
                # At temperature 0 the same prompt gets the same answer: no retry.
                self.stats.invalid += 1
                _log.warning("extraction answer unusable (%s): the reader's facts stand", exc)
                return self._reviewed(None, exchanges, reader, [])
            except LlmFailure as exc:
                self.stats.failed += 1
                failure = exc
            else:
                self.stats.succeeded += 1
                return self._reviewed(read.extraction, exchanges, reader, read.dropped)
            _log.warning(
                "extraction attempt %d/%d failed: %s: %s",
                attempt,
                _ATTEMPTS,
                type(failure).__name__,
                failure,
            )
            if attempt < _ATTEMPTS:
                await anyio.sleep(delay)
                delay *= 2
        _log.warning("extraction gave up (%s): the rule-based reader's facts stand", failure)
        self.stats.by_rules += 1
        return ExtractionResult(reader, by_rules=True, failure=failure)

    def _reviewed(
        self,
        answer: Extraction | None,
        exchanges: Sequence[Exchange],
        reader: Extraction,
        unreadable: Sequence[str],
    ) -> ExtractionResult:
        proposed = answer.facts if answer is not None else []
        reviewed = review(proposed, [e.user for e in exchanges], reader.facts, self._vocabulary)
        rejected: dict[str, int] = {}
        for reason in ["unreadable"] * len(unreadable) + [d.reason for d in reviewed.dropped]:
            rejected[reason] = rejected.get(reason, 0) + 1
            self.stats.rejected[reason] = self.stats.rejected.get(reason, 0) + 1
        for why in unreadable:
            _log.info("dropped a model fact (unreadable): %s", why)
        for dropped in reviewed.dropped:
            _log.info("dropped a model fact (%s): %s", dropped.reason, dropped.content)
        extraction = Extraction(
            facts=reviewed.model,
            memory_update=answer.memory_update if answer is not None else reader.memory_update,
            analysis=answer.analysis if answer is not None else SessionAnalysis(),
        )
        return ExtractionResult(
            extraction, by_rules=False, reader=reviewed.reader, rejected=rejected
        )

    async def _ask(
        self,
        user_id: str,
        prompt: str,
        system: str,
        schema: dict[str, Any],
        max_tokens: int,
        *,
        urgent: bool = False,
    ) -> str:
        """One structured call of the extraction model, in the user's turn (an ``urgent``
        one in the lane of its own). A model that keeps answering is not cut off: the
        port times out a silent one, and ``max_tokens`` bounds the answer."""
        async with self._queue.turn(user_id, urgent=urgent):
            return await self._llm.generate_json(
                prompt,
                model=self._settings.extract_model,
                schema=schema,
                system=system,
                max_tokens=max_tokens,
            )

    async def classify(self, user_id: str, content: str) -> str | None:
        """The category the model gives a fact ``user_id`` added by hand (seed 004), or None
        when it cannot say (unreachable, slow, busy, or an answer outside the taxonomy):
        the caller's rules decide then. One attempt, within ``extract_timeout``; someone
        waits for it, so it is urgent."""
        system, prompt = classification_prompt(content, self._headings)
        try:
            with anyio.fail_after(self._settings.extract_timeout):
                answer = msgspec.json.decode(
                    await self._ask(user_id, prompt, system, self._classes, 32, urgent=True),
                    type=_Classified,
                )
        except (LlmFailure, TimeoutError, msgspec.DecodeError) as exc:
            _log.info("no category from the model (%s): the rules classify", exc)
            return None
        return answer.category if answer.category in self._categories else None

    def _by_rules(self, exchanges: Sequence[Exchange], people: People | None) -> Extraction:
        confidence = self._settings.rules_confidence
        people = people if people is not None else People()
        facts = [
            f
            for ex in exchanges
            for f in extract_facts(ex.user, confidence=confidence, people=people)
        ]
        return Extraction(
            facts=facts,
            memory_update=MemoryUpdate(should_store=bool(facts)),
            analysis=SessionAnalysis(),
        )
