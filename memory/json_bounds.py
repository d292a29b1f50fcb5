"""Bounds on client JSON beyond its size: nesting depth and integer range.

A frame or import line is first decoded (msgspec: linear, in C); these checks then run
on its bytes, which are valid JSON by then. Nesting is bounded because every later
step that walks a value (encoding it for the journal, into LanceDB, into a response)
recurses, and integers because the journal stores values as msgpack, which has no
integer wider than 64 bits. Both are checked in C for almost every input: only a text
with more than ``MAX_DEPTH`` brackets or a run of 19 digits is looked at closer, and
that look is linear too.
"""

from __future__ import annotations

import re

import numpy as np

__all__ = ["INT_MAX", "INT_MIN", "MAX_DEPTH", "check_bounds"]

#: The deepest nesting of arrays and objects, the outermost object counting as 1.
MAX_DEPTH = 32
#: The integer range: a signed 64-bit integer.
INT_MIN, INT_MAX = -(2**63), 2**63 - 1

# Candidates for the closer look: 19 digits in a row (INT_MAX has 19).
_LONG_DIGITS = re.compile(rb"[0-9]{19}")
# A JSON string (valid JSON: every string ends): its brackets and digits are text.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
# An integer of 19 digits or more outside strings: not a fraction's or exponent's digits.
_LONG_INTEGER = re.compile(rb"(?<![0-9.eE+\-])-?[0-9]{19,}(?![0-9.eE])")
_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"[]{}")))
_STEP = np.zeros(256, dtype=np.int32)
_STEP[list(b"[{")] = 1
_STEP[list(b"]}")] = -1


def check_bounds(raw: bytes) -> None:
    """Raise ``ValueError`` (with a message for the client) when ``raw``, valid JSON, nests
    deeper than ``MAX_DEPTH`` or holds an integer outside ``INT_MIN..INT_MAX``."""
    openers = raw.count(b"[") + raw.count(b"{")
    if openers <= MAX_DEPTH and _LONG_DIGITS.search(raw) is None:
        return
    skeleton = _STRING.sub(b'""', raw)
    if openers > MAX_DEPTH:
        brackets = np.frombuffer(skeleton.translate(None, _NOT_BRACKETS), dtype=np.uint8)
        if brackets.size and int(np.cumsum(_STEP[brackets]).max()) > MAX_DEPTH:
            raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels")
    for match in _LONG_INTEGER.finditer(skeleton):
        digits = match.group()
        if len(digits.lstrip(b"-")) > 19 or not INT_MIN <= int(digits) <= INT_MAX:
            raise ValueError(f"integer out of range ({INT_MIN} to {INT_MAX})")
