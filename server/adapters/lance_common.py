"""Helpers shared by the LanceDB adapters: filter quoting, user filters, purging old versions."""

from __future__ import annotations

import re
import warnings
from datetime import timedelta
from typing import Any

__all__ = ["SAFE_ID", "purge", "quote", "user_filter"]

SAFE_ID = re.compile(r"^[A-Za-z0-9_.:@-]{1,128}$")


def quote(value: str) -> str:
    """A SQL string literal for a LanceDB filter: single quotes doubled, no NULs."""
    if "\x00" in value:
        raise ValueError("NUL byte in a filter value")
    return "'" + value.replace("'", "''") + "'"


def user_filter(user_id: str) -> str:
    if not SAFE_ID.match(user_id):
        raise ValueError(f"invalid user id {user_id!r}")
    return f"user_id = {quote(user_id)}"


async def purge(table: Any) -> None:
    """Drop every old version of ``table`` so deleted rows are gone from disk, not just hidden.

    Safe only because one writer performs all of the store's writes: no
    transaction can be in flight while it runs.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"optimize\(cleanup_older_than=0\)")
        await table.optimize(cleanup_older_than=timedelta(0), delete_unverified=True)
