"""The RSS of an idle ``mnemo serve`` by part (issue 19): run as a child process by
``python -m bench.idle --parts``, it imports and starts the server's parts one at a time
and prints a JSON object of the RSS (KiB) after each.

The parts, in order: the interpreter; numpy; pyarrow; lancedb (with what it imports:
pydantic, its namespace client); the web stack and the CLI (``server.cli``: uvicorn,
starlette, httpx, rich); mnemo's modules (``server.main``: the adapters, ollama); the
app's lifespan (the LanceDB tables opened, the actors started) with the embedder as it
starts on its own; then the ONNX embedder loaded (onnxruntime, tokenizers, the model's
session) and one query embedded.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path

__all__ = ["main"]


def _rss() -> int:
    for line in Path(f"/proc/{os.getpid()}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def main() -> None:
    parts: dict[str, int] = {"interpreter": _rss()}
    # Imported only for their memory: each import's RSS is the part measured (F401).
    import numpy  # noqa: F401

    parts["numpy"] = _rss()
    import pyarrow  # noqa: F401

    parts["pyarrow"] = _rss()
    import lancedb  # noqa: F401

    parts["lancedb"] = _rss()
    import server.cli  # noqa: F401

    parts["web stack and CLI"] = _rss()
    from server.adapters.ollama import OllamaLlm
    from server.app import create_app
    from server.config import load_settings
    from server.main import build_embedder, build_store

    parts["mnemo modules"] = _rss()
    with tempfile.TemporaryDirectory(prefix="mnemo-idle-") as tmp:
        env = {"MNEMO_DATA_DIR": tmp, "MNEMO_LLM_URL": "http://127.0.0.1:9"}
        settings = load_settings(env)
        embedder = build_embedder(settings)
        store = build_store(settings, embedder)
        llm = OllamaLlm(settings.llm_url, timeout=settings.llm_timeout)
        app = create_app(settings, llm=llm, store=store, embedder=embedder)

        async def run() -> None:
            async with app.router.lifespan_context(app):
                await asyncio.sleep(3.0)  # what a start leaves running settles
                parts["lifespan (tables, actors)"] = _rss()
                await embedder.embed(["where did I go on holiday?"])
                parts["embedder loaded, one query"] = _rss()

        asyncio.run(run())
    json.dump(parts, sys.stdout)


if __name__ == "__main__":
    main()
