"""A box's private container engine: which boxes may have one, and how commands reach it.

Only a microVM box has one: dockerd runs as root of the box's guest kernel, outside the
box's own namespaces but inside its VM, so what a container does (``--privileged`` too)
stays in that guest. Every other backend would hand the agent the host's kernel (or, with
the host's socket, the host itself), so each refuses ``containers`` and says why.
"""

from __future__ import annotations

from golem.core.errors import InvalidRequest
from golem.core.spec import BoxSpec

__all__ = ["ENGINE_SOCKET", "GOLEM_IMAGES", "check_containers", "engine_env"]

ENGINE_SOCKET = "/run/docker.sock"
"""The engine's socket in the box (also /var/run/docker.sock, Docker's default path), where
the guest's init has dockerd listen (``backends/microvm/engine.sh``; its log is
/run/golem-engine.log, and every engine starts with golem/busybox:latest imported)."""
CONTAINER_BACKENDS = frozenset({"microvm"})
GOLEM_IMAGES = frozenset({"golem/busybox:latest"})
"""The images golem places in every engine itself: never kept in the image cache."""


def check_containers(spec: BoxSpec, backend: str) -> None:
    """Refuse a spec asking for containers from a backend that cannot give them."""
    if spec.containers and backend not in CONTAINER_BACKENDS:
        raise InvalidRequest(
            f"containers: the {backend} backend cannot run a private container engine (it "
            "would share this host's kernel, or its engine); only the microvm tier can: ask "
            "for --tier microvm (or --backend microvm), or leave containers off"
        )


def engine_env(spec: BoxSpec) -> dict[str, str]:
    """The variables every command of a box with containers gets."""
    return {"DOCKER_HOST": f"unix://{ENGINE_SOCKET}"} if spec.containers else {}
