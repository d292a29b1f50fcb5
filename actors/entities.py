"""EntityKeeper: seed 002's entity registry of each user, through the learned-memory writer.

Creating and updating run in the writer's task, so two requests can never both
take one name. Resolution reads only (``memory.entities.resolve``).
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import anyio

from actors.audit import record_one
from actors.errors import Conflict, Rejected
from actors.events import EventBus
from actors.ports import Clock, Store
from actors.writer import ArchiveWriter
from memory import entities
from memory.entities import EntityIndex, Resolved
from memory.entity_merge import Merged, merge
from memory.facts import Stored, fresh_id
from memory.predicates import Vocabulary
from schemas.records import Entity, Fact

__all__ = ["EntityKeeper"]

_log = logging.getLogger("mnemo.entities")
#: The most entities in the resolution indexes kept, over all users.
INDEXED_ENTITIES = 200_000


def _taken(found: Sequence[Entity], name: str, kind: str, but: str | None = None) -> bool:
    """Whether another live entity of ``kind`` has ``name`` (case aside)."""
    folded = name.casefold()
    return any(
        e.canonical_name.casefold() == folded
        and e.entity_type == kind
        and e.id != but
        and not entities.is_tombstoned(e)
        for e in found
    )


class EntityKeeper:
    def __init__(
        self,
        store: Store,
        writer: ArchiveWriter,
        clock: Clock,
        vocabulary: Vocabulary,
        bus: EventBus | None = None,
        *,
        lane: anyio.Lock | None = None,
    ) -> None:
        self._store, self._writer, self._clock = store, writer, clock
        #: ``FactKeeper.lane``: a merge's read-modify-write of facts takes turns with it.
        self._lane = lane or anyio.Lock()
        self._vocabulary, self._bus = vocabulary, bus
        # per user: the list the store gave (held, so its identity stays its own) and its
        # index; a store that keeps lists returns the same one until the entities change
        self._indexes: OrderedDict[str, tuple[list[Entity], EntityIndex]] = OrderedDict()

    def _index(self, user_id: str, found: list[Entity]) -> EntityIndex:
        kept = self._indexes.get(user_id)
        if kept is not None and kept[0] is found:
            self._indexes.move_to_end(user_id)
            return kept[1]
        index = EntityIndex(found)
        self._indexes[user_id] = (found, index)
        self._indexes.move_to_end(user_id)
        total = sum(len(i) for _, i in self._indexes.values())
        while total > INDEXED_ENTITIES and len(self._indexes) > 1:
            _, (_, dropped) = self._indexes.popitem(last=False)
            total -= len(dropped)
        return index

    async def _log(self, user_id: str, event_type: str, entity_id: str) -> None:
        await record_one(
            self._store,
            self._bus,
            user_id,
            self._clock.now(),
            event_type,
            entity_id=entity_id,
        )

    async def create(
        self,
        user_id: str,
        canonical_name: str,
        entity_type: str,
        *,
        aliases: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
    ) -> Entity:
        """A new entity. Raises ``ValueError`` for a blank name, an unknown type (naming
        the valid ones), or a name the user already has for that type."""
        kind = entities.entity_type(entity_type)
        if not canonical_name.strip():
            raise ValueError("canonical_name must not be blank")

        async def write() -> Entity:
            found = await self._store.entities.entities_of(user_id)
            if _taken(found, canonical_name, kind):
                raise Conflict(f"an entity {canonical_name!r} of type {kind} already exists")
            now = self._clock.now()
            entity = Entity(
                id=fresh_id("ent", {e.id for e in found}),
                user_id=user_id,
                canonical_name=canonical_name,
                entity_type=kind,
                created_at=now,
                updated_at=now,
                aliases=list(aliases),
                meta=dict(metadata or {}),
            )
            await self._store.entities.put_entities([entity])
            await self._log(user_id, "entity_created", entity.id)
            return entity

        return await self._writer.call(write)

    async def list_entities(self, user_id: str) -> list[Entity]:
        """The user's entities, merged ones included, oldest first."""
        found = await self._store.entities.entities_of(user_id)
        return sorted(found, key=lambda e: (e.created_at, e.id))

    async def get(self, user_id: str, entity_id: str) -> Entity | None:
        found = await self._store.entities.entities_of(user_id)
        return next((e for e in found if e.id == entity_id), None)

    async def update(
        self,
        user_id: str,
        entity_id: str,
        *,
        canonical_name: str | None = None,
        aliases: Sequence[str] | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Entity | None:
        """Seed 002's update (``memory.entities.updated``); None when there is no such
        entity. Raises ``ValueError`` for a blank name or a name another entity has."""
        if canonical_name is not None and not canonical_name.strip():
            raise ValueError("canonical_name must not be blank")

        async def write() -> Entity | None:
            found = await self._store.entities.entities_of(user_id)
            entity = next((e for e in found if e.id == entity_id), None)
            if entity is None:
                return None
            if canonical_name is not None and _taken(
                found, canonical_name, entity.entity_type, but=entity.id
            ):
                raise Conflict(
                    f"an entity {canonical_name!r} of type {entity.entity_type} already exists"
                )
            changed = entities.updated(
                entity,
                self._clock.now(),
                canonical_name=canonical_name,
                aliases=aliases,
                metadata=metadata,
            )
            await self._store.entities.put_entities([changed])
            await self._log(user_id, "entity_updated", entity.id)
            return changed

        return await self._writer.call(write)

    async def merge(self, user_id: str, source_id: str, target_id: str) -> Merged | None:
        """Seed 002's ``entity_merge`` (``memory.entity_merge``), in the writer's task, so
        merges of a user never interleave; None when either entity does not exist.
        Raises ``ValueError`` for a merge into itself or of a merged entity."""

        async def write() -> Merged | None:
            found = {e.id: e for e in await self._store.entities.entities_of(user_id)}
            if source_id not in found or target_id not in found:
                return None
            async with self._lane:
                stored = {s.fact.id: s for s in await self._store.facts.facts_of(user_id)}
                now = self._clock.now()
                try:
                    merged = merge(
                        found[source_id],
                        found[target_id],
                        [s.fact for s in stored.values()],
                        self._vocabulary,
                        now,
                    )
                except ValueError as exc:  # raised in the writer: not a disk fault
                    raise Rejected(str(exc)) from None
                await self._store.facts.put_facts(
                    [Stored(f, stored[f.id].vector) for f in merged.facts]
                )
            await self._store.entities.put_entities([merged.source, merged.target])
            await record_one(
                self._store,
                self._bus,
                user_id,
                now,
                "entity_merge",
                **merged.payload(),
            )
            _log.info("merged entity %s into %s for user %s", source_id, target_id, user_id)
            return merged

        return await self._writer.call(write)

    async def resolve(
        self,
        user_id: str,
        name: str,
        *,
        entity_type: str | None = None,
        hints: Mapping[str, Any] | None = None,
        enable_fuzzy: bool = False,
    ) -> list[Resolved]:
        """The user's entities ``name`` may mean, best first; never creates one."""
        kind = entities.entity_type(entity_type) if entity_type is not None else None
        found = await self._store.entities.entities_of(user_id)
        facts_of: dict[str, list[Fact]] = {}
        if hints and any(hints.get(k) for k in ("topic", "mentioned_with")):
            for stored in await self._store.facts.facts_of(user_id):
                if stored.fact.entity_id is not None:
                    facts_of.setdefault(stored.fact.entity_id, []).append(stored.fact)
        return entities.resolve(
            self._index(user_id, found),
            name,
            kind=kind,
            enable_fuzzy=enable_fuzzy,
            hints=hints,
            facts_of=facts_of,
        )
