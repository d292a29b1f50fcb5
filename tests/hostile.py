"""Hypothesis strategies for hostile clients: WebSocket frames and REST requests, each
with what the server must answer (documented codes only, the frame's id echoed).

A generated frame is valid by construction (and then has one expected answer), invalid
in a known way (an ``error`` with code ``bad_request``, carrying its id when it had a
usable one), or free-form JSON (only the generic rules apply to its answers).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from hypothesis import strategies as st

from memory.json_bounds import INT_MAX, INT_MIN, MAX_DEPTH

__all__ = [
    "ERROR_CODES",
    "REST_CODES",
    "REST_STATUSES",
    "Frame",
    "Request",
    "frames",
    "nested",
    "requests",
]


def nested(depth: int) -> Any:
    """A JSON value of ``depth`` nested arrays."""
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


#: The error codes of docs/protocol.md.
ERROR_CODES = frozenset(
    {
        "bad_request",
        "rate_limited",
        "overloaded",
        "llm_unavailable",
        "llm_timeout",
        "llm_error",
        "archive_unavailable",
        "session_closed",
        "too_many_sessions",
    }
)
#: The statuses and error codes of docs/rest.md (503 and 500 never: the store is healthy).
REST_STATUSES = frozenset({200, 201, 400, 401, 404, 405, 415})
REST_CODES = frozenset(
    {"unauthorized", "bad_request", "not_found", "method_not_allowed", "unsupported_media_type"}
)

# -- values ----------------------------------------------------------------------

# Any code point JSON can carry (no lone surrogates): controls, NUL, RTL marks, emoji,
# combining marks, CJK, full-width forms.
_char = st.characters(exclude_categories=["Cs"])
_odd = st.sampled_from(
    ["\x00", "\u202e", "\u200b", "\ufeff", "e\u0301", "\U0001f600", "我", "\uff21", "\n", "\\", '"']
)
text = st.one_of(
    st.text(_char, max_size=40),
    st.lists(st.one_of(_odd, st.text(_char, max_size=3)), max_size=20).map("".join),
    st.sampled_from(["tea*", "Pyth*", "***", "a" * 2000, "我喜欢" * 500, "x " * 1500]),
)
nonblank = text.filter(lambda t: t.strip() != "")
good_int = st.one_of(st.integers(-1000, 1000), st.sampled_from([INT_MIN, INT_MAX, 0, -1]))
bad_int = st.one_of(
    st.sampled_from([INT_MAX + 1, INT_MIN - 1, 2**64, -(2**64), 10**40]),
    st.integers(INT_MAX + 1, 10**60),
    st.integers(-(10**60), INT_MIN - 1),
)
_scalar = st.one_of(
    st.none(),
    st.booleans(),
    good_int,
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(_char, max_size=20),
)
#: JSON values within the bounds (a meta object adds one level, the frame another).
json_value = st.recursive(
    _scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(_char, max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
meta = st.dictionaries(st.text(_char, max_size=10), json_value, max_size=4)


def _nest(value: Any, depth: int) -> Any:
    for _ in range(depth):
        value = [value]
    return value


# -- WebSocket frames -------------------------------------------------------------


@dataclass
class Frame:
    """One frame to send, and what it is."""

    payload: str | bytes
    #: ``valid:<type>``, ``invalid`` (answered ``bad_request``) or ``free`` (anything goes).
    kind: str
    #: The id the answer must carry (None: no usable id).
    id: str | None = None
    notes: dict[str, Any] = field(default_factory=dict)


def _dump(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False)


@dataclass
class Pool:
    """Values drawn once per batch and reused by its frames: drawing fresh text and JSON
    for every frame was most of the suite's time, and reuse costs no variety in shape."""

    text: st.SearchStrategy[str]
    nonblank: st.SearchStrategy[str]
    meta: st.SearchStrategy[dict[str, Any]]
    value: st.SearchStrategy[Any]


