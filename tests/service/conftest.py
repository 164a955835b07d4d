"""The servers the modules of tests/service share for the session (tests/service/served.py):
``served`` (the default configuration, unless a module defines its own) and
``unpooled_server``."""

from tests.service.served import plain_server, served, unpooled_server

__all__ = ["plain_server", "served", "unpooled_server"]  # fixtures
