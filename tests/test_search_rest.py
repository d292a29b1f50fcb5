"""`GET /memory/search` end to end: scored hits over facts and archived turns, per user."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from memory.hashing import HashEmbedder
from server.config import load_settings
from testing.fake_ollama import FakeOllama
from tests.harness import Client, http, make_app, serve, settings_for
from tests.import_lines import fact, jsonl, post, turn

pytestmark = pytest.mark.anyio

KEYS = {"ka": "alice", "kb": "bob"}


@pytest.fixture
async def server(tmp_path: Path, fake: FakeOllama) -> AsyncIterator[str]:
    async with serve(make_app(settings_for(tmp_path, fake.url, api_keys=KEYS))) as address:
        yield address


async def seed(server: str) -> None:
    async with Client.connect(server, "s1", token="ka") as client:
        await client.receive()
        await client.send(type="remember", id="r", content="User drinks green tea every morning")
        await client.until("memory")
        await client.send(
            type="turn",
            id="t",
            user="Green tea is my favourite",
            assistant="Nice",
            meta={"dia_id": "D1:3"},
        )
        await client.until("ack")


async def test_search_returns_facts_and_turns_best_first_with_meta(server: str) -> None:
    await seed(server)
    async with http(server, "ka") as client:
        hits = (await client.get("/memory/search", params={"q": "green tea", "limit": 5})).json()[
            "hits"
        ]
    kinds = {h["kind"] for h in hits}
    assert kinds == {"fact", "turn"}
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    turn = next(h for h in hits if h["kind"] == "turn" and h["role"] == "user")
    assert turn["text"] == "Green tea is my favourite"
    assert turn["meta"] == {"dia_id": "D1:3"}
    fact = next(h for h in hits if h["kind"] == "fact")
    assert fact["text"] == "User drinks green tea every morning"
    assert all(0.0 <= h["score"] <= 1.5 for h in hits)
    assert all("vector" not in h and "user_id" not in h for h in hits)


@pytest.mark.parametrize(("kind", "expected"), [("facts", {"fact"}), ("turns", {"turn"})])
async def test_search_kind_selects_facts_or_turns(
    server: str, kind: str, expected: set[str]
) -> None:
    await seed(server)
    async with http(server, "ka") as client:
        hits = (await client.get("/memory/search", params={"q": "tea", "kind": kind})).json()[
            "hits"
        ]
    assert hits
    assert {h["kind"] for h in hits} == expected


async def test_search_never_returns_another_users_memories(server: str) -> None:
    await seed(server)
    async with http(server, "kb") as client:
        hits = (await client.get("/memory/search", params={"q": "green tea"})).json()["hits"]
    assert hits == []


@pytest.mark.parametrize("name", ["limit", "k"], ids=["limit", "k-the-deprecated-alias"])
async def test_search_answers_at_most_limit_hits(server: str, name: str) -> None:
    await seed(server)
    async with http(server, "ka") as client:
        reply = await client.get("/memory/search", params={"q": "green tea", name: 1})
    assert len(reply.json()["hits"]) == 1


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"q": " "},
        {"q": "x", "limit": "0"},
        {"q": "x", "k": "0"},
        {"q": "x", "kind": "notes"},
        {"q": "x", "scope": "a b"},
        {"q": "x", "mode": "fuzzy"},
    ],
    ids=[
        "no-query",
        "blank-query",
        "zero-limit",
        "zero-k",
        "unknown-kind",
        "bad-scope",
        "unknown-mode",
    ],
)
async def test_bad_search_parameters_are_400(server: str, params: dict[str, str]) -> None:
    async with http(server, "ka") as client:
        response = await client.get("/memory/search", params=params)
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "bad_request"


# -- seed 002: scopes, search modes, min_confidence ------------------------------------


async def search(server: str, key: str = "ka", **params: Any) -> list[dict[str, Any]]:
    async with http(server, key) as client:
        response = await client.get("/memory/search", params=params)
    assert response.status_code == 200, response.text
    hits: list[dict[str, Any]] = response.json()["hits"]
    return hits


async def seed_scopes(server: str) -> None:
    """A fact and a turn about kayaks in each of three scopes."""
    lines = []
    for scope in ("global", "relationship", "health"):
        lines.append(fact(f"f-{scope}", f"User paddles a kayak ({scope} note)", scope=scope))
        lines.append(turn(f"t-{scope}", f"kayak trip talk in {scope}", scope=scope))
    assert (await post(server, jsonl(lines)))["imported"] == 6


def scopes_of(hits: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return sorted((h["kind"], h["scope"]) for h in hits)


async def test_search_with_a_scope_sees_global_and_that_scope(server: str) -> None:
    # seed 002: facts (and turns: mnemo's episodes) WHERE scope IN ('global', <scope>).
    await seed_scopes(server)
    hits = await search(server, q="kayak", scope="relationship", k=20)
    assert scopes_of(hits) == [
        ("fact", "global"),
        ("fact", "relationship"),
        ("turn", "global"),
        ("turn", "relationship"),
    ]
    turns = await search(server, q="kayak", scope="health", kind="turns", k=20)
    assert sorted(h["text"] for h in turns) == [
        "kayak trip talk in global",
        "kayak trip talk in health",
    ]


async def test_search_without_a_scope_sees_every_scope_of_the_caller_only(server: str) -> None:
    await seed_scopes(server)
    hits = await search(server, q="kayak", k=20)
    assert scopes_of(hits) == sorted(
        (kind, scope) for kind in ("fact", "turn") for scope in ("global", "relationship", "health")
    )
    assert await search(server, "kb", q="kayak", k=20) == []


async def test_semantic_search_scores_each_hit_by_cosine_similarity_active_facts_only(
    server: str,
) -> None:
    lines = [
        fact("f1", "User lives in Lyon", "identity", subject="user", predicate="lives_in"),
        fact("f2", "User drinks green tea at breakfast"),
        fact("f3", "User drinks strong coffee at work"),
        fact("f4", "User lives in Paris", "identity", subject="user", predicate="lives_in"),
    ]
    await post(server, jsonl(lines))  # f4 supersedes f1: only active facts are searched
    query = "User drinks green tea"
    hits = await search(server, q=query, kind="facts", mode="semantic", k=10)
    embedder = HashEmbedder()
    wanted = embedder.embed_one(query)
    expected = {
        h["text"]: sum(a * b for a, b in zip(embedder.embed_one(h["text"]), wanted, strict=True))
        for h in hits
    }
    assert sorted(expected) == [
        "User drinks green tea at breakfast",
        "User drinks strong coffee at work",
        "User lives in Paris",
    ]
    assert [h["score"] for h in hits] == [pytest.approx(expected[h["text"]]) for h in hits]
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    assert hits[0]["text"] == "User drinks green tea at breakfast"


async def test_keyword_search_finds_only_matching_texts_ranked_by_bm25(server: str) -> None:
    lines = [
        fact("f1", "User grows tomatoes"),
        fact("f2", "User sells tomatoes and tomato sauce at the tomato market"),
        fact("f3", "User owns a blue bicycle"),
        turn("t1", "my tomatoes are ripe"),
        turn("t2", "the weather was lovely", session_id="other-chat"),
    ]
    await post(server, jsonl(lines))
    hits = await search(server, q="tomatoes", mode="keyword", k=10)
    assert sorted(h["text"] for h in hits) == [
        "User grows tomatoes",
        "User sells tomatoes and tomato sauce at the tomato market",
        "my tomatoes are ripe",
    ]
    facts = [h for h in hits if h["kind"] == "fact"]
    assert facts[0]["text"].startswith("User sells")  # more matches: higher BM25
    assert all(h["score"] > 0 for h in hits)
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)


async def test_search_tags_each_hit_with_its_kind_and_leaves_out_unconfident_facts(
    server: str,
) -> None:
    # seed 002: results with confidence < min_confidence (0.2) are filtered out.
    lines = [
        fact("f1", "User collects vinyl records", confidence=0.9),
        fact("f2", "User might like vinyl jazz records", confidence=0.1),
        turn("t1", "I bought two vinyl records today"),
    ]
    await post(server, jsonl(lines))
    hits = await search(server, q="vinyl records", k=10)
    assert sorted((h["kind"], h["text"]) for h in hits) == [
        ("fact", "User collects vinyl records"),
        ("turn", "I bought two vinyl records today"),
    ]
    for mode in ("semantic", "keyword"):
        found = await search(server, q="vinyl records", kind="facts", mode=mode)
        assert [h["text"] for h in found] == ["User collects vinyl records"]


async def test_a_query_is_cleaned_before_search_and_a_blank_one_is_refused(server: str) -> None:
    lines = [turn("t1", "we cooked risotto"), turn("t2", "we went sailing", session_id="s2")]
    await post(server, jsonl(lines))
    hits = await search(server, q="ris\x00otto\t\n", mode="keyword", kind="turns")
    assert [h["text"] for h in hits] == ["we cooked risotto"]
    async with http(server, "ka") as client:
        response = await client.get("/memory/search", params={"q": "\x00 \t\n"})
    assert response.status_code == 400


async def test_text_is_indexed_without_nul_bytes_and_found_by_its_words(server: str) -> None:
    lines = [turn("t1", "I write Py\x00thon\tevery\n\nday"), fact("f1", "User codes in Ja\x00va")]
    await post(server, jsonl(lines))
    turns = await search(server, q="python", mode="keyword")
    assert [h["text"] for h in turns] == ["I write Py\x00thon\tevery\n\nday"]  # stored as sent
    facts = await search(server, q="java", mode="keyword")
    assert [h["text"] for h in facts] == ["User codes in Ja\x00va"]


async def test_a_config_file_sets_the_search_mode_and_min_confidence_the_server_uses(
    tmp_path: Path, fake: FakeOllama
) -> None:
    # seed 002: values in the config file override the defaults and reach the tools.
    config = tmp_path / "mnemo.toml"
    config.write_text(
        f'data_dir = "{tmp_path / "data"}"\nllm_url = "{fake.url}"\nembedder = "hash"\n'
        'api_keys = { "ka" = "alice" }\nsearch_mode = "keyword"\nrecall_min_confidence = 0.95\n'
    )
    settings = load_settings({"MNEMO_CONFIG": str(config)})
    lines = [
        fact("f1", "User rows a kayak", confidence=0.99),
        fact("f2", "User rows a kayak on lakes", confidence=0.9),
        fact("f3", "User knits scarves", confidence=0.99),
        turn("t1", "the kayak club meets on Friday"),
        turn("t2", "we baked bread", session_id="s2"),
    ]
    async with serve(make_app(settings)) as address:
        await post(address, jsonl(lines))
        hits = await search(address, q="kayak")  # no mode: the file's keyword mode
    assert sorted(h["text"] for h in hits) == [
        "User rows a kayak",
        "the kayak club meets on Friday",
    ]


async def test_an_unrelated_turn_never_outscores_the_fact_that_answers_the_query(
    server: str,
) -> None:
    async with Client.connect(server, "s1", token="ka") as client:
        await client.receive()
        await client.send(type="remember", id="r", content="User is allergic to peanuts")
        await client.until("memory")
        chatter = [
            ("What should we name the new project?", "Maybe something short."),
            ("Can you summarise this article about rockets?", "Sure, here it is."),
            ("How long should I boil an egg?", "About nine minutes."),
        ]
        for i, (user, assistant) in enumerate(chatter):
            await client.send(type="turn", id=f"t{i}", user=user, assistant=assistant)
            await client.until("ack")
    async with http(server, "ka") as client:
        hits = (
            await client.get("/memory/search", params={"q": "what am I allergic to?", "limit": 6})
        ).json()["hits"]
    first, *rest = hits
    assert (first["kind"], first["text"]) == ("fact", "User is allergic to peanuts")
    assert first["score"] == first["relevance"] >= 0.5
    assert all(h["relevance"] < 0.25 for h in rest if h["kind"] == "turn")
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)


async def test_every_hit_of_one_kind_carries_its_relevance_beside_its_rank_score(
    server: str,
) -> None:
    await seed(server)
    async with Client.connect(server, "s1", token="ka") as client:
        await client.receive()
        await client.send(type="turn", id="t2", user="The bus was late again", assistant="Ugh")
        await client.until("ack")
    async with http(server, "ka") as client:
        hits = (
            await client.get("/memory/search", params={"q": "green tea", "kind": "turns"})
        ).json()["hits"]
    by_text = {h["text"]: h["relevance"] for h in hits}
    assert by_text["Green tea is my favourite"] > 0.5
    assert by_text.get("The bus was late again", 0.0) < 0.2


async def test_search_finds_rules_and_episodes_tagged_by_kind_and_leaves_out_the_forgotten(
    server: str,
) -> None:
    async with http(server, "ka") as client:
        for content, scope in [
            ("Suggest vegan recipes for dinner", "kitchen"),
            ("Be brief", "global"),
        ]:
            await client.post("/memory/rules", json={"content": content, "scope": scope})
        gone = (await client.post("/memory/rules", json={"content": "Vegan recipes first"})).json()
        await client.post(f"/memory/rules/{gone['id']}/forget")
        seen = {"content": "The user asked for vegan recipes", "scope": "kitchen"}
        episode = (await client.post("/memory/episodes", json=seen)).json()
        await client.post("/memory/episodes", json=seen | {"scope": "garden"})
        params = {"q": "vegan recipes", "scope": "kitchen"}
        every = (await client.get("/memory/search", params=params)).json()["hits"]
        kinds = [(h["kind"], h["text"]) for h in every]
        assert ("rule", "Suggest vegan recipes for dinner") in kinds
        assert ("episode", "The user asked for vegan recipes") in kinds
        assert ("rule", "Vegan recipes first") not in kinds
        assert [h["scope"] for h in every if h["kind"] == "episode"] == ["kitchen"]
        assert all(h["relevance"] == h["score"] for h in every)
        assert every == sorted(every, key=lambda h: -h["relevance"])
        rules = (await client.get("/memory/search", params=params | {"kind": "rules"})).json()
        assert rules["hits"][0]["text"] == "Suggest vegan recipes for dinner"
        semantic = params | {"kind": "episodes", "mode": "semantic"}
        [hit] = (await client.get("/memory/search", params=semantic)).json()["hits"]
        assert (hit["id"], hit["kind"]) == (episode["id"], "episode")
        assert hit["score"] == hit["similarity"]
        assert 0.0 < hit["similarity"] <= 1.0
        words = params | {"kind": "rules", "mode": "keyword", "q": "brief"}
        assert [
            h["text"] for h in (await client.get("/memory/search", params=words)).json()["hits"]
        ] == ["Be brief"]
        async with http(server, "kb") as other:
            assert (await other.get("/memory/search", params=params)).json() == {"hits": []}
