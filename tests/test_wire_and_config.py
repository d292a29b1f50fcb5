"""Protocol decoding, settings loading and the CLI's refusal to run open without keys."""

from __future__ import annotations

import gc
import resource
from pathlib import Path

import msgspec
import pytest

from schemas.wire import (
    Ack,
    Chat,
    ContextRequest,
    End,
    ErrorFrame,
    Ping,
    Set,
    Turn,
    decode_client,
    encode_server,
)
from server.auth import bearer, user_for_token
from server.cli import main, raise_open_files, tune_gc
from server.config import ConfigError, is_loopback, load_settings


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        ('{"type":"chat","id":"c","content":"hi"}', Chat(id="c", content="hi")),
        (
            '{"type":"turn","id":"t","user":"u","assistant":"a","meta":{"k":1}}',
            Turn(id="t", user="u", assistant="a", meta={"k": 1}),
        ),
        (
            '{"type":"context","id":"q","query":"x","budget":50}',
            ContextRequest(id="q", query="x", budget=50),
        ),
        ('{"type":"set","topic":"t"}', Set(topic="t")),
        ('{"type":"end"}', End()),
        ('{"type":"ping","extra":"ignored"}', Ping()),
    ],
    ids=["chat", "turn", "context", "set", "end", "ping-with-unknown-field"],
)
def test_client_frames_decode_to_typed_messages(frame: str, message: object) -> None:
    assert decode_client(frame) == message


def test_server_frames_encode_with_their_type_tag() -> None:
    assert encode_server(Ack(id="t", turn=2)) == '{"type":"ack","id":"t","turn":2}'
    assert encode_server(ErrorFrame(code="bad_request", message="m")) == (
        '{"type":"error","code":"bad_request","message":"m","id":null}'
    )


def test_overlong_id_is_a_validation_error() -> None:
    with pytest.raises(msgspec.ValidationError, match="id"):
        decode_client('{"type":"chat","id":"' + "x" * 129 + '","content":"hi"}')


def test_settings_come_from_environment_with_types_and_keys_parsed() -> None:
    settings = load_settings(
        {
            "MNEMO_IDLE_TIMEOUT": "90",
            "MNEMO_API_KEYS": "k1:alice, k2:bob",
            "MNEMO_ADMIN_KEYS": "root1,root2",
            "MNEMO_EMBEDDER": "ollama:nomic-embed-text",
            "PATH": "/usr/bin",
        }
    )
    assert settings.idle_timeout == 90.0
    assert settings.api_keys == {"k1": "alice", "k2": "bob"}
    assert settings.admin_keys == ["root1", "root2"]
    assert settings.embedder == "ollama:nomic-embed-text"


def test_config_file_is_read_and_environment_wins(tmp_path: Path) -> None:
    config = tmp_path / "mnemo.toml"
    config.write_text('idle_timeout = 10\nport = 9000\napi_keys = { "k" = "carol" }\n')
    settings = load_settings({"MNEMO_CONFIG": str(config), "MNEMO_PORT": "9100"})
    assert (settings.idle_timeout, settings.port, settings.api_keys) == (10.0, 9100, {"k": "carol"})


def test_retrieval_settings_default_to_seed_002s_values() -> None:
    settings = load_settings({})
    weights = (
        settings.recall_relevance,
        settings.recall_importance,
        settings.recall_recency,
        settings.recall_confidence,
    )
    assert weights == (0.4, 0.3, 0.2, 0.1)
    assert (settings.recall_limit, settings.search_mode) == (20, "hybrid")
    assert settings.recall_min_confidence == 0.2
    # DESIGN: a context's budget is 004's rule or 2000 tokens, not seed 002's 3000.
    assert settings.context_budget == 2000


def test_retrieval_settings_in_the_config_file_override_the_defaults(tmp_path: Path) -> None:
    config = tmp_path / "mnemo.toml"
    config.write_text(
        'search_mode = "keyword"\nrecall_limit = 7\nrecall_min_confidence = 0.5\n'
        "recall_relevance = 0.7\nrecall_importance = 0.1\n"
    )
    settings = load_settings({"MNEMO_CONFIG": str(config)})
    assert (settings.search_mode, settings.recall_limit) == ("keyword", 7)
    assert (settings.recall_min_confidence, settings.recall_relevance) == (0.5, 0.7)
    assert (settings.recall_importance, settings.recall_recency) == (0.1, 0.2)


