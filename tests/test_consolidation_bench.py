"""bench.consolidation's fake model: what it answers (no timings: benchmarks are not tests)."""

from __future__ import annotations

import json

from bench.common import REPLY
from bench.consolidation import Model, episode_text
from memory.consolidation.parse import parse_consolidation
from memory.consolidation.prompt import SCHEMA, SYSTEM, consolidation_prompt
from memory.episodes import new_episode
from testing.fake_ollama import Reply
from testing.records import T0


def test_the_bench_model_answers_two_facts_and_a_rule_from_the_groups_episodes() -> None:
    episodes = [
        new_episode(f"ep_{n:016x}", "u0", episode_text(n), "scope0", T0) for n in range(0, 40, 4)
    ]
    prompt = consolidation_prompt("scope0", episodes, [], [])
    body = {"format": SCHEMA, "messages": [{"content": SYSTEM}, {"content": prompt}]}
    result = parse_consolidation(json.dumps(Model()("/api/chat", body)))
    assert result.parse_errors == []
    first, last = episode_text(0), episode_text(36)
    assert sorted(f.content for f in result.new_facts) == sorted(
        [first.rsplit(" (#", 1)[0], last.rsplit(" (#", 1)[0]]
    )
    assert [f.subject for f in result.new_facts if f.content in first] == [first.split()[0]]
    assert len(result.new_rules) == 1


def test_anything_else_is_answered_as_bench_loads_fake() -> None:
    chat = Model()("/api/chat", {"messages": [{"content": "You are helpful"}]})
    assert isinstance(chat, Reply)
    assert chat.content == REPLY
    extraction = {"format": {}, "messages": [{"content": "extract durable facts"}]}
    assert Model()("/api/chat", extraction) == {"facts": [], "memory_update": {}, "analysis": {}}
