"""A turn is found by its text and what its speaker says of themselves (``memory.keys``), one
vector, through the import and search API (the pure rules: tests/test_memory_pure.py)."""

from __future__ import annotations

from pathlib import Path

import msgspec
import numpy as np
import pytest

from memory.hashing import HashEmbedder
from memory.keys import mixed, statement_text
from memory.recall import key_text, search_text
from memory.text import query_text
from testing.fake_ollama import FakeOllama
from tests.harness import make_app, serve, settings_for
from tests.import_lines import http, jsonl, post
from tests.statements import YOGA, archived_turn

AT = "2024-03-12T18:00:00Z"


@pytest.mark.anyio
async def test_an_imported_turn_is_found_by_its_text_and_its_statements_in_one_vector(
    tmp_path: Path, fake: FakeOllama
) -> None:
    settings = settings_for(tmp_path, fake.url, api_keys={"ka": "ann"})
    line = {"kind": "turn", "id": "t1", "session_id": "week", "speaker": "Ann"}
    async with serve(make_app(settings)) as address:
        reply = await post(address, jsonl([line | {"role": "user", "text": YOGA, "at": AT}]))
        assert reply["errors"] == []
        query = "How often do I attend yoga classes?"
        params = {"q": query, "kind": "turns", "mode": "semantic"}
        async with http(address) as client:
            response = await client.get("/memory/search", params=params)
    [hit] = response.json()["hits"]
    embedder = HashEmbedder()
    [asked, plain, statements] = await embedder.embed(
        [query_text(query), search_text(archived_turn(YOGA)), statement_text(archived_turn(YOGA))]
    )
    [keyed] = mixed([plain], [statements])
    # The cosine the server found is the keyed vector's, not the text's alone.
    assert hit["score"] == pytest.approx(float(np.dot(asked, keyed)), abs=1e-5)
    assert abs(hit["score"] - float(np.dot(asked, plain))) > 0.01


@pytest.mark.anyio
async def test_an_imported_long_reply_is_embedded_by_its_opening_and_found_by_all_its_words(
    tmp_path: Path, fake: FakeOllama
) -> None:
    settings = settings_for(tmp_path, fake.url, api_keys={"ka": "ann"})
    line = {"kind": "turn", "session_id": "trip", "at": AT}
    asked = "Which museums should I see in Vienna?"
    reply = "Here are museums in Vienna. " + "The Albertina has prints. " * 30 + "Sachertorte!"
    lines = [
        line | {"id": "t1", "speaker": "Ann", "role": "user", "text": asked},
        line | {"id": "t2", "speaker": "assistant", "role": "assistant", "text": reply},
    ]
    query = "museums in Vienna"
    async with serve(make_app(settings)) as address:
        assert (await post(address, jsonl(lines)))["errors"] == []
        async with http(address) as client:
            semantic = await client.get(
                "/memory/search", params={"q": query, "kind": "turns", "mode": "semantic"}
            )
            keyword = await client.get(
                "/memory/search", params={"q": "Sachertorte", "kind": "turns", "mode": "keyword"}
            )
    [hit] = [h for h in semantic.json()["hits"] if h["text"] == reply]
    message = msgspec.structs.replace(
        archived_turn(reply, role="assistant", speaker="assistant"), context=f"Ann: {asked}"
    )
    [query_vector, key, whole] = await HashEmbedder().embed(
        [query_text(query), key_text(message), search_text(message)]
    )
    assert hit["score"] == pytest.approx(float(np.dot(query_vector, key)), abs=1e-5)
    assert abs(hit["score"] - float(np.dot(query_vector, whole))) > 0.01
    # Its last word, far past the opening its vector holds, still finds it by full text.
    assert [h["text"] for h in keyword.json()["hits"]] == [reply]
