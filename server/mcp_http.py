"""MCP over streamable HTTP at ``/mcp``, inside ``mnemo serve``'s own app.

The tools (``server.mcp_tools``) run on the app's keepers, writers and event bus, so an
agent and a chat frontend see one memory at once. The bearer key decides the user
exactly as in REST: a request without a valid key is answered 401 before it reaches the
MCP session, and every tool call resolves its user from its own request. Each app
lifespan runs a fresh session manager (``sessions``), so its MCP sessions end with it.

A session belongs to the user whose key opened it: a request of any other user naming
its id is answered 404, as if it did not exist (the SDK compares the request's
``scope["user"]`` with the opener's). A user holds at most
``max_mcp_sessions_per_user`` sessions (one more ``initialize``: 429
``too_many_sessions``), each closed after ``mcp_idle_timeout`` idle seconds, and the
server at most that many per configured user: one user never fills the server for the
others. ``Host`` and ``Origin`` are checked for every route by ``server.boundary``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, authorization_context
from mcp.server.auth.provider import AccessToken
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from actors.errors import NotHome
from schemas.settings import Settings
from server.auth import bearer, user_for_token
from server.budget import UserBudgets
from server.http import error, not_home, serving
from server.mcp_calls import Caller
from server.mcp_tools import build_mcp

__all__ = ["McpEndpoint", "RequestConnection", "open_sessions", "sessions"]


class RequestConnection:
    """The caller of a tool over HTTP: the request's bearer key and the app's state."""

    def caller(self, request: object | None) -> Caller:
        if not isinstance(request, Request):
            raise ToolError("this server takes MCP over HTTP only")
        settings: Settings = request.state.settings
        user_id = user_for_token(settings, bearer(request.headers.get("authorization")))
        if user_id is None:
            raise ToolError("unauthorized: send Authorization: Bearer <api key>")
        return Caller(request.state.deps, user_id, request.state.metrics)


def new_server() -> MCPServer[Any]:
    return build_mcp(RequestConnection())


def _users(settings: Settings) -> int:
    """How many users the server has: one per distinct user of ``api_keys`` (the single
    user without keys)."""
    return max(1, len(set(settings.api_keys.values())))


@asynccontextmanager
async def sessions(server: MCPServer[Any], settings: Settings) -> AsyncIterator[Any]:
    """A session manager for ``server`` over this app's lifespan. Answers are plain JSON
    (no event stream per call). The SDK's own ``Host``/``Origin`` check is off:
    ``server.boundary`` checks every route, this one included."""
    server.streamable_http_app(
        json_response=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        session_idle_timeout=settings.mcp_idle_timeout,
        max_sessions=settings.max_mcp_sessions_per_user * _users(settings),
    )
    manager = server.session_manager
    async with manager.run():
        yield manager


def _principal(user_id: str) -> AuthenticatedUser:
    """What the SDK binds a session to: the user (never the key, which is not kept)."""
    return AuthenticatedUser(AccessToken(token="", client_id=user_id, scopes=[]))


def open_sessions(manager: StreamableHTTPSessionManager, user_id: str) -> int:
    """The user's open MCP sessions. The SDK keeps each session's owner but offers no
    count, so this reads its table (``_session_owners``; tests/test_mcp_sessions.py
    fails if an SDK release renames it)."""
    owner = authorization_context(_principal(user_id))
    owners: dict[str, Any] = manager._session_owners
    return sum(1 for held in owners.values() if held == owner)


def _opens_session(request: Request) -> bool:
    """Whether the request would open a session: a POST with no session id, of a protocol
    version with sessions (later versions answer each request on its own)."""
    version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER)
    return (
        request.method == "POST"
        and MCP_SESSION_ID_HEADER not in request.headers
        and (version is None or version in HANDSHAKE_PROTOCOL_VERSIONS)
    )


class McpEndpoint:
    """The ASGI app at ``/mcp``: authentication and the user's request budget, then the
    SDK's streamable HTTP transport (POST for messages, GET for the server's stream,
    DELETE to end a session), with each user's sessions counted and bound to them."""

    def __init__(self) -> None:
        #: One opening at a time per user, so counting and opening are one step.
        self._openings: defaultdict[str, anyio.Lock] = defaultdict(anyio.Lock)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        settings: Settings = request.state.settings
        user_id = user_for_token(settings, bearer(request.headers.get("authorization")))
        if user_id is None:
            answer = error(401, "unauthorized", "send Authorization: Bearer <api key>")
            await answer(scope, receive, send)
            return
        budgets: UserBudgets = request.state.budgets
        delay = budgets.admit(user_id, len(request.url.query))
        if delay is None:
            answer = error(429, "rate_limited", "too many requests of this user; slow down")
            await answer(scope, receive, send)
            return
        if delay:
            await anyio.sleep(delay)
        request.state.registry.preload_embedder_soon()  # an agent showed up: time for the model
        manager: StreamableHTTPSessionManager = request.state.mcp
        scope["user"] = _principal(user_id)
        try:
            async with serving(request, user_id):
                if _opens_session(request):
                    await self._open(manager, settings, user_id, scope, receive, send)
                else:
                    await manager.handle_request(scope, receive, send)
        except NotHome as exc:
            await not_home(exc)(scope, receive, send)

    async def _open(
        self,
        manager: StreamableHTTPSessionManager,
        settings: Settings,
        user_id: str,
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> None:
        """A request that opens a session, unless the user holds as many as they may."""
        async with self._openings[user_id]:
            limit = settings.max_mcp_sessions_per_user
            if open_sessions(manager, user_id) >= limit:
                message = (
                    f"this user has {limit} open MCP sessions, as many as a user may: end "
                    "one (DELETE /mcp with its Mcp-Session-Id) or wait until an idle one closes"
                )
                await error(429, "too_many_sessions", message)(scope, receive, send)
                return
            await manager.handle_request(scope, receive, send)
