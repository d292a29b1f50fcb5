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

#: No page of another origin may frame it or load scripts into it (``nosniff``, on every
#: answer, is ``server.boundary``'s).
_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; connect-src 'self'; img-src 'self' data:; "
        "style-src 'self'; script-src 'self'; frame-ancestors 'none'"
    ),
    "Referrer-Policy": "no-referrer",
}


async def index(request: Request) -> Response:
    return FileResponse(WEB / "index.html", headers=_HEADERS)


async def favicon(request: Request) -> Response:
    """The page links its icon; browsers ask ``/favicon.ico`` for any other page (a JSON
    answer opened in a tab): the same icon."""
    return FileResponse(WEB / "favicon.svg", media_type="image/svg+xml")


routes = [
    Route("/", index, methods=["GET"]),
    Route("/favicon.ico", favicon, methods=["GET"]),
    Mount("/web", app=StaticFiles(directory=WEB), name="web"),
]
