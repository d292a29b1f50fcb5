"""The deployment files: ``deploy/haproxy.cfg`` is accepted by HAProxy and, run for real in
front of three stand-in nodes with a map made by ``mnemo cluster map``, keeps every key of
a user on one node and moves only a stopped node's users; ``deploy/k8s/`` parses and
runs ``mnemo serve`` with probes on ``/healthz``."""

from __future__ import annotations

import hashlib
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from server.cli import _parser
from server.cluster.shards import shard_of
from testing.deploy import (
    HAPROXY,
    HAPROXY_CONFIG,
    MAP_PATH,
    Proxy,
    config_for_test,
    haproxy_env,
    mnemo_map,
)

_ROOT = Path(__file__).resolve().parent.parent
_K8S = _ROOT / "deploy" / "k8s"
# Forty users, the first five with a second key: the keys of one user share a shard.
_KEYS = {f"key-{n}": f"user-{n}" for n in range(40)} | {f"other-{n}": f"user-{n}" for n in range(5)}
# A key of characters a subprotocol entry cannot carry as they are (base64url does).
_KEYS["odd/k+y=="] = "user-7"


def test_mnemo_cluster_map_writes_each_key_hash_and_its_users_shard(tmp_path: Path) -> None:
    output = tmp_path / "shards.map"
    done = mnemo_map(output, {"k1": "alice", "k2": "alice", "k3": "bob"})
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    lines = output.read_text(encoding="utf-8").splitlines()
    expected = sorted(
        f"{hashlib.sha256(key.encode()).hexdigest()} {shard_of(user)}"
        for key, user in {"k1": "alice", "k2": "alice", "k3": "bob"}.items()
    )
    assert lines == expected
    assert [p.name for p in tmp_path.iterdir()] == ["shards.map"]  # no temporary left


def test_mnemo_cluster_map_refuses_when_no_api_keys_are_configured(tmp_path: Path) -> None:
    output = tmp_path / "shards.map"
    done = mnemo_map(output, {})
    assert done.returncode == 2
    assert "no API keys configured" in done.stderr
    assert not output.exists()


def test_the_haproxy_config_is_accepted_by_haproxy(tmp_path: Path) -> None:
    map_file = tmp_path / "shards.map"
    assert mnemo_map(map_file, _KEYS).returncode == 0
    config = tmp_path / "haproxy.cfg"
    config.write_text(config_for_test(map_file), encoding="utf-8")
    done = subprocess.run(
        [HAPROXY, "-c", "-f", str(config)],
        env=haproxy_env(),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if "[WARNING]" in line]
    # The only warnings: the pods' names, which resolve only inside the cluster.
    assert all("could not resolve address 'mnemo-" in line for line in warnings), warnings


class _Node(ThreadingHTTPServer):
    """A stand-in node: ``/healthz`` answers 200, any other path the node's name."""

    daemon_threads = True

    def __init__(self, name: str) -> None:
        super().__init__(("127.0.0.1", 0), _NodeHandler)
        self.name = name
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    @property
    def port(self) -> int:
        port: int = self.server_address[1]
        return port

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # HAProxy ends a health check once it has the status line: a reset, not an error

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        self.thread.join(5)


class _NodeHandler(BaseHTTPRequestHandler):
    server: _Node

    def do_GET(self) -> None:
        body = b"ok" if self.path == "/healthz" else self.server.name.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def nodes() -> Iterator[list[_Node]]:
    started = [_Node(f"n{n}") for n in (1, 2, 3)]
    try:
        yield started
    finally:
        for node in started:
            if node.thread.is_alive():
                node.stop()


@pytest.fixture
def proxy(tmp_path: Path, nodes: list[_Node]) -> Iterator[Proxy]:
    map_file = tmp_path / "shards.map"
    done = mnemo_map(map_file, _KEYS)
    assert done.returncode == 0, done.stderr
    running = Proxy(tmp_path, map_file, nodes)
    try:
        running.wait_for({"n1": "UP", "n2": "UP", "n3": "UP"})
        yield running
    finally:
        running.close()


