"""Shared pieces of the REST handlers: JSON responses, errors, authentication, parameters."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, TypeVar

import anyio
import msgspec
from starlette.requests import HTTPConnection, Request
from starlette.responses import Response

from actors.audit import ACTING_FOR
from actors.errors import ArchiveUnavailable, Conflict, MnemoError, NotHome, Rejected
from memory.json_bounds import check_depth, check_integers
from schemas.settings import Settings
from server.auth import bearer, user_for_token
from server.budget import UserBudgets
from server.cluster.ownership import Ownership

__all__ = [
    "BadRequest",
    "authenticated",
    "budgeted",
    "decode_body",
    "error",
    "int_param",
    "json",
]

_encoder = msgspec.json.Encoder()
_T = TypeVar("_T")
_MAX_BODY = 1 << 20

Handler = Callable[[Request, str], Awaitable[Response]]


class BadRequest(Exception):
    """Answered with 400 and the exception's message."""


def json(body: Any, status: int = 200) -> Response:
    return Response(_encoder.encode(body), status, media_type="application/json")


def error(status: int, code: str, message: str) -> Response:
    return json({"error": {"code": code, "message": message}}, status)


def authenticated(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    """Resolve the caller's user id from the bearer key (401 without a valid one), and turn
    ``BadRequest`` into 400 and an unavailable store into 503."""

    async def endpoint(request: Request) -> Response:
        settings: Settings = request.state.settings
        user_id = user_for_token(settings, bearer(request.headers.get("authorization")))
        if user_id is None:
            return error(401, "unauthorized", "send Authorization: Bearer <api key>")
        budgets: UserBudgets = request.state.budgets
        delay = budgets.admit(user_id, len(request.url.query))
        if delay is None:
            return error(429, "rate_limited", "too many requests of this user; slow down")
        if delay:
            await anyio.sleep(delay)
        request.state.user_id = user_id  # bodies read and answers written spend its budget
        request.state.registry.preload_embedder_soon()  # a user showed up: time for the model
        try:
            async with serving(request, user_id):
                answer = await handler(request, user_id)
            if request.state.cluster is not None:
                answer.headers["Mnemo-Node"] = request.state.cluster.node
            return answer
        except NotHome as exc:
            return not_home(exc)
        except (BadRequest, Rejected) as exc:
            return error(400, "bad_request", str(exc))
        except Conflict as exc:
            return error(409, exc.code, str(exc))
        except ArchiveUnavailable as exc:
            return error(503, exc.code, str(exc))
        except MnemoError as exc:
            return error(503, exc.code, str(exc))

    return endpoint


def serving(request: HTTPConnection, user_id: str) -> AbstractAsyncContextManager[None]:
    """Serve ``user_id`` here, acting for them (``actors.audit.ACTING_FOR``: their writes
    take their turn at the writers): on a cluster node, only while it is their home
    (raises ``NotHome`` otherwise); on a single server, always."""
    cluster: Ownership | None = request.state.cluster
    return cluster.serving(user_id) if cluster is not None else _acting_for(user_id)


@asynccontextmanager
async def _acting_for(user_id: str) -> AsyncIterator[None]:
    acting = ACTING_FOR.set(user_id)
    try:
        yield
    finally:
        ACTING_FOR.reset(acting)


def not_home(exc: NotHome) -> Response:
    """421 Misdirected Request: the proxy sends the retry to the user's home node."""
    answer = error(421, exc.code, str(exc))
    answer.headers["Retry-After"] = str(max(1, round(exc.retry_after)))
    return answer


async def budgeted(request: Request) -> AsyncIterator[bytes]:
    """The request's body as it streams in, each chunk paid for from its user's budget
    (``server.budget``): a user sending more than their share is read more slowly."""
    budgets: UserBudgets = request.state.budgets
    user_id: str = request.state.user_id
    async for chunk in request.stream():
        await budgets.spend(user_id, len(chunk))
        yield chunk


def int_param(request: Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest(f"{name} must be an integer") from None
    if not low <= value <= high:
        raise BadRequest(f"{name} must be between {low} and {high}")
    return value


async def decode_body(request: Request, kind: type[_T]) -> _T:
    """The JSON body as ``kind``; ``BadRequest`` for bad JSON, wrong fields, over 1 MiB, or
    beyond the bounds of ``memory.json_bounds`` (nesting, integers)."""
    body = bytearray()
    async for chunk in budgeted(request):
        body += chunk
        if len(body) > _MAX_BODY:
            raise BadRequest("body larger than 1 MiB")
    try:
        check_depth(bytes(body))  # first: the decoder never recurses past the bound
        decoded = msgspec.json.decode(body, type=kind)
        check_integers(bytes(body))
    except RecursionError:
        raise BadRequest("JSON nested too deeply") from None
    except (msgspec.DecodeError, ValueError) as exc:
        raise BadRequest(str(exc)) from None
    return decoded
