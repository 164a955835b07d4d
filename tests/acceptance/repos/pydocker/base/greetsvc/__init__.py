"""A client of the greeting service."""

import urllib.request


def fetch_greeting(url: str) -> str:
    """The greeting the service at ``url`` serves."""
    with urllib.request.urlopen(url, timeout=10) as answer:
        return answer.read().decode()
