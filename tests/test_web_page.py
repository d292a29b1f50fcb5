"""The page at ``/``, in a real browser: served from the package, nothing from elsewhere."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser import Site, running_site


@pytest.fixture
def site(tmp_path: Path) -> Iterator[Site]:
    with running_site(tmp_path) as running:
        yield running


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context()
    yield context.new_page()
    context.close()


def test_the_page_is_served_by_the_server_and_fetches_nothing_from_another_host(
    site: Site, page: Page
) -> None:
    elsewhere: list[str] = []
    page.on("request", lambda r: None if r.url.startswith(site.url) else elsewhere.append(r.url))
    page.goto(site.url)
    expect(page.locator("#status")).to_have_text("connected")
    assert elsewhere == []
    answer = httpx.get(site.url + "/")
    assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
    assert httpx.get(site.url + "/web/app.js").headers["content-type"].startswith("text/javascript")
    assert httpx.get(site.url + "/web/nothing.js").status_code == 404