@st.composite
def pool(draw: st.DrawFn) -> Pool:
    texts = draw(st.lists(text, min_size=4, max_size=8))
    return Pool(
        st.sampled_from(texts),
        st.sampled_from([t for t in texts if t.strip()] or ["x"]),
        st.sampled_from(draw(st.lists(meta, min_size=2, max_size=4))),
        st.sampled_from(draw(st.lists(json_value, min_size=3, max_size=6))),
    )


@st.composite
def valid_frame(draw: st.DrawFn, ident: str, p: Pool) -> Frame:
    # The ones that write (turn, chat, remember) take 5-10 ms each; the rest under 1 ms.
    kind = draw(
        st.sampled_from(
            ["turn", "chat", "remember", "context", "context", "set", "set", "ping", "ping"]
        )
    )
    body: dict[str, Any] = {"type": kind, "id": ident}
    if kind == "turn":  # one side may be blank, not both
        sides = [draw(p.text), draw(p.nonblank)]
        body |= dict(zip(["user", "assistant"], draw(st.permutations(sides)), strict=True))
        if draw(st.booleans()):
            body["meta"] = draw(p.meta)
    elif kind == "chat":
        body |= {"content": draw(p.nonblank)}
        if draw(st.booleans()):
            body["meta"] = draw(p.meta)
    elif kind == "context":
        body["query"] = draw(p.text)
        if draw(st.booleans()):
            body["budget"] = draw(st.integers(1, 100_000))
        fmt = ["about-user", "user-context", "memory-context", "app-memories", "conversation"]
        if draw(st.booleans()):
            body["format"] = draw(st.sampled_from(fmt))
    elif kind == "remember":
        body |= {"content": draw(p.nonblank), "pinned": draw(st.booleans())}
        if draw(st.booleans()):
            body["category"] = draw(st.sampled_from(["preference", "goal", "identity", "fact"]))
    elif kind == "set":
        body["topic"] = draw(st.one_of(st.none(), text))
        body["variables"] = draw(st.dictionaries(p.text, p.value, max_size=3))
    else:
        del body["id"]
        return Frame(_dump(body), "valid:ping")
    return Frame(_dump(body), f"valid:{kind}", ident)


