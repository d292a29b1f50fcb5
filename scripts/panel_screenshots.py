"""Screenshots of the open Memory Panel, light and dark, for docs/images/.

Runs the real server (a temporary data directory, the fake Ollama) and the system's
Chromium, stores a few facts over REST, opens the panel and saves
``docs/images/panel-light.png`` and ``docs/images/panel-dark.png``. Run it again
after changing the panel's look::

    .venv/bin/python scripts/panel_screenshots.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import httpx
from playwright.sync_api import expect

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.browser import launch, running_site  # noqa: E402 - once sys.path has the repository root

#: (content, category, confidence, pinned)
FACTS = [
    ("Building mnemo, a local memory server for AI chat", "project", 0.95, True),
    ("Writing the Memory Panel in plain ES modules", "project", 0.8, False),
    ("Prefers direct answers without preamble", "preference", 0.9, False),
    ("Uses TypeScript with minimal abstraction", "preference", 0.6, False),
    ("Drinks green tea, never coffee", "preference", 0.45, False),
    ("Solo developer based in Copenhagen", "identity", 0.85, True),
    ("Wants to run a half marathon this spring", "goal", 0.6, False),
]


def main() -> None:
    out = ROOT / "docs" / "images"
    out.mkdir(parents=True, exist_ok=True)
    with (
        tempfile.TemporaryDirectory() as tmp,
        running_site(Path(tmp)) as site,
        launch() as browser,
        httpx.Client(base_url=site.url) as rest,
    ):
        for content, category, confidence, pinned in reversed(FACTS):
            answer = rest.post("/memory/long-term", json={"content": content, "category": category})
            fact_id = answer.json()["added"][0]["id"]
            change = {"confidence": confidence, "pinned": pinned}
            rest.patch(f"/memory/long-term/{fact_id}", json=change).raise_for_status()
        for scheme in ("light", "dark"):
            page = browser.new_page(viewport={"width": 1100, "height": 760}, color_scheme=scheme)
            page.goto(site.url)
            expect(page.locator("#memory-pill")).to_have_text(f"{len(FACTS)} memories ↗")
            page.locator("#memory-pill").click()
            sheet = page.get_by_role("dialog", name="Memories")
            expect(sheet).to_be_in_viewport(ratio=1)
            page.locator(".mp-card").nth(1).hover()  # shows pin, rewrite and delete
            page.wait_for_timeout(400)  # transitions settle
            page.screenshot(path=out / f"panel-{scheme}.png")
            page.close()
            print(f"wrote docs/images/panel-{scheme}.png")


if __name__ == "__main__":
    main()
