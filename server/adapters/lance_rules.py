"""LanceDB tables for seed 002's rules and their applications.

Like facts, a row keeps its filterable columns as columns and the whole record as
JSON in ``data``. A user holds tens to hundreds of rules, so reads take all of a
user's rows (filtered by user, and scope where asked) and rank them in process.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa

from memory.rules import StoredRule
from memory.stats import rule_stats
from schemas.records import Rule, RuleApplication
from server.adapters.lance_common import (
    SAFE_ID,
    PurgeGate,
    quote,
    quote_all,
    user_filter,
)
from server.adapters.lance_counts import CountMemo
from server.adapters.lance_epochs import Epochs, scoped_records_schema, with_epoch

__all__ = ["LanceRules"]

_json = msgspec.json.Encoder()
_rule = msgspec.json.Decoder(Rule)
_application = msgspec.json.Decoder(RuleApplication)

_APPLICATIONS = with_epoch(
    pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("user_id", pa.string(), nullable=False),
            pa.field("rule_id", pa.string(), nullable=False),
            pa.field("at", pa.timestamp("us", tz="UTC"), nullable=False),
            pa.field("data", pa.string(), nullable=False),
        ]
    )
)


def _row(item: StoredRule) -> dict[str, Any]:
    rule, vector = item.rule, item.vector
    user_filter(rule.user_id)
    return {
        "id": rule.id,
        "user_id": rule.user_id,
        "scope": rule.scope,
        "created_at": rule.created_at,
        "data": _json.encode(rule).decode(),
        "vector": vector.tolist() if isinstance(vector, np.ndarray) else list(vector),
    }


def _scope_filter(scope: str) -> str:
    if not SAFE_ID.match(scope):
        raise ValueError(f"invalid scope {scope!r}")
    return f"scope IN {quote_all(['global', scope])}"


class LanceRules:
    """Implements the ``RuleStore`` port on the connection of an opened ``LanceStore``."""

    def __init__(self, db: Any, *, dim: int, gate: PurgeGate, epochs: Epochs) -> None:
        self._db, self._dim, self._gate, self._epochs = db, dim, gate, epochs
        self._rules: Any = None
        self._applications: Any = None
        #: ``rule_counts`` by user and scope, until the user's rules are written.
        self._counted = CountMemo()

    async def open(self) -> None:
        epochs, db, gate = self._epochs, self._db, self._gate
        self._rules = await epochs.open(db, "rules", scoped_records_schema(self._dim), gate)
        self._applications = await epochs.open(db, "rule_applications", _APPLICATIONS, gate)

    def close(self) -> None:
        for table in (self._rules, self._applications):
            if table is not None:
                table.close()

    async def _read(self, where: str) -> list[StoredRule]:
        query = self._rules.query().where(where).select(["data", "vector"])
        rows = await self._gate.read(query.to_list)
        items = [StoredRule(_rule.decode(r["data"]), r["vector"]) for r in rows]
        return sorted(items, key=lambda s: (s.rule.created_at, s.rule.id))

    async def rules_of(self, user_id: str, *, scope: str | None = None) -> list[StoredRule]:
        where = self._epochs.reads(user_id)
        if scope is not None:
            where += f" AND {_scope_filter(scope)}"
        return await self._read(where)

    async def rule_counts(self, user_id: str, *, scope: str | None = None) -> dict[str, int]:
        where = self._epochs.reads(user_id)
        if scope is not None:
            where += f" AND {_scope_filter(scope)}"

        async def count() -> dict[str, int]:
            query = self._rules.query().where(where).select(["data"])
            rows = await self._gate.read(query.to_list)
            return rule_stats(_rule.decode(r["data"]) for r in rows)

        return await self._counted.get(user_id, scope, count)

    async def get_rules(self, user_id: str, ids: Sequence[str]) -> list[StoredRule]:
        if not ids:
            return []
        return await self._read(f"{self._epochs.reads(user_id)} AND id IN {quote_all(ids)}")

    async def put_rules(self, items: Sequence[StoredRule]) -> None:
        if not items:
            return
        rows = self._epochs.stamp([_row(item) for item in items])
        users = {item.rule.user_id for item in items}
        self._counted.written(users)
        try:
            await self._epochs.merge(
                self._rules,
                ["user_id", "id"],
                pa.Table.from_pylist(rows, schema=scoped_records_schema(self._dim)),
            )
        finally:
            self._counted.written(users)

    async def _delete(self, table: Any, user_id: str, also: str = "") -> int:
        return await self._epochs.erase(self._gate, table, user_id, also)

    async def delete_rules(self, user_id: str, ids: Sequence[str]) -> int:
        if not ids:
            return 0
        self._counted.written([user_id])
        try:
            count = await self._delete(self._rules, user_id, f"id IN {quote_all(ids)}")
        finally:
            self._counted.written([user_id])
        await self._delete(self._applications, user_id, f"rule_id IN {quote_all(ids)}")
        return count

    async def clear_rules(self, user_id: str) -> int:
        self._counted.written([user_id])
        try:
            count = await self._delete(self._rules, user_id)
        finally:
            self._counted.written([user_id])
        await self._delete(self._applications, user_id)
        return count

    async def add_applications(self, items: Sequence[RuleApplication]) -> None:
        if not items:
            return
        rows = self._epochs.stamp(
            [
                {
                    "id": a.id,
                    "user_id": a.user_id,
                    "rule_id": a.rule_id,
                    "at": a.at,
                    "data": _json.encode(a).decode(),
                }
                for a in items
            ]
        )
        data = pa.Table.from_pylist(rows, schema=_APPLICATIONS)
        await self._epochs.append(self._applications, data)

    async def applications_of(
        self, user_id: str, rule_id: str, *, limit: int
    ) -> list[RuleApplication]:
        where = f"{self._epochs.reads(user_id)} AND rule_id = {quote(rule_id)}"
        query = self._applications.query().where(where).select(["data"])
        rows = await self._gate.read(query.to_list)
        found = [_application.decode(r["data"]) for r in rows]
        found.sort(key=lambda a: (a.at, a.id), reverse=True)
        return found[:limit]

    async def applications_of_user(self, user_id: str) -> list[RuleApplication]:
        query = self._applications.query().where(self._epochs.reads(user_id)).select(["data"])
        rows = await self._gate.read(query.to_list)
        return sorted((_application.decode(r["data"]) for r in rows), key=lambda a: (a.at, a.id))

    async def users_with_rules(self) -> list[str]:
        rows = await self._gate.read(self._rules.query().select(["user_id"]).to_list)
        return sorted({r["user_id"] for r in rows})

    async def optimize(self, cleanup_older_than: float) -> None:
        await self._gate.optimize((self._rules, self._applications), cleanup_older_than)
