"""Which node serves which shard: node heartbeats and shard leases in the object store.

Every node writes its heartbeat object ``nodes/<node>`` every ``lease_seconds / 5``
and lists the others'. A node is alive while its heartbeat keeps changing: an
observer notes, on its own clock, when it last saw each node's ETag change, so no two
clocks are ever compared. A node that has not written its heartbeat for
``0.8 * lease_seconds`` (its own clock, from the start of its last successful write)
stops serving; the others wait ``lease_seconds`` of their own before they take its
shards, so the two never overlap while the clocks run at about the same rate.

A node writes its heartbeat before it takes any shard, so a lease held by a node
missing from the observer's last listing was taken after it: the observer lists the
heartbeats again before deciding.

A shard's lease ``leases/<shard>`` names its node and an epoch. A node takes a lease
that names nobody, a dead node or itself, with a conditional write (``If-Match`` on
the ETag it read, or ``If-None-Match: *``): of two nodes taking one lease, one wins.
A lease held by a live node is asked for (``wants/<holder>/<shard>``) once its
requests have kept arriving for ``handover_after`` seconds; the holder hands it over
at its next heartbeat, once it has held it for ``min_hold`` seconds. What happens to
a shard's state on taking and giving it up is the ``Hooks``' business (the journal's
fence, the sessions, the caches).

Before a user of a taken shard is first served or written, their rows in the tables
are given the lease's epoch (``Hooks.fence``): from then on a write of an earlier
holder, conditional on the rows' epoch, changes nothing (``server.adapters.lance_epochs``).
"""

from __future__ import annotations

import json
import logging
import os
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
from anyio.abc import TaskStatus

from actors.audit import ACTING_FOR
from actors.errors import NotHome
from server.cluster.objects import Listed, Objects, ObjectStoreError, PreconditionFailed
from server.cluster.shards import shard_of

__all__ = ["Hooks", "NotHome", "Ownership"]

_log = logging.getLogger("mnemo.cluster")


@dataclass(frozen=True, slots=True)
class Hooks:
    """What a node does with a shard's state."""

    #: Before the first request is served: fence the journal, replay it, drop any state
    #: kept from an earlier time this node held the shard.
    take: Callable[[int], Awaitable[None]]
    #: Giving the shard up (``flush``: handed over; else lost): sessions are closed and
    #: requests done by now; move what can be moved into the tables, forget the rest.
    settle: Callable[[int, bool], Awaitable[None]]
    #: Before a user is first served or written in a holding: give their rows the
    #: holding's epoch (the user and the epoch).
    fence: Callable[[str, int], Awaitable[None]]


@dataclass(eq=False)
class _Held:
    epoch: int
    etag: str
    since: float
    leaving: bool = False
    #: Requests and connections being served, each with what closes it early.
    serving: dict[int, Callable[[], None]] = field(default_factory=dict)
    idle: anyio.Event = field(default_factory=anyio.Event)
    #: The users whose rows carry this holding's epoch, and those being fenced (done
    #: when the event is set).
    fenced: set[str] = field(default_factory=set)
    fencing: dict[str, anyio.Event] = field(default_factory=dict)


@dataclass(slots=True)
class _Asking:
    first: float
    last: float
    asked: float | None = None


