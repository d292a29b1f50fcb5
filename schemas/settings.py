"""Server settings: one frozen Struct, built once at start (see ``server.config``)."""

from __future__ import annotations

import msgspec

__all__ = ["Settings"]


class Settings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Everything configurable. Environment names are ``MNEMO_`` + the field name upper-cased."""

    data_dir: str = "mnemo-data"
    host: str = "127.0.0.1"
    port: int = 8000
    ollama_url: str = "http://127.0.0.1:11434"
    chat_model: str = "llama3.2"
    extract_model: str = "llama3.2"
    #: ``onnx-minilm`` (bundled, default), ``ollama:<model>`` or ``hash`` (tests).
    embedder: str = "onnx-minilm"
    #: API key -> user id. Empty: single-user mode (loopback only).
    api_keys: dict[str, str] = {}
    admin_keys: list[str] = []
    #: The user id of single-user mode.
    default_user: str = "local"
    #: Seconds a session may stay idle before it expires.
    idle_timeout: float = 1800.0
    #: Seconds to wait for Ollama (connect, and between two streamed chunks).
    llm_timeout: float = 30.0
    #: Seconds a ``turn`` may wait for durability before it is answered with an error.
    ack_timeout: float = 10.0
    mailbox_size: int = 32
    max_frame_bytes: int = 65536
    #: Frames a connection may send per second, and the burst it may save up.
    rate_limit: float = 50.0
    rate_burst: float = 100.0
    #: Messages of this session replayed to the chat model.
    history_messages: int = 20
    system_prompt: str = "You are a helpful assistant with a long-term memory of this user."
    #: Default token budget of a context block.
    context_budget: int = 2000
    #: Archive writer: most rows per append, and how long a batch waits to fill.
    writer_batch_max: int = 1024
    writer_linger: float = 0.002
    #: Seconds between two ``optimize()`` runs of the store (compaction + index refresh).
    optimize_interval: float = 60.0
    #: Versions older than this many seconds are removed by the scheduled optimize.
    cleanup_older_than: float = 3600.0
