"""The MCP server: seed 002's 19 memory tools, over the same keepers as REST and WebSocket.

``build_mcp(connection)`` registers the tools on an ``MCPServer`` of the official SDK.
Who calls, and with which store, comes from the ``Connection`` (the HTTP request's
bearer key in ``mnemo serve``, the process's own user in ``mnemo mcp``), never from a
tool's arguments: a ``tenant_id`` argument is accepted, as seed 002 names it, and has no
effect. ``butler`` is a scope, as everywhere else. Results are JSON: ids are strings,
times ISO-8601, and no vector is ever part of one. A bad argument, an unknown id or a
refused change is a tool error with a message (``isError``), never a dropped connection.

The entity, consolidation and cleanup tools are registered by ``server.mcp_entities``.
"""

import time
from collections.abc import Container
from importlib.metadata import version
from typing import Annotated, Any, Literal

import msgspec
from mcp.server.context import CallNext, HandlerResult, ServerMiddleware, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, ToolAnnotations
from pydantic import Field

from actors.audit import CHANGED_BY
from actors.keeper import Stated, changes_frame, fact_view
from schemas.transfer import MAX_TEXT
from server.mcp_calls import Caller, Connection, guarded, shown
from server.mcp_entities import register
from server.rest import turn_view
from server.rest_episodes import episode_view
from server.rest_rules import rule_view
from server.rest_search import find
from server.rest_stats import stats_of
from server.ws import SESSION_ID

__all__ = ["TOOLS", "build_mcp"]

#: Seed 002's 19 tools, by group: writing, reading, feedback, management, context, entities,
#: consolidation and cleanup.
TOOLS = (
    "memory_store_episode",
    "memory_store_fact",
    "memory_store_rule",
    "memory_search",
    "memory_recall",
    "memory_get",
    "memory_confirm",
    "memory_mark_helpful",
    "memory_mark_harmful",
    "memory_forget",
    "memory_stats",
    "memory_context",
    "entity_create",
    "entity_get",
    "entity_update",
    "entity_resolve",
    "entity_merge",
    "memory_run_consolidation",
    "memory_run_episode_cleanup",
)

#: What ``memory_type`` names: seed 002's three memory types.
MemoryType = Literal["episode", "fact", "rule"]
#: A scope (or session id) as everywhere: ``SESSION_ID``, as a JSON-schema pattern.
Scope = Annotated[str, Field(pattern=SESSION_ID.pattern.removesuffix(r"\Z") + "$")]
Text = Annotated[str, Field(min_length=1, max_length=MAX_TEXT)]
Word = Annotated[str, Field(min_length=1, max_length=64)]
Tags = Annotated[list[Word], Field(max_length=32)]
Importance = Annotated[float, Field(ge=0, le=10)]
#: A memory's id: ``fact_``, ``rule_``, ``ep_``, ``msg_`` ... and letters, digits, ``_.:@-``;
#: anything else (a NUL byte, a quote) is a bad argument, never a question for the store.
Id = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.:@-]+$")]

_READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True)
_WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False)
#: What a search by ``types`` reads: archived chat turns and stored episodes are episodes.
_KINDS = {"episode": ("turns", "episodes"), "fact": ("facts",), "rule": ("rules",)}
_MEMORY_TYPE = {"fact": "fact", "turn": "episode", "episode": "episode", "rule": "rule"}


def _fact(fact: Any) -> dict[str, Any]:
    view: dict[str, Any] = msgspec.to_builtins(fact_view(fact))
    return view


