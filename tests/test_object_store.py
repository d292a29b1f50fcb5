"""`mnemo serve` with its data directory on an S3-compatible object store (moto's server
in its own process): the tables live in the bucket, the journal and saved indexes in
``MNEMO_LOCAL_DIR``; what is stored survives a restart and a delete leaves no byte of
the deleted text in the bucket."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.harness import Client, serve_process
from tests.s3_bucket import BUCKET, objects, s3

pytestmark = pytest.mark.anyio

__all__ = ["s3"]  # the fixture, used by name


async def _hits(address: str, query: str) -> list[str]:
    async with httpx.AsyncClient(base_url=f"http://{address}", timeout=30) as client:
        found = await client.get("/memory/search", params={"q": query, "kind": "turns"})
    found.raise_for_status()
    return [hit["text"] for hit in found.json()["hits"]]


async def test_a_server_on_an_object_store_keeps_its_tables_there_and_deletes_for_good(
    s3: dict[str, str], tmp_path: Path
) -> None:
    env = {
        **s3,
        "MNEMO_DATA_DIR": f"s3://{BUCKET}/node-a",
        "MNEMO_LOCAL_DIR": str(tmp_path / "local"),
        "MNEMO_EMBEDDER": "hash",
    }
    secret = "zqs3secret my locker code is 7713"
    with serve_process(tmp_path / "unused", **env) as (address, _):
        async with Client.connect(address, "s1") as client:
            await client.receive()
            for n, text in enumerate([secret, "I sail on the lake at dawn", "my cat is Miso"]):
                await client.send(type="turn", id=f"t{n}", user=text, assistant="noted")
                await client.until("ack")
        assert (await _hits(address, "sail lake"))[0] == "I sail on the lake at dawn"
        async with httpx.AsyncClient(base_url=f"http://{address}", timeout=30) as rest:
            listed = await rest.get("/memory/long-term", params={"kind": "turns"})
            [turn] = [t for t in listed.json()["items"] if t["text"] == secret]
            assert (await rest.delete(f"/memory/long-term/{turn['id']}")).status_code == 200
        stored = objects(s3)
    assert any(key.startswith("node-a/lancedb/messages.lance/") for key in stored)
    assert not any(secret.encode() in data for data in stored.values())
    assert not (tmp_path / "unused").exists()  # nothing local but MNEMO_LOCAL_DIR
    assert (tmp_path / "local" / "journal").is_dir()

    with serve_process(tmp_path / "unused", **env) as (address, _):
        async with Client.connect(address, "s1") as client:
            ready = await client.receive()
        assert (ready["resumed"], ready["turn_count"]) == (True, 3)
        assert (await _hits(address, "cat name"))[0] == "my cat is Miso"
        assert all("7713" not in text for text in await _hits(address, "locker code"))
