"""Building ``Settings`` from ``MNEMO_*`` environment variables and an optional TOML file.

Every value is checked once, at start, against its field's type and bounds
(``schemas.settings``); numbers must be finite. A bad one is a ``ConfigError`` whose one
line names where the value came from (the variable, the file's key or the option), the
value, and what is allowed.
"""

from __future__ import annotations

import functools
import ipaddress
import logging
import math
import re
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, get_type_hints
from urllib.parse import urlsplit

import msgspec
from msgspec import inspect

from actors.context import FORMAT_NAMES
from actors.errors import MnemoError
from schemas.settings import Settings
from server.budget import cost_of

__all__ = [
    "CLIENT_KEY",
    "CLIENT_URL",
    "ConfigError",
    "allowed",
    "is_loopback",
    "load_settings",
]

_log = logging.getLogger("mnemo.config")
_PREFIX = "MNEMO_"
#: Read by the client commands (``mnemo export`` / ``import``), not by the server.
CLIENT_KEY = "MNEMO_API_KEY"
CLIENT_URL = "MNEMO_URL"
_NOT_SETTINGS = {"MNEMO_CONFIG", CLIENT_KEY, CLIENT_URL}
#: Settings whose values are secrets: a message names them, never shows them.
_SECRET = {"api_keys", "admin_keys"}
#: Text settings that name one of a few things (kept where those things are defined).
_CHOICES: dict[str, tuple[str, ...]] = {"context_format": FORMAT_NAMES}
#: Names a setting had before, still read (with a warning in the log): old -> current.
_RENAMED = {"ollama_url": "llm_url"}
_USER_ID = re.compile(r"^[A-Za-z0-9_.@-]{1,64}\Z")
_NODE = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\Z")


class ConfigError(MnemoError):
    """The configuration is invalid; the message says which setting and why."""

    code = "config_error"


@functools.cache
def _types() -> tuple[dict[str, Any], dict[str, inspect.Type]]:
    """Each field's annotated type (to convert a value) and its msgspec type (to say what
    it allows)."""
    info = inspect.type_info(Settings)
    assert isinstance(info, inspect.StructType)
    return get_type_hints(Settings, include_extras=True), {f.name: f.type for f in info.fields}


def _number(bound: float) -> str:
    return str(bound) if isinstance(bound, int) else f"{bound:g}"


def _range(kind: inspect.IntType | inspect.FloatType) -> str:
    """The bounds in words, after a noun: "from 0 to 1", "above 0 and at most 1", "of at
    least 1" (with a leading space; "" for none)."""
    if kind.ge is not None and kind.le is not None:
        return f" from {_number(kind.ge)} to {_number(kind.le)}"
    words = [
        f"{word} {_number(bound)}"
        for word, bound in (
            ("at least", kind.ge),
            ("above", kind.gt),
            ("at most", kind.le),
            ("below", kind.lt),
        )
        if bound is not None
    ]
    text = " and ".join(words)
    return f" of {text}" if text.startswith("at ") else f" {text}" if text else ""


def allowed(field: str) -> str | None:
    """What ``Settings.<field>`` allows, in words ("a whole number from 0 to 65535"), or
    None for text and structured settings."""
    if field in _CHOICES:
        return "one of " + ", ".join(_CHOICES[field])
    kind = _types()[1][field]
    match kind:
        case inspect.BoolType():
            return "true or false"
        case inspect.IntType():
            return f"a whole number{_range(kind)}"
        case inspect.FloatType():
            return f"a number{_range(kind)}"
        case inspect.LiteralType():
            return "one of " + ", ".join(map(str, kind.values))
    return None


def _parse_api_keys(raw: str) -> dict[str, str]:
    keys: dict[str, str] = {}
    for n, item in enumerate(filter(None, (part.strip() for part in raw.split(","))), 1):
        key, sep, user = item.rpartition(":")
        if not sep or not key or not user:  # (the item is not shown: it may be a key)
            raise ConfigError(
                f"MNEMO_API_KEYS: must be key:user pairs, comma-separated (pair {n} is not one)"
            )
        keys[key] = user
    return keys


def _current(field: str, where: str) -> str:
    """The field an old setting name stands for, said once in the log."""
    _log.warning("%s is deprecated since mnemo 0.1: use %s", where, field)
    return field


def _from_environ(environ: Mapping[str, str]) -> dict[str, tuple[Any, str]]:
    names = {f.upper(): f for f in Settings.__struct_fields__}
    values: dict[str, tuple[Any, str]] = {}
    for name, raw in environ.items():
        if not name.startswith(_PREFIX) or name in _NOT_SETTINGS:
            continue
        field = names.get(name[len(_PREFIX) :])
        old = name[len(_PREFIX) :].lower()
        if field is None and old in _RENAMED:
            field = _current(_RENAMED[old], name)
            if f"{_PREFIX}{field.upper()}" in environ:
                continue  # the current name wins
        if field is None:
            raise ConfigError(f"unknown setting {name}")
        shown = name if field in _SECRET else f"{name}={raw}"
        if field == "api_keys":
            values[field] = (_parse_api_keys(raw), shown)
        elif field in ("admin_keys", "allowed_hosts", "allowed_origins"):
            values[field] = ([k.strip() for k in raw.split(",") if k.strip()], shown)
        else:
            values[field] = (raw, shown)
    return values


