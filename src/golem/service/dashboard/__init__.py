"""The web dashboard: one static page (HTML, JavaScript and CSS shipped in this package, no
build step, nothing fetched from elsewhere) that talks to the API with the user's key, and
the one read endpoint it needs that the API lacks (a run's diff).

``router`` serves both; ``create_app`` includes it.
"""

from __future__ import annotations

from fastapi import APIRouter

from golem.service.dashboard import diff, pages

__all__ = ["router"]

router = APIRouter()
router.include_router(pages.router)
router.include_router(diff.router)
