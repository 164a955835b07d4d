"""The server the modules of tests/attacks share for the session (tests/service/served.py):
``served``, the default configuration, unless a module defines its own."""

from tests.service.served import plain_server, served

__all__ = ["plain_server", "served"]  # fixtures
