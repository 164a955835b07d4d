"""Where the CI's web service answers, once it does."""

import time
import urllib.request

URL = "http://127.0.0.1:18082/"


def ready_url() -> str:
    for _ in range(600):
        try:
            urllib.request.urlopen(URL, timeout=1).close()
            return URL
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"no service at {URL}")