@st.composite
def invalid_frame(draw: st.DrawFn, ident: str, max_bytes: int) -> Frame:
    """A frame the server must refuse with ``bad_request`` (and ``ident`` when it has it)."""
    how = draw(
        st.sampled_from(
            [
                "big-int",
                "deep",
                "very-deep",
                "missing",
                "wrong-type",
                "unknown-type",
                "empty-id",
                "long-id",
                "number-id",
                "oversized",
                "not-json",
                "not-object",
                "nan",
                "bad-budget",
                "bad-format",
                "binary",
                "truncated",
                "blank",
            ]
        )
    )
    base = {"type": "turn", "id": ident, "user": "u", "assistant": "a"}
    if how == "big-int":
        where = draw(st.sampled_from(["meta", "budget", "variables", "pinned"]))
        number = draw(bad_int)
        if where == "meta":
            return Frame(
                _dump(base | {"meta": {"k": _nest(number, draw(st.integers(0, 5)))}}),
                "invalid",
                ident,
            )
        if where == "budget":
            return Frame(
                _dump({"type": "context", "id": ident, "query": "q", "budget": number}),
                "invalid",
                ident,
            )
        if where == "variables":
            return Frame(
                _dump({"type": "set", "id": ident, "variables": {"n": number}}), "invalid", ident
            )
        return Frame(
            _dump({"type": "remember", "id": ident, "content": "c", "pinned": number}),
            "invalid",
            ident,
        )
    if how in ("deep", "very-deep"):
        depth = draw(st.integers(MAX_DEPTH - 1, 60) if how == "deep" else st.integers(200, 5000))
        nested = "[" * depth + "1" + "]" * depth
        payload = _dump(base)[:-1] + ', "meta": {"x": ' + nested + "}}"
        # Nested far past the bound (over 64 levels), the id is not read: no id.
        return Frame(payload, "invalid", ident if depth + 2 <= 2 * MAX_DEPTH else None)
    if how == "blank":  # nothing an import would take back
        blank = draw(st.sampled_from(["", " ", "\n\t"]))
        kind = draw(st.sampled_from(["chat", "turn", "remember"]))
        fields = {"user": blank, "assistant": blank} if kind == "turn" else {"content": blank}
        return Frame(_dump({"type": kind, "id": ident} | fields), "invalid", ident)
    if how == "missing":
        kind = draw(st.sampled_from(["chat", "turn", "context", "remember"]))
        return Frame(_dump({"type": kind, "id": ident}), "invalid", ident)
    if how == "wrong-type":
        field_, value = draw(
            st.sampled_from(
                [("user", 5), ("assistant", ["x"]), ("meta", "m"), ("meta", [1]), ("user", None)]
            )
        )
        return Frame(_dump(base | {field_: value}), "invalid", ident)
    if how == "unknown-type":
        tag = draw(st.text(_char, max_size=10).filter(lambda t: t not in _TAGS))
        return Frame(_dump({"type": tag, "id": ident}), "invalid", ident)
    if how == "empty-id":
        return Frame(_dump(base | {"id": ""}), "invalid", None)
    if how == "long-id":
        return Frame(_dump(base | {"id": "i" * draw(st.integers(129, 600))}), "invalid", None)
    if how == "number-id":
        return Frame(_dump(base | {"id": draw(good_int)}), "invalid", None)
    if how == "oversized":
        filler = "x" * (max_bytes + draw(st.integers(1, 2000)))
        return Frame(_dump(base | {"user": filler}), "invalid", ident)
    if how == "not-json":
        junk = draw(st.text(_char, min_size=1, max_size=50).filter(lambda t: not _is_json(t)))
        return Frame(junk, "invalid", None)
    if how == "not-object":
        return Frame(
            _dump(draw(st.one_of(_scalar, st.lists(_scalar, max_size=3)))), "invalid", None
        )
    if how == "nan":  # not JSON: its id cannot be read
        return Frame(_dump(base)[:-1] + ', "meta": {"x": NaN}}', "invalid", None)
    if how == "bad-budget":
        budget = draw(st.integers(-(10**6), 0))
        return Frame(
            _dump({"type": "context", "id": ident, "query": "q", "budget": budget}),
            "invalid",
            ident,
        )
    if how == "bad-format":
        # "" is no format: the default one.
        fmt = draw(st.text(_char, min_size=1, max_size=12).filter(lambda f: f not in _FORMATS))
        return Frame(
            _dump({"type": "context", "id": ident, "query": "q", "format": fmt}), "invalid", ident
        )
    if how == "binary":
        return Frame(_dump(base).encode(), "invalid", ident)
    cut = draw(st.integers(1, len(_dump(base)) - 1))
    return Frame(_dump(base)[:cut], "invalid", None)


_TAGS = frozenset({"chat", "turn", "context", "remember", "set", "end", "ping"})
_FORMATS = frozenset(
    {"about-user", "user-context", "memory-context", "app-memories", "conversation"}
)


def _is_json(raw: str) -> bool:
    try:
        json.loads(raw)
    except ValueError:
        return False
    return True


@st.composite
def free_frame(draw: st.DrawFn, ident: str, p: Pool) -> Frame:
    """Any JSON object with a type that is not ``end`` or ``ping`` (those answer outside
    the per-id rules): random fields, values beyond the bounds or not."""
    tag = draw(st.sampled_from(["chat", "turn", "context", "remember", "set", "launch"]))
    fields = draw(
        st.dictionaries(
            st.sampled_from(
                [
                    "id",
                    "user",
                    "assistant",
                    "content",
                    "query",
                    "budget",
                    "format",
                    "meta",
                    "variables",
                    "topic",
                    "pinned",
                    "category",
                    "extra",
                ]
            ),
            st.one_of(p.value, bad_int, st.just(ident), p.text),
            max_size=6,
        )
    )
    body = {"type": tag, **fields}
    usable = body.get("id") if isinstance(body.get("id"), str) else None
    if usable is not None and usable != ident:
        body["id"] = ident  # ids must stay unique within a batch
    return Frame(_dump(body), "free", ident if "id" in body else None)


