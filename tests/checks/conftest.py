"""Real repositories in temporary directories (files written, git initialised, committed),
as the context tests make them."""

from tests.context.conftest import MakeRepo, make_repo

__all__ = ["MakeRepo", "make_repo"]
