"""MCP over streamable HTTP at ``/mcp``, inside ``mnemo serve``'s own app.

The tools (``server.mcp_tools``) run on the app's keepers, writers and event bus, so an
agent and a chat frontend see one memory at once. The bearer key decides the user
exactly as in REST: a request without a valid key is answered 401 before it reaches the
MCP session, and every tool call resolves its user from its own request. Each app
lifespan runs a fresh session manager (``sessions``), so its MCP sessions end with it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from actors.errors import NotHome
from schemas.settings import Settings
from server.auth import bearer, user_for_token
from server.budget import UserBudgets
from server.http import error, not_home, serving
from server.mcp_calls import Caller
from server.mcp_tools import build_mcp

__all__ = ["McpEndpoint", "RequestConnection", "sessions"]


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


@asynccontextmanager
async def sessions(server: MCPServer[Any], settings: Settings) -> AsyncIterator[Any]:
    """A session manager for ``server`` over this app's lifespan. Answers are plain JSON
    (no event stream per call). On a loopback address the SDK checks ``Host`` and
    ``Origin``, so no web page reaches the server through DNS rebinding; a server bound
    to another address is behind its keys."""
    server.streamable_http_app(json_response=True, host=settings.host)
    manager = server.session_manager
    async with manager.run():
        yield manager


class McpEndpoint:
    """The ASGI app at ``/mcp``: authentication and the user's request budget, then the
    SDK's streamable HTTP transport (POST for messages, GET for the server's stream,
    DELETE to end a session)."""

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
        try:
            async with serving(request, user_id):
                await manager.handle_request(scope, receive, send)
        except NotHome as exc:
            await not_home(exc)(scope, receive, send)
