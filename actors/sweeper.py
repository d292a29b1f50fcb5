"""Scheduled upkeep inside the server: decay/expiry sweeps and retries of failed extraction."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import anyio
from anyio.abc import TaskStatus

from actors.audit import ACTING_FOR
from actors.errors import MnemoError, NotHome
from actors.mailbox import SessionDeps
from actors.registry import SessionRegistry
from memory.grounding import not_overtaken
from memory.predicates import Vocabulary
from memory.prompts import Exchange
from schemas.records import Progress

__all__ = ["Sweeper"]

_log = logging.getLogger("mnemo.sweeper")


class Sweeper:
    """Runs ``sweep_once`` every ``sweep_interval`` and ``retry_once`` every ``retry_interval``."""

    def __init__(self, deps: SessionDeps, registry: SessionRegistry) -> None:
        self._deps, self._registry = deps, registry
        self._vocabulary = Vocabulary(deps.settings.predicates)
        self.sweeps = 0
        self.retried = 0

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        settings = self._deps.settings
        task_status.started()
        next_sweep = anyio.current_time() + settings.sweep_interval
        next_retry = anyio.current_time() + settings.retry_interval
        while True:
            await anyio.sleep(max(0.0, min(next_sweep, next_retry) - anyio.current_time()))
            now = anyio.current_time()
            if now >= next_retry:
                await self.retry_once()
                next_retry = now + settings.retry_interval
            if now >= next_sweep:
                await self.sweep_once()
                next_sweep = now + settings.sweep_interval

    async def sweep_once(self) -> int:
        """Seed 002's decay sweep (facts and rules: rules flagged for it are inverted too),
        its episode cleanup, and seed 004's category expiry for every user; returns how
        many facts, rules and episodes changed."""
        keeper, store = self._deps.learning.keeper, self._deps.store

        async def facts_of(user_id: str) -> int:
            return len((await keeper.sweep(user_id)).updated)

        changed = await _each_user("facts", store.facts.users_with_facts, facts_of)
        changed += await _each_user("rules", store.rules.users_with_rules, self._deps.rules.sweep)
        await _each_user("consolidation", store.episodes.users_with_episodes, self._consolidate)
        limit = self._deps.settings.episode_max_entries

        async def episodes_of(user_id: str) -> int:
            counts = await self._deps.episodes.cleanup(user_id, limit)
            return counts["expired_deleted"] + counts["capacity_deleted"]

        changed += await _each_user("episodes", store.episodes.users_with_episodes, episodes_of)
        self.sweeps += 1
        _log.info("decay sweep changed %d facts and rules", changed)
        return changed

    async def _consolidate(self, user_id: str) -> int:
        """Seed 002's scheduled consolidation of one user's pending episodes (a dry run
        when no model answers); how many it consolidated. A run that consolidated is
        followed by a pause (``consolidation_share``), so the next user's waits."""
        started = anyio.current_time()
        report = await self._deps.consolidator.run(user_id)
        for error in report.errors:
            _log.warning("consolidation for user %s: %s", user_id, error)
        if report.consolidated:
            share = self._deps.settings.consolidation_share
            await anyio.sleep((anyio.current_time() - started) * (1.0 - share) / share)
        return report.consolidated

    async def retry_once(self) -> int:
        """Extract the pending turns of sessions that are no longer live; returns how many
        sessions caught up. Live sessions retry on their own next turn or at their end."""
        try:
            pending = await self._deps.store.facts.pending_progress()
        except MnemoError as exc:
            _log.warning("extraction retry skipped: %s", exc)
            return 0
        done = 0
        for progress in pending:
            if self._registry.get(progress.user_id, progress.session_id) is not None:
                continue
            acting = ACTING_FOR.set(progress.user_id)  # a cluster node: only its users
            try:
                if await self._retry(progress):
                    done += 1
            except NotHome:
                pass  # another node's user: theirs to retry
            finally:
                ACTING_FOR.reset(acting)
        self.retried += done
        return done

    async def _retry(self, progress: Progress) -> bool:
        deps = self._deps
        missing = progress.last_turn - progress.extracted_through
        try:
            rows = await deps.store.session_messages(
                progress.user_id, progress.session_id, limit=max(2, 2 * missing + 2)
            )
        except MnemoError as exc:
            _log.warning("could not load session %s for retry: %s", progress.session_id, exc)
            return False
        exchanges: dict[int, Exchange] = {}
        for row in rows:
            if row.turn <= progress.extracted_through:
                continue
            old = exchanges.get(row.turn, Exchange(row.turn, "", ""))
            if row.role == "user":
                exchanges[row.turn] = Exchange(row.turn, row.text, old.assistant)
            elif row.role == "assistant":
                exchanges[row.turn] = Exchange(row.turn, old.user, row.text)
        batch = [exchanges[t] for t in sorted(exchanges)]
        if not batch:
            deps.learning.progress.extracted(
                progress.user_id, progress.session_id, progress.scope, progress.last_turn
            )
            return True
        try:
            result = await deps.learning.extractor.extract(progress.user_id, batch)
        except MnemoError as exc:
            _log.info("retry of session %s still failing: %s", progress.session_id, exc)
            return False
        if result.by_rules:
            return False  # the model is still unreachable; keep waiting for it
        latest = max(row.at for row in rows if row.turn > progress.extracted_through)
        known = await deps.store.facts.facts_of(progress.user_id, active_only=False)
        changes = await deps.learning.keeper.learn(
            progress.user_id,
            not_overtaken(
                result.extraction.facts, [s.fact for s in known], latest, self._vocabulary
            ),
            session_id=progress.session_id,
            scope=progress.scope,
            # The reader's facts of these turns were stored when the model first failed.
            extractor="llm",
        )
        deps.learning.progress.extracted(
            progress.user_id, progress.session_id, progress.scope, batch[-1].turn
        )
        _log.info(
            "caught up extraction of session %s: %d facts added",
            progress.session_id,
            len(changes.added),
        )
        return True


async def _each_user(
    what: str,
    users: Callable[[], Awaitable[list[str]]],
    sweep: Callable[[str], Awaitable[int]],
) -> int:
    """``sweep`` every user of ``users``; one user's failure is logged and skips only them."""
    try:
        user_ids = await users()
    except MnemoError as exc:
        _log.warning("decay sweep of %s skipped: %s", what, exc)
        return 0
    changed = 0
    for user_id in user_ids:
        acting = ACTING_FOR.set(user_id)  # a cluster node writes only the users it serves
        try:
            changed += await sweep(user_id)
        except NotHome:
            pass  # another node's user: theirs to sweep
        except MnemoError as exc:
            _log.warning("decay sweep of the %s of user %s failed: %s", what, user_id, exc)
        finally:
            ACTING_FOR.reset(acting)
    return changed