def test_the_client_commands_variables_do_not_stop_the_server() -> None:
    environ = {"MNEMO_API_KEY": "k", "MNEMO_URL": "http://mnemo:8000", "MNEMO_PORT": "9100"}
    assert load_settings(environ).port == 9100


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"MNEMO_NO_SUCH": "1"}, "unknown setting MNEMO_NO_SUCH"),
        ({"MNEMO_IDLE_TIMEOUT": "soon"}, "MNEMO_IDLE_TIMEOUT=soon: must be a number above 0"),
        ({"MNEMO_IDLE_TIMEOUT": "0"}, "MNEMO_IDLE_TIMEOUT=0: must be a number above 0"),
        ({"MNEMO_API_KEYS": "no-user"}, "key:user"),
        ({"MNEMO_API_KEYS": "k:bad user'"}, "invalid user id"),
        ({"MNEMO_EMBEDDER": "word2vec"}, "MNEMO_EMBEDDER"),
        ({"MNEMO_SEARCH_MODE": "fuzzy"}, "MNEMO_SEARCH_MODE=fuzzy: must be one of hybrid,"),
        ({"MNEMO_RECALL_LIMIT": "0"}, "MNEMO_RECALL_LIMIT=0: must be a whole number of at least 1"),
        ({"MNEMO_LANCE_INDEX_CACHE_MB": "0"}, "MNEMO_LANCE_INDEX_CACHE_MB=0: must be a whole"),
        (
            {"MNEMO_RANK_ASSISTANT_WEIGHT": "2"},
            "MNEMO_RANK_ASSISTANT_WEIGHT=2: must be a number from 0 to 1",
        ),
        (
            {"MNEMO_RANK_SESSION_FREE": "-1"},
            "MNEMO_RANK_SESSION_FREE=-1: must be a whole number of",
        ),
        (
            {"MNEMO_CONSOLIDATION_SHARE": "0"},
            "MNEMO_CONSOLIDATION_SHARE=0: must be a number above 0",
        ),
        ({"MNEMO_JOURNAL_DIR": "/shared/journal"}, "MNEMO_JOURNAL_DIR is the journal of a"),
    ],
    ids=[
        "unknown",
        "not-a-number",
        "zero",
        "no-user",
        "bad-user-id",
        "bad-embedder",
        "bad-search-mode",
        "zero-recall-limit",
        "no-lance-cache",
        "rank-weight-above-one",
        "negative-session-free",
        "no-consolidation-share",
        "journal-dir-without-node",
    ],
)
def test_bad_settings_name_the_setting(environ: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_settings(environ)


def test_keys_map_to_users_and_no_keys_means_single_user() -> None:
    keyed = load_settings({"MNEMO_API_KEYS": "k1:alice"})
    assert user_for_token(keyed, "k1") == "alice"
    assert user_for_token(keyed, "k2") is None
    assert user_for_token(keyed, None) is None
    assert user_for_token(load_settings({}), None) == "local"
    assert bearer("Bearer k1") == "k1"
    assert bearer("Basic k1") is None
    assert bearer(None) is None


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("localhost", True),
        ("::1", True),
        ("0.0.0.0", False),
        ("10.0.0.5", False),
    ],
)
def test_loopback_detection(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_serve_refuses_a_public_address_without_api_keys(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("MNEMO_API_KEYS", raising=False)
    assert main(["serve", "--host", "0.0.0.0", "--port", "0"]) == 2
    assert "refusing to bind 0.0.0.0 without MNEMO_API_KEYS" in capsys.readouterr().err


def test_serve_reports_bad_configuration(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MNEMO_IDLE_TIMEOUT", "-5")
    assert main(["serve"]) == 2
    assert "MNEMO_IDLE_TIMEOUT" in capsys.readouterr().err


def test_serve_tunes_the_garbage_collector_from_settings_and_freezes_what_is_loaded() -> None:
    before = gc.get_threshold()
    try:
        tune_gc(load_settings({"MNEMO_GC_YOUNG": "12345", "MNEMO_GC_MIDDLE": "7"}))
        assert gc.get_threshold() == (12345, 7, before[2])
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def test_serve_raises_the_soft_limit_of_open_files_to_the_hard_one() -> None:
    before = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(before[1], 512), before[1]))
        assert raise_open_files() == before[1] == resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, before)


def test_garbage_collector_settings_must_be_positive() -> None:
    with pytest.raises(ConfigError, match="MNEMO_GC_YOUNG"):
        load_settings({"MNEMO_GC_YOUNG": "0"})
