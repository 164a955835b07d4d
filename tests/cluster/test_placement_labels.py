"""The node labels a box's slot asks for (no Ray needed: the selector is plain data)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import pytest

from golem.cluster.placement import BACKENDS, image_label, node_labels, selector
from golem.core import BackendConfig, load_config
from golem.core.errors import NoTierBackend
from tests.core.isolation import RUNSC

RAY_LABEL_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?")
"""What Ray 2.60 takes as a label key's name (ray._private.label_utils.LABEL_REGEX)."""


def test_an_image_label_is_a_label_key_ray_takes() -> None:
    assert image_label("golem/devbox:latest") == "golem-image/golem_devbox_latest"
    long = "registry.example.com/team/" + "x" * 80 + ":1"
    named = image_label(long).removeprefix("golem-image/")
    assert RAY_LABEL_NAME.fullmatch(named)
    assert named != image_label(long[:-1] + "2").removeprefix("golem-image/")


def test_a_slot_asks_for_the_tier_the_backend_serving_it_and_the_image(tmp_path: Path) -> None:
    tiers = {"gvisor": {"type": "docker", **RUNSC}}
    config = load_config({"state_dir": str(tmp_path), "engine": {"tiers": tiers}}, files=[])
    default = selector(config.engine.defaults, config)  # the default tier: no label, or its own
    assert default == {
        "golem-backend": "!in(docker,gvisor,microvm)",
        "golem-tier": "!in(gvisor,microvm)",
    }
    spec = config.engine.defaults.model_copy(
        update={"image": "golem/devbox:latest", "tier": "gvisor"}
    )
    assert selector(spec, config) == {
        "golem-backend": "docker",
        "golem-tier": "gvisor",
        "golem-image/golem_devbox_latest": "true",
    }
    docker = load_config(
        {"state_dir": str(tmp_path), "engine": {"backend": {"type": "docker"}}}, files=[]
    )
    assert selector(docker.engine.defaults, docker) == {
        "golem-backend": "docker",
        "golem-tier": "!in(gvisor,microvm)",
    }
    assert node_labels(backend="docker", tier="gvisor", images=["a:1"]) == {
        "golem-backend": "docker",
        "golem-tier": "gvisor",
        "golem-image/a_1": "true",
    }


def test_a_slot_for_a_tier_the_control_plane_cannot_serve_is_refused_before_ray_is_asked(
    tmp_path: Path,
) -> None:
    config = load_config({"state_dir": str(tmp_path)}, files=[])
    spec = config.engine.defaults.model_copy(update={"tier": "microvm"})
    with pytest.raises(NoTierBackend, match=r"\[engine\.tiers\.microvm\]"):
        selector(spec, config)


def backend_types() -> list[str]:
    """The ``type`` of every member of the ``BackendConfig`` union (every backend golem has)."""
    (union,) = [arg for arg in get_args(BackendConfig) if get_args(arg)]
    return [get_args(member)[0].model_fields["type"].default for member in get_args(union)]


def test_a_slot_of_one_backend_never_asks_for_a_node_of_another(tmp_path: Path) -> None:
    """Whatever backend serves the default tier, its slots shun every other backend's node:
    a process slot on a gVisor node would run its box on the node's gVisor."""
    known = backend_types()
    assert {"process", "docker", "gvisor", "microvm"} <= set(known)
    assert sorted(BACKENDS) == sorted(known)  # none this golem lacks, none missing
    for backend in known:
        config = load_config(
            {"state_dir": str(tmp_path), "engine": {"backend": {"type": backend}}}, files=[]
        )
        wanted = selector(config.engine.defaults, config)["golem-backend"]
        if backend == "process":  # the default: a node without the label too
            assert wanted == f"!in({','.join(b for b in known if b != 'process')})"
        else:
            assert wanted == backend


def test_a_gvisor_tier_served_by_the_gvisor_backend_asks_for_a_gvisor_node(
    tmp_path: Path,
) -> None:
    tiers = {"gvisor": {"type": "gvisor"}}
    config = load_config({"state_dir": str(tmp_path), "engine": {"tiers": tiers}}, files=[])
    spec = config.engine.defaults.model_copy(update={"tier": "gvisor"})
    assert selector(spec, config) == {"golem-backend": "gvisor", "golem-tier": "gvisor"}
    assert node_labels(backend="gvisor", tier="gvisor") == {
        "golem-backend": "gvisor",
        "golem-tier": "gvisor",
    }
