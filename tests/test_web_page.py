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


def test_a_first_visit_asks_for_nothing_that_is_not_there_and_has_an_icon(
    site: Site, page: Page
) -> None:
    failed: list[str] = []
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page.on("console", lambda m: failed.append(m.text) if m.type == "error" else None)
    page.goto(site.url)
    expect(page.locator("#chat")).to_have_attribute("data-state", "live")
    expect(page.locator("#memory-pill")).to_have_text("0 memories ↗")
    page.wait_for_load_state("networkidle")
    assert failed == []
    icon = page.locator('link[rel="icon"]').get_attribute("href")
    assert icon is not None
    for path in (icon, "/favicon.ico"):  # browsers ask the second for pages with no link
        answer = httpx.get(site.url + path)
        assert answer.status_code == 200
        assert answer.headers["content-type"] == "image/svg+xml"
        assert answer.text.startswith("<svg")
