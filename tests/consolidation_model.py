"""A fake model's structured answers for consolidation through the server."""

from __future__ import annotations

from typing import Any

from memory.consolidation.prompt import SYSTEM
from testing.fake_ollama import Reply

__all__ = ["ANSWER", "ConsolidationModel"]


ANSWER = {
    "new_facts": [
        {"subject": "user", "predicate": "diet", "content": "User is vegan", "importance": 15},
        {"subject": "", "predicate": "likes", "content": "Likes tea"},
    ],
    "updated_facts": [],
    "new_rules": [{"content": "Suggest vegan recipes", "tags": ["food"]}],
    "confirmations": ["not-an-id"],
}


class ConsolidationModel:
    """The fake's structured answers: consolidation by scope, anything else empty."""

    def __call__(self, path: str, body: dict[str, Any]) -> Any:
        if "format" not in body:
            return "Sure."
        system, prompt = body["messages"][0]["content"], body["messages"][-1]["content"]
        if system != SYSTEM:
            return {"facts": [], "memory_update": {}, "analysis": {}}
        return self.consolidation(prompt)

    def consolidation(self, prompt: str) -> Any:
        if prompt.startswith("Episodes of garden"):
            return Reply(content="{", done_reason="length")  # cut off: the group fails
        return ANSWER
