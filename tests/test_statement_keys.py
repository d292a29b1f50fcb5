"""A turn is found by its text and what its speaker says of themselves (``memory.keys``), one
vector, through the import and search API (the pure rules: tests/test_memory_pure.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memory.hashing import HashEmbedder
from memory.keys import mixed, statement_text
from memory.recall import search_text
from memory.text import query_text
from tests.fake_ollama import FakeOllama
from tests.harness import make_app, serve, settings_for
from tests.test_import_rest import http, jsonl, post
from tests.test_memory_pure import YOGA, archived_turn

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
