"""What a box asks of a node: the Ray node labels golem reads, and the label selector a
box slot (a placement group's bundle) carries, so that Ray places it only on a node that
can run it.

A node says what it IS with labels fixed at ``ray start --labels`` (how MANY boxes it
holds is its ``[cluster] slot_resource``):

- ``golem-backend``: the backend its boxes run on, ``process`` (bubblewrap; the default: a
  node without the label), ``docker``, ``gvisor`` or ``microvm`` (``BACKENDS``);
- ``golem-tier``: the isolation tier whose boxes alone it holds (``container``, ``gvisor``,
  ``microvm``): a box's tier (``BoxSpec.tier``, which the server's trust policy gives it)
  is the label of the nodes it runs on; a node without it holds the default tier's
  boxes (the control plane's ``engine.backend``'s);
- ``golem-image/<name>`` = ``true``: an image it has (``image_label`` makes the name: Ray
  label keys allow neither ``/`` nor ``:`` in a name).

Ray matches a ``!in(...)`` selector on a node without the label, which is how the
defaults (no backend label, no tier) are spelled."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from typing import Any

from golem.core.config import BACKEND_TYPES, GolemConfig
from golem.core.errors import NoNodeFits
from golem.core.isolation import TIERS, IsolationTier
from golem.core.spec import BoxSpec

__all__ = [
    "BACKEND_LABEL",
    "DEFAULT_BACKEND",
    "IMAGE_PREFIX",
    "TIER_LABEL",
    "image_label",
    "node_labels",
    "selector",
    "slot_ready",
    "unplaceable",
]

BACKEND_LABEL = "golem-backend"
TIER_LABEL = "golem-tier"
IMAGE_PREFIX = "golem-image/"
HAS = "true"
"""The value of an image label."""
DEFAULT_BACKEND = "process"
BACKENDS = BACKEND_TYPES
"""The ``type`` of every backend this golem has: a node of any other than a slot's is shunned."""

LABEL_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?")
"""What Ray (as Kubernetes) takes as a label name or value."""
NOT_A_NAME = re.compile(r"[^A-Za-z0-9_.-]+")
MAX_NAME = 63


def image_label(image: str) -> str:
    """The node label key saying a node has ``image``: its name with every run of other
    characters than letters, digits, ``_.-`` made ``_`` (``golem/devbox:latest`` ->
    ``golem-image/golem_devbox_latest``); a name too long ends in a hash of the image."""
    name = NOT_A_NAME.sub("_", image).strip("_.-")
    if not LABEL_NAME.fullmatch(name):
        digest = hashlib.sha256(image.encode()).hexdigest()[:12]
        name = f"{name[: MAX_NAME - len(digest) - 1].rstrip('_.-')}-{digest}".lstrip("-")
    return IMAGE_PREFIX + name


def _none_of(values: Iterable[str]) -> str:
    return f"!in({','.join(values)})"


def selector(spec: BoxSpec, config: GolemConfig) -> dict[str, str]:
    """The Ray label selector of a slot for a box of ``spec`` made with ``config``: the
    isolation tier that serves the spec's (``golem-tier``: that tier, or for the default
    tier also a node without the label), the backend serving it there, the spec's image if
    it names one. NoTierBackend when ``config`` serves neither the tier nor a stronger one."""
    tier = config.engine.serving(spec.tier)
    backend = config.engine.tier_backends()[tier].type
    others = [name for name in BACKENDS if name != backend]
    wanted = {BACKEND_LABEL: _none_of(others) if backend == DEFAULT_BACKEND else backend}
    if tier == config.engine.default_tier:
        wanted[TIER_LABEL] = _none_of(other for other in TIERS if other != tier)
    else:
        wanted[TIER_LABEL] = tier
    if spec.image is not None:
        wanted[image_label(spec.image)] = HAS
    return wanted


def unplaceable(wanted: dict[str, str], slot_resource: str) -> NoNodeFits:
    """The error of a slot Ray finds INFEASIBLE: no node has ``wanted`` and slots."""
    shown = ", ".join(f"{name}={value}" for name, value in sorted(wanted.items()))
    return NoNodeFits(
        f"no node of the cluster can run this box: none is labelled {shown} with "
        f"{slot_resource} slots; start one with those labels (ray start --labels, "
        "docs/cluster.md) or ask for what the nodes have"
    )


async def slot_ready(slot: Any) -> None:
    """Return once Ray has placed placement group ``slot``."""
    await slot.ready()


def node_labels(
    *,
    backend: str = DEFAULT_BACKEND,
    tier: IsolationTier | None = None,
    images: Iterable[str] = (),
) -> dict[str, str]:
    """The labels a node running ``backend``, in ``tier``, with ``images``, is started
    with (``ray start --labels``)."""
    labels = {BACKEND_LABEL: backend}
    if tier is not None:
        labels[TIER_LABEL] = tier
    labels.update({image_label(image): HAS for image in images})
    return labels
