"""One user's archived messages held in memory for search: rows column by column and
their ``SearchIndex`` (see ``server.adapters.lance_cache`` for how entries are kept)."""

from __future__ import annotations

import sys
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, cast

import anyio
import anyio.to_thread
import msgspec
import numpy as np
import numpy.typing as npt

from memory.answers import stated
from memory.postings import Postings
from memory.projection import PROJECT_FROM
from memory.search_index import EncodedTerms, SearchIndex
from memory.sparse import SparseVector
from schemas.records import ArchivedMessage, Role
from server.adapters.file_arrays import EncodedStrings, OnDemand, StringColumn

__all__ = ["MessageEntry"]

_meta_decoder: msgspec.json.Decoder[dict[str, Any]] = msgspec.json.Decoder(dict[str, Any])

_STRING_COLUMNS = ("session_id", "scope", "role", "speaker", "text", "meta", "source_id")
_INTERNED = frozenset({"session_id", "scope", "role", "speaker"})
#: Columns a loaded entry keeps encoded (``EncodedStrings``), decoding a value when read.
_ENCODED = frozenset({"text", "meta", "source_id"})


class _Column(StringColumn):
    """Strings read from a saved index (kept encoded), then those added since."""

    __slots__ = ("head", "tail")

    def __init__(self, head: EncodedStrings) -> None:
        self.head = head
        self.tail: list[str] = []

    def __len__(self) -> int:
        return len(self.head) + len(self.tail)

    def _at(self, index: int) -> str:
        held = len(self.head)
        return self.head[index] if index < held else self.tail[index - held]

    def __iter__(self) -> Iterator[str]:
        yield from self.head
        yield from self.tail

    def extend(self, values: Iterable[str]) -> None:
        self.tail += values

    def nbytes(self) -> int:
        return self.head.nbytes + sum(len(t) + 100 for t in self.tail)


