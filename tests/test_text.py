"""Seed 002's text preprocessing: what the index, a query and an embedding model are given;
and the hash embedder's tokens and vectors."""

from __future__ import annotations

import pytest

from memory.hashing import HashEmbedder
from memory.text import MAX_INDEXED_BYTES, embedding_text, indexed_text, query_text
from testing.fake_ollama import hash_embed


def test_nul_bytes_are_removed_before_indexing() -> None:
    assert indexed_text("Py\x00thon\x00 rocks\x00") == "Python rocks"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("green\ttea", "green tea"),
        ("green\n\ntea", "green tea"),
        ("green     tea", "green tea"),
        ("green \t\r\n \u3000 tea", "green tea"),
    ],
    ids=["tab", "newlines", "spaces", "mixed"],
)
def test_tabs_newlines_and_runs_of_spaces_collapse_to_one_space(text: str, expected: str) -> None:
    assert indexed_text(text) == expected
    assert query_text(text) == expected


def test_indexed_text_is_stripped_and_cut_to_one_mib_on_a_code_point_boundary() -> None:
    assert indexed_text("  \n tea \t ") == "tea"
    assert indexed_text("a" * MAX_INDEXED_BYTES) == "a" * MAX_INDEXED_BYTES
    cut = indexed_text("a" * (MAX_INDEXED_BYTES + 10))
    assert cut == "a" * MAX_INDEXED_BYTES
    # "茶" is 3 bytes: the last whole one ends at or before the limit, none is split.
    tea = indexed_text("x" + "茶" * (MAX_INDEXED_BYTES // 3 + 5))
    encoded = tea.encode()
    assert MAX_INDEXED_BYTES - 3 < len(encoded) <= MAX_INDEXED_BYTES
    assert tea == "x" + "茶" * ((MAX_INDEXED_BYTES - 1) // 3)


def test_a_query_is_cleaned_but_never_cut_and_a_blank_one_is_empty() -> None:
    long = "tea " * MAX_INDEXED_BYTES
    assert query_text(long) == long.strip()
    assert query_text(" gre\x00en\t tea\n") == "green tea"
    assert query_text("") == ""
    assert query_text(None) == ""
    assert query_text(" \x00\t\n ") == ""


def test_an_empty_text_is_embedded_as_a_single_space() -> None:
    assert embedding_text("") == " "
    assert embedding_text(None) == " "
    assert embedding_text("tea") == "tea"


def test_a_cut_never_splits_a_four_byte_character_and_drops_trailing_space() -> None:
    emoji = indexed_text("x" + "😀" * (MAX_INDEXED_BYTES // 4 + 3))
    assert emoji == "x" + "😀" * ((MAX_INDEXED_BYTES - 1) // 4)
    spaced = indexed_text("a" * (MAX_INDEXED_BYTES - 1) + " " + "b" * 20)
    assert spaced == "a" * (MAX_INDEXED_BYTES - 1)


def test_a_lone_surrogate_in_a_long_text_is_kept_not_an_error() -> None:
    text = indexed_text("\ud800" + "a" * MAX_INDEXED_BYTES)
    assert text == "\ud800" + "a" * (MAX_INDEXED_BYTES - 3)


@pytest.mark.parametrize("dim", [64, 7])
@pytest.mark.parametrize("text", ["green tea", "Tea tea TEA", "The quick brown fox, again", ""])
def test_the_hash_embedder_gives_latin_text_the_fake_ollamas_vector(text: str, dim: int) -> None:
    assert HashEmbedder(dim).embed_one(text) == pytest.approx(hash_embed(text, dim))


def _cosine(a: str, b: str) -> float:
    embedder = HashEmbedder()
    return sum(x * y for x, y in zip(embedder.embed_one(a), embedder.embed_one(b), strict=True))


def test_chinese_words_count_once_whole_and_once_per_character() -> None:
    assert _cosine("咖啡", "咖喱") > 0  # 咖 in both
    assert HashEmbedder().embed_one("猫 tea") == pytest.approx(hash_embed("猫 tea"))


def test_a_one_dimensional_hash_embedder_gives_cancelling_words_the_empty_text_vector() -> None:
    embedder = HashEmbedder(1)
    signs = {word: embedder.embed_one(word)[0] for word in ("a", "b", "c", "d", "e", "f")}
    plus = next(w for w, sign in signs.items() if sign > 0)
    minus = next(w for w, sign in signs.items() if sign < 0)
    assert embedder.embed_one(f"{plus} {minus}") == embedder.embed_one("")
    assert abs(embedder.embed_one("")[0]) == 1.0
    with pytest.raises(ValueError, match="dim must be positive, got 0"):
        HashEmbedder(0)