def _timed(connection: Connection, known: Container[str]) -> ServerMiddleware[Any]:
    """Middleware: each ``tools/call``'s latency and outcome, by tool (``known`` ones; any
    other name is ``unknown``), in ``/metrics``."""

    async def middleware(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method != "tools/call":
            return await call_next(ctx)
        named = (ctx.params or {}).get("name")
        tool = named if isinstance(named, str) and named in known else "unknown"
        started = time.perf_counter()
        outcome = "error"
        try:
            result = await call_next(ctx)
            failed = (
                result.get("isError", False)
                if isinstance(result, dict)
                else getattr(result, "is_error", False)
            )
            outcome = "error" if failed else "ok"
            return result
        finally:
            try:
                metrics = connection.caller(ctx.request).metrics
            except ToolError:
                metrics = None
            if metrics is not None:
                metrics.observe_tool(tool, outcome, time.perf_counter() - started)

    return middleware


#: Requests naming something the server may not have: an unknown name is the caller's
#: mistake, answered as invalid parameters, not a handler failure logged with a traceback.
_NAMED = frozenset({"prompts/get", "resources/read"})


async def _unknown_is_invalid(
    ctx: ServerRequestContext[Any, Any], call_next: CallNext
) -> HandlerResult:
    """Middleware: the SDK's ``ValueError`` for an unknown prompt or resource becomes an
    ``INVALID_PARAMS`` error (tools answer an unknown name with ``isError`` already)."""
    try:
        return await call_next(ctx)
    except ValueError as exc:
        if ctx.method not in _NAMED:
            raise
        raise MCPError(INVALID_PARAMS, str(exc)) from None


def build_mcp(connection: Connection) -> MCPServer[Any]:
    """The MCP server with every tool; its transports are the caller's to run."""
    server: MCPServer[Any] = MCPServer(
        "mnemo",
        version=version("mnemo"),
        instructions=(
            "Long-term memory of the user: store and search facts, episodes and rules, "
            "build a context block for a prompt, resolve and merge entities."
        ),
        log_level="WARNING",
    )
    server.middleware.append(_timed(connection, frozenset(TOOLS)))
    server.middleware.append(_unknown_is_invalid)

    def who(ctx: Context) -> Caller:
        CHANGED_BY.set("mcp")  # the log's actor of what this call changes
        return connection.caller(ctx.request_context.request)

    @server.tool(annotations=_WRITE)
    async def memory_store_episode(
        content: Text,
        butler: Scope,
        ctx: Context,
        session_id: Scope | None = None,
        importance: Importance = 5.0,
    ) -> dict[str, Any]:
        """Store an episode: something that happened or was observed, in the scope named
        by `butler`. It is pending consolidation and expires after 7 days unless
        consolidation turns it into facts or rules first."""
        caller = who(ctx)
        episode = await guarded(
            caller.deps.episodes.store_episode(
                caller.user_id, content, butler, session_id=session_id, importance=importance
            )
        )
        return episode_view(episode)

    @server.tool(annotations=_WRITE)
    async def memory_store_fact(
        subject: Word,
        predicate: Word,
        content: Text,
        ctx: Context,
        importance: Importance = 5.0,
        permanence: str = "standard",
        scope: Scope = "global",
        tags: Tags | None = None,
        entity_id: Annotated[str, Field(pattern=r"^ent_[0-9a-f]{8}$")] | None = None,
    ) -> dict[str, Any]:
        """Store a fact as subject, predicate and content ("user", "lives_in", "Lisbon").
        A fact with the same subject and predicate (or entity and predicate) replaces the
        active one of a single-valued predicate, which is kept as superseded history; a
        pinned fact is never replaced. permanence: permanent, stable, standard, volatile
        or ephemeral (how fast confidence decays). Answers the changes: `id` is the fact
        now holding the content."""
        caller = who(ctx)
        stated = Stated(
            subject=subject,
            predicate=predicate,
            importance=importance,
            permanence=permanence,
            tags=tags or [],
            entity_id=entity_id,
        )
        changes = await guarded(
            caller.deps.learning.keeper.remember(
                caller.user_id,
                content,
                category=None,
                pinned=False,
                session_id=None,
                scope=scope,
                stated=stated,
            )
        )
        frame = changes_frame(changes, "mcp")
        assert frame is not None  # with an id the frame always exists
        result: dict[str, Any] = msgspec.to_builtins(frame)
        del result["type"]
        held = [*result["added"], *result["updated"]]
        result["id"] = held[0]["id"] if held else None
        return result

    @server.tool(annotations=_WRITE)
    async def memory_store_rule(
        content: Text, ctx: Context, scope: Scope = "global", tags: Tags | None = None
    ) -> dict[str, Any]:
        """Store a behaviour rule for the assistant ("answer in Portuguese"). It starts as
        a candidate and matures with memory_mark_helpful / memory_mark_harmful feedback.
        A rule the scope already holds (same text up to case and spacing) is reinforced
        and answered instead of stored twice."""
        caller = who(ctx)
        rule, _ = await guarded(
            caller.deps.rules.store_rule(caller.user_id, content, scope=scope, tags=tags or [])
        )
        return rule_view(rule)

    @server.tool(annotations=_READ)
    async def memory_search(
        query: Text,
        ctx: Context,
        types: list[MemoryType] | None = None,
        scope: Scope | None = None,
        mode: Literal["hybrid", "semantic", "keyword"] = "hybrid",
        limit: Annotated[int, Field(ge=1, le=100)] = 10,
        min_confidence: Annotated[float, Field(ge=0, le=1)] = 0.2,
    ) -> dict[str, Any]:
        """Search memory for `query`, best first. types: any of episode, fact, rule (default
        all; episodes include archived chat turns). scope: that scope and global (default
        every scope). mode: hybrid (vector and keyword ranks fused), semantic or keyword.
        Facts and rules whose decayed confidence is below min_confidence are left out. Each
        hit has `memory_type`, `id`, `text`, `score` and `relevance` (0..1)."""
        caller = who(ctx)
        kinds = [k for t in (types or ("episode", "fact", "rule")) for k in _KINDS[t]]
        hits = await guarded(
            find(
                caller.deps,
                caller.user_id,
                query,
                kinds=kinds,
                scope=scope,
                mode=mode,
                limit=limit,
                min_confidence=min_confidence,
            )
        )
        return {"results": [h | {"memory_type": _MEMORY_TYPE[h["kind"]]} for h in hits]}

    @server.tool(annotations=_WRITE)
    async def memory_recall(
        topic: Text,
        ctx: Context,
        scope: Scope | None = None,
        limit: Annotated[int, Field(ge=1, le=100)] = 10,
    ) -> dict[str, Any]:
        """Recall the facts and rules most worth knowing about `topic`, by a composite of
        relevance, importance, recency and confidence. Each recalled fact counts as
        referenced (its reference count and time go up)."""
        caller = who(ctx)
        context = caller.deps.context
        vector = context.query_vector(topic)
        facts = await guarded(
            context.recall_facts(caller.user_id, topic, scope=scope, limit=limit, vector=vector)
        )
        context.touch(caller.user_id, [s.fact.id for s in facts])
        rules = await guarded(
            caller.deps.rules.recall(caller.user_id, await vector(), scope=scope, limit=limit)
        )
        results = [_fact(s.fact) | {"memory_type": "fact", "score": s.score} for s in facts]
        results += [rule_view(r) | {"memory_type": "rule"} for r in rules]
        return {"results": results}

    @server.tool(annotations=_WRITE)
    async def memory_get(memory_type: MemoryType, memory_id: Id, ctx: Context) -> dict[str, Any]:
        """One memory by type and id; the read counts as a reference to it. Archived chat
        turns (ids msg_...) are episodes too and are read as they are."""
        caller = who(ctx)
        deps, user = caller.deps, caller.user_id
        if memory_type == "fact":
            fact = await guarded(deps.learning.keeper.reference(user, memory_id))
            return shown(fact, _fact, memory_type, memory_id)
        if memory_type == "rule":
            return shown(
                await guarded(deps.rules.get(user, memory_id)), rule_view, "rule", memory_id
            )
        if memory_id.startswith("msg_"):
            message = await guarded(deps.store.get_message(user, memory_id))
            return shown(message, turn_view, memory_type, memory_id)
        episode = await guarded(deps.episodes.get(user, memory_id))
        return shown(episode, episode_view, memory_type, memory_id)

    @server.tool(annotations=_WRITE)
    async def memory_confirm(
        memory_type: MemoryType, memory_id: Id, ctx: Context
    ) -> dict[str, Any]:
        """Confirm a fact or rule is still true: its confidence decay starts again from now.
        Episodes do not decay and cannot be confirmed."""
        caller = who(ctx)
        deps, user = caller.deps, caller.user_id
        if memory_type == "episode":
            raise ToolError("an episode cannot be confirmed: episodes do not decay")
        if memory_type == "fact":
            fact = await guarded(deps.learning.keeper.confirm(user, memory_id))
            return shown(fact, _fact, memory_type, memory_id)
        rule = await guarded(deps.rules.confirm(user, memory_id))
        return shown(rule, rule_view, memory_type, memory_id)

    @server.tool(annotations=_WRITE)
    async def memory_mark_helpful(rule_id: Id, ctx: Context) -> dict[str, Any]:
        """Record that following a rule helped: its effectiveness and maturity can rise."""
        caller = who(ctx)
        rule = await guarded(caller.deps.rules.mark_helpful(caller.user_id, rule_id))
        return shown(rule, rule_view, "rule", rule_id)

    @server.tool(annotations=_WRITE)
    async def memory_mark_harmful(
        rule_id: Id,
        ctx: Context,
        reason: Annotated[str, Field(max_length=2000)] | None = None,
    ) -> dict[str, Any]:
        """Record that following a rule did harm (weighs four times a helpful mark). A rule
        harmful often enough becomes an anti-pattern, to be shown inverted."""
        caller = who(ctx)
        rule = await guarded(caller.deps.rules.mark_harmful(caller.user_id, rule_id, reason))
        return shown(rule, rule_view, "rule", rule_id)

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
    async def memory_forget(memory_type: MemoryType, memory_id: Id, ctx: Context) -> dict[str, Any]:
        """Forget a memory: a fact is retracted (kept as history, never recalled), a rule
        flagged forgotten, an episode expires now (the next cleanup deletes it)."""
        caller = who(ctx)
        deps, user = caller.deps, caller.user_id
        if memory_type == "fact":
            fact = await guarded(deps.learning.keeper.forget(user, memory_id))
            return shown(fact, _fact, memory_type, memory_id)
        if memory_type == "rule":
            rule = await guarded(deps.rules.forget(user, memory_id))
            return shown(rule, rule_view, memory_type, memory_id)
        if memory_id.startswith("msg_"):
            raise ToolError("an archived chat turn is not forgotten but deleted, over REST")
        episode = await guarded(deps.episodes.forget(user, memory_id))
        return shown(episode, episode_view, memory_type, memory_id)

    @server.tool(annotations=_READ)
    async def memory_stats(ctx: Context, scope: Scope | None = None) -> dict[str, Any]:
        """Counts of the memory: facts by state (active, fading, superseded, expired,
        retracted), rules by maturity and forgotten, episodes and the consolidation backlog.
        scope: facts and rules of global and that scope only."""
        caller = who(ctx)
        return await guarded(stats_of(caller.deps, caller.user_id, scope))

    @server.tool(annotations=_WRITE)
    async def memory_context(
        trigger_prompt: Text,
        butler: Scope,
        ctx: Context,
        token_budget: Annotated[int, Field(ge=1, le=100_000)] | None = None,
    ) -> str:
        """A "# Memory Context" block for a system prompt: the key facts and active rules
        for `trigger_prompt` in the scope `butler` (and global), within token_budget
        (default the server's context budget). The facts it includes count as used."""
        caller = who(ctx)
        deps = caller.deps
        block = await guarded(
            deps.context.build(
                caller.user_id,
                trigger_prompt,
                format="memory-context",
                budget=token_budget or deps.settings.context_budget,
                scope=butler,
            )
        )
        return block.text

    register(server, who)
    return server
