from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.fake_ollama import FakeOllama
from tests.harness import EMPTY_EXTRACTION
from tests.test_app_notes import NoteModel


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def fake() -> AsyncIterator[FakeOllama]:
    """A fake Ollama on loopback: chat replies from ``script``, structured-output calls
    (extraction, notes) from ``script_json`` or a valid empty extraction."""
    async with FakeOllama(models=["llama3.2"], json_default=EMPTY_EXTRACTION) as fake:
        yield fake


@pytest.fixture
def model(fake: FakeOllama) -> NoteModel:
    """Seed 003's model on the fake: answers each structured call by its system prompt."""
    responder = NoteModel()
    fake.json_default = None  # every call goes to the responder
    fake.responder = responder
    return responder
