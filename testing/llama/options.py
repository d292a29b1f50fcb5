"""Ollama's request ``options`` and ``keep_alive``, read the way Ollama reads them.

Defaults are Ollama's (``api.DefaultOptions``): temperature 0.8, top_k 40, top_p 0.9,
repeat_penalty 1.1 over the last 64 tokens, no token limit, a random seed, a 4,096-token
context. A known option of the wrong type is an error; an unknown one is ignored (Ollama
logs it). Options that only place work on hardware (``num_gpu``, ``num_thread``, ...)
are accepted and ignored: the model always runs on one CPU thread.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, fields
from typing import Any

__all__ = ["DEFAULT_KEEP_ALIVE", "OptionError", "Options", "keep_alive_seconds", "read_options"]

#: Seconds a model stays loaded after its last request (Ollama's ``OLLAMA_KEEP_ALIVE``).
DEFAULT_KEEP_ALIVE = 300.0

_IGNORED = {
    "num_keep": int,
    "typical_p": float,
    "num_batch": int,
    "num_gpu": int,
    "main_gpu": int,
    "use_mmap": bool,
    "num_thread": int,
    "mirostat": int,
    "mirostat_tau": float,
    "mirostat_eta": float,
    "penalize_newline": bool,
    "tfs_z": float,
    "numa": bool,
    "low_vram": bool,
}
_TYPE_NAMES = {int: "integer", float: "float", bool: "boolean", list: "array of strings"}
_DURATION = re.compile(r"([0-9]*\.?[0-9]+)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


class OptionError(ValueError):
    """An option or ``keep_alive`` Ollama would refuse; the message is Ollama's."""


@dataclass(frozen=True, slots=True)
class Options:
    """The options the model uses, with Ollama's defaults."""

    temperature: float = 0.8
    top_k: int = 40
    top_p: float = 0.9
    min_p: float = 0.0
    #: ``-1``: a new random seed for each request.
    seed: int = -1
    #: ``-1`` (or ``-2``): until the model stops or the context is full.
    num_predict: int = -1
    num_ctx: int = 4096
    repeat_penalty: float = 1.1
    repeat_last_n: int = 64
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    stop: list[str] = field(default_factory=list)

    def for_worker(self) -> dict[str, Any]:
        """The sampling options as ``worker.mjs`` takes them (node-llama-cpp's meanings)."""
        return {
            "temperature": self.temperature,
            "top_k": self.top_k,
            "top_p": self.top_p,
            "min_p": self.min_p,
            "seed": None if self.seed < 0 else self.seed,
            "num_predict": self.num_predict,
            "repeat_penalty": self.repeat_penalty,
            "repeat_last_n": self.repeat_last_n,
            "presence_penalty": self.presence_penalty,
            "frequency_penalty": self.frequency_penalty,
            "stop": self.stop,
        }


_KNOWN = {f.name: f.type for f in fields(Options)}
_TYPES = {"float": float, "int": int, "list[str]": list}


def read_options(raw: object, *, max_ctx: int) -> Options:
    """``Options`` from a request's ``options`` (None: the defaults); ``num_ctx`` is capped
    at the model's trained context ``max_ctx``. Raises ``OptionError``."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise OptionError("json: cannot unmarshal options into Go struct field of type map")
    values: dict[str, Any] = {}
    for name, value in raw.items():
        if name in _KNOWN:
            values[name] = _typed(name, value, _TYPES[str(_KNOWN[name])])
        elif name in _IGNORED:
            _typed(name, value, _IGNORED[name])
    options = Options(**values)
    if options.num_ctx > max_ctx or options.num_ctx < 1:
        options = Options(**{**values, "num_ctx": max(1, min(options.num_ctx, max_ctx))})
    return options


def _typed(name: str, value: object, kind: type) -> Any:
    if kind is bool and isinstance(value, bool):
        return value
    if kind in (int, float) and isinstance(value, int | float) and not isinstance(value, bool):
        return kind(value)
    if kind is list and isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise OptionError(f"option {name!r} must be of type {_TYPE_NAMES[kind]}".replace("'", '"'))


def keep_alive_seconds(raw: object) -> float | None:
    """Seconds from a request's ``keep_alive`` (None when absent, ``inf`` when negative).

    A number is seconds; a string is a Go duration (``"5m"``, ``"1h30m"``, ``"0"``).
    Raises ``OptionError``.
    """
    if raw is None:
        return None
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        return math.inf if raw < 0 else float(raw)
    if not isinstance(raw, str):
        raise OptionError(f"json: cannot unmarshal {type(raw).__name__} into keep_alive")
    text = raw[1:] if raw[:1] in "+-" else raw
    sign = -1.0 if raw.startswith("-") else 1.0
    if text == "0":
        return 0.0
    seconds = 0.0
    position = 0
    for match in _DURATION.finditer(text):
        if match.start() != position:
            break
        seconds += float(match[1]) * _UNITS[match[2]]
        position = match.end()
    if not text or position != len(text):
        unit = "missing unit in duration" if text.replace(".", "").isdigit() else "invalid duration"
        raise OptionError(f'time: {unit} "{raw}"')
    return math.inf if sign < 0 else seconds