class Ownership:
    """This node's view of the cluster: the shards it holds, the nodes alive."""

    def __init__(
        self,
        objects: Objects,
        node: str,
        hooks: Hooks,
        *,
        lease_seconds: float = 10.0,
        handover_after: float = 3.0,
        min_hold: float = 30.0,
    ) -> None:
        self.node = node
        self._objects, self._hooks = objects, hooks
        self._lease_seconds = lease_seconds
        self._serve_for = 0.8 * lease_seconds
        self._interval = lease_seconds / 5
        self._handover_after, self._min_hold = handover_after, min_hold
        self._held: dict[int, _Held] = {}
        self._locks: dict[int, anyio.Lock] = {}
        self._asking: dict[int, _Asking] = {}
        #: Other nodes: their heartbeat's ETag and when (our clock) we saw it change.
        self._seen: dict[str, tuple[str, float]] = {}
        self._beat_at = -float("inf")
        self._beats = 0
        self._whoami = {"node": node, "pid": os.getpid(), "host": socket.gethostname()}
        self._ticket = 0

    # -- serving -------------------------------------------------------------

    def held(self) -> list[int]:
        """The shards this node serves now."""
        return sorted(s for s, h in self._held.items() if not h.leaving)

    def serves(self, user_id: str) -> bool:
        """Whether this node may write ``user_id``'s memory now."""
        held = self._held.get(shard_of(user_id))
        return held is not None and not held.leaving and self.in_touch()

    def check(self, user_id: str) -> None:
        """Raise ``NotHome`` unless this node ``serves`` the user (the writers' guard)."""
        if not self.serves(user_id):
            raise NotHome(f"node {self.node} no longer serves this user")

    def epoch_of(self, user_id: str) -> int:
        """The epoch this node's writes of ``user_id``'s rows carry; raises ``NotHome``
        unless it serves the user and has fenced them (``fence``)."""
        self.check(user_id)
        held = self._held[shard_of(user_id)]
        if user_id not in held.fenced:
            raise NotHome(f"node {self.node} has not fenced this user yet")
        return held.epoch

    def epoch_held(self, user_id: str) -> int:
        """The epoch of the user's shard while this node holds it in any way, else 0."""
        held = self._held.get(shard_of(user_id))
        return held.epoch if held is not None else 0

    async def fence(self, user_id: str) -> None:
        """Raise ``NotHome`` unless this node serves ``user_id``; the first time in this
        holding of their shard, give their rows its epoch first (the writers' guard)."""
        self.check(user_id)
        held = self._held[shard_of(user_id)]
        while user_id not in held.fenced:
            running = held.fencing.get(user_id)
            if running is not None:  # another request's fence: wait for it, then look
                await running.wait()
                self.check(user_id)
                if self._held[shard_of(user_id)] is not held:
                    raise NotHome(f"node {self.node} no longer serves this user")
                continue
            done = held.fencing[user_id] = anyio.Event()
            try:
                # Users of every shard fenced at once go in one batch (lance_fences).
                await self._hooks.fence(user_id, held.epoch)
                held.fenced.add(user_id)
            finally:
                del held.fencing[user_id]
                done.set()

    def alive(self) -> list[str]:
        """The nodes alive as this node sees them (itself included while it may serve)."""
        now = anyio.current_time()
        others = [n for n, (_, seen) in self._seen.items() if now - seen < self._lease_seconds]
        return sorted([*others, *([self.node] if self.in_touch() else [])])

    @asynccontextmanager
    async def serving(
        self, user_id: str, close: Callable[[], None] | None = None
    ) -> AsyncIterator[None]:
        """Serve a request or connection of ``user_id`` here, taking their shard if no
        live node holds it; raises ``NotHome`` otherwise. ``close`` ends the work early
        when the shard is given up (a connection's; requests just finish)."""
        shard = shard_of(user_id)
        held = await self._admit(shard)
        self._ticket += 1
        ticket = self._ticket
        held.serving[ticket] = close or (lambda: None)
        acting = ACTING_FOR.set(user_id)
        try:
            await self.fence(user_id)
            yield
        finally:
            ACTING_FOR.reset(acting)
            del held.serving[ticket]
            if not held.serving:
                held.idle.set()

    async def _admit(self, shard: int) -> _Held:
        if not self.in_touch():
            raise NotHome(f"node {self.node} has lost touch with the object store")
        held = self._held.get(shard)
        if held is not None and not held.leaving:
            return held
        async with self._locks.setdefault(shard, anyio.Lock()):
            held = self._held.get(shard)
            if held is not None:
                if held.leaving:
                    raise NotHome(f"node {self.node} is handing this user over")
                return held
            return await self._take(shard)

    async def _take(self, shard: int) -> _Held:
        key = _lease_key(shard)
        found = await self._objects.get(key)
        lease = _decode(found[0]) if found is not None else {}
        holder = lease.get("node")
        if isinstance(holder, str) and holder != self.node and holder not in self._seen:
            # A node writes its heartbeat before it takes a shard: one taken by a node
            # this node has not listed was taken after its last listing. List now.
            self._observe(await self._objects.keys("nodes/"))
        if isinstance(holder, str) and holder != self.node and self._is_alive(holder):
            await self._ask(shard, holder)
            raise NotHome(f"this user's home is node {holder}")
        epoch = _epoch(lease) + 1
        body = json.dumps({"node": self.node, "epoch": epoch}).encode()
        try:
            etag = await self._objects.put(
                key,
                body,
                create=found is None,
                replace=found[1] if found is not None else None,
            )
        except PreconditionFailed:
            raise NotHome("another node took this user's shard just now") from None
        try:
            await self._hooks.take(shard)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self._give_back(shard, etag, epoch)
            raise
        held = self._held[shard] = _Held(epoch, etag, anyio.current_time())
        self._asking.pop(shard, None)
        _log.info("took shard %d (epoch %d, was %s)", shard, epoch, holder)
        return held

    async def _ask(self, shard: int, holder: str) -> None:
        now = anyio.current_time()
        asking = self._asking.get(shard)
        if asking is None or now - asking.last > 2 * self._handover_after:
            asking = self._asking[shard] = _Asking(now, now)
        asking.last = now
        if now - asking.first < self._handover_after:
            return
        if asking.asked is not None and now - asking.asked < self._lease_seconds:
            return
        asking.asked = now
        try:
            await self._objects.put(f"wants/{holder}/{shard:04d}", self.node.encode())
            _log.info("asked node %s for shard %d", holder, shard)
        except ObjectStoreError as exc:
            _log.warning("could not ask node %s for shard %d: %s", holder, shard, exc)

    # -- heartbeats ----------------------------------------------------------

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Beat until cancelled; started once the first beat is written (raises
        ``ObjectStoreError`` if it cannot be)."""
        await self._beat()
        task_status.started()
        while True:
            await anyio.sleep(self._interval)
            try:
                await self._beat()
            except ObjectStoreError as exc:
                _log.warning("heartbeat of node %s failed: %s", self.node, exc)

    async def _beat(self) -> None:
        started = anyio.current_time()
        self._beats += 1
        body = {"beat": self._beats, **self._whoami}
        await self._objects.put(f"nodes/{self.node}", json.dumps(body).encode())
        paused = started - self._beat_at >= self._serve_for
        self._beat_at = started
        self._observe(await self._objects.keys("nodes/"))
        if paused and self._held:
            await self._verify()
        for wanted in await self._objects.keys(f"wants/{self.node}/"):
            await self._wanted(int(wanted.key.rsplit("/", 1)[1]), wanted.key)

    def _observe(self, listed: list[Listed]) -> None:
        now = anyio.current_time()
        current: dict[str, tuple[str, float]] = {}
        for item in listed:
            name, etag = item.key.rsplit("/", 1)[1], item.etag
            if name == self.node:
                continue
            seen = self._seen.get(name)
            current[name] = seen if seen is not None and seen[0] == etag else (etag, now)
        self._seen = current

    def _is_alive(self, node: str) -> bool:
        seen = self._seen.get(node)
        return seen is not None and anyio.current_time() - seen[1] < self._lease_seconds

    def in_touch(self) -> bool:
        """Whether this node's heartbeat was written recently enough for it to serve."""
        return anyio.current_time() - self._beat_at < self._serve_for

    async def _verify(self) -> None:
        """After a pause longer than a lease: give up the shards taken meanwhile."""
        for shard, held in list(self._held.items()):
            found = await self._objects.get(_lease_key(shard))
            lease = _decode(found[0]) if found is not None else {}
            if lease.get("node") != self.node or lease.get("epoch") != held.epoch:
                _log.warning("shard %d was taken by %s while this node paused", shard, lease)
                await self.lost(shard)

    async def _wanted(self, shard: int, key: str) -> None:
        held = self._held.get(shard)
        if held is not None and held.leaving:
            return
        if held is not None and anyio.current_time() - held.since < self._min_hold:
            return  # asked again once it has been here long enough
        if held is not None:
            await self._leave(shard, held, flush=True)
            await self._give_back(shard, held.etag, held.epoch)
            _log.info("handed shard %d over", shard)
        else:
            found = await self._objects.get(_lease_key(shard))
            lease = _decode(found[0]) if found is not None else {}
            if found is not None and lease.get("node") == self.node:
                await self._give_back(shard, found[1], _epoch(lease))
        await self._objects.delete(key)

    # -- giving shards up ----------------------------------------------------

    async def lost(self, shard: int) -> None:
        """Another node has taken ``shard`` (its fence or lease says so): stop at once."""
        held = self._held.get(shard)
        if held is not None and not held.leaving:
            _log.warning("lost shard %d to another node", shard)
            await self._leave(shard, held, flush=False)

    async def _leave(self, shard: int, held: _Held, *, flush: bool) -> None:
        held.leaving = True
        for close in list(held.serving.values()):
            close()
        if held.serving:
            with anyio.move_on_after(self._lease_seconds):
                await held.idle.wait()
        try:
            await self._hooks.settle(shard, flush)
        finally:
            self._held.pop(shard, None)

    async def _give_back(self, shard: int, etag: str, epoch: int) -> None:
        body = json.dumps({"node": None, "epoch": epoch}).encode()
        try:
            await self._objects.put(_lease_key(shard), body, replace=etag)
        except (PreconditionFailed, ObjectStoreError) as exc:
            _log.warning("could not release shard %d: %s", shard, exc)

    async def release_all(self) -> None:
        """A graceful stop: hand every shard back (their state settled first) and take
        this node out of the membership, so the others need not wait for a lease."""
        for shard, held in sorted(self._held.items()):
            if not held.leaving:
                await self._leave(shard, held, flush=True)
                await self._give_back(shard, held.etag, held.epoch)
        try:
            await self._objects.delete(f"nodes/{self.node}")
        except ObjectStoreError as exc:
            _log.warning("could not remove node %s's heartbeat: %s", self.node, exc)
        self._beat_at = -float("inf")


def _lease_key(shard: int) -> str:
    return f"leases/{shard:04d}"


def _decode(body: bytes) -> dict[str, object]:
    try:
        value = json.loads(body)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _epoch(lease: dict[str, object]) -> int:
    epoch = lease.get("epoch", 0)
    return epoch if isinstance(epoch, int) else 0
