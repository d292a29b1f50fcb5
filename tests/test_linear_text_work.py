"""Work on client text is linear and bounded: the same answers as before, from C-speed
regular expressions and from a bounded prefix of a long query (how fast: bench.hostile)."""

from __future__ import annotations

import itertools
import re

from hypothesis import given
from hypothesis import strategies as st

from memory.hashing import MAX_TOKENS, HashEmbedder
from memory.keywords import (
    KEYWORD_SCAN_CHARS,
    _latin_words,
    _runs,
    expresses_preference,
    extract_keywords,
    mentions_personal,
)
from memory.tokens import estimate_tokens, is_cjk
from server.adapters.lance_analyzer import _PREFIX

# Letters, digits, CJK, CJK punctuation, full-width forms, stars and separators.
_mixed = st.text(
    alphabet=st.sampled_from(list("ab Z9_*.-'#+\n\t我喜欢用户成都、。ＡＢ１かカ한")),
    max_size=200,
)


def _ideograph(char: str) -> bool:
    code = ord(char)
    return is_cjk(char) and not (0x3000 <= code <= 0x303F or 0xFF00 <= code <= 0xFFEF)


@given(_mixed)
def test_token_estimate_counts_each_cjk_character_as_is_cjk_does(text: str) -> None:
    cjk = sum(1 for c in text if is_cjk(c))
    assert estimate_tokens(text) == cjk + (len(text) - cjk + 3) // 4


@given(_mixed)
def test_runs_split_text_into_alternating_ideograph_and_other_pieces(text: str) -> None:
    runs = _runs(text)
    assert "".join(run for _, run in runs) == text
    for cjk, run in runs:
        assert all(_ideograph(c) == cjk for c in run)
    assert all(a[0] != b[0] for a, b in itertools.pairwise(runs))


@given(_mixed)
def test_latin_words_are_the_words_of_the_pieces_without_ideographs(text: str) -> None:
    word = re.compile(r"[^\W_]+(?:['.\-][^\W_]+)*(?:\+\+|#)?")
    expected = [m.group() for cjk, run in _runs(text) if not cjk for m in word.finditer(run)]
    assert _latin_words(text) == expected


@given(_mixed)
def test_prefix_pattern_finds_what_the_backtracking_one_found(text: str) -> None:
    assert _PREFIX.findall(text) == re.findall(r"(\w+)\*", text)
    assert _PREFIX.sub(" ", text) == re.sub(r"(\w+)\*", " ", text)


def test_keywords_and_hints_come_from_the_start_of_a_long_text() -> None:
    filler = "the " * (KEYWORD_SCAN_CHARS // 4)  # stop words: no keyword
    assert extract_keywords(f"python {filler} golang") == ["python"]
    assert extract_keywords(f"{filler[:-8]} golang") == ["golang"]
    assert expresses_preference(f"I love tea {filler}")
    assert not expresses_preference(f"{filler} I love tea")
    assert mentions_personal(f"where do I live {filler}")
    assert not mentions_personal(f"{filler} where do I live")


def test_hash_embedder_reads_only_the_first_tokens_of_a_text() -> None:
    embedder = HashEmbedder()
    words = [f"w{n}" for n in range(MAX_TOKENS)]
    assert embedder.embed_one(" ".join(words)) == embedder.embed_one(
        " ".join([*words, "beyond", "the", "end"])
    )
    assert embedder.embed_one(" ".join(words[:-1])) != embedder.embed_one(
        " ".join([*words[:-1], "counted"])
    )
