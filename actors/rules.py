"""RuleKeeper: seed 002's rules, stored, fed back on and swept through the learned-memory writer.

Every change is a read-modify-write of one rule inside the writer's task, so two
feedback marks on a rule never lose one another. The rules themselves (the
maturity ladder, the feedback formulas, decay, inversion) are pure: ``memory.rules``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence

from actors.audit import CHANGED_BY, record, record_one
from actors.events import EventBus
from actors.ports import Clock, Embedder, Store
from actors.writer import ArchiveWriter
from memory import rules
from memory.events import EventMaker, new_event_id, rule_events
from memory.facts import fresh_id
from memory.rules import StoredRule
from schemas.records import Maturity, Outcome, Rule, RuleApplication

__all__ = ["RuleKeeper"]

_log = logging.getLogger("mnemo.rules")


class RuleKeeper:
    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        writer: ArchiveWriter,
        clock: Clock,
        bus: EventBus | None = None,
    ) -> None:
        self._store, self._embedder, self._writer, self._clock = store, embedder, writer, clock
        self._bus = bus

    async def store_rule(
        self,
        user_id: str,
        content: str,
        *,
        scope: str = "global",
        tags: Sequence[str] = (),
        source_episode_id: str | None = None,
    ) -> tuple[Rule, bool]:
        """A new candidate rule (``store_rule``), or, when the scope already holds the rule
        (``memory.rules.same_rule``), that rule reinforced; and whether it is new. Raises
        ``ValueError`` for blank content."""
        [stored] = await self.store_rules(
            user_id, [(content, tags)], scope=scope, source_episode_id=source_episode_id
        )
        return stored

    async def store_rules(
        self,
        user_id: str,
        statements: Sequence[tuple[str, Sequence[str]]],
        *,
        scope: str = "global",
        source_episode_id: str | None = None,
    ) -> list[tuple[Rule, bool]]:
        """``store_rule`` for each (content, tags), in one read and one write: a rule
        stated twice among them is stored once and reinforced once. Raises ``ValueError``
        when a content is blank (nothing is stored then)."""
        if any(not content.strip() for content, _ in statements):
            raise ValueError("content must not be blank")
        if not statements:
            return []
        vectors = await self._embedder.embed([content for content, _ in statements])

        async def write() -> list[tuple[Rule, bool]]:
            # In the writer's task: two statements of one rule never both find it missing.
            now, actor = self._clock.now(), CHANGED_BY.get()
            held = await self._store.rules.rules_of(user_id, scope=scope)
            stored: list[tuple[Rule, bool]] = []
            changed: dict[str, StoredRule] = {}
            logs: list[tuple[Rule | None, Rule, str]] = []
            for (content, tags), vector in zip(statements, vectors, strict=True):
                found = rules.same_rule(content, held, scope)
                if found is not None:
                    item = StoredRule(rules.reinforce(found.rule, now, tags), found.vector)
                    held = [item if h is found else h for h in held]
                    logs.append((found.rule, item.rule, "rule_reinforced"))
                else:
                    item = StoredRule(
                        rules.new_rule(
                            await self._new_id(user_id, changed),
                            user_id,
                            content,
                            now,
                            scope=scope,
                            tags=list(tags),
                            source_episode_id=source_episode_id,
                        ),
                        vector,
                    )
                    held = [*held, item]
                    logs.append((None, item.rule, "rule_created"))
                    _log.info("stored rule %s for user %s", item.rule.id, user_id)
                changed[item.rule.id] = item
                stored.append((item.rule, found is None))
            await self._store.rules.put_rules(list(changed.values()))
            event = EventMaker(user_id, actor, now, new_event_id)
            for before, after, cause in logs:
                rule_events(before, after, event, cause)
            await record(self._store, self._bus, event.made)  # one append for them all
            return stored

        return await self._writer.call(write)

    async def _new_id(self, user_id: str, taken: Collection[str]) -> str:
        """A rule id no rule of the user (nor ``taken``) has. A drawn id is checked alone:
        reading every rule (and its vector) to make one slowed creation as rules piled up."""
        rule_id = fresh_id("rule", taken)
        while await self._store.rules.get_rules(user_id, [rule_id]):
            rule_id = fresh_id("rule", {*taken, rule_id})
        return rule_id

    async def list_rules(
        self,
        user_id: str,
        *,
        scope: str | None = None,
        maturity: Maturity | None = None,
        forgotten: bool = False,
    ) -> list[Rule]:
        """The user's rules, oldest first; forgotten ones only when asked for."""
        found = [s.rule for s in await self._store.rules.rules_of(user_id, scope=scope)]
        return [
            r
            for r in found
            if rules.is_forgotten(r) == forgotten and (maturity is None or r.maturity == maturity)
        ]

    async def _change(
        self,
        user_id: str,
        rule_id: str,
        change: Callable[[Rule], Rule],
        cause: str | None,
        application: Callable[[Rule], RuleApplication] | None = None,
    ) -> Rule | None:
        """Apply ``change`` to the rule in the writer's task (and record the
        ``application`` it makes, in the same task); None when there is no such rule."""

        async def write() -> Rule | None:
            found = await self._store.rules.get_rules(user_id, [rule_id])
            if not found:
                return None
            changed = change(found[0].rule)
            await self._store.rules.put_rules([await self._restored(found[0], changed)])
            if application is not None:
                await self._store.rules.add_applications([application(changed)])
            if cause is not None:
                await self._log(found[0].rule, changed, CHANGED_BY.get(), cause)
            return changed

        return await self._writer.call(write)

    async def _log(self, before: Rule | None, after: Rule, actor: str, cause: str | None) -> None:
        """Append the audit log's events of this change (``memory.events.rule_events``)."""
        event = EventMaker(after.user_id, actor, self._clock.now(), new_event_id)
        await record(self._store, self._bus, rule_events(before, after, event, cause))

    async def _restored(self, item: StoredRule, changed: Rule) -> StoredRule:
        """``changed`` with its vector: computed again when its text changed (inverted)."""
        if changed.content == item.rule.content:
            return StoredRule(changed, item.vector)
        [vector] = await self._embedder.embed([changed.content])
        return StoredRule(changed, vector)

    async def get(self, user_id: str, rule_id: str) -> Rule | None:
        """The rule, counted as one more reference (``get_memory``)."""
        return await self._change(
            user_id, rule_id, lambda r: rules.referenced(r, self._clock.now()), None
        )

    async def mark_helpful(self, user_id: str, rule_id: str) -> Rule | None:
        return await self._feedback(user_id, rule_id, "helpful", None)

    async def mark_harmful(self, user_id: str, rule_id: str, reason: str | None) -> Rule | None:
        return await self._feedback(user_id, rule_id, "harmful", reason)

    async def _feedback(
        self, user_id: str, rule_id: str, outcome: Outcome, reason: str | None
    ) -> Rule | None:
        now = self._clock.now()

        def mark(rule: Rule) -> Rule:
            if outcome == "helpful":
                return rules.mark_helpful(rule, now)
            return rules.mark_harmful(rule, now, reason)

        def applied(rule: Rule) -> RuleApplication:
            return RuleApplication(
                id=fresh_id("app", ()),
                user_id=user_id,
                rule_id=rule.id,
                outcome=outcome,
                at=now,
                context=reason or "",
            )

        marked = await self._change(user_id, rule_id, mark, f"rule_marked_{outcome}", applied)
        if marked is not None:
            _log.info(
                "rule %s of user %s marked %s: %s, effectiveness %.2f",
                rule_id,
                user_id,
                outcome,
                marked.maturity,
                marked.effectiveness_score,
            )
        return marked

    async def confirm(self, user_id: str, rule_id: str) -> Rule | None:
        return await self._change(
            user_id, rule_id, lambda r: rules.confirm(r, self._clock.now()), "rule_confirmed"
        )

    async def forget(self, user_id: str, rule_id: str) -> Rule | None:
        return await self._change(
            user_id, rule_id, lambda r: rules.forget(r, self._clock.now()), "rule_forgotten"
        )

    async def delete(self, user_id: str, rule_id: str) -> bool:
        """Delete the rule and its applications for good."""

        async def write() -> int:
            count = await self._store.rules.delete_rules(user_id, [rule_id])
            if count:
                await self._store.links.delete_links_of(user_id, "rule", [rule_id])
                await record_one(
                    self._store,
                    self._bus,
                    user_id,
                    self._clock.now(),
                    "rule_deleted",
                    rule_id=rule_id,
                )
            return count

        return await self._writer.call(write) > 0

    async def applications(
        self, user_id: str, rule_id: str, *, limit: int
    ) -> list[RuleApplication] | None:
        """The rule's last ``limit`` applications, newest first; None when there is no
        such rule."""
        if not await self._store.rules.get_rules(user_id, [rule_id]):
            return None
        return await self._store.rules.applications_of(user_id, rule_id, limit=limit)

    async def sweep(self, user_id: str) -> int:
        """Invert flagged rules and apply decay (``memory.rules.sweep_rule``); returns how
        many rules changed."""

        async def write() -> int:
            now = self._clock.now()
            changed: list[StoredRule] = []
            for item in await self._store.rules.rules_of(user_id):
                swept = rules.sweep_rule(item.rule, now)
                if swept is None:
                    continue
                if swept.maturity != item.rule.maturity:
                    _log.info("rule %s of user %s inverted to an anti-pattern", swept.id, user_id)
                changed.append(await self._restored(item, swept))
                await self._log(item.rule, swept, "sweep", None)
            await self._store.rules.put_rules(changed)
            return len(changed)

        return await self._writer.call(write)

    async def recall(
        self, user_id: str, vector: Sequence[float] | None, *, scope: str | None, limit: int
    ) -> list[Rule]:
        """The rules a context shows for a query (``memory.rules.recall_rules``)."""
        found = await self._store.rules.rules_of(user_id, scope=scope)
        return rules.recall_rules(found, vector, self._clock.now(), limit=limit)
