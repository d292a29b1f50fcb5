"""Seed 002's text preprocessing: what the index, a query and an embedding model are given."""

from __future__ import annotations

import pytest

from memory.text import MAX_INDEXED_BYTES, embedding_text, indexed_text, query_text


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