def _from_file(path: str) -> dict[str, tuple[Any, str]]:
    try:
        table = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"MNEMO_CONFIG={path}: {exc}") from exc
    values: dict[str, tuple[Any, str]] = {}
    for key, value in table.items():
        if key in _RENAMED and _RENAMED[key] not in table:
            key = _current(_RENAMED[key], f"{key} in {path}")
        elif key in _RENAMED:
            continue  # the current name wins
        if key not in Settings.__struct_fields__:
            raise ConfigError(f"unknown setting {key} in {path}")
        shown = key if key in _SECRET else f"{key} = {msgspec.json.encode(value).decode()}"
        values[key] = (value, f"{shown} in {path}")
    return values


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list | tuple):
        return all(map(_finite, value))
    if isinstance(value, dict):
        return all(map(_finite, value.values()))
    if isinstance(value, msgspec.Struct):
        return _finite(msgspec.structs.asdict(value))
    return True


def _convert(field: str, value: Any, source: str) -> Any:
    """``value`` as ``Settings.<field>`` holds it, or a ``ConfigError`` saying why not."""
    try:
        converted = msgspec.convert(value, _types()[0][field], strict=False)
    except msgspec.ValidationError as exc:
        words = allowed(field)
        raise ConfigError(f"{source}: " + (f"must be {words}" if words else str(exc))) from None
    if not _finite(converted):
        words = (allowed(field) or "a number").replace("a number", "a finite number", 1)
        raise ConfigError(f"{source}: must be {words}")
    return converted


def load_settings(environ: Mapping[str, str], **overrides: Any) -> Settings:
    """Settings from a TOML file (``MNEMO_CONFIG``), then environment, then ``overrides``
    (command-line options: ``port=...`` is ``--port``).

    Raises ``ConfigError`` naming the bad setting, its value and what is allowed.
    """
    given: dict[str, tuple[Any, str]] = {}
    config_file = environ.get("MNEMO_CONFIG")
    if config_file:
        given.update(_from_file(config_file))
    given.update(_from_environ(environ))
    for name, value in overrides.items():
        if value is not None:
            given[name] = (value, f"--{name.replace('_', '-')} {value}")
    values = {name: _convert(name, value, source) for name, (value, source) in given.items()}
    settings = Settings(**values)
    sources = {name: source for name, (_, source) in given.items()}
    _validate(settings, lambda field: _shown(settings, field, sources))
    return settings


def _shown(settings: Settings, field: str, sources: Mapping[str, str]) -> str:
    """How a message names a setting: as it was given, or its default."""
    default = f"MNEMO_{field.upper()}={getattr(settings, field)} (the default)"
    return sources.get(field, default)


def _validate(settings: Settings, shown: Callable[[str], str]) -> None:
    for user in [*settings.api_keys.values(), settings.default_user]:
        if not _USER_ID.match(user):
            raise ConfigError(f"invalid user id {user!r}: use 1-64 of A-Z a-z 0-9 _ . @ -")
    for field, choices in _CHOICES.items():
        if getattr(settings, field) not in choices:
            raise ConfigError(f"{shown(field)}: must be {allowed(field)}")
    frame = cost_of(settings.max_frame_bytes)
    if settings.user_burst < frame:
        raise ConfigError(
            f"{shown('user_burst')}: must be at least {frame:g}, what a frame of"
            f" {shown('max_frame_bytes')} costs"
        )
    _validate_url(settings.llm_url, shown("llm_url"))
    _validate_origins(settings.allowed_origins, shown("allowed_origins"))
    if settings.node:
        _validate_node(settings)
    elif settings.journal_dir:
        raise ConfigError("MNEMO_JOURNAL_DIR is the journal of a cluster node: set MNEMO_NODE")
    kind = settings.embedder
    if kind not in ("onnx-minilm", "hash") and not kind.startswith("ollama:"):
        raise ConfigError(f"{shown('embedder')}: must be onnx-minilm, hash or ollama:<model>")
    if kind.startswith("ollama:") and settings.llm_api != "ollama":
        raise ConfigError(
            f"{shown('embedder')}: embeds through Ollama at MNEMO_LLM_URL, which needs"
            f" MNEMO_LLM_API=ollama, not {settings.llm_api}"
        )


def _validate_url(url: str, shown: str) -> None:
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = -1
    if parts.scheme not in ("http", "https") or not parts.hostname or port == -1:
        raise ConfigError(
            f"{shown}: must be an http:// or https:// URL with a host and a port from 1 to"
            " 65535, such as http://127.0.0.1:11434"
        )


def _validate_origins(origins: list[str], shown: str) -> None:
    """Each allowed origin is ``scheme://host[:port]``, as a browser sends it."""
    for origin in origins:
        try:
            parts = urlsplit(origin)
            parts.port  # noqa: B018 - raises for a port that is not one
        except ValueError:
            parts = urlsplit("")
        if (
            parts.scheme not in ("http", "https")
            or not parts.hostname
            or parts.path not in ("", "/")
            or parts.query
            or parts.username
        ):
            raise ConfigError(
                f"{shown}: must be origins as browsers send them, http:// or https:// and a"
                f" host with an optional port, such as https://chat.example.com ({origin!r}"
                " is not one)"
            )


def _validate_node(settings: Settings) -> None:
    if not _NODE.match(settings.node):
        raise ConfigError(f"MNEMO_NODE: use 1-63 of a-z 0-9 - (got {settings.node!r})")
    if not settings.data_dir.startswith("s3://"):
        raise ConfigError("MNEMO_NODE: a cluster node needs MNEMO_DATA_DIR=s3://bucket/prefix")
    if not settings.api_keys:
        raise ConfigError(
            "MNEMO_NODE: a cluster node needs MNEMO_API_KEYS (users are placed by key)"
        )


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the server reachable only from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
