"""A request's ``format`` as the grammar the model's tokens are constrained by.

``"json"`` is llama.cpp's JSON grammar (any object); a JSON schema goes through
llama.cpp's own converter, the code Ollama runs for it, so the model is held to exactly
what Ollama would hold it to: optional properties may be left out, and whatever that
converter does not resolve stays unconstrained there as well.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio

__all__ = ["FormatError", "Grammar", "GrammarMaker"]

#: What ``worker.mjs`` takes: none, llama.cpp's JSON grammar, or GBNF text.
Grammar = None | str | dict[str, str]


class FormatError(ValueError):
    """A ``format`` Ollama refuses; the message is Ollama's."""


class GrammarMaker:
    """Turns formats into grammars with the converter at ``converter``; remembers them."""

    def __init__(self, converter: Path) -> None:
        self._converter = converter
        self._made: dict[str, Grammar] = {}

    async def grammar(self, format: Any) -> Grammar:
        """The grammar for ``format``; raises ``FormatError``."""
        if format is None or format == "":
            return None
        if format == "json":
            return "json"
        if not isinstance(format, dict):
            raise FormatError(
                f'invalid format: {json.dumps(format)!r}; expected "json" or a valid JSON '
                "Schema object"
            )
        key = json.dumps(format)  # property order matters: it is the order of the output
        if key not in self._made:
            done = await anyio.run_process([str(self._converter)], input=key.encode(), check=False)
            if done.returncode != 0:
                reason = done.stderr.decode(errors="replace").strip()
                raise FormatError(f"invalid JSON schema in format: {reason}")
            self._made[key] = {"gbnf": done.stdout.decode()}
        return self._made[key]
