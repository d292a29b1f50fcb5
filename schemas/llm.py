"""What goes to and comes from the language model."""

from __future__ import annotations

from typing import Literal

import msgspec

__all__ = ["ChatChunk", "PromptMessage"]


class PromptMessage(msgspec.Struct, frozen=True):
    role: Literal["system", "user", "assistant"]
    content: str


class ChatChunk(msgspec.Struct, frozen=True, kw_only=True):
    """One streamed piece of a reply; the last one has ``done=True`` and the token counts."""

    text: str = ""
    done: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
