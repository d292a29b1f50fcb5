"""A peer for ``bench.peers`` without mem0: mem0's ``Memory`` calls over the hash embedder,
answered by the bench's own worker loop (``bench.peers_mem0.serve``).

    python -m tests.fake_peer DIR      # the memories in DIR/memories.jsonl
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from bench.peers_mem0 import serve
from memory.hashing import HashEmbedder

__all__ = ["FakeMemory"]


class FakeMemory:
    """``Memory.add`` (``infer=False``) and ``Memory.search`` as mem0 2.2.1 answers them:
    one memory a message, the caller's metadata under ``metadata``, the role beside it,
    best cosine first; kept in a file, as mem0 keeps them on disk (``None``: in memory)."""

    def __init__(self, path: Path | None = None) -> None:
        self._embedder = HashEmbedder(384)
        self._path = path
        self._rows: list[tuple[str, list[float], dict[str, Any]]] = []
        if path is not None and path.exists():
            lines = path.read_text().splitlines()
            self._rows = [(user, vector, row) for user, vector, row in map(json.loads, lines)]

    def add(
        self, messages: list[dict[str, str]], *, user_id: str, infer: bool, metadata: dict[str, Any]
    ) -> dict[str, Any]:
        assert not infer
        stored = []
        for message in messages:
            vector = self._embedder.embed_one(message["content"])
            row = {"memory": message["content"], "role": message["role"], "metadata": metadata}
            self._rows.append((user_id, vector, row))
            if self._path is not None:
                with self._path.open("a") as file:
                    file.write(json.dumps([user_id, vector, row]) + "\n")
            stored.append(row | {"event": "ADD"})
        return {"results": stored}

    def search(self, query: str, *, top_k: int, filters: dict[str, Any]) -> dict[str, Any]:
        wanted = self._embedder.embed_one(query)
        scored = [
            (sum(a * b for a, b in zip(wanted, vector, strict=True)), row)
            for user, vector, row in self._rows
            if user == filters["user_id"]
        ]
        scored.sort(key=lambda pair: -pair[0])
        return {"results": [row | {"score": score} for score, row in scored[:top_k]]}


if __name__ == "__main__":
    root = Path(sys.argv[1])
    root.mkdir(parents=True, exist_ok=True)
    serve(FakeMemory(root / "memories.jsonl"), {"fake": True}, sys.stdin, sys.stdout)
