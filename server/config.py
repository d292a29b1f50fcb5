"""Building ``Settings`` from ``MNEMO_*`` environment variables and an optional TOML file."""

from __future__ import annotations

import ipaddress
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import msgspec

from actors.errors import MnemoError
from schemas.settings import Settings

__all__ = ["CLIENT_KEY", "CLIENT_URL", "ConfigError", "is_loopback", "load_settings"]

_PREFIX = "MNEMO_"
#: Read by the client commands (``mnemo export`` / ``import``), not by the server.
CLIENT_KEY = "MNEMO_API_KEY"
CLIENT_URL = "MNEMO_URL"
_NOT_SETTINGS = {"MNEMO_CONFIG", CLIENT_KEY, CLIENT_URL}
_USER_ID = re.compile(r"^[A-Za-z0-9_.@-]{1,64}\Z")
_NODE = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\Z")


class ConfigError(MnemoError):
    """The configuration is invalid; the message says which setting and why."""

    code = "config_error"


def _parse_api_keys(raw: str) -> dict[str, str]:
    keys: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in raw.split(","))):
        key, sep, user = item.rpartition(":")
        if not sep or not key or not user:
            raise ConfigError(f"MNEMO_API_KEYS: expected key:user, got {item!r}")
        keys[key] = user
    return keys


def _from_environ(environ: Mapping[str, str]) -> dict[str, Any]:
    names = {f.upper(): f for f in Settings.__struct_fields__}
    values: dict[str, Any] = {}
    for name, raw in environ.items():
        if not name.startswith(_PREFIX) or name in _NOT_SETTINGS:
            continue
        field = names.get(name[len(_PREFIX) :])
        if field is None:
            raise ConfigError(f"unknown setting {name}")
        if field == "api_keys":
            values[field] = _parse_api_keys(raw)
        elif field == "admin_keys":
            values[field] = [k.strip() for k in raw.split(",") if k.strip()]
        else:
            values[field] = raw
    return values


def load_settings(environ: Mapping[str, str], **overrides: Any) -> Settings:
    """Settings from a TOML file (``MNEMO_CONFIG``), then environment, then ``overrides``.

    Raises ``ConfigError`` naming the bad setting.
    """
    values: dict[str, Any] = {}
    config_file = environ.get("MNEMO_CONFIG")
    if config_file:
        try:
            values.update(tomllib.loads(Path(config_file).read_text(encoding="utf-8")))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"MNEMO_CONFIG={config_file}: {exc}") from exc
    values.update(_from_environ(environ))
    values.update({k: v for k, v in overrides.items() if v is not None})
    try:
        settings = msgspec.convert(values, Settings, strict=False)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"invalid setting: {exc}") from exc
    _validate(settings)
    return settings


def _validate(settings: Settings) -> None:
    for user in [*settings.api_keys.values(), settings.default_user]:
        if not _USER_ID.match(user):
            raise ConfigError(f"invalid user id {user!r}: use 1-64 of A-Z a-z 0-9 _ . @ -")
    positive = (
        "idle_timeout",
        "llm_timeout",
        "ack_timeout",
        "mailbox_size",
        "max_frame_bytes",
        "embed_threads",
        "cache_mb",
        "recall_limit",
        "rules_limit",
        "episode_max_entries",
        "gc_young",
        "gc_middle",
        "lance_metadata_cache_mb",
        "lance_index_cache_mb",
        "lease_seconds",
    )
    for name in positive:
        if getattr(settings, name) <= 0:
            raise ConfigError(f"MNEMO_{name.upper()} must be positive")
    shares = (
        "rank_assistant_weight",
        "rank_named_weight",
        "rank_answer_weight",
        "rank_first_person_weight",
        "rank_outside_span_weight",
        "rank_recent_weight",
        "rank_session_decay",
        "rules_share",
    )
    for name in shares:
        if not 0.0 <= getattr(settings, name) <= 1.0:
            raise ConfigError(f"MNEMO_{name.upper()} must be between 0 and 1")
    if not 0.0 < settings.consolidation_share <= 1.0:
        raise ConfigError("MNEMO_CONSOLIDATION_SHARE must be above 0 and at most 1")
    for name in (
        "rank_span_slack",
        "rank_supersede_gap",
        "rank_supersede_depth",
        "rank_session_free",
        "handover_after",
        "min_hold",
    ):
        if getattr(settings, name) < 0:
            raise ConfigError(f"MNEMO_{name.upper()} must not be negative")
    if settings.node:
        _validate_node(settings)
    elif settings.journal_dir:
        raise ConfigError("MNEMO_JOURNAL_DIR is the journal of a cluster node: set MNEMO_NODE")
    kind = settings.embedder
    if kind not in ("onnx-minilm", "hash") and not kind.startswith("ollama:"):
        raise ConfigError(
            f"MNEMO_EMBEDDER: expected onnx-minilm, hash or ollama:<model>, got {kind!r}"
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
