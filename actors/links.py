"""LinkKeeper: seed 002's provenance links between a user's memories, through the learned-memory
writer (so a link is only made between memories that exist when it is written)."""

from __future__ import annotations

from actors.ports import Clock, Store
from actors.writer import ArchiveWriter
from memory.links import item_type, relation, supersession_links
from schemas.records import MemoryLink

__all__ = ["DIRECTIONS", "LinkKeeper"]

DIRECTIONS = ("outgoing", "incoming", "both")


class LinkKeeper:
    def __init__(self, store: Store, writer: ArchiveWriter, clock: Clock) -> None:
        self._store, self._writer, self._clock = store, writer, clock

    async def _exists(self, user_id: str, kind: str, item_id: str) -> bool:
        if kind == "fact":
            return bool(await self._store.facts.get_facts(user_id, [item_id]))
        if kind == "rule":
            return bool(await self._store.rules.get_rules(user_id, [item_id]))
        if item_id.startswith("ep_"):
            return bool(await self._store.episodes.get_episodes(user_id, [item_id]))
        return bool(await self._store.existing_message_ids(user_id, [item_id]))

    async def create(
        self,
        user_id: str,
        source_type: str,
        source_id: str,
        target_type: str,
        target_id: str,
        link_relation: str,
    ) -> tuple[MemoryLink, bool] | None:
        """The link, and whether it is new (an existing one is kept as it was: creating
        it again is no error); None when either memory does not exist. Raises
        ``ValueError`` naming the valid types or relations."""
        link = MemoryLink(
            user_id=user_id,
            source_type=item_type(source_type),
            source_id=source_id,
            target_type=item_type(target_type),
            target_id=target_id,
            relation=relation(link_relation),
            created_at=self._clock.now(),
        )
        if (source_type, source_id) == (target_type, target_id):
            raise ValueError("a memory cannot link to itself")

        async def write() -> tuple[MemoryLink, bool] | None:
            for kind, item_id in ((source_type, source_id), (target_type, target_id)):
                if not await self._exists(user_id, kind, item_id):
                    return None
            outgoing = await self._derived(user_id, source_type, source_id, "outgoing")
            created = not any(k.target_id == target_id for k in outgoing) and (
                await self._store.links.add_links([link]) > 0
            )
            if created:
                return link, True
            outgoing += await self._store.links.links_of(
                user_id, source_type, source_id, direction="outgoing"
            )
            kept = next(
                k for k in outgoing if (k.target_type, k.target_id) == (target_type, target_id)
            )
            return kept, False

        return await self._writer.call(write)

    async def links(
        self, user_id: str, kind: str, item_id: str, *, direction: str = "both"
    ) -> list[MemoryLink]:
        """Seed 002's ``get_links``. Raises ``ValueError`` for a bad type or direction."""
        item_type(kind)
        if direction not in DIRECTIONS:
            raise ValueError(f"direction must be one of {', '.join(DIRECTIONS)}")
        stored = await self._store.links.links_of(user_id, kind, item_id, direction=direction)
        derived = await self._derived(user_id, kind, item_id, direction)
        seen = {(k.source_id, k.target_id, k.relation) for k in derived}
        found = derived + [k for k in stored if (k.source_id, k.target_id, k.relation) not in seen]
        return sorted(found, key=lambda k: (k.created_at, k.source_id, k.target_id))

    async def _derived(
        self, user_id: str, kind: str, item_id: str, direction: str
    ) -> list[MemoryLink]:
        """A fact's ``supersedes`` links, which its facts carry (``supersession_links``)."""
        if kind != "fact":
            return []
        facts = [s.fact for s in await self._store.facts.facts_of(user_id, active_only=False)]
        return supersession_links(user_id, facts, item_id, direction)
