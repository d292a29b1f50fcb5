from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

    from tests.browser import Site

from server.adapters import onnx_int8
from testing.fake_ollama import FakeOllama
from tests.app_notes import NoteModel
from tests.harness import EMPTY_EXTRACTION


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Browser tests run last. While the session's Chromium is open, Playwright's sync API
    leaves its event loop set as the main thread's running loop, and anyio cannot start
    a loop of its own after that: an async test run after a browser test would fail."""
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
def int8_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No int8 model can be derived, and the model cache (returned) starts empty: the ONNX
    adapters run their float models."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))

    def broken(source: bytes) -> bytes:
        raise ValueError("no quantizer here")

    monkeypatch.setattr(onnx_int8, "derive", broken)
    return tmp_path / "mnemo"


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


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    """The real server with the fake Ollama, for a browser test (tests/browser.py)."""
    from tests.browser import running_site

    with running_site(tmp_path) as running:
        yield running


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A page of a fresh browser context; an uncaught script error, or a script or style
    the page's Content-Security-Policy refused, fails the test."""
    context = browser.new_context(viewport={"width": 1100, "height": 800})
    context.set_default_timeout(15_000)
    opened = context.new_page()
    troubles: list[str] = []
    opened.on("pageerror", lambda error: troubles.append(str(error)))
    opened.on(
        "console",
        lambda m: troubles.append(m.text) if "Content Security Policy" in m.text else None,
    )
    yield opened
    context.close()
    assert troubles == []