class MessageEntry:
    """One user's archived messages: rows column by column (few objects for the garbage
    collector to walk) and their index."""

    def __init__(self, dim: int, *, project_from: int = PROJECT_FROM) -> None:
        """``project_from``: messages from which the index ranks by a projection first and
        holds its vectors as int8 (``memory.projection``, ``memory.vectors``)."""
        self.index = SearchIndex(dim, project_from=project_from)
        self.ids: list[str] = []
        self.positions: dict[str, int] = {}
        self._strings: dict[str, list[str] | _Column] = {name: [] for name in _STRING_COLUMNS}
        self._turns = array("i")
        self._at = array("d")
        #: Each message's neighbours in its session, by time (-1: none), and each session's
        #: last message; rebuilt from scratch when messages arrive out of order.
        self._prev = array("i")
        self._next = array("i")
        self._last: dict[str, int] = {}
        self._relink = False
        #: ``stated`` of each position, 0 until read (one byte a message); a saved index
        #: holds every message's, so a search of a loaded user reads no text for them.
        self._kinds = bytearray()
        self._people_words: frozenset[str] = frozenset()
        self._people_of = -1
        self._text_bytes = 0
        #: Indexed without terms (the analyzer failed): used once, then reloaded.
        self.degraded = False
        self._projecting: anyio.Event | None = None

    async def project(self) -> None:
        """Once the index is large, fit its projection (``memory.projection``) in a worker
        thread (a second or so), once however many searches wait for it."""
        while self.index.wants_projection:
            if self._projecting is not None:
                await self._projecting.wait()
                continue
            self._projecting = done = anyio.Event()
            try:
                compactions = self.index.compactions
                fitted = await anyio.to_thread.run_sync(self.index.fit_projection)
                prepared = await anyio.to_thread.run_sync(self.index.quantised_vectors)
                if self.index.compactions == compactions:  # else fit again
                    self.index.install(fitted, prepared=prepared)  # (catches up on both)
            finally:
                self._projecting = None
                done.set()

    def nbytes(self) -> int:
        return self.index.nbytes() + len(self.ids) * 168 + self._text_bytes

    def saving(self) -> Callable[[], dict[str, Any]]:
        """Capture the entry as it is now (cheap: lists are copied, arrays are views, the
        encoded texts of a loaded entry are shared); the function returned makes from it
        what ``restored`` reads (``server.adapters.index_files`` writes it to disk) without
        the removed messages: no text, vector or word of a deleted message is in it. That
        is the costly part: call it in a worker thread."""
        removed = self.index.removed
        captured: dict[str, Any] = {
            "index": self.index.state(),
            "ids": list(self.ids),
            **{
                name: values if isinstance(values, _Column) else list(values)
                for name, values in self._strings.items()
            },
            "tails": {
                name: list(values.tail)
                for name, values in self._strings.items()
                if isinstance(values, _Column)
            },
            "turn": np.frombuffer(self._turns, dtype=np.int32).copy(),
            "at": np.frombuffer(self._at, dtype=np.float64).copy(),
            "prev": np.frombuffer(self._prev, dtype=np.int32).copy(),
            "next": np.frombuffer(self._next, dtype=np.int32).copy(),
            "relink": self._relink,
            "kinds": bytes(self._kinds),
        }
        people, kinds = self._people(), self._kinds

        def state() -> dict[str, Any]:
            out = dict(captured)
            for name, tail in out.pop("tails").items():
                column = out[name]
                out[name] = EncodedStrings.joined([column.head, EncodedStrings.of(tail)])
            out["kinds"] = _all_stated(out["kinds"], out["text"], people)
            # Kept by the entry too, so the next save does not read those texts again (a
            # compaction since the capture gave the entry a new array: this one is let go).
            held = min(len(kinds), len(out["kinds"]))
            kinds[:held] = out["kinds"][:held].tobytes()
            return _postings_on_demand(_without_removed(out) if removed else out)

        return state

    @classmethod
    def restored(
        cls, dim: int, state: Mapping[str, Any], *, project_from: int = PROJECT_FROM
    ) -> MessageEntry:
        """The entry ``saving()`` captured."""
        entry = cls(dim, project_from=project_from)
        entry.index = SearchIndex.restored(dim, state["index"], project_from=project_from)
        entry.ids = _listed(state["ids"])
        alive = entry.index.visible(None)
        entry.positions = {
            ident: p for p, ident in enumerate(entry.ids) if alive is None or alive[p]
        }
        for name in _STRING_COLUMNS:
            values = state[name]
            if name in _ENCODED and isinstance(values, EncodedStrings):
                entry._strings[name] = _Column(values)
            elif name in _INTERNED:
                entry._strings[name] = [*map(sys.intern, _listed(values))]
            else:
                entry._strings[name] = _listed(values)
        entry._turns = array("i", state["turn"].astype(np.int32).tobytes())
        entry._at = array("d", state["at"].astype(np.float64).tobytes())
        entry._prev = array("i", state["prev"].astype(np.int32).tobytes())
        entry._next = array("i", state["next"].astype(np.int32).tobytes())
        entry._relink = bool(state["relink"])
        entry._kinds = bytearray(np.asarray(state["kinds"], dtype=np.uint8).tobytes())
        if not entry._relink:
            # Each session's newest live message is the one with none after it.
            sessions = entry._strings["session_id"]
            ends = np.flatnonzero(state["next"] < 0)
            if alive is not None:
                ends = ends[alive[ends]]
            entry._last = {sessions[p]: p for p in ends.tolist()}
        entry._text_bytes = sum(
            column.nbytes() if isinstance(column, _Column) else sum(len(t) + 100 for t in column)
            for column in (entry._strings["text"], entry._strings["meta"])
        )
        return entry

    def add(
        self,
        columns: Mapping[str, Sequence[Any]],
        vectors: npt.ArrayLike,
        terms: Sequence[Sequence[str]] | EncodedTerms,
        learned: Sequence[SparseVector] | None = None,
    ) -> None:
        """Add rows given column by column (``id``, ``at`` as epoch seconds, ``meta`` as
        JSON text, ...), with their learned sparse vectors if known (``SearchIndex.add``);
        rows whose id is already held, or came earlier in ``columns``, are skipped (two
        cluster nodes moving the same journaled rows into the table at once can store a
        row twice)."""
        ids = columns["id"]
        held, fresh, batch = self.positions, [], set()
        for i, ident in enumerate(ids):
            if ident not in held and ident not in batch:
                batch.add(ident)
                fresh.append(i)
        if not fresh:
            return
        if len(fresh) < len(ids):
            columns = {name: [values[i] for i in fresh] for name, values in columns.items()}
            vectors = np.asarray(vectors, dtype=np.float32)[fresh]
            listed = terms.lists() if isinstance(terms, EncodedTerms) else terms
            terms = [listed[i] for i in fresh]
            learned = None if learned is None else [learned[i] for i in fresh]
        first = self.index.add(vectors, terms, columns["scope"], learned)
        for offset, ident in enumerate(columns["id"]):
            self.positions[ident] = first + offset
        self.ids += columns["id"]
        for name, values in self._strings.items():
            # Few distinct values: one string object each, not one per row.
            values.extend(map(sys.intern, columns[name]) if name in _INTERNED else columns[name])
        self._turns.extend(columns["turn"])
        self._at.extend(columns["at"])
        self._link(first, len(columns["id"]))
        self._text_bytes += sum(len(t) + 100 for t in columns["text"])
        self._text_bytes += sum(len(m) for m in columns["meta"])

    def _link(self, first: int, count: int) -> None:
        sessions, at = self._strings["session_id"], self._at
        self._prev.extend([-1] * count)
        self._next.extend([-1] * count)
        for position in range(first, first + count):
            session = sessions[position]
            last = self._last.get(session)
            if last is not None and at[last] > at[position]:
                self._relink = True  # older than the session's newest: relink all
            elif last is not None:
                self._prev[position], self._next[last] = last, position
            if last is None or at[last] <= at[position]:
                self._last[session] = position

    def neighbours(self, position: int) -> tuple[int, int]:
        """The messages before and after ``position`` in its session (-1: none)."""
        if self._relink:
            self._relink_all()
        return self._prev[position], self._next[position]

    def _relink_all(self) -> None:
        """Neighbours from scratch: live messages sorted by (session, time, position)."""
        size = self.index.size
        alive = self.index.visible(None)
        codes: dict[str, int] = {}
        session = np.array(
            [codes.setdefault(s, len(codes)) for s in self._strings["session_id"]], dtype=np.int64
        )
        order = np.lexsort((np.arange(size), np.array(self._at, dtype=np.float64), session))
        if alive is not None:
            order = order[alive[order]]
        prev = np.full(size, -1, dtype=np.int32)
        after = np.full(size, -1, dtype=np.int32)
        same = session[order[1:]] == session[order[:-1]]
        prev[order[1:][same]] = order[:-1][same]
        after[order[:-1][same]] = order[1:][same]
        self._prev, self._next = array("i", prev.tobytes()), array("i", after.tobytes())
        self._last = {self._strings["session_id"][p]: int(p) for p in order}
        self._relink = False

    def remove(self, ids: Iterable[str]) -> None:
        for ident in ids:
            position = self.positions.pop(ident, None)
            if position is not None:
                self.index.remove(position)
                self._unlink(position)
        if self.index.removed > max(1024, len(self.index) // 4):
            self._compact()

    def _unlink(self, position: int) -> None:
        before, after = self._prev[position], self._next[position]
        if before >= 0:
            self._next[before] = after
        if after >= 0:
            self._prev[after] = before
        session = self._strings["session_id"][position]
        if self._last.get(session) == position:
            if before >= 0:
                self._last[session] = before
            else:
                del self._last[session]
        self._prev[position] = self._next[position] = -1

    def _compact(self) -> None:
        moved = self.index.compact()
        keep = [int(p) for p in np.flatnonzero(moved >= 0)]
        self.ids = [self.ids[p] for p in keep]
        for name, values in self._strings.items():
            self._strings[name] = [values[p] for p in keep]  # (decodes encoded texts)
        self._turns = array("i", [self._turns[p] for p in keep])
        self._at = array("d", [self._at[p] for p in keep])
        self._kinds = bytearray(self._kinds[p] if p < len(self._kinds) else 0 for p in keep)
        self.positions = {ident: p for p, ident in enumerate(self.ids)}
        self._relink_all()

    def texts(self) -> list[str]:
        """What the keyword fallback matches: who said it and what."""
        speakers, texts = self._strings["speaker"], self._strings["text"]
        return [f"{s}: {t}" for s, t in zip(speakers, texts, strict=True)]

    def at(self, position: int) -> float:
        """When the message at ``position`` was said, epoch seconds."""
        return self._at[position]

    def role(self, position: int) -> str:
        return self._strings["role"][position]

    def _people(self) -> frozenset[str]:
        """The words of the speakers' names ("Caroline", "Jon"), as of the last message
        added."""
        if self._people_of != len(self.ids):
            speakers = set(self._strings["speaker"])
            self._people_words = frozenset(w for speaker in speakers for w in speaker.split())
            self._people_of = len(self.ids)
        return self._people_words

    def stated(self, position: int) -> int:
        """What the message at ``position`` states (``memory.answers.stated``'s bits),
        read from its text the first time it is asked for, and kept."""
        kinds = self._kinds
        if position >= len(kinds):
            kinds.extend(bytes(len(self.ids) - len(kinds)))
        if not kinds[position]:
            kinds[position] = stated(self._strings["text"][position], self._people())
        return kinds[position]

    def speaker(self, position: int) -> str:
        return self._strings["speaker"][position]

    def session(self, position: int) -> str:
        return self._strings["session_id"][position]

    def row(self, position: int, user_id: str, *, superseded_by: str = "") -> ArchivedMessage:
        strings = {name: values[position] for name, values in self._strings.items()}
        return ArchivedMessage(
            id=self.ids[position],
            user_id=user_id,
            session_id=strings["session_id"],
            scope=strings["scope"],
            turn=self._turns[position],
            role=cast("Role", strings["role"]),
            speaker=strings["speaker"],
            text=strings["text"],
            at=datetime.fromtimestamp(self._at[position], UTC),
            meta=_meta_decoder.decode(strings["meta"]),
            source_id=strings["source_id"],
            superseded_by=superseded_by,
        )


def _all_stated(
    kinds: bytes, texts: Sequence[str], people: frozenset[str]
) -> npt.NDArray[np.uint8]:
    """``stated`` of every message, the ones not read yet read now (the saver's worker
    thread: ~30 us a message, once per message)."""
    out = np.zeros(len(texts), dtype=np.uint8)
    known = np.frombuffer(kinds, dtype=np.uint8)[: len(texts)]
    out[: len(known)] = known
    for position in np.flatnonzero(out == 0).tolist():
        out[position] = stated(texts[position], people)
    return out


def _listed(values: Sequence[str]) -> list[str]:
    return values.to_list() if isinstance(values, EncodedStrings) else list(values)


def _postings_on_demand(state: dict[str, Any]) -> dict[str, Any]:
    """A search reads the postings of its few words: saved, they are read from the file
    when asked (``Stored``) rather than mapped, each word's in one stretch."""
    index = dict(state["index"])
    for name in ("postings", "learned"):
        runs = Postings.restored(index[name]).state(merged=True)
        index[name] = [(starts, OnDemand(docs), OnDemand(counts)) for starts, docs, counts in runs]
    return {**state, "index": index}


def _without_removed(state: dict[str, Any]) -> dict[str, Any]:
    """``MessageEntry.state()`` as if its removed messages had never been added (their
    neighbours are linked again on the first search)."""
    index: dict[str, Any] = dict(state["index"])
    keep = np.asarray(index["alive"], dtype=np.bool_).copy()
    moved = np.full(len(keep), -1, dtype=np.int64)
    moved[keep] = np.arange(int(keep.sum()))
    vectors = index["vectors"]
    index["vectors"] = {
        "rows": vectors["rows"][keep],
        "scales": None if vectors["scales"] is None else vectors["scales"][keep],
    }
    for name in ("lengths", "scopes", "learned_of"):
        index[name] = index[name][keep]
    index["alive"] = np.ones(int(keep.sum()), dtype=np.bool_)
    for name in ("postings", "learned"):
        postings = Postings.restored(index[name])
        postings.renumber(moved)
        index[name] = postings.state()
    posted = np.zeros(len(index["words"]), dtype=np.bool_)
    for starts, _, _ in index["postings"]:
        posted[np.flatnonzero(np.diff(starts) > 0)] = True
    # A word only removed messages held keeps its id (ids are positions in this list),
    # not its text.
    index["words"] = [w if posted[i] else f"\x00{i}" for i, w in enumerate(index["words"])]
    if index["projection"] is not None:
        basis, rows = index["projection"]
        index["projection"] = (basis, rows[keep])
    kept = np.flatnonzero(keep).tolist()
    out = {**state, "index": index}
    for name in ("ids", *_STRING_COLUMNS):
        values = state[name]
        if isinstance(values, EncodedStrings):  # each kept one re-encoded, none decoded
            starts = np.concatenate([[0], values.ends[:-1]])
            data = values.data.tobytes()
            out[name] = EncodedStrings.of(
                data[starts[p] : values.ends[p]].decode("utf-8", "surrogatepass") for p in kept
            )
        else:
            out[name] = [values[p] for p in kept]
    out["turn"], out["at"] = state["turn"][keep], state["at"][keep]
    out["kinds"] = state["kinds"][keep]
    out["prev"] = out["next"] = np.full(len(kept), -1, dtype=np.int32)
    out["relink"] = True
    return out
