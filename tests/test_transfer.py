"""Import lines without a server: splitting a byte stream, checking lines, export ids."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
import pytest

from memory.transfer import (
    LineSplitter,
    imported_message_id,
    message_from_line,
    parse_line,
    transfer_id,
)
from schemas.taxonomy import DEFAULT_CATEGORIES
from schemas.transfer import FactLine, NoteLine, TurnLine


def split(chunks: list[bytes], limit: int = 10) -> list[tuple[int, bytes | None]]:
    splitter = LineSplitter(limit)
    out = [line for chunk in chunks for line in splitter.feed(chunk)]
    return out + splitter.finish()


def test_lines_are_numbered_across_chunks_and_blank_lines_only_counted() -> None:
    assert split([b"ab", b"c\n\n  \nd", b"e\nf"]) == [(1, b"abc"), (4, b"de"), (5, b"f")]


def test_a_line_over_the_limit_comes_out_as_none_and_the_next_line_is_intact() -> None:
    assert split([b"12345", b"678901", b"23\nok\n"], limit=10) == [(1, None), (2, b"ok")]
    assert split([b"x" * 10 + b"\n" + b"y" * 11], limit=10) == [(1, b"x" * 10), (2, None)]


def test_naive_times_are_utc_and_categories_take_the_taxonomys_spelling() -> None:
    raw = (
        b'{"kind": "turn", "id": "a", "session_id": "s", "speaker": "Ann", "role": "user",'
        b' "text": "hi", "at": "2024-01-02T03:04:05", "unknown": 1}'
    )
    turn = parse_line(raw, DEFAULT_CATEGORIES)
    assert isinstance(turn, TurnLine)
    assert turn.at == datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
    raw = b'{"kind": "fact", "id": "f", "content": "c", "category": " Pattern ", "confidence": 1}'
    fact = parse_line(raw, DEFAULT_CATEGORIES)
    assert isinstance(fact, FactLine)
    assert fact.category == "behavior"
    assert isinstance(parse_line(b'{"kind": "note", "id": "n"}', DEFAULT_CATEGORIES), NoteLine)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            b'{"kind": "fact", "id": "f", "content": " ", "category": "goal", "confidence": 1}',
            "content is blank",
        ),
        (
            b'{"kind": "fact", "id": "f", "content": "c", "category": "goal", "confidence": 2}',
            "$.confidence",
        ),
        (b'{"id": "f"}', "missing required field `kind`"),
    ],
    ids=["blank-content", "confidence-over-1", "no-kind"],
)
def test_bad_lines_raise_value_error_with_a_message(raw: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("$", r"\$")):
        parse_line(raw, DEFAULT_CATEGORIES)


def test_an_imported_message_exports_under_its_client_id_and_others_under_their_own() -> None:
    line = TurnLine(
        id="c-1",
        session_id="s",
        speaker="Ann",
        role="user",
        text="hi",
        at=datetime(2024, 1, 1, tzinfo=UTC),
    )
    message = message_from_line(line, "alice")
    assert message.id == imported_message_id("alice", "c-1") != imported_message_id("bob", "c-1")
    assert transfer_id(message) == "c-1"
    # A live session's message: its source is the turn frame's id, shared by two messages.
    live = msgspec.structs.replace(message, id="msg_0123456789abcdef")
    assert transfer_id(live) == "msg_0123456789abcdef"
