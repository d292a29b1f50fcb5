"""``python -m testing.llama --model NAME=PATH ...``: serve GGUF models with Ollama's API.

Prints ``listening on http://HOST:PORT`` once it answers, then serves until SIGINT or
SIGTERM. The runtime comes from ``testing.downloads.install_runtime`` (installed first
if it is not cached). ``testing.real_model`` runs this for tests and benches.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import uvicorn

from testing.downloads import install_runtime
from testing.llama.grammar import GrammarMaker
from testing.llama.models import Scheduler, ServedModel
from testing.llama.options import DEFAULT_KEEP_ALIVE
from testing.llama.server import create_app
from testing.llama.worker import Worker

__all__ = ["main"]


async def _serve(
    models: list[tuple[str, Path]],
    parameters: dict[str, Any],
    host: str,
    port: int,
    keep_alive: float,
) -> None:
    runtime = await anyio.to_thread.run_sync(install_runtime)
    async with Worker.running(runtime.worker, runtime.node_modules) as worker:
        served = [await ServedModel.read(n, p, worker, parameters) for n, p in models]
        scheduler = Scheduler(worker, keep_alive=keep_alive)
        app = create_app(served, scheduler, GrammarMaker(runtime.schema_to_grammar))
        config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="off")
        server = uvicorn.Server(config)
        async with anyio.create_task_group() as tg:

            async def run() -> None:
                await server.serve()
                tg.cancel_scope.cancel()

            tg.start_soon(scheduler.expire)
            tg.start_soon(run)
            while not server.started:
                await anyio.sleep(0.02)
                if server.should_exit:
                    return
            bound = server.servers[0].sockets[0].getsockname()
            print(f"listening on http://{bound[0]}:{bound[1]}", flush=True)


def _model(text: str) -> tuple[str, Path]:
    name, sep, path = text.partition("=")
    if not sep or not name or not Path(path).is_file():
        raise argparse.ArgumentTypeError(f"expected NAME=PATH of a GGUF file, got {text!r}")
    return name, Path(path)


def _parameter(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        if sep and key:
            return key, value
    raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m testing.llama", description=__doc__)
    parser.add_argument("--model", type=_model, action="append", required=True)
    parser.add_argument(
        "--parameter",
        type=_parameter,
        action="append",
        default=[],
        help="a default option of every model, as a Modelfile's PARAMETER (num_predict=256)",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=11434)
    parser.add_argument("--keep-alive", type=float, default=DEFAULT_KEEP_ALIVE)
    args = parser.parse_args(argv)
    anyio.run(_serve, args.model, dict(args.parameter), args.host, args.port, args.keep_alive)


if __name__ == "__main__":
    main()
