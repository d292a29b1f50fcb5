"""Cleaning text before it is indexed, searched for or embedded (seed 002's preprocessing).

NUL bytes go (LanceDB's analyzer and PostgreSQL alike split words at them), any
run of whitespace (tabs, newlines, several spaces) becomes one space, and the
ends are stripped. Indexed text is also cut to 1 MiB of UTF-8, on a code-point
boundary; a query is not cut (seed 002). A query's terms come from its first
``MAX_QUERY_CHARS`` characters, though (``server.adapters.lance_analyzer``): analyzing
holds the event loop (LanceDB's analyzer keeps the GIL), 60,000 Chinese characters about
0.1-0.3 s, 4,096 of them under 2 ms, and the embedding models read fewer tokens anyway.
"""

from __future__ import annotations

__all__ = ["MAX_INDEXED_BYTES", "MAX_QUERY_CHARS", "embedding_text", "indexed_text", "query_text"]

#: The most UTF-8 bytes of one text the full-text index takes.
MAX_INDEXED_BYTES = 1 << 20
#: The most characters of a query whose terms are searched for.
MAX_QUERY_CHARS = 4096


def _clean(text: str | None) -> str:
    if not text:
        return ""
    return " ".join(text.replace("\x00", "").split())


def query_text(text: str | None) -> str:
    """A search query as the index is asked it: no NUL, single spaces, stripped; ``""``
    for ``None`` or a query of nothing but whitespace and NULs."""
    return _clean(text)


def indexed_text(text: str) -> str:
    """``query_text``, then at most ``MAX_INDEXED_BYTES`` of UTF-8, never cutting a
    character in half."""
    clean = _clean(text)
    if len(clean) * 4 <= MAX_INDEXED_BYTES:  # at most 4 bytes a code point: short enough
        return clean
    encoded = clean.encode("utf-8", "surrogatepass")
    if len(encoded) <= MAX_INDEXED_BYTES:
        return clean
    # A continuation byte (0b10xxxxxx) at the cut means a character straddles it.
    end = MAX_INDEXED_BYTES
    while end and encoded[end] & 0xC0 == 0x80:
        end -= 1
    return encoded[:end].decode("utf-8", "surrogatepass").rstrip()


def embedding_text(text: str | None) -> str:
    """What an embedding model is given for ``text``: a single space for ``None`` or
    ``""`` (seed 002), so every input gets a vector."""
    return text or " "
