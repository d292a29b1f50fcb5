"""Browser tests: the real server (uvicorn, LanceDB on a temp dir, the fake Ollama) in a
thread of its own, and the system's Chromium driven by Playwright's Python API."""

from __future__ import annotations

import queue
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from playwright.sync_api import Browser, Page, Playwright, expect, sync_playwright

from testing.fake_ollama import FakeOllama
from tests.harness import EMPTY_EXTRACTION, make_app, serve, settings_for

__all__ = ["WAIT", "Site", "chromium", "launch", "open_chat", "running_site", "say"]


def chromium() -> str:
    """The system's Chromium (Debian's ``chromium``); the README's test command installs
    it. Browser tests never skip: without it they fail saying so."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        raise RuntimeError("no chromium on PATH: install it (apt-get install -y chromium)")
    return found


@contextmanager
def launch() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        yield _browser(playwright)


def _browser(playwright: Playwright) -> Browser:
    return playwright.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])


@dataclass
class Site:
    """A running server: its base URL, and the fake Ollama behind it (to script replies;
    touch it only through thread-safe calls such as ``script``)."""

    url: str
    fake: FakeOllama
    data_dir: Path


@contextmanager
def running_site(
    data_dir: Path, port: int = 0, llm_url: str | None = None, **changes: Any
) -> Iterator[Site]:
    """The server on loopback (``port`` 0: a free port) in a thread of its own, until the
    block ends; its Ollama is the fake, or ``llm_url`` (e.g. one nothing listens on)."""
    ready: queue.Queue[Site | BaseException] = queue.Queue()
    stop = threading.Event()

    async def run() -> None:
        try:
            async with FakeOllama(models=["llama3.2"], json_default=EMPTY_EXTRACTION) as fake:
                settings = settings_for(data_dir, llm_url or fake.url, **changes)
                async with serve(make_app(settings), port) as address:
                    ready.put(Site(f"http://{address}", fake, data_dir))
                    while not stop.is_set():
                        await anyio.sleep(0.05)
        except BaseException as exc:
            ready.put(exc)
            raise

    thread = threading.Thread(target=anyio.run, args=(run,), daemon=True)
    thread.start()
    started = ready.get(timeout=60)
    if isinstance(started, BaseException):
        raise started
    try:
        yield started
    finally:
        stop.set()
        thread.join(timeout=30)


#: Long enough for a loaded 2-core machine; Playwright's expect retries until then.
WAIT = 20_000


def open_chat(page: Page, url: str) -> str:
    """Open the page, wait until its session is live, and return the session id."""
    page.goto(url)
    expect(page.locator("#chat")).to_have_attribute("data-state", "live")
    return page.locator("#session-id").input_value()


def say(page: Page, text: str) -> None:
    """Type ``text`` in the message box and press Enter."""
    page.get_by_label("Message", exact=True).fill(text)
    page.get_by_label("Message", exact=True).press("Enter")
