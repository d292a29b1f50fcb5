"""Moving a data directory to another embedder: every vector made again, resumable, and
``mnemo reembed`` refusing while a server holds the directory."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import lancedb
import pytest

from actors.keys import key_vectors
from memory.episodes import new_episode
from memory.facts import Stored
from memory.hashing import HashEmbedder
from memory.rules import StoredRule, new_rule
from schemas.records import ArchivedMessage
from server.adapters.lance_store import LanceStore, StoreMismatch
from server.cli import main
from server.datadir import DataDirLock
from server.reembed import ReembedError, reembed
from testing.records import T0, a_fact

pytestmark = pytest.mark.anyio

OLD, NEW = HashEmbedder(8), HashEmbedder(16)


def said(n: int, text: str) -> ArchivedMessage:
    return ArchivedMessage(
        id=f"msg_{n:016x}",
        user_id="u1",
        session_id="s1",
        scope="global",
        turn=n,
        role="user",
        speaker="user",
        text=text,
        at=T0 + timedelta(minutes=n),
        context="assistant: What did you do today?" if n == 2 else "",
    )


async def filled(data_dir: Path) -> None:
    """A store made with ``OLD``: two messages, a fact, a rule and an episode."""
    store = LanceStore(data_dir / "lancedb", embedder=OLD)
    await store.open()
    messages = [said(1, "I moved to Lisbon last spring"), said(2, "I went hiking with Ana")]
    await store.append_messages(messages, await key_vectors(OLD, messages))
    fact = a_fact(content="User lives in Lisbon")
    await store.facts.add_facts([Stored(fact, OLD.embed_one(fact.content))])
    rule = new_rule("rule_00000001", "u1", "Answer in Portuguese", T0)
    await store.rules.put_rules([StoredRule(rule, OLD.embed_one(rule.content))])
    episode = new_episode("ep_0000000000000001", "u1", "Asked about trams", "city", T0)
    await store.episodes.put_episodes([(episode, OLD.embed_one(episode.content))])
    await store.aclose()


async def test_every_vector_is_made_again_with_the_new_embedder_and_the_store_opens(
    tmp_path: Path,
) -> None:
    await filled(tmp_path)
    with pytest.raises(StoreMismatch):
        await LanceStore(tmp_path / "lancedb", embedder=NEW).open()
    seen: list[tuple[str, int, int]] = []
    counts = await reembed(tmp_path, NEW, lambda *step: seen.append(step))
    assert counts == {"messages": 2, "facts": 1, "rules": 1, "episodes": 1}
    assert ("messages", 2, 2) in seen
    store = LanceStore(tmp_path / "lancedb", embedder=NEW)
    await store.open()
    [fact] = await store.facts.facts_of("u1")
    assert list(fact.vector) == pytest.approx(NEW.embed_one("User lives in Lisbon"))
    [rule] = await store.rules.rules_of("u1")
    assert list(rule.vector) == pytest.approx(NEW.embed_one("Answer in Portuguese"))
    [(_, vector)] = await store.episodes.episodes_of("u1")
    assert list(vector) == pytest.approx(NEW.embed_one("Asked about trams"))
    # Messages keep their stored search texts (the context they were archived with).
    hits = await store.search_messages("u1", "hiking with Ana", NEW.embed_one("hiking"), k=2)
    assert {m.id for m, _ in hits} == {"msg_0000000000000001", "msg_0000000000000002"}
    await store.aclose()
    assert await reembed(tmp_path, NEW) == dict.fromkeys(counts, 0)  # nothing left to do


async def test_a_run_stopped_in_a_swap_is_completed_by_the_next(tmp_path: Path) -> None:
    await filled(tmp_path)
    await reembed(tmp_path, NEW)
    # As if a run had stopped after dropping ``facts``, its finished copy left behind.
    db = await lancedb.connect_async(tmp_path / "lancedb")
    facts = await (await db.open_table("facts")).query().to_arrow()
    await db.create_table("facts__reembed", data=facts, schema=facts.schema)
    await db.drop_table("facts")
    db.close()  # type: ignore[no-untyped-call]  # lancedb leaves close() unannotated
    await reembed(tmp_path, NEW)
    store = LanceStore(tmp_path / "lancedb", embedder=NEW)
    await store.open()
    assert [s.fact.content for s in await store.facts.facts_of("u1")] == ["User lives in Lisbon"]
    await store.aclose()
    db = await lancedb.connect_async(tmp_path / "lancedb")
    assert "facts__reembed" not in (await db.list_tables()).tables
    db.close()  # type: ignore[no-untyped-call]  # lancedb leaves close() unannotated


async def test_journaled_messages_must_reach_the_table_first(tmp_path: Path) -> None:
    (tmp_path / "journal").mkdir()
    (tmp_path / "journal" / "00000001.journal").write_bytes(b"x")
    with pytest.raises(ReembedError, match="start `mnemo serve`"):
        await reembed(tmp_path, NEW)


def test_mnemo_reembed_refuses_a_data_directory_a_server_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MNEMO_EMBEDDER", "hash")
    lock = DataDirLock(str(tmp_path))
    lock.acquire()
    try:
        assert main(["reembed", "--data-dir", str(tmp_path)]) == 2
    finally:
        lock.release()
    assert "mnemo:" in capsys.readouterr().err
    assert main(["reembed", "--data-dir", str(tmp_path)]) == 0
    assert "re-embedded with hash-64" in capsys.readouterr().err
