"""Consolidator: seed 002's batch path from pending episodes to facts and rules.

Per user, the pending episodes (oldest first) are grouped by scope; each group's
prompt (``memory.consolidation.prompt``) goes to the model, its answer is parsed
(``memory.consolidation.parse``) and every action runs on its own: a failing one is
logged and reported, and the rest still run. Facts go through the same rules as
per-turn extraction (the keeper: dedup, supersession by key, the cap), each linked
``derived_from`` its episodes; then the group's episodes are marked consolidated. A
group whose model call fails stays pending (its ``retry_count`` and ``last_error``
say why) and the other groups go on. Without a model (``dry_run``, or Ollama
unreachable) only the grouping and counting happen.

One run of a user at a time: a call that finds another run of the same user under way
(an agent's call, REST, the scheduled sweep) waits for it. Then, if a run that started
after the call arrived has ended meanwhile, that run took everything the call would
have, and its report is the call's answer; otherwise the call runs. So sixteen calls at
once make two runs, no episode goes to the model twice and no rule is stored twice, and
one user's storm of calls holds one model call and one group's writes at a time. A
rule already held in its scope is reinforced anyway (``RuleKeeper``).
Each model call waits for the user's turn (``actors.model_queue``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import msgspec

from actors.audit import record_one
from actors.errors import LlmFailure, LlmUnavailable, MnemoError
from actors.events import EventBus
from actors.keeper import FactKeeper, Stated
from actors.keyed import KeyedLocks
from actors.model_queue import ModelQueue
from actors.ports import Clock, Llm, Store
from actors.rules import RuleKeeper
from actors.writer import ArchiveWriter
from memory.consolidation.parse import ConsolidationResult, NewFact, parse_consolidation
from memory.consolidation.prompt import (
    MAX_FACTS,
    MAX_RULES,
    SCHEMA,
    SYSTEM,
    consolidation_prompt,
)
from memory.facts import Changes
from memory.model_answers import answer_tokens
from memory.rules import is_forgotten
from memory.stats import in_scope
from schemas.records import Episode, MemoryLink
from schemas.settings import Settings

__all__ = ["ConsolidationReport", "Consolidator"]

_log = logging.getLogger("mnemo.consolidation")


@dataclass(slots=True)
class ConsolidationReport:
    """What one run did (seed 002's counts, and every error it met)."""

    episodes: int = 0
    groups: int = 0
    dry_run: bool = False
    consolidated: int = 0
    facts_added: int = 0
    facts_updated: int = 0
    rules_added: int = 0
    confirmed: int = 0
    errors: list[str] = field(default_factory=list)

    def view(self) -> dict[str, Any]:
        return {
            "episodes": self.episodes,
            "groups": self.groups,
            "dry_run": self.dry_run,
            "consolidated": self.consolidated,
            "facts_added": self.facts_added,
            "facts_updated": self.facts_updated,
            "rules_added": self.rules_added,
            "confirmed": self.confirmed,
            "errors": list(self.errors),
        }


def _derived(
    user_id: str, kind: str, item_id: str, episodes: Sequence[Episode], now: datetime
) -> list[MemoryLink]:
    """``derived_from`` links from a fact or rule to each episode it came from."""
    return [
        MemoryLink(
            user_id=user_id,
            source_type="fact" if kind == "fact" else "rule",
            source_id=item_id,
            target_type="episode",
            target_id=e.id,
            relation="derived_from",
            created_at=now,
        )
        for e in episodes
    ]


class Consolidator:
    def __init__(
        self,
        llm: Llm,
        store: Store,
        writer: ArchiveWriter,
        keeper: FactKeeper,
        rules: RuleKeeper,
        settings: Settings,
        clock: Clock,
        bus: EventBus | None = None,
        queue: ModelQueue | None = None,
    ) -> None:
        self._llm, self._store, self._writer = llm, store, writer
        self._keeper, self._rules, self._settings, self._clock = keeper, rules, settings, clock
        self._bus = bus
        self._queue = queue or ModelQueue(settings.extract_concurrency)
        #: The users being consolidated, each by one run at a time ...
        self._running = KeyedLocks()
        #: ... and, while a user's runs are asked for, how many ended and the last one's
        #: report.
        self._runs: dict[str, tuple[int, ConsolidationReport]] = {}

    async def run(self, user_id: str, *, dry_run: bool = False) -> ConsolidationReport:
        """Consolidate the user's pending episodes (``memory_run_consolidation``), after
        any run of theirs under way (see the module); a ``dry_run`` only counts them."""
        if dry_run:
            return self._counted(await self._pending(user_id), dry_run=True)
        arrived = self._runs.get(user_id, (0, None))[0]
        try:
            async with self._running.hold(user_id):
                ended, last = self._runs.get(user_id, (0, None))
                if ended > arrived + 1 and last is not None:
                    # Two runs ended since this call arrived, so the last one started
                    # after it and took everything pending then: its report answers.
                    return last
                report = await self._consolidate(user_id)
                self._runs[user_id] = (ended + 1, report)
                return report
        finally:
            if user_id not in self._running:
                self._runs.pop(user_id, None)  # nobody asks: forget the count

    async def _consolidate(self, user_id: str) -> ConsolidationReport:
        """One run over everything pending now (the caller holds the user)."""
        pending = await self._pending(user_id)
        report = self._counted(pending, dry_run=False)
        groups: dict[str, list[tuple[Episode, Any]]] = {}
        for item in pending:
            groups.setdefault(item[0].scope, []).append(item)
        for scope, items in sorted(groups.items()):
            if report.dry_run:
                break
            try:
                await self._group(user_id, scope, items, report)
            except LlmUnavailable as exc:
                report.dry_run = True  # no model: nothing more can be consolidated now
                report.errors.append(f"{scope}: {exc}")
            except (LlmFailure, MnemoError) as exc:
                report.errors.append(f"{scope}: {exc}")
                _log.warning("consolidation of %s for user %s failed: %s", scope, user_id, exc)
                await self._failed(items, str(exc))
        return report

    async def _pending(self, user_id: str) -> list[tuple[Episode, Any]]:
        return [
            (e, v) for e, v in await self._store.episodes.episodes_of(user_id) if not e.consolidated
        ]

    @staticmethod
    def _counted(pending: Sequence[tuple[Episode, Any]], *, dry_run: bool) -> ConsolidationReport:
        scopes = {e.scope for e, _ in pending}
        return ConsolidationReport(episodes=len(pending), groups=len(scopes), dry_run=dry_run)

    async def _failed(self, items: Sequence[tuple[Episode, Any]], error: str) -> None:
        changed = [
            (
                msgspec.structs.replace(e, retry_count=e.retry_count + 1, last_error=error[:500]),
                v,
            )
            for e, v in items
        ]
        await self._writer.call(lambda: self._store.episodes.put_episodes(changed))

    async def _group(
        self,
        user_id: str,
        scope: str,
        items: Sequence[tuple[Episode, Any]],
        report: ConsolidationReport,
    ) -> None:
        episodes = [e for e, _ in items]
        facts = sorted(
            (
                s.fact
                for s in await self._store.facts.facts_of(user_id)
                if in_scope(s.fact.scope, scope)
            ),
            key=lambda f: f.updated_at,
            reverse=True,
        )[:MAX_FACTS]
        rules = [
            s.rule
            for s in await self._store.rules.rules_of(user_id, scope=scope)
            if not is_forgotten(s.rule)
        ][-MAX_RULES:]
        async with self._queue.turn(user_id):
            answer = await self._llm.generate_json(
                consolidation_prompt(scope, episodes, facts, rules),
                model=self._settings.extract_model,
                schema=SCHEMA,
                system=SYSTEM,
                max_tokens=answer_tokens(SCHEMA),
            )
        result = parse_consolidation(answer)
        report.errors += [f"{scope}: {e}" for e in result.parse_errors]
        links = await self._execute(user_id, scope, episodes, result, report)
        done = [
            (msgspec.structs.replace(e, consolidated=True, consolidation_status="consolidated"), v)
            for e, v in items
        ]

        async def write() -> None:
            await self._store.episodes.put_episodes(done)
            await self._store.links.add_links(links)
            await record_one(
                self._store,
                self._bus,
                user_id,
                self._clock.now(),
                "episodes_consolidated",
                by="consolidation",
                scope=scope,
                episodes=len(done),
            )

        await self._writer.call(write)
        report.consolidated += len(done)
        _log.info("consolidated %d episodes of %s for user %s", len(done), scope, user_id)

    async def _execute(
        self,
        user_id: str,
        scope: str,
        episodes: Sequence[Episode],
        result: ConsolidationResult,
        report: ConsolidationReport,
    ) -> list[MemoryLink]:
        """Run every action on its own; return the ``derived_from`` links to write."""
        now = self._clock.now()
        links: list[MemoryLink] = []
        facts = [(f, "new_facts") for f in result.new_facts]
        facts += [(f, "updated_facts") for f in result.updated_facts]
        for fact, kind in facts:
            try:
                changes = await self._store_fact(user_id, scope, fact, episodes[0].id)
            except (ValueError, MnemoError) as exc:
                report.errors.append(f"{scope}: {kind} {fact.content[:60]!r}: {exc}")
                continue
            made = [s.fact.id for s in changes.added] or [f.id for f in changes.updated]
            for fact_id in made:
                links += _derived(user_id, "fact", fact_id, episodes, now)
            if kind == "new_facts":
                report.facts_added += len(changes.added)
            else:
                report.facts_updated += 1
        statements = [(r.content, r.tags) for r in result.new_rules]
        try:  # one write for the group's rules
            stored = await self._rules.store_rules(
                user_id, statements, scope=scope, source_episode_id=episodes[0].id
            )
        except (ValueError, MnemoError) as exc:
            report.errors.append(f"{scope}: new_rules: {exc}")
            stored = []
        for rule, new in stored:
            links += _derived(user_id, "rule", rule.id, episodes, now)
            if new:
                report.rules_added += 1
        for memory_id in result.confirmations:
            try:
                confirm = (
                    self._keeper.confirm if memory_id.startswith("fact_") else self._rules.confirm
                )
                if await confirm(user_id, memory_id) is None:
                    report.errors.append(f"{scope}: confirmations: no such memory {memory_id}")
                    continue
            except MnemoError as exc:
                report.errors.append(f"{scope}: confirmations {memory_id}: {exc}")
                continue
            report.confirmed += 1
        return links

    async def _store_fact(
        self, user_id: str, scope: str, fact: NewFact, episode_id: str
    ) -> Changes:
        return await self._keeper.remember(
            user_id,
            fact.content,
            category=None,
            pinned=False,
            session_id=None,
            scope=scope,
            stated=Stated(
                subject=fact.subject,
                predicate=fact.predicate,
                importance=fact.importance,
                permanence=fact.permanence,
                tags=fact.tags,
                extractor="consolidation",
                source_scope=scope,
                source_episode_id=episode_id,
            ),
        )
