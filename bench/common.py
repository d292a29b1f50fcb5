"""Shared pieces of the benchmarks: a server in its own process, percentiles, machine facts."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = [
    "ADMIN_KEY",
    "REPLY",
    "cpu_seconds",
    "fake_model",
    "free_port",
    "load_answer",
    "load_server",
    "machine",
    "percentiles",
    "plot_curves",
    "rss_kib",
    "served",
    "server_process",
    "write_result",
]

RESULTS = Path(__file__).resolve().parent / "results"
#: The admin key of ``load_server`` (``/metrics``, ``/ws/tail``).
ADMIN_KEY = "bench-admin"
#: What the fake Ollama of ``load_server`` streams as every chat reply.
REPLY = "Sure, here is a short and friendly answer."


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def machine() -> dict[str, Any]:
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version()}


def percentiles(samples: Sequence[float], points: Sequence[int] = (50, 95, 99)) -> dict[str, float]:
    """Nearest-rank percentiles, in the samples' unit."""
    ordered = sorted(samples)
    out: dict[str, float] = {}
    if not ordered:
        return {**{f"p{p}": float("nan") for p in points}, "mean": float("nan"), "max": 0.0}
    for p in points:
        rank = max(1, -(-p * len(ordered) // 100))
        out[f"p{p}"] = ordered[rank - 1]
    out["mean"] = sum(ordered) / len(ordered)
    out["max"] = ordered[-1]
    return out


@contextmanager
def server_process(env: Mapping[str, str], *, data_dir: str | None = None) -> Iterator[str]:
    """``mnemo serve`` in a child process on a free port; yields ``host:port``."""
    with served(env, data_dir=data_dir) as (address, _):
        yield address


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time a process has used so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


def rss_kib(pid: int) -> int:
    """Resident set size of a process, KiB (Linux ``/proc``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


@contextmanager
def served(
    env: Mapping[str, str],
    *,
    data_dir: str | None = None,
    command: Sequence[str] = (sys.executable, "-m", "server.cli", "serve"),
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``mnemo serve`` (or ``command``, which reads the same ``MNEMO_*`` variables) in a
    child process on a free port; yields (``host:port``, process). Its log goes to the
    file named by ``MNEMO_BENCH_SERVER_LOG``, if set."""
    port = free_port()
    log_path = os.environ.get("MNEMO_BENCH_SERVER_LOG")
    with tempfile.TemporaryDirectory(prefix="mnemo-bench-") as tmp:
        child_env = {
            **{k: v for k, v in os.environ.items() if k != "MNEMO_BENCH_SERVER_LOG"},
            "MNEMO_DATA_DIR": data_dir or tmp,
            "MNEMO_PORT": str(port),
            **env,
        }
        log = open(log_path, "ab") if log_path else None
        process = subprocess.Popen(
            list(command),
            env=child_env,
            stdout=subprocess.DEVNULL,
            stderr=log or subprocess.DEVNULL,
        )
        if log is not None:
            log.close()  # the child has its own copy
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1):
                        break
                except OSError:
                    if process.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError("the server did not start") from None
                    time.sleep(0.1)
            yield f"127.0.0.1:{port}", process
        finally:
            process.terminate()
            process.wait(300)  # moving a big journal into the table takes a while


def plot_curves(
    name: str, title: str, xlabel: str, xs: Sequence[float], curves: Mapping[str, Sequence[float]]
) -> Path | None:
    """``bench/results/<name>.png``: latency curves (ms, log scale) against ``xs``; None
    when matplotlib is not installed (``pip install -e '.[bench]'``)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    figure, axes = plt.subplots(figsize=(7, 4.5))
    for label, ys in curves.items():
        axes.plot(xs, ys, marker="o", label=label)
    axes.set_xlabel(xlabel)
    axes.set_ylabel("ms")
    axes.set_yscale("log")
    axes.set_title(title)
    axes.grid(True, which="both", alpha=0.3)
    axes.legend()
    path = RESULTS / f"{name}.png"
    RESULTS.mkdir(exist_ok=True)
    figure.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(figure)
    return path


def histograms(text: str, metric: str, label: str) -> dict[str, dict[str, float]]:
    """A Prometheus histogram of ``/metrics`` text, by the value of ``label``: per value its
    ``count``, its ``sum``, and ``le_<bound>`` the observations at or under each bound."""
    out: dict[str, dict[str, float]] = {}
    for line in text.splitlines():
        if not line.startswith(metric):
            continue
        name, value = line.rsplit(" ", 1)
        row = out.setdefault(name.split(f'{label}="', 1)[1].split('"', 1)[0], {})
        if name.startswith(f"{metric}_bucket"):
            row["le_" + name.split('le="', 1)[1].split('"', 1)[0]] = float(value)
        elif name.startswith(f"{metric}_count"):
            row["count"] = float(value)
        elif name.startswith(f"{metric}_sum"):
            row["sum"] = float(value)
    return out


def write_result(name: str, result: Mapping[str, Any]) -> Path:
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    return path


def load_answer(path: str, body: dict[str, Any]) -> Any:
    """``load_server``'s fake model: ``REPLY`` streamed at once, extraction finds no facts."""
    from testing.fake_ollama import Reply

    if "format" in body:
        return {"facts": [], "memory_update": {}, "analysis": {}}
    return Reply(content=REPLY)


def _fake_ollama(port: int, responder: Callable[[str, dict[str, Any]], Any]) -> None:
    """The fake's own process: the client's load never delays its answers."""
    from testing.fake_ollama import FakeOllama

    async def main() -> None:
        fake = FakeOllama(models=["llama3.2"], responder=responder, port=port, record=False)
        await fake.start()
        await asyncio.Event().wait()

    asyncio.run(main())


@contextmanager
def fake_model(
    responder: Callable[[str, dict[str, Any]], Any] = load_answer,
) -> Iterator[tuple[str, int]]:
    """A fake Ollama in its own process that answers with ``responder`` (a picklable
    callable; by default ``load_answer``: streams ``REPLY`` at once and extracts no
    facts); yields (its URL, its pid)."""
    port = free_port()
    fake = multiprocessing.get_context("spawn").Process(
        target=_fake_ollama, args=(port, responder), daemon=True
    )
    fake.start()
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/version", timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("the fake model did not start") from None
                time.sleep(0.05)
        assert fake.pid is not None
        yield url, fake.pid
    finally:
        fake.terminate()


@contextmanager
def load_server(
    users: int,
    env: Mapping[str, str],
    responder: Callable[[str, dict[str, Any]], Any] = load_answer,
) -> Iterator[tuple[str, int, int]]:
    """``mnemo serve`` (hash embedder, no rate limit) against a fake Ollama in another
    process (``fake_model`` with ``responder``); API keys ``k<i>`` for users ``u<i>``,
    ``i < users``, and ``ADMIN_KEY``. ``env`` adds or overrides server variables. Yields
    (``host:port``, server pid, fake Ollama pid)."""
    with fake_model(responder) as (url, fake_pid):
        server_env = {
            "MNEMO_EMBEDDER": "hash",
            "MNEMO_LLM_URL": url,
            "MNEMO_RATE_LIMIT": "100000",
            "MNEMO_RATE_BURST": "100000",
            "MNEMO_API_KEYS": ",".join(f"k{i}:u{i}" for i in range(users)),
            "MNEMO_ADMIN_KEYS": ADMIN_KEY,
            **env,
        }
        with served(server_env) as (address, process):
            yield address, process.pid, fake_pid
