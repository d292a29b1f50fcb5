"""A real model behind Ollama's HTTP API on loopback, for tests and benches.

    with serve_models(SMOLLM2) as url:          # fetches what is missing first
        ollama.Client(host=url).chat(model=SMOLLM2.name, messages=[...])

The server (``python -m testing.llama``) runs in its own process group, which is ended
when the block ends. From a shell::

    python -m testing.real_model fetch smollm2:135m qwen2.5-coder:1.5b
    python -m testing.real_model serve smollm2:135m --port 11434
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from testing.downloads import MODELS, SMOLLM2, ModelSpec, fetch_model, install_runtime

__all__ = ["ServerFailed", "serve_models", "server_command"]

_ROOT = Path(__file__).resolve().parent.parent
_START_TIMEOUT = 120.0


class ServerFailed(RuntimeError):
    """The real-model server did not start."""


def server_command(
    specs: Sequence[ModelSpec], *, port: int = 0, parameters: Mapping[str, object] = {}
) -> list[str]:
    """The command that serves ``specs`` (fetched first if missing) on ``port``, each
    with the default options ``parameters`` (a Modelfile's ``PARAMETER`` lines)."""
    install_runtime()
    command = [sys.executable, "-m", "testing.llama", "--port", str(port)]
    for spec in specs:
        command += ["--model", f"{spec.name}={fetch_model(spec)}"]
    for key, value in parameters.items():
        command += ["--parameter", f"{key}={json.dumps(value)}"]
    return command


@contextmanager
def serve_models(
    *specs: ModelSpec, parameters: Mapping[str, object] = {}, keep_alive: float | None = None
) -> Iterator[str]:
    """Serve ``specs`` (SmolLM2 when none) on a free loopback port; yield its URL.

    Raises ``testing.downloads.FetchFailed`` when the weights or the runtime cannot be
    fetched and ``ServerFailed`` when the server does not come up.
    """
    command = server_command(specs or (SMOLLM2,), parameters=parameters)
    if keep_alive is not None:
        command += ["--keep-alive", str(keep_alive)]
    process = subprocess.Popen(command, cwd=_ROOT, stdout=subprocess.PIPE, start_new_session=True)
    try:
        yield _wait_listening(process)
    finally:
        _stop(process)


def _wait_listening(process: subprocess.Popen[bytes]) -> str:
    assert process.stdout is not None
    deadline = time.monotonic() + _START_TIMEOUT
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([process.stdout], [], [], min(left, 0.5))
        if ready:
            line = process.stdout.readline().decode()
            if line.startswith("listening on "):
                return line.removeprefix("listening on ").strip()
            if not line:
                break
        elif process.poll() is not None:
            break
    code = process.poll()
    state = "did not start" if code is None else f"exited with code {code}"
    raise ServerFailed(f"the real-model server {state}: `{' '.join(process.args)}`")  # type: ignore[arg-type]


def _stop(process: subprocess.Popen[bytes]) -> None:
    """End the server's process group (the server and its Node worker)."""
    for sig, wait in ((signal.SIGTERM, 15.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            process.wait(wait)
            break
        except subprocess.TimeoutExpired:
            continue
    process.wait()
    if process.stdout is not None:
        process.stdout.close()


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m testing.real_model", description=__doc__)
    parser.add_argument("action", choices=["fetch", "serve"])
    parser.add_argument("models", nargs="*", default=[SMOLLM2.name], help=", ".join(MODELS))
    parser.add_argument("--port", type=int, default=11434)
    args = parser.parse_args(argv)
    unknown = [name for name in args.models if name not in MODELS]
    if unknown:
        parser.error(f"unknown models {unknown}: choose among {', '.join(MODELS)}")
    specs = [MODELS[name] for name in args.models]
    if args.action == "fetch":
        print(install_runtime())
        for spec in specs:
            print(spec.name, fetch_model(spec))
        return
    command = server_command(specs, port=args.port)
    os.chdir(_ROOT)
    os.execv(command[0], command)


if __name__ == "__main__":
    main()
