"""The node labels a box's slot asks for (no Ray needed: the selector is plain data)."""

from __future__ import annotations

import re
from pathlib import Path

from golem.cluster.placement import image_label, node_labels, selector
from golem.core import load_config

RAY_LABEL_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?")
"""What Ray 2.60 takes as a label key's name (ray._private.label_utils.LABEL_REGEX)."""


def test_an_image_label_is_a_label_key_ray_takes() -> None:
    assert image_label("golem/devbox:latest") == "golem-image/golem_devbox_latest"
    long = "registry.example.com/team/" + "x" * 80 + ":1"
    named = image_label(long).removeprefix("golem-image/")
    assert RAY_LABEL_NAME.fullmatch(named)
    assert named != image_label(long[:-1] + "2").removeprefix("golem-image/")


def test_a_slot_asks_for_the_backend_the_tier_and_the_image(tmp_path: Path) -> None:
    policies = {"user": {"tier": "untrusted"}}
    config = load_config({"state_dir": str(tmp_path), "server": {"policies": policies}}, files=[])
    untiered = selector(config.engine.defaults, config)
    assert untiered == {"golem-backend": "!in(docker)", "golem-tier": "!in(untrusted)"}
    spec = config.engine.defaults.model_copy(
        update={"image": "golem/devbox:latest", "labels": {"golem.tier": "untrusted"}}
    )
    assert selector(spec, config) == {
        "golem-backend": "!in(docker)",
        "golem-tier": "untrusted",
        "golem-image/golem_devbox_latest": "true",
    }
    docker = load_config(
        {"state_dir": str(tmp_path), "engine": {"backend": {"type": "docker"}}}, files=[]
    )
    assert selector(docker.engine.defaults, docker) == {"golem-backend": "docker"}
    assert node_labels(backend="docker", tier="t", images=["a:1"]) == {
        "golem-backend": "docker",
        "golem-tier": "t",
        "golem-image/a_1": "true",
    }
