"""The chat WebSocket, ``/ws/{session_id}``: protocol v1 (see ``docs/protocol.md``)."""

from __future__ import annotations

import contextlib
import logging
import re

import anyio
import msgspec
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from starlette.responses import JSONResponse
from starlette.websockets import WebSocket, WebSocketDisconnect

from actors.channels import receive, send
from actors.errors import NotHome, Overloaded, SessionClosed, TooManySessions
from actors.mailbox import Mail
from actors.registry import END_TIMEOUT, SessionRegistry
from memory.json_bounds import check_depth, check_integers, flattened
from memory.ratelimit import TokenBucket
from schemas.settings import Settings
from schemas.wire import (
    NAME_PATTERN,
    Chat,
    Delta,
    Done,
    End,
    ErrorFrame,
    Ping,
    Pong,
    Ready,
    ServerMessage,
    decode_client,
    encode_server,
    frame_id,
)
from server.auth import PROTOCOL, socket_key, user_for_token
from server.budget import UserBudgets
from server.cluster.ownership import Ownership
from server.metrics import Metrics

__all__ = ["KEY_NEEDED", "SESSION_ID", "accept", "chat_socket", "refuse"]

_log = logging.getLogger("mnemo.ws")

SESSION_ID = re.compile(NAME_PATTERN)
#: Why a handshake without a valid key is refused.
KEY_NEEDED = (
    "send a valid key: Authorization: Bearer <key>, or the subprotocols mnemo and "
    "mnemo.bearer.<key as base64url>"
)
_OUTBOX_SIZE = 256


def _error_body(code: str, message: str) -> dict[str, dict[str, str]]:
    return {"error": {"code": code, "message": message}}


def _id_of(frame: bytes) -> str | None:
    """The id of a refused frame (``schemas.wire.frame_id``); of a frame nested past the
    bound, read with its nested values left out (``flattened``), so however deep it
    nests, its error carries its id and the decoder never goes deep."""
    return frame_id(flattened(frame))


async def refuse(websocket: WebSocket, status: int, code: str, message: str) -> None:
    """Answer the handshake with an HTTP error and a JSON body instead of accepting."""
    await websocket.send_denial_response(JSONResponse(_error_body(code, message), status))


async def accept(websocket: WebSocket) -> None:
    """Accept the handshake, answering the ``mnemo`` subprotocol when the client offered
    it (a browser that offered subprotocols fails a handshake that answers none; the
    entry carrying the key is never answered)."""
    offered = websocket.scope.get("subprotocols") or ()
    await websocket.accept(subprotocol=PROTOCOL if PROTOCOL in offered else None)


