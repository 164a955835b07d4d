"""A client of the greeting service the CI runs beside the tests."""

import urllib.request


def fetch(url: str) -> str:
    """The greeting the service at ``url`` serves."""
    with urllib.request.urlopen(url, timeout=10) as answer:
        return answer.read().decode()
