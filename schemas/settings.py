"""Server settings: one frozen Struct, built once at start (see ``server.config``)."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from msgspec import Meta

from schemas.predicates import PredicateSpec
from schemas.taxonomy import DEFAULT_CATEGORIES, CategorySpec

#: The default of ``Settings.project_from`` (``memory.projection`` explains it).
PROJECT_FROM = 50_000
#: The default of ``Settings.min_similarity``.
MIN_SIMILARITY = 0.2

__all__ = [
    "DUPLICATE_POLICIES",
    "MIN_SIMILARITY",
    "PROJECT_FROM",
    "SEARCH_MODES",
    "DuplicatePolicy",
    "Ranking",
    "SearchMode",
    "Settings",
]

# What each number may be. ``server.config`` checks every value against its field's bounds
# when it builds ``Settings`` (and that each number is finite), and describes them when one
# is refused; tests/test_wire_and_config.py fails on a numeric field without bounds.
_Positive = Annotated[float, Meta(gt=0)]
_NonNegative = Annotated[float, Meta(ge=0)]
_Share = Annotated[float, Meta(ge=0, le=1)]
_PositiveShare = Annotated[float, Meta(gt=0, le=1)]
#: A token bucket's capacity: a frame or request costs at least one unit.
_Burst = Annotated[float, Meta(ge=1)]
_Count = Annotated[int, Meta(ge=1)]
_CountOrZero = Annotated[int, Meta(ge=0)]
#: ``0`` binds any free port (the server's log says which).
_Port = Annotated[int, Meta(ge=0, le=65535)]
#: Python's garbage collector takes a C ``int``.
_GcThreshold = Annotated[int, Meta(ge=1, le=2**31 - 1)]
#: A cosine similarity.
_Cosine = Annotated[float, Meta(ge=-1, le=1)]

#: Seed 002's search modes: vector and full-text fused by reciprocal rank, or one side.
SearchMode = Literal["hybrid", "semantic", "keyword"]
SEARCH_MODES: tuple[SearchMode, ...] = ("hybrid", "semantic", "keyword")
#: What a fact stated again does: seed 004's ``reinforce`` (+confidence, mention count) or
#: seed 000's ``unchanged``.
DuplicatePolicy = Literal["reinforce", "unchanged"]
DUPLICATE_POLICIES: tuple[DuplicatePolicy, ...] = ("reinforce", "unchanged")


class Ranking(msgspec.Struct, frozen=True, kw_only=True):
    """How archived messages are ranked past their relevance (``memory.ranking``); each
    knob's neutral value (1.0 for weights, 0.0 for ``recent_weight``, above 1.0 for
    ``supersede_similarity``) turns its step off. Set as ``Settings.rank_*``."""

    assistant_weight: float = 0.5
    named_weight: float = 0.8
    answer_weight: float = 0.9
    first_person_weight: float = 0.9
    outside_span_weight: float = 0.7
    span_slack: float = 0.5
    recent_weight: float = 0.0
    supersede_similarity: float = 0.3
    supersede_gap: float = 3600.0
    supersede_depth: int = 3
    supersede_present_only: bool = True
    session_decay: float = 0.7
    session_free: int = 2


_RANKING = Ranking()


class Settings(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Everything configurable. Environment names are ``MNEMO_`` + the field name upper-cased."""

    data_dir: str = "mnemo-data"
    #: With an object-store ``data_dir`` (``s3://bucket/prefix``): the local directory of
    #: the turn journal, the saved search indexes and the lock.
    local_dir: str = "mnemo-local"
    #: This node's name in a cluster (unique, stable across restarts: a StatefulSet pod's
    #: name). Set, the server runs as a cluster node: ``data_dir`` must be an ``s3://``
    #: URI, API keys must be configured, and users are served by one node at a time.
    node: str = ""
    #: A cluster node's journal of acknowledged turns in this directory, which every
    #: node mounts from a replicated filesystem (``server.cluster.volume``), instead of
    #: in the bucket: an ``ack`` waits for a synced write there rather than a PUT.
    journal_dir: str = ""
    #: Seconds a dead node's users wait before another node takes them over.
    lease_seconds: _Positive = 10.0
    #: Seconds a node receives a user's requests before asking their home node for them.
    handover_after: _NonNegative = 3.0
    #: Seconds a node keeps a shard it took before handing it to a node that asks.
    min_hold: _NonNegative = 30.0
    host: str = "127.0.0.1"
    port: _Port = 8000
    #: Host names (no port) requests may carry in ``Host``, besides the loopback names a
    #: server always answers to; ``*.example.com`` matches its subdomains, ``*`` any name.
    #: Empty: the loopback names only on a loopback ``host``, any name on another address
    #: (which needs API keys). See ``server.boundary``.
    allowed_hosts: list[str] = []
    #: Origins (``scheme://host[:port]``) of pages served elsewhere that may call this
    #: server, with CORS; a page of the server's own origin, and clients that send no
    #: ``Origin``, always may.
    allowed_origins: list[str] = []
    #: The API of the model server: ``ollama`` (Ollama's ``/api/chat``) or ``openai``
    #: (an OpenAI-compatible ``/v1/chat/completions``: llama.cpp's server, vLLM, LM Studio).
    #: Chats, extraction, notes and the drop-in endpoints all use it.
    llm_api: Literal["ollama", "openai"] = "ollama"
    #: The model server's address (for ``openai``, with or without the trailing ``/v1``).
    llm_url: str = "http://127.0.0.1:11434"
    chat_model: str = "llama3.2"
    extract_model: str = "llama3.2"
    #: ``onnx-minilm`` (bundled, default), ``ollama:<model>`` or ``hash`` (tests).
    embedder: str = "onnx-minilm"
    #: Threads one ONNX embedding may use (a query: ~2.8 ms with 1 or 2; import batches:
    #: 51 messages/s with 2, 33 with 1).
    embed_threads: _Count = 2
    #: Load the embedder's model at start, before the server listens (the default: no
    #: user's first request waits 0.3-2 s for the load), rather than when the first user
    #: shows up (``False``: an idle server that has seen no user holds ~220 MiB less).
    preload_embedder: bool = True
    #: Rank messages by a learned sparse model (SPLADE-tiny, fetched on first use: see
    #: ``server.adapters.splade_weights``) as a third list beside the embedder's vectors
    #: and BM25. Its vectors are not stored yet: a user's are encoded when their messages
    #: are indexed (~4 ms a message, one thread), so off by default until they are.
    sparse: bool = False
    #: Load the extraction model when the server starts, with the static start of the
    #: extraction prompt read (``Extractor.warm_up``), in the background.
    preload_model: bool = True
    #: API key -> user id. Empty: single-user mode (loopback only).
    api_keys: dict[str, str] = {}
    admin_keys: list[str] = []
    #: The user id of single-user mode.
    default_user: str = "local"
    #: Seconds a session may stay idle before it expires.
    idle_timeout: _Positive = 1800.0
    #: Seconds to wait for the model server (connect, and between two streamed chunks).
    llm_timeout: _Positive = 30.0
    #: Seconds a ``turn`` may wait for durability before it is answered with an error.
    ack_timeout: _Positive = 10.0
    mailbox_size: _Count = 32
    max_frame_bytes: _Count = 65536
    #: Frames a connection may send per second, and the burst it may save up.
    rate_limit: _Positive = 50.0
    rate_burst: _Burst = 100.0
    #: Messages of this session replayed to the chat model.
    history_messages: _CountOrZero = 20
    system_prompt: str = "You are a helpful assistant with a long-term memory of this user."
    #: Seed 004's seeding: added to the chat prompt while mnemo knows no fact of the user.
    welcome_prompt: str = (
        "You do not know anything about this user yet. Welcome them, and invite them to share"
        " anything about themselves they would like you to remember."
    )
    #: Default token budget of a context block.
    context_budget: _Count = 2000
    #: Archive writer: most rows per append, and how long a batch waits to fill.
    writer_batch_max: _Count = 1024
    writer_linger: _NonNegative = 0.002
    #: Seconds between two ``optimize()`` runs of the store (compaction + index refresh).
    optimize_interval: _Positive = 60.0
    #: ... or after this many writes, whichever comes first. Searches run in memory, so
    #: fragments only cost the writes themselves: an optimize (seconds of CPU on a big
    #: table) is not worth running every few seconds under load.
    optimize_after_writes: _Count = 1000
    #: Seconds between two writes of the changed working-memory snapshots (each a merge
    #: into the store). A resumed session counts its turns from its archive too, so a
    #: crash loses no turn number, only up to this much of ``set`` state.
    snapshot_interval: _Positive = 5.0
    #: An acked message is durable in the archive's journal (``<data_dir>/journal``); it
    #: moves into the LanceDB table in bulk after this many seconds ...
    archive_flush_interval: _Positive = 1.0
    #: ... or once this many rows are journaled, whichever comes first.
    archive_flush_rows: _Count = 2000
    #: Python's garbage collector (``mnemo serve``): a collection of the youngest objects
    #: after this many allocations (Python's default is 700), of the middle generation
    #: after ``gc_middle`` of those (Python's default is 10). A young collection holds
    #: the event loop for as long as it takes to walk what is young, so a small
    #: ``gc_young`` keeps each pause short (at 200 turns/s for 4 minutes: chat overhead
    #: max 122 ms at 700, 430-454 ms at 2,000; young pauses up to 250 ms at 20,000). A
    #: large ``gc_middle`` keeps objects that live seconds (requests in flight, waits)
    #: out of the old generation, whose collections walk every live object (300-500 ms
    #: with a thousand sessions).
    gc_young: _GcThreshold = 700
    gc_middle: _GcThreshold = 500
    #: Versions older than this many seconds are removed by the scheduled optimize.
    cleanup_older_than: _NonNegative = 3600.0
    #: Memory (MiB) for users' in-memory search indexes; the least recently searched
    #: users are evicted past it (and read back from the store when searched again).
    cache_mb: _Count = 1024
    #: Users with at least this many archived messages get their search index saved
    #: (``<data_dir>/indexes``): their first search after a restart or an eviction reads
    #: it back instead of rebuilding it from the store ...
    save_index_from: _CountOrZero = 200
    #: ... once their messages have not changed for this many seconds.
    save_index_after: _NonNegative = 30.0
    #: Users with at least this many archived messages rank their vector side by a
    #: 128-dimension projection first (exact scores for its 1,000 best candidates) and
    #: hold their vectors as int8: a quarter of the memory, a warm search a few ms faster.
    project_from: _CountOrZero = PROJECT_FROM
    #: Memory (MiB) for LanceDB's own caches: table metadata (manifests, file footers) and
    #: index pages. Every write makes a table version whose metadata LanceDB caches, so
    #: with LanceDB's defaults (1 GiB, 6 GiB) the process grows with every write, for old
    #: versions no read asks for again. A 1M-message store reads with ~40-50 MiB of index
    #: pages and a few MiB of metadata (``bench.retrieval``: ``lance_cache_mb``).
    lance_metadata_cache_mb: _Count = 16
    lance_index_cache_mb: _Count = 128

    # -- facts (issue 3) --------------------------------------------------------
    #: The category taxonomy (set it in the TOML file: ``[[categories]]`` tables).
    categories: list[CategorySpec] = msgspec.field(default_factory=lambda: list(DEFAULT_CATEGORIES))
    #: Predicates added to (or replacing, by name) the built-in vocabulary
    #: (``schemas.predicates``; set them in the TOML file: ``[[predicates]]`` tables).
    predicates: list[PredicateSpec] = []
    #: Extracted facts below this confidence are skipped (and logged), seed 000.
    confidence_threshold: _Share = 0.5
    #: Most facts kept per user; past it the highest eviction score goes (seed 004).
    max_facts: _Count = 500
    max_pinned: _CountOrZero = 10
    #: Cosine similarity at or above which two facts are the same fact.
    near_duplicate_similarity: _Share = 0.92
    #: ``reinforce`` (seed 004: +0.15 confidence, mention count) or ``unchanged`` (seed 000).
    duplicate_policy: DuplicatePolicy = "reinforce"
    reinforce_step: _Share = 0.15
    #: The same for a fact added by hand, or stated again by hand (seed 004: manual facts
    #: start lower, at ``manual_confidence``, and are boosted faster on repetition).
    manual_reinforce_step: _Share = 0.25
    #: Confidence of facts added by hand (seed 004: manual facts start lower).
    manual_confidence: _Share = 0.6
    #: Confidence of facts found by the rule-based extractor (no Ollama).
    rules_confidence: _Share = 0.6
    #: Seconds an extraction call may take.
    extract_timeout: _Positive = 60.0
    #: Model calls of learning work (extraction, notes, their compaction, consolidation)
    #: at once, over all users, served round-robin by user; calls a person waits for
    #: (classifying a fact added by hand) have as many places of their own
    #: (``actors.model_queue``). Keep ``2 *`` this at most the model server's parallel
    #: requests (Ollama's ``OLLAMA_NUM_PARALLEL``), so a chat never queues behind them.
    extract_concurrency: _Count = 2
    #: Seconds between decay/expiry sweeps of every user's facts.
    sweep_interval: _Positive = 3600.0
    #: Seconds between retries of extractions that failed (turns left pending).
    retry_interval: _Positive = 300.0
    #: Seed 001's MEMORY_RETRIEVAL_LIMIT: facts put into a chat prompt.
    retrieval_limit: _CountOrZero = 5
    #: Seed 001's relevance weights: keyword, category boost, recency, frequency, confidence;
    #: and its boost for memories on the session's current topic.
    score_keyword: _NonNegative = 0.4
    score_category: _NonNegative = 0.2
    score_recency: _NonNegative = 0.15
    score_frequency: _NonNegative = 0.1
    score_confidence: _NonNegative = 0.15
    topic_boost: _Positive = 1.3
    #: Seed 002's recall weights: relevance, importance, recency, effective confidence.
    recall_relevance: _NonNegative = 0.4
    recall_importance: _NonNegative = 0.3
    recall_recency: _NonNegative = 0.2
    recall_confidence: _NonNegative = 0.1
    #: Seed 002's ``min_confidence``: recalled and searched facts whose effective
    #: confidence (after decay) is below it are left out; pinned facts never are.
    recall_min_confidence: _Share = 0.2
    #: The cosine similarity below which a text shares no meaning with a query: a hybrid
    #: search of turns (the ``conversation`` context block too), rules and episodes finds
    #: by meaning only what reaches it (half of it among the nearest tenth of a user's
    #: turns), and one that shares neither words nor meaning is no hit. Set for the
    #: bundled MiniLM (unrelated sentences score -0.05 to 0.2 there); an embedder that
    #: scores unrelated texts higher needs it higher. Facts have no such floor: short
    #: statements about the user score as low for a question they answer ("what are my
    #: hobbies?", "User started pottery classes": 0.19) as for one they do not.
    min_similarity: _Cosine = MIN_SIMILARITY
    #: Seed 002's ``default_limit``: facts recalled for a ``context`` request's block.
    recall_limit: _Count = 20
    #: Seed 002's rules: at most this many in a ``memory-context`` block, and the share of
    #: its budget kept for them (the section quota; facts get the rest).
    rules_limit: _Count = 10
    rules_share: _Share = 0.3
    #: Seed 002's episode capacity: past it, the scheduled cleanup deletes the oldest
    #: consolidated episodes stored directly (never a pending one).
    episode_max_entries: _Count = 10_000
    #: The share of its time the scheduled sweep spends consolidating: after each user's
    #: run it waits (1 - share) / share times as long as the run took, so a backlog of
    #: many users never keeps consolidation running back to back beside the chats.
    consolidation_share: _PositiveShare = 0.1
    #: Seed 002's ``default_mode``: how ``GET /memory/search`` ranks without ``mode``.
    search_mode: SearchMode = "hybrid"
    #: Half-life (days) of recency in both scores.
    recency_half_life_days: _Positive = 7.0
    #: The chat model's context size when Ollama does not say (tokens).
    chat_context_tokens: _Count = 8192
    #: Compaction starts when the prompt reaches this share of the context (seed 004).
    compaction_threshold: _PositiveShare = 0.8
    #: Seed 003: notes kept per app.
    notes_per_app: _Count = 10
    #: Context format used when a request names none.
    context_format: str = "about-user"

    # -- limits that keep one user from hurting another (issue 16) -----------------
    #: Live sessions one user may have at once (each holds memory until idle expiry);
    #: a new session beyond it is refused with ``too_many_sessions``.
    max_sessions_per_user: _Count = 100
    #: MCP sessions (``/mcp``) one key's user may have open at once; one more
    #: ``initialize`` is answered 429 ``too_many_sessions`` (end one with ``DELETE /mcp``,
    #: or wait for an idle one to close). The server holds at most this many per user, so
    #: one user's sessions never make another's ``initialize`` fail.
    max_mcp_sessions_per_user: _Count = 16
    #: Seconds an MCP session may stay idle (no request in flight, no open stream) before
    #: it closes; its id then answers 404 and the client initializes again.
    mcp_idle_timeout: _Positive = 600.0
    #: Live tails (``/ws/tail``) one user's key may have open at once; one more handshake
    #: is refused with 429 ``too_many_tails``. Admin keys are not counted.
    max_tails_per_user: _Count = 8
    #: Seconds a connection may take to send a whole request head (the WebSocket upgrade
    #: included), from being opened or from its previous response; then it is closed.
    handshake_timeout: _Positive = 10.0
    #: Work one user may ask for, over all their connections and requests (units a
    #: second, and at most this many saved up); a frame or request costs one unit plus one
    #: per 4 KiB it carries (``server.budget``). A frame beyond it is ``rate_limited``; a
    #: REST request waits (429 ``rate_limited`` past 5 s), bodies and exports are slowed.
    user_rate: _Positive = 100.0
    user_burst: _Burst = 200.0

    # -- ranking of archived messages (issue 17; ``memory.ranking``) ----------------
    # The defaults are ``Ranking``'s (one place).
    #: A question about the user ranks the assistant's replies at this share of their
    #: score (a question about what the assistant said, the user's turns); 1.0: off.
    rank_assistant_weight: _Share = _RANKING.assistant_weight
    #: A question that names one of the people whose turns are stored ("What did
    #: Caroline paint?") ranks the other people's turns at this share of their score;
    #: 1.0: off.
    rank_named_weight: _Share = _RANKING.named_weight
    #: A question asking for an amount ("how many...") ranks the messages that state no
    #: number at this share of their score; one asking when ("when did...", "how many
    #: days ago..."), those that name no time; one asking which by name ("which
    #: book..."), those that name nothing; 1.0: off.
    rank_answer_weight: _Share = _RANKING.answer_weight
    #: A question about a person (in the first person, or naming one; not about what
    #: the assistant said) ranks people's messages that say nothing of their speaker
    #: (no "I", "my", "we", "我") at this share of their score; 1.0: off.
    rank_first_person_weight: _Share = _RANKING.first_person_weight
    #: A query anchored in time ("last month", "三天前") ranks messages said outside that
    #: span at this share of their score; 1.0: off ...
    rank_outside_span_weight: _Share = _RANKING.outside_span_weight
    #: ... the span widened by this share of its length on both sides ("two weeks ago"
    #: is not to the day).
    rank_span_slack: _NonNegative = _RANKING.span_slack
    #: A query asking what is true now ("currently", "最近") weighs the oldest candidate
    #: down by this share, newer ones less (linear in time); 0.0: off, the default: the
    #: latest word does this better, and weighing every older turn down pushed the earlier
    #: statement out of the top 5 (LongMemEval dev subset: docs/performance.md).
    rank_recent_weight: _Share = _RANKING.recent_weight
    #: Of the best sessions' statements (each session's best message not of the speaker
    #: weighed down), one at least ``rank_supersede_gap`` seconds newer than a
    #: better-ranked one of the same speaker, with at least this cosine similarity to it
    #: (they speak to the same thing), ranks right above it: the latest word wins. Above
    #: 1.0: off.
    rank_supersede_similarity: _NonNegative = _RANKING.supersede_similarity
    rank_supersede_gap: _NonNegative = _RANKING.supersede_gap
    #: ... among the best this many sessions (both statements of a fact answer the
    #: query; further down, similar messages are more often about something else).
    rank_supersede_depth: _CountOrZero = _RANKING.supersede_depth
    #: ... and only for a question about the present: one in the past tense ("when did
    #: I...", "what was...", "...了") asks about an event or an earlier state.
    rank_supersede_present_only: bool = _RANKING.supersede_present_only
    #: For a question that gathers what several conversations said ("how many... in
    #: total", "which did I do first, A or B"), each message already picked from a
    #: session multiplies the score of the next one from that session by this, so the
    #: top k cover several sessions; 1.0: off. Other questions keep their order.
    rank_session_decay: _Share = _RANKING.session_decay
    #: ... past the first this many from that session.
    rank_session_free: _CountOrZero = _RANKING.session_free

    @property
    def ranking(self) -> Ranking:
        """The ``rank_*`` knobs as one value."""
        return Ranking(
            assistant_weight=self.rank_assistant_weight,
            named_weight=self.rank_named_weight,
            answer_weight=self.rank_answer_weight,
            first_person_weight=self.rank_first_person_weight,
            outside_span_weight=self.rank_outside_span_weight,
            span_slack=self.rank_span_slack,
            recent_weight=self.rank_recent_weight,
            supersede_similarity=self.rank_supersede_similarity,
            supersede_gap=self.rank_supersede_gap,
            supersede_depth=self.rank_supersede_depth,
            supersede_present_only=self.rank_supersede_present_only,
            session_decay=self.rank_session_decay,
            session_free=self.rank_session_free,
        )
