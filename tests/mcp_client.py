"""The MCP SDK's own client against the real server, for the MCP tests."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp.client import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, TextContent

__all__ = ["ToolFailed", "call", "mcp_session", "text_of"]


class ToolFailed(Exception):
    """A tool answered ``isError``; the message is its text."""


@asynccontextmanager
async def mcp_session(address: str, key: str | None = None) -> AsyncIterator[ClientSession]:
    """An initialized MCP session over streamable HTTP at ``address``'s ``/mcp``."""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30.0) as client,
        streamable_http_client(f"http://{address}/mcp", http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def text_of(result: CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, TextContent))


async def call(session: ClientSession, tool: str, **arguments: Any) -> Any:
    """The tool's answer: its structured content (a text answer: the text); raises
    ``ToolFailed`` with the message when the tool answered an error."""
    result = await session.call_tool(tool, arguments)
    if result.is_error:
        raise ToolFailed(text_of(result))
    if result.structured_content is not None:
        content = result.structured_content
        # A tool returning a string is wrapped as {"result": ...} by the SDK.
        return content["result"] if set(content) == {"result"} else content
    return json.loads(text_of(result))