def frames(max_bytes: int) -> st.SearchStrategy[list[Frame]]:
    """A batch of frames with ids unique within it (``f<n>``)."""

    @st.composite
    def batch(draw: st.DrawFn) -> list[Frame]:
        size = draw(st.integers(40, 80))
        out = []
        values = draw(pool())
        for n in range(size):
            ident = f"f{n}"
            kind = draw(st.sampled_from(["valid", "valid", "invalid", "invalid", "free"]))
            if kind == "valid":
                out.append(draw(valid_frame(ident, values)))
            elif kind == "invalid":
                out.append(draw(invalid_frame(ident, max_bytes)))
            else:
                out.append(draw(free_frame(ident, values)))
        return out

    return batch()


# -- REST requests ------------------------------------------------------------------


@dataclass
class Request:
    method: str
    path: str
    params: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    #: The statuses this one may answer (a subset of REST_STATUSES).
    expect: frozenset[int] = REST_STATUSES


_ids = st.one_of(
    st.sampled_from(
        ["msg_0000000000000000", "fact_00000000", "note_00000000", "fact_0000000a\n", "s1", ""]
    ),
    st.text(_char, max_size=30),
    st.from_regex(r"\A(msg_[0-9a-f]{16}|fact_[0-9a-f]{8})\Z"),
)
_param = st.one_of(
    st.text(_char, max_size=20),
    st.integers(-(10**20), 10**20).map(str),
    st.sampled_from(
        [
            "all",
            "facts",
            "turns",
            "messages",
            "hybrid",
            "semantic",
            "keyword",
            "active",
            "any",
            "global",
            "global\n",
            "50",
            "0",
            "-1",
            "200",
            "201",
        ]
    ),
)


def _path(template: str, value: str) -> str:
    return template.format(quote(value, safe=""))


def _json_body(draw: st.DrawFn) -> bytes:
    choice = draw(st.sampled_from(["fact", "patch", "free", "deep", "bigint", "junk", "huge"]))
    if choice == "fact":
        body = {"content": draw(nonblank), "pinned": draw(st.booleans())}
        if draw(st.booleans()):
            body["scope"] = draw(st.sampled_from(["global", "app1", "bad scope", "x\n"]))
        return _dump(body).encode()
    if choice == "patch":
        keys = ["content", "category", "confidence", "pinned"]
        patch = draw(
            st.dictionaries(st.sampled_from(keys), st.one_of(json_value, text), max_size=3)
        )
        return _dump(patch).encode()
    if choice == "free":
        return _dump(draw(json_value)).encode()
    if choice == "deep":
        depth = draw(st.integers(MAX_DEPTH, 5000))
        return ('{"content": "x", "pinned": ' + "[" * depth + "]" * depth + "}").encode()
    if choice == "bigint":
        return _dump({"content": "x", "confidence": draw(bad_int)}).encode()
    if choice == "huge":
        return b'{"content": "' + b"x" * draw(st.integers(1 << 20, (1 << 20) + 100)) + b'"}'
    return draw(st.binary(max_size=60))


