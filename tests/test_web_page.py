"""The page at ``/``, in a real browser: served from the package, nothing from elsewhere."""

from __future__ import annotations

import httpx
from playwright.sync_api import Page, expect

from tests.browser import Site


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
