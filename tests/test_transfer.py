"""Import lines without a server: splitting a byte stream, checking lines, export ids."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import msgspec
import pytest

from memory.transfer import (
    LineSplitter,
    candidate_from_line,
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
    raw = b'{"kind": "note", "id": "note_0a1b2c3d", "app_id": "a", "content": "c",'
    raw += b' "at": "2024-01-02T03:04:00"}'
    note = parse_line(raw, DEFAULT_CATEGORIES)
    assert isinstance(note, NoteLine)
    assert note.at == datetime(2024, 1, 2, 3, 4, tzinfo=UTC)


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


def test_a_newline_at_the_start_of_a_chunk_ends_the_line_before_it() -> None:
    assert split([b"ab", b"\ncd\n", b"\n"]) == [(1, b"ab"), (2, b"cd")]


def _turn(text: bytes = b"hi", at: bytes = b"2024-01-02T03:04:05") -> bytes:
    head = b'{"kind": "turn", "id": "a", "session_id": "s", "speaker": "Ann", "role": "user",'
    return head + b' "text": "' + text + b'", "at": "' + at + b'"}'


def test_a_fact_with_a_zoned_time_is_dated_in_utc_and_one_without_stays_undated() -> None:
    dated = b'{"kind": "fact", "id": "f", "content": "c", "category": "goal", "confidence": 1'
    fact = parse_line(dated + b', "at": "2024-01-02T05:04:05+02:00"}', DEFAULT_CATEGORIES)
    assert isinstance(fact, FactLine)
    assert fact.at == datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert fact.at is not None
    assert fact.at.utcoffset() == timedelta(0)
    undated = parse_line(dated + b"}", DEFAULT_CATEGORIES)
    assert isinstance(undated, FactLine)
    assert undated.at is None


def test_a_blank_turn_or_an_unknown_category_is_refused_naming_what_is_known() -> None:
    with pytest.raises(ValueError, match=r"^text is blank$"):
        parse_line(_turn(b"  "), DEFAULT_CATEGORIES)
    odd = b'{"kind": "fact", "id": "f", "content": "c", "category": "gossip", "confidence": 1}'
    known = ", ".join(spec.name for spec in DEFAULT_CATEGORIES)
    with pytest.raises(ValueError, match="unknown category") as refused:
        parse_line(odd, DEFAULT_CATEGORIES)
    assert str(refused.value) == f"unknown category 'gossip'; known: {known}"
    with pytest.raises(ValueError, match=r"^content is blank$"):
        parse_line(odd.replace(b'"c"', b'" "'), DEFAULT_CATEGORIES)


def test_a_turn_line_becomes_the_archived_message_it_describes() -> None:
    at = datetime(2024, 1, 1, 9, tzinfo=UTC)
    line = TurnLine(
        id="c-2",
        session_id="trip",
        scope="app",
        speaker="Bot",
        role="assistant",
        text="Lisbon it is",
        at=at,
        turn=4,
        meta={"k": 1},
    )
    message = message_from_line(line, "alice", context="Ann: where to?")
    assert message.id.startswith("msg_")
    assert len(message.id) == 4 + 16
    assert (message.user_id, message.session_id, message.scope, message.turn) == (
        "alice",
        "trip",
        "app",
        4,
    )
    assert (message.role, message.speaker, message.text, message.at) == (
        "assistant",
        "Bot",
        "Lisbon it is",
        at,
    )
    assert (message.meta, message.source_id, message.context) == ({"k": 1}, "c-2", "Ann: where to?")
    assert message_from_line(line, "alice").context == ""


def test_a_fact_line_becomes_an_import_candidate_with_everything_it_says() -> None:
    at = datetime(2024, 1, 1, tzinfo=UTC)
    line = FactLine(
        id="f-1",
        scope="app",
        meta={"k": 2},
        content="Ann lives in Lyon",
        category="identity",
        confidence=0.7,
        at=at,
        pinned=True,
        subject="user",
        predicate="lives_in",
    )
    candidate = candidate_from_line(line, vector=[0.6, 0.8], user_id="alice")
    assert (candidate.user_id, candidate.content, candidate.category) == (
        "alice",
        "Ann lives in Lyon",
        "identity",
    )
    assert (candidate.confidence, list(candidate.vector), candidate.extractor) == (
        0.7,
        [0.6, 0.8],
        "import",
    )
    assert (candidate.subject, candidate.predicate, candidate.scope, candidate.pinned) == (
        "user",
        "lives_in",
        "app",
        True,
    )
    assert (candidate.at, candidate.source_id, candidate.meta) == (at, "f-1", {"k": 2})


def test_naive_and_zoned_times_are_utc_whatever_the_servers_zone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    try:
        for at in (b"2024-01-02T03:04:05", b"2024-01-02T05:04:05+02:00"):
            turn = parse_line(_turn(at=at), DEFAULT_CATEGORIES)
            assert isinstance(turn, TurnLine)
            assert turn.at == datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
            assert turn.at.utcoffset() == timedelta(0)
    finally:
        monkeypatch.undo()
        time.tzset()
