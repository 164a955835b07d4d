"""The KubeRay manifests in deploy/ agree with golem: the box nodes advertise golem's slot
resource and node label, the control plane's golem.toml loads and points at the
RayCluster's head, its secrets come from a Secret, one image (deploy/Dockerfile) runs
everywhere. No Kubernetes runs here: these checks are what can be checked without one."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.requirements import Requirement

pytest.importorskip("ray", reason="Ray is the extra golem[ray]")

from golem.cluster.boxhost import NODE_LABEL
from golem.core import load_config
from golem.core.cluster_config import ClusterConfig

ROOT = Path(__file__).parents[2]
DEPLOY = ROOT / "deploy"
CLIENT_PORT = 10001
"""Ray's client server port on the head."""


def documents() -> dict[str, Any]:
    """Every manifest document under deploy/kuberay, by kind."""
    found: dict[str, Any] = {}
    for manifest in sorted((DEPLOY / "kuberay").glob("*.yaml")):
        for document in yaml.safe_load_all(manifest.read_text()):
            assert document["kind"] not in found, document["kind"]
            found[document["kind"]] = document
    return found


def containers(pod_template: dict[str, Any]) -> list[dict[str, Any]]:
    return list(pod_template["spec"]["containers"])


def ray_version() -> str:
    found = re.search(r"^ARG RAY_VERSION=(\S+)$", (DEPLOY / "Dockerfile").read_text(), re.M)
    assert found, "deploy/Dockerfile names no RAY_VERSION"
    return found.group(1)


def test_the_manifests_hold_a_ray_cluster_and_a_control_plane() -> None:
    found = documents()
    assert sorted(found) == ["ConfigMap", "Deployment", "RayCluster", "Service"]
    assert found["RayCluster"]["apiVersion"] == "ray.io/v1"


def test_box_nodes_advertise_golems_slot_resource_and_node_label() -> None:
    cluster = documents()["RayCluster"]["spec"]
    (group,) = cluster["workerGroupSpecs"]
    params = group["rayStartParams"]
    # KubeRay puts the value on `ray start` as one shell word: '"{...}"'
    resources = json.loads(json.loads(params["resources"].strip("'")))
    assert resources[ClusterConfig().slot_resource] > 0
    key, _, value = params["labels"].partition("=")
    assert key == NODE_LABEL
    (worker,) = containers(group["template"])
    named = {env["name"]: env for env in worker["env"]}
    assert value == "$" + "GOLEM_NODE"
    assert named["GOLEM_NODE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
    assert worker["securityContext"]["privileged"] is True  # bubblewrap's namespaces
    head = cluster["headGroupSpec"]["rayStartParams"]
    assert ClusterConfig().slot_resource not in head.get("resources", "")
    assert head["num-cpus"] == "0"


def test_the_control_plane_config_loads_and_joins_the_ray_clusters_head(
    tmp_path: Path,
) -> None:
    found = documents()
    config_file = tmp_path / "golem.toml"
    config_file.write_text(found["ConfigMap"]["data"]["golem.toml"])
    config = load_config(files=[config_file])
    head_service = found["RayCluster"]["metadata"]["name"] + "-head-svc"
    assert config.cluster.ray_address == f"ray://{head_service}:{CLIENT_PORT}"
    (group,) = found["RayCluster"]["spec"]["workerGroupSpecs"]
    assert config.cluster.slot_resource in group["rayStartParams"]["resources"]
    head = containers(found["RayCluster"]["spec"]["headGroupSpec"]["template"])[0]
    assert CLIENT_PORT in [port["containerPort"] for port in head["ports"]]

    deployment = found["Deployment"]["spec"]["template"]
    (plane,) = containers(deployment)
    mount = next(m for m in plane["volumeMounts"] if m["name"] == "config")
    assert plane["command"] == ["golem", "serve", "--config", f"{mount['mountPath']}/golem.toml"]
    assert [port["containerPort"] for port in plane["ports"]] == [config.server.port]
    secret_env = {env["name"] for env in plane["env"] if "secretKeyRef" in env.get("valueFrom", {})}
    assert {"GOLEM_DATABASE_URL", config.server.admin_key_env} <= secret_env
    selector = found["Service"]["spec"]["selector"]
    assert selector.items() <= deployment["metadata"]["labels"].items()


def test_one_image_built_from_the_dockerfile_runs_everywhere() -> None:
    found = documents()
    cluster = found["RayCluster"]["spec"]
    pods = [cluster["headGroupSpec"]["template"], found["Deployment"]["spec"]["template"]]
    pods += [group["template"] for group in cluster["workerGroupSpecs"]]
    assert len({c["image"] for pod in pods for c in containers(pod)}) == 1
    assert cluster["rayVersion"] == ray_version()
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    (extra,) = pyproject["project"]["optional-dependencies"]["ray"]
    assert Requirement(extra).specifier.contains(ray_version())
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    assert re.search(r"^FROM \S+-(bookworm|trixie)\b", dockerfile, re.M)  # Debian
    assert "bubblewrap" in dockerfile
    assert '".[ray]"' in dockerfile
