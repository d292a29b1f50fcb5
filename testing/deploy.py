"""The deployment files run for real: ``mnemo cluster map`` as a command and HAProxy from
``deploy/haproxy.cfg`` in front of local nodes, for the deployment tests and the cluster
benchmark."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import httpx

from server.auth import protocol_entry
from testing.ports import free_port

__all__ = [
    "HAPROXY",
    "HAPROXY_CONFIG",
    "MAP_PATH",
    "Listening",
    "Proxy",
    "config_for_test",
    "haproxy_env",
    "mnemo_map",
]

_ROOT = Path(__file__).resolve().parent.parent
HAPROXY_CONFIG = _ROOT / "deploy" / "haproxy.cfg"
MAP_PATH = "/etc/haproxy/mnemo-shards.map"
HAPROXY = shutil.which("haproxy") or "/usr/sbin/haproxy"


def mnemo_map(output: Path, keys: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``mnemo cluster map -o output`` run as a command, with ``keys`` as MNEMO_API_KEYS."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("MNEMO_")}
    if keys:
        env["MNEMO_API_KEYS"] = ",".join(f"{key}:{user}" for key, user in keys.items())
    command = [str(Path(sys.executable).with_name("mnemo")), "cluster", "map", "-o", str(output)]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=30)


def config_for_test(map_file: Path, port: int | None = None, nodes: list[int] | None = None) -> str:
    """deploy/haproxy.cfg with the map at ``map_file``, and optionally the frontend on
    ``port`` and the servers at ``nodes`` (local ports) instead of the StatefulSet's pods."""
    text = HAPROXY_CONFIG.read_text(encoding="utf-8")
    assert text.count(MAP_PATH) == 1
    text = text.replace(MAP_PATH, str(map_file))
    if port is not None:
        assert text.count("bind :8080\n") == 1
        text = text.replace("bind :8080\n", f"bind 127.0.0.1:{port}\n")
    if nodes is not None:
        servers = re.findall(r"^    server (n\d) .*$", text, flags=re.MULTILINE)
        assert servers == ["n1", "n2", "n3"]
        for name, node_port in zip(servers, nodes, strict=True):
            text = re.sub(
                rf"^    server {name} .*$",
                f"    server {name} 127.0.0.1:{node_port}",
                text,
                flags=re.MULTILINE,
            )
    return text


def haproxy_env() -> dict[str, str]:
    # The StatefulSet's names do not resolve here: one quick try each, not libc's retries.
    return {**os.environ, "RES_OPTIONS": "timeout:1 attempts:1"}


class Listening(Protocol):
    @property
    def port(self) -> int: ...


class Proxy:
    """HAProxy from deploy/haproxy.cfg in front of ``nodes``, with a stats socket to see
    which servers its health checks hold up."""

    def __init__(self, tmp_path: Path, map_file: Path, nodes: Sequence[Listening]) -> None:
        self.port = free_port()
        self.stats_port = free_port()
        text = config_for_test(map_file, self.port, [node.port for node in nodes])
        stats = f"global\n    stats socket ipv4@127.0.0.1:{self.stats_port} level admin\n"
        config = tmp_path / "haproxy.cfg"
        config.write_text(text.replace("global\n", stats, 1), encoding="utf-8")
        self.log = tmp_path / "haproxy.log"
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [HAPROXY, "-db", "-f", str(config)],
                env=haproxy_env(),
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self.client = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=5)

    def states(self) -> dict[str, str]:
        """Each server's status as HAProxy sees it (``UP``, ``DOWN``, ``UP 1/3`` …)."""
        with socket.create_connection(("127.0.0.1", self.stats_port), timeout=2) as sock:
            sock.sendall(b"show stat\n")
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        rows = [line.split(",") for line in answer.decode().splitlines() if line]
        header = rows[0]
        status = header.index("status")
        return {row[1]: row[status] for row in rows[1:] if row[0] == "mnemo" and row[1][0] == "n"}

    def wait_for(self, expected: dict[str, str]) -> None:
        deadline = time.monotonic() + 8
        while True:
            assert self.process.poll() is None, self.log.read_text(errors="replace")
            try:
                if self.states() == expected:
                    return
            except OSError:
                pass  # the stats socket is not open yet
            assert time.monotonic() < deadline, f"not {expected} in 8 s: {self.states()}"
            time.sleep(0.05)

    def by_header(self, key: str) -> str:
        answer = self.client.get("/memory/facts", headers={"Authorization": f"Bearer {key}"})
        assert answer.status_code == 200
        return answer.text

    def by_token(self, key: str) -> str:
        answer = self.client.get("/ws", params={"token": key})
        assert answer.status_code == 200
        return answer.text

    def by_protocol(self, key: str) -> str:
        """As a browser's WebSocket sends a key: a subprotocol entry beside ``mnemo``."""
        offered = f"mnemo, {protocol_entry(key)}"
        answer = self.client.get("/ws", headers={"Sec-WebSocket-Protocol": offered})
        assert answer.status_code == 200
        return answer.text

    def close(self) -> None:
        self.client.close()
        self.process.terminate()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)
