"""A git smart-HTTP server on loopback (``git http-backend`` behind the stdlib server) that
wants a token, as GitHub's git endpoint does, and records each request's headers::

    with GitHttpServer(root, token="t0k3n") as server:
        url = server.url_for("origin.git")   # http://127.0.0.1:PORT/origin.git
        ...  # clone, fetch and push with GitAuth("t0k3n", url)
        assert server.requests[-1].authorization is not None

Requests without ``Authorization: Basic base64(USERNAME:TOKEN)`` (``x-access-token``
unless told) get a 401 with a
``WWW-Authenticate`` challenge. ``token`` may also be a function that says whether a token
works now (a GitHub App's installation tokens expire; a GitLab OAuth token is revoked), and
``before(method, path)``, when set, is called as each request arrives (a test's moment to
expire them: at the first push, say). Repositories are the bare ones under ``root``.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Self
from urllib.parse import urlsplit

__all__ = ["GitHttpServer", "GitRequest"]


@dataclass(frozen=True)
class GitRequest:
    """One request the server received."""

    method: str
    path: str
    authorization: str | None
    status: int


class GitHttpServer:
    """Serves the bare repositories under ``root`` to clients that send ``token``."""

    def __init__(
        self, root: Path, token: str | Callable[[str], bool], *, username: str = "x-access-token"
    ) -> None:
        self.root = root
        self.token = token
        self.username = username
        """The basic-auth user the token comes with (GitLab's is ``oauth2``)."""
        self.before: Callable[[str, str], None] | None = None
        self._lock = threading.Lock()
        self._requests: list[GitRequest] = []
        self._httpd = _Server(self)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def url_for(self, name: str) -> str:
        """The clone URL of the bare repository ``root/name``."""
        return f"{self.url}/{name}"

    @property
    def requests(self) -> list[GitRequest]:
        """Every request so far, oldest first."""
        with self._lock:
            return list(self._requests)

    def expected_authorization(self) -> str:
        """The header value that opens the door (for a fixed token)."""
        assert isinstance(self.token, str)
        pair = f"{self.username}:{self.token}".encode()
        return "Basic " + base64.b64encode(pair).decode()

    def opens(self, authorization: str | None) -> bool:
        """Whether ``authorization`` (the header's value) opens the door now."""
        if isinstance(self.token, str):
            return authorization == self.expected_authorization()
        if not authorization or not authorization.startswith("Basic "):
            return False
        try:
            pair = base64.b64decode(authorization.removeprefix("Basic ")).decode()
        except ValueError:
            return False
        username, _, token = pair.partition(":")
        return username == self.username and self.token(token)

    @staticmethod
    def token_of(request: GitRequest) -> str | None:
        """The token a request carried (None: none)."""
        if request.authorization is None or not request.authorization.startswith("Basic "):
            return None
        return (
            base64.b64decode(request.authorization.removeprefix("Basic "))
            .decode()
            .partition(":")[2]
        )

    def record(self, request: GitRequest) -> None:
        """Keep a request (called by the handler)."""
        with self._lock:
            self._requests.append(request)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, owner: GitHttpServer) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.owner = owner


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read ``requests``."""

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _body(self) -> bytes:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            chunks = []
            while size := int(self.rfile.readline().split(b";")[0], 16):
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            self.rfile.readline()
            return b"".join(chunks)
        return self.rfile.read(int(self.headers.get("content-length") or 0))

    def _serve(self) -> None:
        owner = self.server.owner
        body = self._body()
        authorization = self.headers.get("authorization")
        path = urlsplit(self.path)
        if owner.before is not None:
            owner.before(self.command, f"{path.path}?{path.query}")
        if not owner.opens(authorization):
            owner.record(GitRequest(self.command, path.path, authorization, 401))
            self._send(401, {"WWW-Authenticate": 'Basic realm="git"'}, b"Unauthorized\n")
            return
        status, headers, payload = self._backend(path.path, path.query, body)
        owner.record(GitRequest(self.command, path.path, authorization, status))
        self._send(status, headers, payload)

    def _backend(self, path: str, query: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
        env = {
            **os.environ,
            "GIT_PROJECT_ROOT": str(self.server.owner.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "REQUEST_METHOD": self.command,
            "CONTENT_TYPE": self.headers.get("content-type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "HTTP_CONTENT_ENCODING": self.headers.get("content-encoding", ""),
            "HTTP_GIT_PROTOCOL": self.headers.get("git-protocol", ""),
            "REMOTE_USER": "x-access-token",
            "REMOTE_ADDR": "127.0.0.1",
        }
        git = shutil.which("git") or "git"
        done = subprocess.run(
            [git, "http-backend"], input=body, env=env, capture_output=True, check=False
        )
        head, _, payload = done.stdout.partition(b"\r\n\r\n")
        status, headers = 200, {}
        for line in head.decode("latin-1").split("\r\n"):
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers[name] = value.strip()
        return status, headers, payload

    def _send(self, status: int, headers: dict[str, str], payload: bytes) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
