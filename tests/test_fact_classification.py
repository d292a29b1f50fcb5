"""A fact added by hand without a category is classified by the model (seed 004's
composer), and by the rules when the model cannot say."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from testing.fake_ollama import FakeOllama
from tests.harness import http, make_app, serve, settings_for

pytestmark = pytest.mark.anyio


class Sorter:
    """The fake's structured answers: classification calls get ``category``."""

    def __init__(self) -> None:
        self.category = "identity"
        self.asked: list[str] = []

    def __call__(self, path: str, body: dict[str, Any]) -> Any:
        system = body["messages"][0]["content"] if "messages" in body else body.get("system")
        if "You sort a user's memory" in str(system):
            self.asked.append(body["messages"][-1]["content"])
            return {"category": self.category}
        return {"facts": [], "memory_update": {}, "analysis": {}}


async def test_a_fact_without_a_category_gets_the_models_else_the_rules(
    tmp_path: Path, fake: FakeOllama
) -> None:
    sorter = Sorter()
    fake.json_default = None
    fake.responder = sorter
    async with serve(make_app(settings_for(tmp_path, fake.url))) as server:
        async with http(server, None) as client:
            made = await client.post("/memory/long-term", json={"content": "I love green tea"})
            assert made.json()["added"][0]["category"] == "identity"  # the model's
            assert sorter.asked == ["<episode_content>I love green tea</episode_content>"]
            sorter.category = "spaceship"  # outside the taxonomy: the rules decide
            made = await client.post("/memory/long-term", json={"content": "I love jazz"})
            assert made.json()["added"][0]["category"] == "preference"
            given = await client.post(
                "/memory/long-term", json={"content": "I love hiking", "category": "behavior"}
            )
            assert given.json()["added"][0]["category"] == "behavior"
            assert len(sorter.asked) == 2  # a category given is never asked for


async def test_without_a_model_the_rules_classify_a_fact_at_once(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, "http://127.0.0.1:9")
    async with serve(make_app(settings)) as server, http(server, None) as client:
        made = await client.post("/memory/long-term", json={"content": "I love green tea"})
    assert made.json()["added"][0]["category"] == "preference"
