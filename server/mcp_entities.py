"""The MCP tools for entities, consolidation and episode cleanup (``server.mcp_tools`` has
the rest). ``tenant_id`` is seed 002's name for the memory's owner: accepted, and always
the caller's own user, whatever it says."""

from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

from server.mcp_calls import Caller, guarded, shown
from server.rest_entities import entity_view

__all__ = ["register"]

Name = Annotated[str, Field(min_length=1, max_length=200)]
Aliases = Annotated[list[Name], Field(max_length=100)]
EntityId = Annotated[str, Field(pattern=r"^ent_[0-9a-f]{8}$")]
Tenant = Annotated[str, Field(max_length=128)]

_READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True)
_WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False)


def register(server: MCPServer[Any], who: Callable[[Context], Caller]) -> None:
    @server.tool(annotations=_WRITE)
    async def entity_create(
        canonical_name: Name,
        entity_type: str,
        tenant_id: Tenant,
        ctx: Context,
        aliases: Aliases | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Create an entity: a person, organization, place or other, with its canonical name
        and aliases ("Ana Souza", aliases ["Ana", "my sister"]). A canonical name an entity of
        the same type already has is an error. tenant_id: always the caller's own memory."""
        caller = who(ctx)
        entity = await guarded(
            caller.deps.entities.create(
                caller.user_id,
                canonical_name,
                entity_type,
                aliases=aliases or [],
                metadata=metadata or {},
            )
        )
        return entity_view(entity)

    @server.tool(annotations=_READ)
    async def entity_get(entity_id: EntityId, ctx: Context) -> dict[str, Any]:
        """One entity by id (a merged one has metadata.merged_into)."""
        caller = who(ctx)
        entity = await guarded(caller.deps.entities.get(caller.user_id, entity_id))
        return shown(entity, entity_view, "entity", entity_id)

    @server.tool(annotations=_WRITE)
    async def entity_update(
        entity_id: EntityId,
        ctx: Context,
        canonical_name: Name | None = None,
        aliases: Aliases | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Change an entity's canonical name, replace its aliases, or merge keys into its
        metadata (the keys given replace those of the same name)."""
        caller = who(ctx)
        entity = await guarded(
            caller.deps.entities.update(
                caller.user_id,
                entity_id,
                canonical_name=canonical_name,
                aliases=aliases,
                metadata=metadata,
            )
        )
        return shown(entity, entity_view, "entity", entity_id)

    @server.tool(annotations=_READ)
    async def entity_resolve(
        name: Name,
        ctx: Context,
        tenant_id: Tenant = "default",
        entity_type: str | None = None,
        context_hints: dict[str, Any] | None = None,
        enable_fuzzy: bool = False,
    ) -> dict[str, Any]:
        """Which known entities a name may mean, best first: exact name, alias, prefix or
        substring, and with enable_fuzzy near spellings. context_hints: topic,
        mentioned_with (names), domain_scores ({entity_id: score}). Never creates one."""
        caller = who(ctx)
        found = await guarded(
            caller.deps.entities.resolve(
                caller.user_id,
                name,
                entity_type=entity_type,
                hints=context_hints,
                enable_fuzzy=enable_fuzzy,
            )
        )
        return {"candidates": [r.view() for r in found]}

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
    async def entity_merge(
        source_entity_id: EntityId, target_entity_id: EntityId, ctx: Context
    ) -> dict[str, Any]:
        """Merge the source entity into the target: its facts move to the target (a clash
        supersedes the older fact), its name and aliases become the target's aliases, and
        the source is tombstoned."""
        caller = who(ctx)
        merged = await guarded(
            caller.deps.entities.merge(caller.user_id, source_entity_id, target_entity_id)
        )
        if merged is None:
            raise ToolError("no such source or target entity")
        return {"target": entity_view(merged.target), **merged.payload()}

    @server.tool(annotations=_WRITE)
    async def memory_run_consolidation(ctx: Context) -> dict[str, Any]:
        """Consolidate pending episodes into facts and rules through the model, scope by
        scope; without a model nothing changes and the report says so."""
        caller = who(ctx)
        report = await guarded(caller.deps.consolidator.run(caller.user_id))
        return report.view()

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
    async def memory_run_episode_cleanup(
        ctx: Context, max_entries: Annotated[int, Field(ge=0, le=1_000_000)] = 10_000
    ) -> dict[str, int]:
        """Delete expired episodes, then the oldest consolidated ones beyond max_entries.
        Unconsolidated episodes are never deleted for capacity."""
        caller = who(ctx)
        return await guarded(caller.deps.episodes.cleanup(caller.user_id, max_entries))