def test_haproxy_keeps_a_users_keys_on_one_node_and_moves_only_a_stopped_nodes_users(
    proxy: Proxy, nodes: list[_Node]
) -> None:
    before = {key: proxy.by_header(key) for key in _KEYS}
    for key, node in before.items():
        assert proxy.by_token(key) == node, key
        assert proxy.by_protocol(key) == node, key
        assert proxy.by_header(key) == node, key
    for key, user in _KEYS.items():
        assert before[key] == before[f"key-{user.removeprefix('user-')}"], key
    users_per_node = {
        name: sum(1 for key, node in before.items() if node == name and key.startswith("key-"))
        for name in ("n1", "n2", "n3")
    }
    assert all(count >= 4 for count in users_per_node.values()), users_per_node
    # A key the map does not know still reaches a node (which answers 401 for real).
    assert proxy.by_header("unknown-key") in {"n1", "n2", "n3"}

    stopped = max(users_per_node, key=lambda name: users_per_node[name])
    next(node for node in nodes if node.name == stopped).stop()
    proxy.wait_for({name: "DOWN" if name == stopped else "UP" for name in ("n1", "n2", "n3")})

    after = {key: proxy.by_header(key) for key in _KEYS}
    for key, node in before.items():
        if node == stopped:
            assert after[key] != stopped, key
            assert proxy.by_token(key) == after[key], key
        else:
            assert after[key] == node, key


def _documents() -> dict[str, list[dict[str, Any]]]:
    files = sorted(_K8S.glob("*.yaml"))
    assert [f.name for f in files] == [
        "configmap.yaml",
        "haproxy.yaml",
        "service.yaml",
        "statefulset.yaml",
    ]
    return {f.name: list(yaml.safe_load_all(f.read_text(encoding="utf-8"))) for f in files}


def _one(kind: str, name: str) -> dict[str, Any]:
    found = [
        doc
        for docs in _documents().values()
        for doc in docs
        if doc["kind"] == kind and doc["metadata"]["name"] == name
    ]
    assert len(found) == 1, (kind, name)
    return found[0]


def test_every_kubernetes_manifest_parses_as_named_objects() -> None:
    for name, docs in _documents().items():
        assert docs, name
        for doc in docs:
            assert {"apiVersion", "kind", "metadata"} <= doc.keys(), name
            assert doc["metadata"]["name"], name


def test_the_statefulset_runs_mnemo_serve_with_probes_on_healthz() -> None:
    nodes = _one("StatefulSet", "mnemo")
    spec = nodes["spec"]
    assert spec["serviceName"] == "mnemo"
    assert spec["replicas"] == 3
    pod = spec["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] == 60
    (container,) = pod["containers"]
    command = container["command"]
    assert command[:2] == ["mnemo", "serve"]
    _parser().parse_args(command[1:])  # options `mnemo serve` has
    assert command[command.index("--port") + 1] == "8000"
    for probe in ("readinessProbe", "livenessProbe"):
        check = container[probe]["httpGet"]
        assert check["path"] == "/healthz", probe
        assert check["port"] in (8000, "http"), probe
    assert {"name": "http", "containerPort": 8000} in [
        {k: port[k] for k in ("name", "containerPort")} for port in container["ports"]
    ]
    env = {item["name"]: item for item in container["env"]}
    assert env["MNEMO_NODE"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    for secret in ("MNEMO_API_KEYS", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        assert "secretKeyRef" in env[secret]["valueFrom"], secret
    settings = _one("ConfigMap", "mnemo")["data"]
    assert settings["MNEMO_DATA_DIR"].startswith("s3://")
    assert {"configMapRef": {"name": "mnemo"}} in container["envFrom"]
    local = env["MNEMO_LOCAL_DIR"]["value"]
    mounts = {mount["name"]: mount["mountPath"] for mount in container["volumeMounts"]}
    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    assert any(path == local and "emptyDir" in volumes[name] for name, path in mounts.items())
    headless = _one("Service", "mnemo")["spec"]
    assert headless["clusterIP"] == "None"
    assert headless["selector"] == spec["selector"]["matchLabels"]


def test_the_proxy_manifest_carries_deploy_haproxy_cfg_as_it_is() -> None:
    files = _one("ConfigMap", "mnemo-haproxy")["data"]
    assert files["haproxy.cfg"] == HAPROXY_CONFIG.read_text(encoding="utf-8")
    assert "mnemo-shards.map" in files
    deployment = _one("Deployment", "mnemo-haproxy")["spec"]["template"]["spec"]
    (container,) = deployment["containers"]
    assert container["image"].startswith("haproxy:2.6")
    mounts = {mount["mountPath"] for mount in container["volumeMounts"]}
    assert str(Path(MAP_PATH).parent) in mounts
    env = {item["name"]: item for item in container["env"]}
    assert env["POD_NAMESPACE"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
