"""REST for seed 002's rules: store, list, get, feedback, confirm, forget, delete.

Shaped one to one like seed 002's tools: ``POST /memory/rules`` is
``memory_store_rule``, ``POST .../helpful`` ``memory_mark_helpful``, ``POST
.../harmful`` ``memory_mark_harmful``, ``POST .../confirm`` ``memory_confirm``,
``POST .../forget`` ``memory_forget`` (the rule stays, flagged), ``GET
/memory/rules/{id}`` ``memory_get`` (counts a reference). ``DELETE`` removes a
rule and its applications for good. Another user's rules answer 404.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from actors.mailbox import SessionDeps
from actors.rules import RuleKeeper
from memory.rules import MATURITIES
from schemas.records import Maturity, Rule, RuleApplication
from schemas.transfer import MAX_TEXT
from server.http import BadRequest, authenticated, decode_body, error, int_param, json
from server.ws import SESSION_ID

__all__ = ["routes"]

_RULE_ID = re.compile(r"^rule_[0-9a-f]{8}\Z")
_Tag = Annotated[str, msgspec.Meta(min_length=1, max_length=64)]


class NewRule(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    content: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_TEXT)]
    scope: str = "global"
    tags: Annotated[list[_Tag], msgspec.Meta(max_length=32)] = []


class Harm(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    reason: Annotated[str, msgspec.Meta(max_length=2000)] | None = None


def rule_view(rule: Rule) -> dict[str, Any]:
    """A rule as clients see it: every field but the user (no vector is ever stored on it)."""
    item: dict[str, Any] = msgspec.to_builtins(rule)
    del item["user_id"]
    return item


def _application(application: RuleApplication) -> dict[str, Any]:
    item: dict[str, Any] = msgspec.to_builtins(application)
    del item["user_id"]
    return item


def _keeper(request: Request) -> RuleKeeper:
    deps: SessionDeps = request.state.deps
    return deps.rules


def _scope(raw: str | None) -> str | None:
    if raw is not None and not SESSION_ID.match(raw):
        raise BadRequest("scope must be 1-64 of A-Z a-z 0-9 _ . @ -")
    return raw


def _answer(rule: Rule | None) -> Response:
    return json(rule_view(rule)) if rule is not None else error(404, "not_found", "no such rule")


def _rule_id(request: Request) -> str | None:
    rule_id: str = request.path_params["rule_id"]
    return rule_id if _RULE_ID.match(rule_id) else None


async def create_rule(request: Request, user_id: str) -> Response:
    body = await decode_body(request, NewRule)
    try:
        rule, new = await _keeper(request).store_rule(
            user_id, body.content, scope=_scope(body.scope) or "global", tags=body.tags
        )
    except ValueError as exc:
        raise BadRequest(str(exc)) from None
    return json(rule_view(rule), 201 if new else 200)


async def list_rules(request: Request, user_id: str) -> Response:
    maturity = request.query_params.get("maturity")
    if maturity is not None and maturity not in MATURITIES:
        raise BadRequest(f"maturity must be one of {', '.join(MATURITIES)}")
    forgotten = request.query_params.get("forgotten", "false")
    if forgotten not in ("true", "false"):
        raise BadRequest("forgotten must be true or false")
    found = await _keeper(request).list_rules(
        user_id,
        scope=_scope(request.query_params.get("scope")),
        maturity=_maturity(maturity),
        forgotten=forgotten == "true",
    )
    return json({"rules": [rule_view(r) for r in found]})


def _maturity(raw: str | None) -> Maturity | None:
    for maturity in MATURITIES:
        if raw == maturity:
            return maturity
    return None


async def get_rule(request: Request, user_id: str) -> Response:
    rule_id = _rule_id(request)
    return _answer(await _keeper(request).get(user_id, rule_id) if rule_id else None)


async def delete_rule(request: Request, user_id: str) -> Response:
    rule_id = _rule_id(request)
    if rule_id is None or not await _keeper(request).delete(user_id, rule_id):
        return error(404, "not_found", "no such rule")
    return json({"deleted": rule_id})


async def mark_helpful(request: Request, user_id: str) -> Response:
    rule_id = _rule_id(request)
    return _answer(await _keeper(request).mark_helpful(user_id, rule_id) if rule_id else None)


async def mark_harmful(request: Request, user_id: str) -> Response:
    body = await decode_body(request, Harm) if await request.body() else Harm()
    rule_id = _rule_id(request)
    keeper = _keeper(request)
    return _answer(await keeper.mark_harmful(user_id, rule_id, body.reason) if rule_id else None)


async def confirm_rule(request: Request, user_id: str) -> Response:
    rule_id = _rule_id(request)
    return _answer(await _keeper(request).confirm(user_id, rule_id) if rule_id else None)


async def forget_rule(request: Request, user_id: str) -> Response:
    rule_id = _rule_id(request)
    return _answer(await _keeper(request).forget(user_id, rule_id) if rule_id else None)


async def list_applications(request: Request, user_id: str) -> Response:
    rule_id = _rule_id(request)
    limit = int_param(request, "limit", 50, 1, 500)
    found = await _keeper(request).applications(user_id, rule_id, limit=limit) if rule_id else None
    if found is None:
        return error(404, "not_found", "no such rule")
    return json({"applications": [_application(a) for a in found]})


routes = [
    Route("/memory/rules", authenticated(create_rule), methods=["POST"]),
    Route("/memory/rules", authenticated(list_rules), methods=["GET"]),
    Route("/memory/rules/{rule_id}", authenticated(get_rule), methods=["GET"]),
    Route("/memory/rules/{rule_id}", authenticated(delete_rule), methods=["DELETE"]),
    Route("/memory/rules/{rule_id}/helpful", authenticated(mark_helpful), methods=["POST"]),
    Route("/memory/rules/{rule_id}/harmful", authenticated(mark_harmful), methods=["POST"]),
    Route("/memory/rules/{rule_id}/confirm", authenticated(confirm_rule), methods=["POST"]),
    Route("/memory/rules/{rule_id}/forget", authenticated(forget_rule), methods=["POST"]),
    Route(
        "/memory/rules/{rule_id}/applications",
        authenticated(list_applications),
        methods=["GET"],
    ),
]
