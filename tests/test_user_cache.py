"""UserCache: one load per user however many ask, writes during a load replayed, LRU budget."""

from __future__ import annotations

import anyio
import pytest

from server.adapters.lance_cache import Budget, UserCache

pytestmark = pytest.mark.anyio


class _Entry:
    def __init__(self, items: list[str], size: int = 10) -> None:
        self.items = items
        self.size = size

    def nbytes(self) -> int:
        return self.size


class _Loader:
    """Loads ``store[user]``; each load waits for ``gate`` when one is set."""

    def __init__(self) -> None:
        self.store: dict[str, list[str]] = {}
        self.loads: list[str] = []
        self.gate: anyio.Event | None = None
        self.started = anyio.Event()
        self.fail = 0

    async def __call__(self, user_id: str) -> _Entry:
        self.loads.append(user_id)
        self.started.set()
        if self.gate is not None:
            await self.gate.wait()
        if self.fail:
            self.fail -= 1
            raise OSError("disk error (fake)")
        return _Entry(list(self.store.get(user_id, [])))


async def test_many_readers_of_a_cold_user_share_one_load() -> None:
    loader = _Loader()
    loader.store["u1"] = ["a"]
    loader.gate = anyio.Event()
    cache = UserCache(loader, budget=Budget(1000))
    got: list[_Entry] = []
    async with anyio.create_task_group() as tg:
        for _ in range(5):
            tg.start_soon(_append, got, cache, "u1")
        await loader.started.wait()
        loader.gate.set()
    assert loader.loads == ["u1"]
    assert len({id(e) for e in got}) == 1
    assert (await cache.get("u1")).items == ["a"]
    assert loader.loads == ["u1"]


async def _append(out: list[_Entry], cache: UserCache[_Entry], user_id: str) -> None:
    out.append(await cache.get(user_id))


async def test_writes_during_a_load_are_replayed_onto_the_loaded_entry() -> None:
    loader = _Loader()
    loader.store["u1"] = ["a"]
    loader.gate = anyio.Event()
    cache = UserCache(loader, budget=Budget(1000))
    async with anyio.create_task_group() as tg:
        tg.start_soon(cache.get, "u1")
        await loader.started.wait()
        assert cache.holds("u1")
        loader.store["u1"].append("b")  # landed in the store: the load may or may not see it
        cache.apply("u1", lambda e: e.items.append("b") if "b" not in e.items else None)
        loader.gate.set()
    assert (await cache.get("u1")).items == ["a", "b"]


async def test_writes_for_users_not_held_are_ignored_and_read_later_from_the_store() -> None:
    loader = _Loader()
    cache = UserCache(loader, budget=Budget(1000))
    cache.apply("u1", lambda e: e.items.append("lost"))
    loader.store["u1"] = ["from store"]
    assert (await cache.get("u1")).items == ["from store"]


async def test_a_user_dropped_during_their_load_is_loaded_again_next_time() -> None:
    loader = _Loader()
    loader.store["u1"] = ["old"]
    loader.gate = anyio.Event()
    cache = UserCache(loader, budget=Budget(1000))
    async with anyio.create_task_group() as tg:
        tg.start_soon(cache.get, "u1")
        await loader.started.wait()
        loader.store["u1"] = []  # cleared
        cache.drop("u1")
        loader.gate.set()
    loader.gate = None
    assert (await cache.get("u1")).items == []
    assert loader.loads == ["u1", "u1"]


async def test_a_failed_load_raises_and_the_next_reader_loads_again() -> None:
    loader = _Loader()
    loader.fail = 1
    cache = UserCache(loader, budget=Budget(1000))
    with pytest.raises(OSError, match="disk error"):
        await cache.get("u1")
    assert not cache.holds("u1")
    assert (await cache.get("u1")).items == []


async def test_past_the_budget_the_least_recently_used_users_are_evicted() -> None:
    loader = _Loader()
    cache = UserCache(loader, budget=Budget(30))
    for user in ("a", "b", "c"):
        await cache.get(user)
    await cache.get("a")  # now b is the least recently used
    await cache.get("d")
    assert [u for u in "abcd" if cache.holds(u)] == ["a", "c", "d"]
    assert cache.bytes == 30
    big = _Entry([], size=100)
    assert cache.insert("e", big) is big  # one entry over the budget is still kept
    assert [u for u in "abcde" if cache.holds(u)] == ["e"]


async def test_caches_sharing_a_budget_evict_whichever_user_was_used_longest_ago() -> None:
    budget = Budget(30)
    messages, facts = UserCache(_Loader(), budget=budget), UserCache(_Loader(), budget=budget)
    await messages.get("a")
    await facts.get("a")
    await messages.get("b")
    await messages.get("a")  # the facts of a are now the oldest
    await facts.get("c")
    assert (messages.holds("a"), messages.holds("b"), facts.holds("a"), facts.holds("c")) == (
        True,
        True,
        False,
        True,
    )
    assert budget.total == messages.bytes + facts.bytes == 30
    messages.drop("b")
    assert budget.total == 20
