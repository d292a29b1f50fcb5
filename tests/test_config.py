"""Every setting is checked at start: its type, its range, a finite number; a bad one is
one line naming where it came from, its value and what is allowed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from msgspec import inspect

from schemas.settings import Settings
from server.config import ConfigError, allowed, load_settings
from tests.docs_examples import ROOT


def test_every_numeric_setting_has_bounds_beside_its_field() -> None:
    info = inspect.type_info(Settings)
    assert isinstance(info, inspect.StructType)
    unbounded = [
        field.name
        for field in info.fields
        if isinstance(field.type, inspect.IntType | inspect.FloatType)
        and (field.type.ge, field.type.gt, field.type.le, field.type.lt) == (None,) * 4
    ]
    assert unbounded == []


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        (
            {"MNEMO_CONTEXT_BUDGET": "0"},
            "MNEMO_CONTEXT_BUDGET=0: must be a whole number of at least 1",
        ),
        (
            {"MNEMO_CONFIDENCE_THRESHOLD": "7"},
            "MNEMO_CONFIDENCE_THRESHOLD=7: must be a number from 0 to 1",
        ),
        ({"MNEMO_MAX_FACTS": "0"}, "MNEMO_MAX_FACTS=0: must be a whole number of at least 1"),
        ({"MNEMO_SCORE_KEYWORD": "nan"}, "MNEMO_SCORE_KEYWORD=nan: must be a number of at least 0"),
        ({"MNEMO_IDLE_TIMEOUT": "inf"}, "MNEMO_IDLE_TIMEOUT=inf: must be a finite number above 0"),
        ({"MNEMO_RATE_LIMIT": "0"}, "MNEMO_RATE_LIMIT=0: must be a number above 0"),
        ({"MNEMO_PORT": "99999"}, "MNEMO_PORT=99999: must be a whole number from 0 to 65535"),
        ({"MNEMO_PORT": "eighty"}, "MNEMO_PORT=eighty: must be a whole number from 0 to 65535"),
        (
            {"MNEMO_GC_YOUNG": str(2**31)},
            "MNEMO_GC_YOUNG=2147483648: must be a whole number from 1",
        ),
        ({"MNEMO_PRELOAD_EMBEDDER": "yes"}, "MNEMO_PRELOAD_EMBEDDER=yes: must be true or false"),
        (
            {"MNEMO_DUPLICATE_POLICY": "merge"},
            "MNEMO_DUPLICATE_POLICY=merge: must be one of reinforce, unchanged",
        ),
        (
            {"MNEMO_CONTEXT_FORMAT": "markdown"},
            "MNEMO_CONTEXT_FORMAT=markdown: must be one of user-context, memory-context,"
            " app-memories, about-user, conversation",
        ),
        (
            {"MNEMO_USER_BURST": "10"},
            "MNEMO_USER_BURST=10: must be at least 17, what a frame of"
            " MNEMO_MAX_FRAME_BYTES=65536 (the default) costs",
        ),
        (
            {"MNEMO_LLM_URL": "localhost:11434"},
            "MNEMO_LLM_URL=localhost:11434: must be an http:// or https:// URL with a host",
        ),
        (
            {"MNEMO_LLM_URL": "http://127.0.0.1:99999"},
            "MNEMO_LLM_URL=http://127.0.0.1:99999: must be an http:// or https:// URL",
        ),
        (
            {"MNEMO_LLM_API": "vllm"},
            "MNEMO_LLM_API=vllm: must be one of ollama, openai",
        ),
        (
            {"MNEMO_LLM_API": "openai", "MNEMO_EMBEDDER": "ollama:nomic-embed-text"},
            "MNEMO_EMBEDDER=ollama:nomic-embed-text: embeds through Ollama at MNEMO_LLM_URL,"
            " which needs MNEMO_LLM_API=ollama, not openai",
        ),
    ],
    ids=[
        "zero-budget",
        "confidence-above-one",
        "no-facts",
        "nan",
        "infinite",
        "zero-rate",
        "port-out-of-range",
        "port-not-a-number",
        "gc-beyond-a-c-int",
        "not-a-boolean",
        "unknown-policy",
        "unknown-format",
        "burst-below-one-frame",
        "url-without-scheme",
        "url-port-out-of-range",
        "unknown-llm-api",
        "ollama-embedder-without-ollama",
    ],
)
def test_a_bad_value_is_one_line_naming_the_variable_the_value_and_what_is_allowed(
    environ: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        load_settings(environ)
    assert str(refused.value).startswith(message)
    assert "\n" not in str(refused.value)


def test_a_value_from_the_config_file_is_named_by_its_key_and_the_file(tmp_path: Path) -> None:
    config = tmp_path / "mnemo.toml"
    config.write_text('port = 99999\nsearch_mode = "fuzzy"\n')
    with pytest.raises(ConfigError) as refused:
        load_settings({"MNEMO_CONFIG": str(config)})
    assert str(refused.value) == (
        f"port = 99999 in {config}: must be a whole number from 0 to 65535"
    )


def test_numbers_inside_the_config_files_tables_are_checked_too(tmp_path: Path) -> None:
    config = tmp_path / "mnemo.toml"
    config.write_text(
        '[[categories]]\nname = "goal"\nheading = "Goals:"\npriority = 1\nretrieval_boost = inf\n'
    )
    with pytest.raises(ConfigError, match=f"^categories = .* in {re.escape(str(config))}: "):
        load_settings({"MNEMO_CONFIG": str(config)})
    config.write_text('[[categories]]\nname = "goal"\nheading = "Goals:"\npriority = 1\n')
    config.write_text(config.read_text() + "eviction_weight = -1\n")
    with pytest.raises(ConfigError, match=">= 0"):
        load_settings({"MNEMO_CONFIG": str(config)})


def test_an_option_is_named_as_the_option() -> None:
    with pytest.raises(ConfigError, match=r"^--port 70000: must be a whole number from 0"):
        load_settings({}, port=70000)


def test_an_unknown_key_of_the_config_file_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "mnemo.toml"
    config.write_text("idle_timout = 60\n")
    with pytest.raises(
        ConfigError, match=f"^unknown setting idle_timout in {re.escape(str(config))}$"
    ):
        load_settings({"MNEMO_CONFIG": str(config)})


def test_a_refused_key_setting_names_the_setting_but_never_shows_the_keys(tmp_path: Path) -> None:
    config = tmp_path / "mnemo.toml"
    config.write_text('api_keys = ["k-secret-1"]\n')
    with pytest.raises(ConfigError) as refused:
        load_settings({"MNEMO_CONFIG": str(config)})
    assert str(refused.value).startswith(f"api_keys in {config}: ")
    assert "k-secret-1" not in str(refused.value)
    with pytest.raises(ConfigError) as refused:
        load_settings({"MNEMO_API_KEYS": "k1:ada,k-secret-2"})
    assert str(refused.value) == (
        "MNEMO_API_KEYS: must be key:user pairs, comma-separated (pair 2 is not one)"
    )


def test_the_limits_of_each_range_are_allowed() -> None:
    settings = load_settings(
        {
            "MNEMO_PORT": "0",
            "MNEMO_CONFIDENCE_THRESHOLD": "1",
            "MNEMO_RETRIEVAL_LIMIT": "0",
            "MNEMO_CONSOLIDATION_SHARE": "1",
            "MNEMO_USER_BURST": "17",
            "MNEMO_SCORE_KEYWORD": "0",
        }
    )
    assert (settings.port, settings.confidence_threshold, settings.user_burst) == (0, 1.0, 17.0)


def _documented() -> dict[str, str]:
    """Each variable of docs/configuration.md's tables and its *allowed* cell (a row of
    several variables: one text for all, or one per variable, split by "; ")."""
    rows: dict[str, str] = {}
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    for line in text.splitlines():
        if not line.startswith("| `MNEMO_"):
            continue
        cells = line.split(" | ")
        names = re.findall(r"`MNEMO_([A-Z_]+)`", cells[0])
        parts = cells[2].split("; ")
        for n, name in enumerate(names):
            rows[name.lower()] = parts[n if len(parts) > 1 else 0]
    return rows


def test_the_configuration_page_lists_what_each_setting_allows() -> None:
    documented = _documented()
    checked = {f: allowed(f) for f in Settings.__struct_fields__ if allowed(f) is not None}
    assert {f: documented.get(f) for f in checked} == checked


def test_the_old_name_of_the_model_url_still_sets_it_and_the_log_says_its_new_name(
    caplog: pytest.LogCaptureFixture,
) -> None:
    old = {"MNEMO_OLLAMA_URL": "http://127.0.0.1:11435"}
    assert load_settings(old).llm_url == "http://127.0.0.1:11435"
    assert "MNEMO_OLLAMA_URL is deprecated since mnemo 0.1: use llm_url" in caplog.text
    both = {**old, "MNEMO_LLM_URL": "http://127.0.0.1:11436"}
    assert load_settings(both).llm_url == "http://127.0.0.1:11436"
