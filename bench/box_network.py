"""A filtered box's way out, end to end: box -> supervisor bridge -> egress proxy -> upstream.

    .venv/bin/python bench/box_network.py [--size-mb 100] [--downloads 5] [--burst 300] [--json]

An upstream HTTP server on 127.0.0.2 (a body of ``--size-mb`` MB, and a small one), one
filtered bubblewrap box allowed to reach it (``allow_cidrs``), and in the box:

* throughput of ``--downloads`` downloads of the big body with curl (through the proxy's
  plain-HTTP relay), as curl reports it;
* a burst: ``--burst`` requests opened at once (half plain, half CONNECT) by one Python
  process, timed in the box from the first connect to the last answer, and how many were
  answered (a package manager's install opens hundreds of connections like this).

Compare two commits by running it with PYTHONPATH pointing at each one's src.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from golem.core import load_config
from golem.sandbox import LocalEngine

ADDRESS = "127.0.0.2"
BURST = """
import asyncio, os, sys, time
from urllib.parse import urlsplit
proxy = urlsplit(os.environ["http_proxy"])
target, count = sys.argv[1], int(sys.argv[2])
async def one(i):
    reader, writer = await asyncio.open_connection(proxy.hostname, proxy.port)
    if i % 2:
        writer.write(f"GET http://{target}/small HTTP/1.1\\r\\nHost: {target}\\r\\n\\r\\n".encode())
    else:
        writer.write(f"CONNECT {target} HTTP/1.1\\r\\n\\r\\n".encode())
        await reader.readuntil(b"\\r\\n\\r\\n")
        writer.write(f"GET /small HTTP/1.1\\r\\nHost: {target}\\r\\n\\r\\n".encode())
    data = await reader.read()
    writer.close()
    return data.endswith(b"small")
async def main():
    start = time.perf_counter()
    done = await asyncio.gather(*(one(i) for i in range(count)), return_exceptions=True)
    print(sum(d is True for d in done), time.perf_counter() - start)
asyncio.run(main())
"""


def serve(size: int) -> ThreadingHTTPServer:
    big = b"x" * size

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = big if self.path == "/big" else b"small"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer((ADDRESS, 0), Handler)
    server.request_queue_size = 1024
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


async def measure(options: argparse.Namespace) -> dict[str, Any]:
    server = serve(options.size_mb * 1024 * 1024)
    port = int(server.server_address[1])
    target = f"{ADDRESS}:{port}"
    with tempfile.TemporaryDirectory() as state:
        config = load_config({"state_dir": state}, files=[])
        egress = {"allow_cidrs": [f"{ADDRESS}/32"], "ports": [port]}
        async with LocalEngine(config) as engine:
            spec = engine.spec(network="filtered", egress=egress, timeout=300)
            async with engine.session(spec) as box:
                speeds = []
                for _ in range(options.downloads):
                    curl = f"curl -sS -o /dev/null -w '%{{speed_download}}' http://{target}/big"
                    result = await box.execute(curl)
                    speeds.append(float(result.stdout_text) / 1024**2)
                burst = await box.execute(["python3", "-c", BURST, target, str(options.burst)])
    server.shutdown()
    answered, seconds = burst.stdout_text.split() or ["0", "nan"]
    return {
        "download MB/s p50": statistics.median(speeds),
        "download MB/s min": min(speeds),
        "burst": options.burst,
        "burst answered": int(answered),
        "burst seconds": float(seconds),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=100)
    parser.add_argument("--downloads", type=int, default=5)
    parser.add_argument("--burst", type=int, default=300)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    figures = asyncio.run(measure(options))
    if options.json:
        print(json.dumps(figures, indent=2))
        return
    for name, value in figures.items():
        print(f"{name}: {value:.1f}" if isinstance(value, float) else f"{name}: {value}")


if __name__ == "__main__":
    main()
