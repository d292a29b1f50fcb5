"""Take the chat page's screenshots in docs/images/ (light and dark) from a real server with
the fake Ollama and the system's Chromium, as the browser tests run them.

python scripts/web_screenshots.py   # rewrites docs/images/chat-light.png and chat-dark.png
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Literal

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the test helpers live in tests/, beside scripts/

from playwright.sync_api import Page, expect  # noqa: E402 - once sys.path has the repository root

from testing.fake_ollama import Reply  # noqa: E402 - once sys.path has the repository root
from tests.browser import Site, launch, running_site  # noqa: E402 - once sys.path has the repository root
from tests.docs_examples import EXTRACTION  # noqa: E402 - once sys.path has the repository root

IMAGES = ROOT / "docs" / "images"
FACT = {
    "content": "User lives in Lisbon",
    "category": "identity",
    "confidence": 0.9,
    "subject": "user",
    "predicate": "lives_in",
    "value": "Lisbon",
}


def converse(site: Site, page: Page) -> None:
    """A short conversation: two replies, two facts learned."""
    page.goto(site.url)
    expect(page.locator("#chat")).to_have_attribute("data-state", "live", timeout=20_000)
    page.locator("#session-id").fill("morning-chat")
    page.locator("#session-id").press("Enter")
    expect(page.locator("#chat")).to_have_attribute("data-state", "live", timeout=20_000)
    exchanges = [
        (
            "Hi! I just moved to Lisbon and I'm looking for a quiet café to work from.",
            "Welcome to Lisbon! For a calm place to work, try a café in Príncipe Real or "
            "Campo de Ourique: both have quiet corners and good light in the morning.",
            {"facts": [FACT], "memory_update": {"should_store": True}, "analysis": {}},
        ),
        (
            "Nice. I love green tea more than coffee, though.",
            "Then look for a tea house: several in Chiado serve sencha and gyokuro, "
            "and they are quieter than most cafés.",
            EXTRACTION,
        ),
    ]
    remembered = page.locator(".note.remembered")
    for said, answer, extraction in exchanges:
        before = remembered.count()
        site.fake.script(Reply(answer, chunk_delay=0.01))
        site.fake.script_json(extraction)
        page.get_by_label("Message", exact=True).fill(said)
        page.get_by_label("Message", exact=True).press("Enter")
        # Each turn teaches at least one fact (the reader's stand beside the model's).
        expect(remembered.nth(before)).to_be_visible(timeout=20_000)
    page.get_by_label("Message", exact=True).fill("Any tips for this weekend?")


def shoot(scheme: Literal["light", "dark"], width: int = 960, name: str = "chat") -> Path:
    target = IMAGES / f"{name}-{scheme}.png"
    with tempfile.TemporaryDirectory() as data, running_site(Path(data)) as site, launch() as b:
        context = b.new_context(viewport={"width": width, "height": 640}, color_scheme=scheme)
        page = context.new_page()
        converse(site, page)
        page.screenshot(path=target, animations="disabled")
        context.close()
    return target


def main() -> None:
    IMAGES.mkdir(parents=True, exist_ok=True)
    schemes: tuple[Literal["light", "dark"], ...] = ("light", "dark")
    for scheme in schemes:
        print(shoot(scheme))


if __name__ == "__main__":
    main()
