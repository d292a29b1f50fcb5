"""The web page ``mnemo serve`` shows at ``/``: static files shipped in the package
(``server/web/``), no build step and nothing fetched from another host."""

from __future__ import annotations

from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

__all__ = ["WEB", "routes"]

WEB = Path(__file__).parent / "web"

#: No page of another origin may frame it or load scripts into it.
_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; connect-src 'self'; img-src 'self' data:; "
        "style-src 'self'; script-src 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


async def index(request: Request) -> Response:
    return FileResponse(WEB / "index.html", headers=_HEADERS)


routes = [
    Route("/", index, methods=["GET"]),
    Mount("/web", app=StaticFiles(directory=WEB), name="web"),
]