class _FirstDeltas:
    """One connection's chats in flight: each one's server overhead on its first
    ``delta``, from its frame read to that delta written to the socket, less what the
    model took to its first chunk (``usage.model_first_ms``), into ``metrics``."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics
        self._read: dict[str, float] = {}
        self._written: dict[str, float] = {}

    def read(self, chat_id: str, at: float) -> None:
        if len(self._read) >= _OUTBOX_SIZE:  # chats that never ended: forget the oldest
            oldest = next(iter(self._read))
            del self._read[oldest]
            self._written.pop(oldest, None)
        self._read[chat_id] = at

    def written(self, message: ServerMessage, at: float) -> None:
        match message:
            case Delta(id=chat_id) if chat_id in self._read and chat_id not in self._written:
                self._written[chat_id] = at
            case Done(id=chat_id, usage=usage) if chat_id in self._written:
                ms = (self._written.pop(chat_id) - self._read.pop(chat_id)) * 1000
                self._metrics.chat_overhead_ms.observe(max(ms - usage.model_first_ms, 0.0))
            case Done(id=chat_id) | ErrorFrame(id=str() as chat_id):
                self._read.pop(chat_id, None)
                self._written.pop(chat_id, None)


async def _send_replies(
    websocket: WebSocket,
    replies: MemoryObjectReceiveStream[ServerMessage],
    first_deltas: _FirstDeltas,
) -> None:
    """Encode and send everything queued for this connection; owns ``replies``."""
    metrics: Metrics = websocket.state.metrics
    with replies:
        try:
            while True:
                message = await receive(replies)
                await websocket.send_text(encode_server(message))
                first_deltas.written(message, anyio.current_time())
                code = message.code if isinstance(message, ErrorFrame) else None
                metrics.frame_out(str(type(message).__struct_config__.tag), code)
        except anyio.EndOfStream:
            pass  # every answer is sent
        except (WebSocketDisconnect, OSError, RuntimeError):
            pass  # the client is gone; the receive loop notices too


async def chat_socket(websocket: WebSocket) -> None:
    settings: Settings = websocket.state.settings
    registry: SessionRegistry = websocket.state.registry
    user_id = user_for_token(settings, socket_key(websocket))
    if user_id is None:
        await refuse(websocket, 401, "unauthorized", KEY_NEEDED)
        return
    session_id = websocket.path_params["session_id"]
    if not SESSION_ID.match(session_id):
        await refuse(websocket, 400, "bad_request", "session id: 1-128 of A-Z a-z 0-9 _ . : -")
        return
    scope = websocket.query_params.get("app", "global")
    if not SESSION_ID.match(scope):
        await refuse(websocket, 400, "bad_request", "app id: 1-128 of A-Z a-z 0-9 _ . : -")
        return
    cluster: Ownership | None = websocket.state.cluster
    if cluster is None:
        await _session(websocket, settings, registry, (user_id, session_id, scope))
        return
    leaving = anyio.CancelScope()
    try:
        async with cluster.serving(user_id, close=leaving.cancel):
            with leaving:
                await _session(websocket, settings, registry, (user_id, session_id, scope))
    except NotHome as exc:
        await refuse(websocket, 421, exc.code, str(exc))
        return
    if leaving.cancel_called:
        # Another node is this user's home now: reconnect (through the proxy) to it.
        with contextlib.suppress(RuntimeError, OSError):
            await websocket.close(1012, "moved to another node; reconnect")


async def _session(
    websocket: WebSocket,
    settings: Settings,
    registry: SessionRegistry,
    who: tuple[str, str, str],
) -> None:
    user_id, session_id, scope = who
    await accept(websocket)
    try:
        actor, resumed = await registry.open(user_id, session_id, scope)
    except TooManySessions as exc:
        _log.info("refused a session of user %s: %s", user_id, exc)
        await websocket.send_text(encode_server(ErrorFrame(code=exc.code, message=str(exc))))
        await websocket.close(1008)
        return
    outbox, replies = anyio.create_memory_object_stream[ServerMessage](_OUTBOX_SIZE)
    unsubscribe = registry.subscribe(user_id, session_id, outbox.clone())
    first_deltas = _FirstDeltas(websocket.state.metrics)
    async with anyio.create_task_group() as tg:
        tg.start_soon(_send_replies, websocket, replies, first_deltas)
        with outbox:
            await send(
                outbox, Ready(session_id=session_id, turn_count=actor.turn_count, resumed=resumed)
            )
            try:
                ended = await _receive_loop(
                    websocket,
                    settings,
                    registry,
                    (user_id, session_id, scope),
                    outbox,
                    first_deltas,
                )
            finally:
                unsubscribe()
        if ended:
            # The sender stops once every answer is sent (all send streams closed).
            tg.cancel_scope.deadline = anyio.current_time() + END_TIMEOUT
        else:
            tg.cancel_scope.cancel()
    if ended:
        await websocket.close(1000)


async def _receive_loop(
    websocket: WebSocket,
    settings: Settings,
    registry: SessionRegistry,
    session: tuple[str, str, str],
    outbox: MemoryObjectSendStream[ServerMessage],
    first_deltas: _FirstDeltas,
) -> bool:
    """Read frames of ``session`` (user id, session id, scope) until the client leaves
    (False) or the session ends (True)."""
    user_id, session_id, scope = session
    bucket = TokenBucket(settings.rate_limit, settings.rate_burst, anyio.current_time())
    budgets: UserBudgets = websocket.state.budgets
    metrics: Metrics = websocket.state.metrics
    while True:
        event = await websocket.receive()
        read_at = anyio.current_time()
        if event["type"] == "websocket.disconnect":
            return False
        text = event.get("text")
        if text is None:
            ident = _id_of(event.get("bytes") or b"")
            problem = "frames must be JSON text"
            await send(outbox, ErrorFrame(id=ident, code="bad_request", message=problem))
            continue
        data = text.encode()
        if not bucket.take(read_at):
            problem = "too many frames"
            await send(outbox, ErrorFrame(id=_id_of(data), code="rate_limited", message=problem))
            continue
        if len(data) > settings.max_frame_bytes:
            budgets.charge(user_id, len(data))  # refused, but read: it costs the user
            problem = f"frame larger than {settings.max_frame_bytes} bytes"
            await send(outbox, ErrorFrame(id=_id_of(data), code="bad_request", message=problem))
            continue
        if not budgets.take(user_id, len(data)):
            problem = "too much work asked of this user's connections; slow down"
            await send(outbox, ErrorFrame(id=_id_of(data), code="rate_limited", message=problem))
            continue
        try:
            check_depth(data)  # first: no decoder recurses past the bound
            message = decode_client(data)
            check_integers(data)
        except (msgspec.DecodeError, ValueError) as exc:
            metrics.frame_in("invalid")
            await send(outbox, ErrorFrame(id=_id_of(data), code="bad_request", message=str(exc)))
            continue
        metrics.frame_in(str(type(message).__struct_config__.tag))
        match message:
            case Ping():
                await send(outbox, Pong())
            case End():
                await _end(registry, user_id, session_id, message, outbox)
                return True
            case _:
                if isinstance(message, Chat):
                    first_deltas.read(message.id, read_at)
                try:
                    await registry.submit(user_id, session_id, message, outbox, scope)
                except (Overloaded, SessionClosed, TooManySessions) as exc:
                    ident = getattr(message, "id", None)
                    await send(outbox, ErrorFrame(id=ident, code=exc.code, message=str(exc)))


async def _end(
    registry: SessionRegistry,
    user_id: str,
    session_id: str,
    message: End,
    outbox: MemoryObjectSendStream[ServerMessage],
) -> None:
    """Hand ``end`` to the actor and wait until it has archived and forgotten the session."""
    actor = registry.get(user_id, session_id)
    if actor is None:
        return
    done_send, done_receive = anyio.create_memory_object_stream[ServerMessage](1)
    try:
        actor.submit_nowait(Mail(message, done_send))
    except (Overloaded, SessionClosed) as exc:
        await send(outbox, ErrorFrame(code=exc.code, message=str(exc)))
        done_receive.close()
        return
    with done_receive, anyio.move_on_after(END_TIMEOUT):
        async for reply in done_receive:
            await send(outbox, reply)
