"""Fact extraction through the model: schema-constrained, strictly decoded, retried, tallied.

With Ollama unreachable, a rule-based extractor (English and Chinese patterns)
keeps memory useful; its facts are marked ``extractor="rules"`` and the turns
stay pending so the model sees them once it is back.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import msgspec

from actors.errors import LlmFailure, LlmInvalidOutput, LlmUnavailable, MnemoError, ModelBusy
from actors.model_queue import ModelQueue
from actors.ports import Llm
from memory.predicates import Vocabulary
from memory.prompts import Exchange, classification_prompt, extraction_prompt
from memory.rules_extractor import extract_facts
from memory.statements import People
from schemas.llm import Extraction, MemoryUpdate, SessionAnalysis
from schemas.records import Fact
from schemas.settings import Settings

__all__ = ["ExtractionFailed", "ExtractionResult", "ExtractionStats", "Extractor"]

_log = logging.getLogger("mnemo.extraction")
_decoder = msgspec.json.Decoder(Extraction)
_SCHEMA: dict[str, Any] = msgspec.json.schema(Extraction)
_ATTEMPTS = 3


class ExtractionFailed(MnemoError):
    """Every attempt failed or was invalid; the turns stay pending."""

    code = "extraction_failed"


@dataclass(slots=True)
class ExtractionStats:
    """Outcomes of extraction calls: each call counts once."""

    succeeded: int = 0
    invalid: int = 0
    failed: int = 0
    by_rules: int = 0


class _Classified(msgspec.Struct, frozen=True):
    category: str


@dataclass(frozen=True, slots=True)
class ExtractionResult:
    extraction: Extraction
    #: True when the rule-based extractor stood in for an unreachable model.
    by_rules: bool


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
        self._predicates = Vocabulary(settings.predicates).specs
        self.stats = ExtractionStats()

    async def extract(
        self,
        user_id: str,
        exchanges: Sequence[Exchange],
        *,
        known_facts: Sequence[Fact] = (),
        people: People | None = None,
    ) -> ExtractionResult:
        """Extract from ``exchanges`` of ``user_id``. Raises ``ExtractionFailed`` after the
        last retry, ``ModelBusy`` when the user has too many model calls waiting."""
        system, prompt = extraction_prompt(
            exchanges,
            categories=self._categories,
            predicates=self._predicates,
            known_facts=known_facts,
        )
        delay = self._backoff
        reason = "no attempt"
        for attempt in range(1, _ATTEMPTS + 1):
            try:
                extraction = _decoder.decode(await self._ask(user_id, prompt, system, _SCHEMA))
            except ModelBusy:
                raise  # the turns stay pending, for the retry
            except LlmUnavailable as exc:
                _log.info("extraction model unreachable (%s): using the rule-based extractor", exc)
                self.stats.by_rules += 1
                return ExtractionResult(self._by_rules(exchanges, people), by_rules=True)
            except (msgspec.DecodeError, LlmInvalidOutput) as exc:
                self.stats.invalid += 1
                reason = f"invalid output: {exc}"
            except (LlmFailure, TimeoutError) as exc:
                self.stats.failed += 1
                reason = f"{type(exc).__name__}: {exc}"
            else:
                self.stats.succeeded += 1
                return ExtractionResult(extraction, by_rules=False)
            _log.warning("extraction attempt %d/%d rejected: %s", attempt, _ATTEMPTS, reason)
            if attempt < _ATTEMPTS:
                await anyio.sleep(delay)
                delay *= 2
        raise ExtractionFailed(reason)

    async def _ask(
        self,
        user_id: str,
        prompt: str,
        system: str,
        schema: dict[str, Any],
        *,
        urgent: bool = False,
    ) -> str:
        """One structured call of the extraction model, in the user's turn (an ``urgent``
        one in the lane of its own) and within ``extract_timeout``."""
        async with self._queue.turn(user_id, urgent=urgent):
            with anyio.fail_after(self._settings.extract_timeout):
                return await self._llm.generate_json(
                    prompt, model=self._settings.extract_model, schema=schema, system=system
                )

    async def classify(self, user_id: str, content: str) -> str | None:
        """The category the model gives a fact ``user_id`` added by hand (seed 004), or None
        when it cannot say (unreachable, slow, busy, or an answer outside the taxonomy):
        the caller's rules decide then. One attempt, within ``extract_timeout``; someone
        waits for it, so it is urgent."""
        system, prompt = classification_prompt(content, self._headings)
        try:
            answer = msgspec.json.decode(
                await self._ask(user_id, prompt, system, self._classes, urgent=True),
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
