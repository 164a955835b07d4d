"""A container backend whose engine's socket nobody listens on: BackendUnavailable names the
socket and what to do, and no socket is left open (the Docker SDK leaves its own open when
a unix socket's connect fails; Python then warns wherever the garbage collector runs)."""

from __future__ import annotations

import gc
import warnings
from pathlib import Path

import pytest

from golem.core.config import DockerBackendConfig
from golem.core.errors import BackendUnavailable
from golem.sandbox.backends.docker.backend import DockerBackend


def _refusal(backend: DockerBackend) -> str:
    with pytest.raises(BackendUnavailable) as refused:
        _ = backend.api
    return str(refused.value)


def test_an_engine_nobody_listens_for_is_named_and_leaves_no_socket_open(tmp_path: Path) -> None:
    socket_path = tmp_path / "no-docker.sock"
    backend = DockerBackend(DockerBackendConfig(docker_host=f"unix://{socket_path}"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        message = _refusal(backend)
        gc.collect()
    assert str(socket_path) in message
    assert "start dockerd" in message
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []
