"""Users are grouped into shards by a hash of their user id; a shard has one home node.

The shard of a user is the first 12 bits of the SHA-256 of their id: 4,096 shards,
few enough that a node holds hundreds of leases rather than a lease per user, many
enough that a node joining or leaving moves a small slice of the users.
"""

from __future__ import annotations

import hashlib

__all__ = ["SHARDS", "shard_of"]

#: How many shards there are (the ids are ``0 .. SHARDS - 1``).
SHARDS = 4096


def shard_of(user_id: str) -> int:
    """The shard that holds ``user_id``."""
    return int.from_bytes(hashlib.sha256(user_id.encode()).digest()[:2], "big") >> 4
