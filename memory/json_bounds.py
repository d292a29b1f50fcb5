"""Bounds on client JSON beyond its size: nesting depth and integer range.

Nesting is checked on a frame's or line's bytes before they are decoded, so that no
decoder and no later step recurses deeper than ``MAX_DEPTH`` (the decoders would
raise ``RecursionError`` near Python's recursion limit, and a garbage collection that
starts down there runs its callbacks out of stack). Integers are checked after a
successful decode, because the journal stores values as msgpack, which has no integer
wider than 64 bits. Both are done in C and NumPy: only a text with more than
``MAX_DEPTH`` brackets or a run of 19 digits is looked at closer, and that look is
linear (no regular expression that could backtrack over the text).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "INT_MAX",
    "INT_MIN",
    "MAX_DEPTH",
    "check_bounds",
    "check_depth",
    "check_integers",
    "depth_bound",
    "flattened",
]

#: The deepest nesting of arrays and objects, the outermost object counting as 1.
MAX_DEPTH = 32
#: The integer range: a signed 64-bit integer.
INT_MIN, INT_MAX = -(2**63), 2**63 - 1

# 19 digits in a row (INT_MAX has 19); then only those that are no fraction's or exponent's.
_DIGITS = bytes(ord("9") if chr(b).isdigit() and b < 128 else ord(".") for b in range(256))
_NINETEEN = b"9" * 19
_LONG_INTEGER = re.compile(rb"(?<![0-9.eE+\-])-?[0-9]{19,}(?![0-9.eE])")
_STEP = np.zeros(256, dtype=np.int64)
_STEP[list(b"[{")] = 1
_STEP[list(b"]}")] = -1
_QUOTE, _BACKSLASH = ord('"'), ord("\\")


def _quotes(data: npt.NDArray[np.uint8]) -> npt.NDArray[np.intp]:
    """Positions of the quotes that open or close a string: those not escaped (preceded
    by an even run of backslashes)."""
    quotes = np.flatnonzero(data == _QUOTE)
    if not quotes.size:
        return quotes
    index = np.arange(data.size)
    last_other = np.maximum.accumulate(np.where(data == _BACKSLASH, -1, index))
    before = quotes - 1
    run = np.where(before >= 0, before - last_other[np.maximum(before, 0)], 0)
    kept: npt.NDArray[np.intp] = quotes[run % 2 == 0]
    return kept


def _outside_strings(positions: npt.NDArray[np.intp], quotes: npt.NDArray[np.intp]) -> Any:
    """Which of ``positions`` are outside strings (an even number of quotes before them)."""
    return np.searchsorted(quotes, positions) % 2 == 0


def depth_bound(raw: bytes) -> int:
    """How deep ``raw`` nests arrays and objects (outside strings): exactly when that is
    more than ``MAX_DEPTH``, otherwise some number up to ``MAX_DEPTH``. Any bytes, JSON or
    not; linear."""
    openers = raw.count(b"[") + raw.count(b"{")
    if openers <= MAX_DEPTH:
        return openers
    data = np.frombuffer(raw, dtype=np.uint8)
    steps = _STEP[data]
    brackets = np.flatnonzero(steps)
    brackets = brackets[_outside_strings(brackets, _quotes(data))]
    if not brackets.size:
        return 0
    return max(int(np.cumsum(steps[brackets]).max()), 0)


def flattened(raw: bytes) -> bytes:
    """``raw`` with each array or object nested in its outermost one replaced by ``0``:
    a frame refused for its depth still shows its own top-level members (its ``id``) to
    a decoder that goes no deeper than one level. Linear; unchanged when ``raw`` nests
    no deeper than ``MAX_DEPTH``."""
    if depth_bound(raw) <= MAX_DEPTH:
        return raw
    data = np.frombuffer(raw, dtype=np.uint8)
    steps = _STEP[data]
    brackets = np.flatnonzero(steps)
    brackets = brackets[_outside_strings(brackets, _quotes(data))]
    kinds = steps[brackets]
    depths = np.cumsum(kinds)  # the depth after each bracket
    opens = brackets[(kinds == 1) & (depths == 2)]  # a value nested in the outermost one
    closes = brackets[(kinds == -1) & (depths == 1)]  # ... and where it ends
    ends = np.searchsorted(closes, opens)
    pieces, at = [], 0
    for start, end in zip(opens.tolist(), ends.tolist(), strict=True):
        if start < at:
            continue  # inside a value already replaced (an unbalanced text)
        pieces += [raw[at:start], b"0"]
        at = int(closes[end]) + 1 if end < closes.size else len(raw)
    pieces.append(raw[at:])
    return b"".join(pieces)


def check_depth(raw: bytes) -> None:
    """Raise ``ValueError`` when ``raw`` nests deeper than ``MAX_DEPTH`` (before decoding)."""
    if depth_bound(raw) > MAX_DEPTH:
        raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels")


def check_integers(raw: bytes) -> None:
    """Raise ``ValueError`` when ``raw`` (valid JSON) holds an integer outside
    ``INT_MIN..INT_MAX``."""
    if _NINETEEN not in raw.translate(_DIGITS):  # the common case: two passes in C
        return
    candidates = list(_LONG_INTEGER.finditer(raw))
    if not candidates:
        return
    quotes = _quotes(np.frombuffer(raw, dtype=np.uint8))
    starts = np.array([m.start() for m in candidates], dtype=np.intp)
    for match, outside in zip(candidates, _outside_strings(starts, quotes), strict=True):
        digits = match.group()
        if outside and (len(digits.lstrip(b"-")) > 19 or not INT_MIN <= int(digits) <= INT_MAX):
            raise ValueError(f"integer out of range ({INT_MIN} to {INT_MAX})")


def check_bounds(raw: bytes) -> None:
    """``check_depth`` and ``check_integers``: for valid JSON that was decoded already."""
    check_depth(raw)
    check_integers(raw)
