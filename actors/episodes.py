"""EpisodeKeeper: seed 002's episodes stored directly, through the learned-memory writer."""

from __future__ import annotations

import logging
import secrets
from typing import Any

from actors.audit import record_one
from actors.events import EventBus
from actors.ports import Clock, Embedder, Store
from actors.writer import ArchiveWriter
from memory import episodes
from schemas.records import Episode

__all__ = ["EpisodeKeeper"]

_log = logging.getLogger("mnemo.episodes")


class EpisodeKeeper:
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

    async def _log(self, user_id: str, event_type: str, **payload: Any) -> None:
        await record_one(
            self._store,
            self._bus,
            user_id,
            self._clock.now(),
            event_type,
            **payload,
        )

    async def store_episode(
        self,
        user_id: str,
        content: str,
        scope: str,
        *,
        session_id: str | None = None,
        importance: float = 5.0,
    ) -> Episode:
        """A new pending episode that expires in a week. Raises ``ValueError`` for blank
        content or an importance outside 0..10."""
        episode = episodes.new_episode(
            "ep_" + secrets.token_hex(8),
            user_id,
            content,
            scope,
            self._clock.now(),
            session_id=session_id,
            importance=importance,
        )
        [vector] = await self._embedder.embed([content])

        async def write() -> Episode:
            await self._store.episodes.add_episodes([(episode, vector)])
            await self._log(user_id, "episode_created", episode_id=episode.id, scope=scope)
            return episode

        return await self._writer.call(write)

    async def list_episodes(self, user_id: str, *, scope: str | None = None) -> list[Episode]:
        return [e for e, _ in await self._store.episodes.episodes_of(user_id, scope=scope)]

    async def _change(
        self, user_id: str, episode_id: str, event_type: str | None, forget: bool
    ) -> Episode | None:
        async def write() -> Episode | None:
            found = await self._store.episodes.get_episodes(user_id, [episode_id])
            if not found:
                return None
            (episode, vector), now = found[0], self._clock.now()
            changed = episodes.forget(episode, now) if forget else episodes.referenced(episode, now)
            await self._store.episodes.put_episodes([(changed, vector)])
            if event_type is not None:
                await self._log(user_id, event_type, episode_id=episode_id)
            return changed

        return await self._writer.call(write)

    async def get(self, user_id: str, episode_id: str) -> Episode | None:
        """The episode, counted as one more reference (seed 002's ``get_memory``)."""
        return await self._change(user_id, episode_id, None, forget=False)

    async def forget(self, user_id: str, episode_id: str) -> Episode | None:
        """Seed 002's ``forget``: the episode expires now; the next cleanup deletes it."""
        return await self._change(user_id, episode_id, "episode_forgotten", forget=True)

    async def cleanup(self, user_id: str, max_entries: int) -> dict[str, int]:
        """Seed 002's cleanup of one user's episodes (``memory.episodes.cleanup``): the
        expired ones, then the oldest consolidated ones past ``max_entries``."""

        async def write() -> dict[str, int]:
            found = [e for e, _ in await self._store.episodes.episodes_of(user_id)]
            plan = episodes.cleanup(found, self._clock.now(), max_entries)
            gone = [*plan.expired, *plan.for_capacity]
            if gone:
                await self._store.episodes.delete_episodes(user_id, gone)
                await self._store.links.delete_links_of(user_id, "episode", gone)
                await self._log(user_id, "episodes_cleaned", **plan.counts())
                _log.info("cleanup of user %s's episodes: %s", user_id, plan.counts())
            return plan.counts()

        return await self._writer.call(write)
