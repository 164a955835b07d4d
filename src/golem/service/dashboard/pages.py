"""The dashboard's page and its assets: ``/`` is the page, ``/dashboard/<name>`` its
scripts, style sheet and icon, read from the package's ``static`` directory. No key is
needed to load them; the page asks for one and sends it with each API call."""

from __future__ import annotations

import re
from importlib.resources import files
from importlib.resources.abc import Traversable

from fastapi import APIRouter
from fastapi.responses import RedirectResponse, Response

from golem.core.errors import Problem

__all__ = ["CONTENT_SECURITY_POLICY", "router"]

router = APIRouter(include_in_schema=False)

MEDIA_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
}
ASSET_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*\.(?:js|css|svg)$")

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
"""Only the page's own files run, and they only talk to this server: a second line of
defence behind the page's rule of never parsing data as HTML."""

HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-cache",
}


def _static() -> Traversable:
    return files("golem.service.dashboard").joinpath("static")


def _serve(name: str) -> Response:
    asset = _static().joinpath(name)
    if not asset.is_file():
        raise Problem(404, f"the dashboard has no file {name!r}")
    suffix = name[name.rindex(".") :]
    return Response(asset.read_bytes(), media_type=MEDIA_TYPES[suffix], headers=HEADERS)


@router.get("/")
async def page() -> Response:
    """The dashboard."""
    return _serve("index.html")


@router.get("/dashboard")
async def dashboard() -> RedirectResponse:
    """The dashboard lives at ``/``."""
    return RedirectResponse("/")


@router.get("/dashboard/{name}")
async def asset(name: str) -> Response:
    """One of the page's scripts, its style sheet or its icon."""
    if not ASSET_NAME.fullmatch(name):
        raise Problem(404, f"the dashboard has no file {name!r}")
    return _serve(name)
