"""Who an MCP tool call acts for, and how refusals become tool errors (``server.mcp_tools``)."""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from mcp.server.mcpserver.exceptions import ToolError

from actors.errors import MnemoError
from actors.mailbox import SessionDeps
from server.metrics import Metrics

__all__ = ["Caller", "Connection", "guarded", "shown"]

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class Caller:
    """Whose memory a tool call reads and changes, and the server's parts it uses."""

    deps: SessionDeps
    user_id: str
    metrics: Metrics | None = None


class Connection(Protocol):
    """Who is calling: ``request`` is the transport's request (an HTTP request, or None
    over stdio). Raises ``ToolError`` for a caller without a valid key."""

    def caller(self, request: object | None) -> Caller: ...


async def guarded(work: Awaitable[_T]) -> _T:
    """``work``'s result; what the keepers refuse, and a store that cannot answer, become
    tool errors an agent can read."""
    try:
        return await work
    except ValueError as exc:
        raise ToolError(str(exc)) from None
    except MnemoError as exc:
        if exc.code in ("bad_request", "conflict"):
            raise ToolError(str(exc)) from None
        raise ToolError(f"{exc.code}: {exc}; try again later") from None


def shown(
    item: _T | None, view: Callable[[_T], dict[str, Any]], what: str, ident: str
) -> dict[str, Any]:
    """``view(item)``; a tool error naming the missing ``what`` when there is no item."""
    if item is None:
        raise ToolError(f"no {what} with id {ident!r}")
    return view(item)
