from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser

from tests.fake_ollama import FakeOllama
from tests.harness import EMPTY_EXTRACTION
from tests.test_app_notes import NoteModel


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that drive the browser run last, in their order. While the session's
    Playwright is open, its sync API leaves an event loop marked running in the main
    thread, so an async test after it could not start its own."""
    items.sort(key=lambda item: "browser" in getattr(item, "fixturenames", ()))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _fresh_memory_caches() -> None:
    """Under mutmut (scripts/mutation.py), every test starts with memory/'s memoization
    caches empty: a result cached by an earlier test would hide the mutant, and the
    call from mutmut's map of which tests reach which function."""
    if "MUTANT_UNDER_TEST" in os.environ:
        for name, module in list(sys.modules.items()):
            if name.startswith("memory."):
                for value in list(vars(module).values()):
                    if callable(getattr(value, "cache_clear", None)):
                        value.cache_clear()


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


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    """One Chromium for the whole session (tests/browser.py)."""
    from tests.browser import launch

    with launch() as running:
        yield running