@st.composite
def _import_body(draw: st.DrawFn) -> bytes:
    lines = []
    for n in range(draw(st.integers(0, 8))):
        choice = draw(st.sampled_from(["turn", "fact", "free", "deep", "bigint", "junk", "blank"]))
        ident = f"imp{draw(st.integers(0, 30))}"
        if choice == "turn":
            line: Any = {
                "kind": "turn",
                "id": ident,
                "session_id": "old",
                "speaker": "Ann",
                "role": draw(st.sampled_from(["user", "assistant", "other", "boss"])),
                "text": draw(text),
                "at": "2024-03-01T09:30:00Z",
                "turn": draw(st.one_of(st.integers(0, 10), bad_int)),
            }
            if draw(st.booleans()):
                line["meta"] = draw(st.one_of(meta, st.just({"n": 2**70})))
            lines.append(_dump(line))
        elif choice == "fact":
            lines.append(
                _dump(
                    {
                        "kind": "fact",
                        "id": ident,
                        "content": draw(text),
                        "category": draw(st.sampled_from(["preference", "nope", "FACT"])),
                        "confidence": draw(st.floats(-1, 2, allow_nan=False)),
                    }
                )
            )
        elif choice == "free":
            lines.append(_dump(draw(json_value)))
        elif choice == "deep":
            depth = draw(st.integers(MAX_DEPTH, 3000))
            lines.append('{"kind": "turn", "meta": ' + "[" * depth + "]" * depth + "}")
        elif choice == "bigint":
            lines.append(
                _dump(
                    {
                        "kind": "fact",
                        "id": ident,
                        "content": "c",
                        "category": "goal",
                        "confidence": 0.5,
                        "meta": {"n": draw(bad_int)},
                    }
                )
            )
        elif choice == "junk":
            lines.append(draw(st.text(_char, max_size=40)).replace("\n", " "))
        else:
            lines.append("")
        del n
    return ("\n".join(lines) + "\n").encode()


@st.composite
def request(draw: st.DrawFn) -> Request:
    choice = draw(
        st.sampled_from(
            [
                "list",
                "get",
                "patch",
                "post",
                "delete",
                "search",
                "search",
                "working",
                "apps",
                "app-delete",
                "export",
                "import",
                "import",
                "healthz",
                "unknown",
            ]
            * 3
            + ["clear"]  # a delete-all purges every table: the costliest request
        )
    )
    params = draw(
        st.dictionaries(
            st.sampled_from(
                ["limit", "offset", "kind", "validity", "q", "k", "mode", "scope", "x"]
            ),
            _param,
            max_size=4,
        )
    )
    json_type = {"content-type": "application/json"}
    if choice == "list":
        return Request("GET", "/memory/long-term", params)
    if choice == "get":
        return Request("GET", _path("/memory/long-term/{}", draw(_ids)))
    if choice == "patch":
        path = _path("/memory/long-term/{}", draw(_ids))
        return Request("PATCH", path, body=_json_body(draw), headers=json_type)
    if choice == "post":
        return Request("POST", "/memory/long-term", body=_json_body(draw), headers=json_type)
    if choice == "delete":
        return Request("DELETE", _path("/memory/long-term/{}", draw(_ids)))
    if choice == "clear":
        return Request("DELETE", "/memory/long-term")
    if choice == "search":
        if draw(st.booleans()):
            params["q"] = draw(text)
        return Request("GET", "/memory/search", params)
    if choice == "working":
        return Request("GET", _path("/memory/working/{}", draw(_ids)))
    if choice == "apps":
        return Request("GET", _path("/apps/{}/memories", draw(_ids)))
    if choice == "app-delete":
        path = _path("/apps/{}/memories", draw(_ids)) + _path("/{}", draw(_ids))
        return Request("DELETE", path)
    if choice == "export":
        return Request("GET", "/memory/export")
    if choice == "import":
        kind = draw(st.sampled_from(["application/x-ndjson", "application/jsonl", "text/plain"]))
        headers = {"content-type": kind}
        if draw(st.booleans()):
            headers["accept"] = "application/x-ndjson"
        return Request("POST", "/memory/import", body=draw(_import_body()), headers=headers)
    if choice == "healthz":
        return Request("GET", "/healthz", expect=frozenset({200}))
    method = draw(st.sampled_from(["GET", "PUT", "POST", "DELETE", "PATCH"]))
    path = "/" + "/".join(
        quote(p, safe="") for p in draw(st.lists(st.text(_char, max_size=8), max_size=3))
    )
    if path == "/" or path.split("/")[1] in ("", "web", "mcp"):
        # The page and MCP are no REST (HTML, JSON-RPC): their own tests cover them. A path
        # starting "//" is a network-path reference to the client, which sends "/" instead.
        path = "/memory" + path
    return Request(method, path, params)


def requests() -> st.SearchStrategy[list[Request]]:
    return st.lists(request(), min_size=20, max_size=40)
