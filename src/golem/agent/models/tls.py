"""One TLS context for every call of this process to a model provider.

Each call opens its own SDK client (a model is shared by tasks on one loop and by
successive ``asyncio.run`` calls alike); building a client's context reads and parses the
system's CA bundle, 30-60 ms of CPU a call. The context is the same for every call, and an
``ssl.SSLContext`` may serve many connections at once, so it is built once. The
environment's trust settings (``SSL_CERT_FILE``, ``SSL_CERT_DIR``) are read then.
"""

from __future__ import annotations

import functools
import ssl

import httpx2

__all__ = ["provider_tls"]


@functools.cache
def provider_tls() -> ssl.SSLContext:
    """The TLS context the SDKs' HTTP clients verify providers with."""
    return httpx2.create_ssl_context()
