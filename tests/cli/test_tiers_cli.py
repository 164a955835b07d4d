"""`golem doctor` tries each backend with a real box and says which work here, how fast
their box started, whose kernel it runs and why the others do not; `golem exec --tier`
asks for an isolation tier, refused with what to configure where this host has none.

The gvisor backend works here and runs a kernel of its own; so does the microvm backend,
whose guest the doctor boots (under TCG where this host's KVM guests do not boot: it says
which accelerator it got)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from golem.core import load_config
from golem.sandbox import LocalEngine
from golem.sandbox.backends.gvisor.runsc import PLATFORMS
from tests.cli.invoke import golem
from tests.conftest import microvm_accel, microvm_image

pytestmark = [pytest.mark.bwrap, pytest.mark.gvisor]


def test_the_doctor_starts_a_box_of_each_backend_and_says_why_the_others_do_not_work(
    golem_env: dict[str, str],
) -> None:
    absent = {**golem_env, "DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    wanted = ("process", "docker", "gvisor")
    done = golem(
        absent, "doctor", "--json", *(arg for name in wanted for arg in ("--backend", name))
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    backends = {probe["name"]: probe for probe in found["backends"]}
    assert list(backends) == list(wanted)
    process = backends["process"]
    assert (process["works"], process["tier"]) == (True, "container")
    assert process["start_seconds"] > 0
    assert (process["kernel"], process["own_kernel"]) == (os.uname().release, False)
    docker = backends["docker"]
    assert not docker["works"]
    assert "/nonexistent/docker.sock" in docker["why_not"]
    gvisor = backends["gvisor"]
    assert (gvisor["works"], gvisor["tier"], gvisor["why_not"]) == (True, "gvisor", None)
    assert gvisor["start_seconds"] > 0
    assert gvisor["kernel"] != os.uname().release
    assert gvisor["own_kernel"] is True
    assert found["tiers"]["container"] == "process (engine.backend)"
    assert found["tiers"]["microvm"] == "no backend: boxes refused"  # none configured


@pytest.mark.microvm
def test_the_doctor_boots_a_microvm_whose_kernel_is_its_own_and_says_its_accelerator(
    golem_env: dict[str, str],
) -> None:
    microvm_image()  # golem's devbox, where the backend looks for it (bootstrapped once)
    done = golem(golem_env, "doctor", "--json", "--backend", "microvm")
    assert done.returncode == 0, done.stderr
    (microvm,) = json.loads(done.stdout)["backends"]
    assert (microvm["name"], microvm["tier"]) == ("microvm", "microvm")
    assert (microvm["works"], microvm["why_not"]) == (True, None)
    assert microvm["start_seconds"] > 0  # a cold guest: no pool in the doctor
    assert microvm["kernel"] != os.uname().release
    assert microvm["own_kernel"] is True
    assert microvm["accel"] == microvm_accel()  # tcg where this host's KVM guests do not boot


def test_the_doctor_refuses_a_backend_it_does_not_know_naming_those_it_does(
    golem_env: dict[str, str],
) -> None:
    done = golem(golem_env, "doctor", "--backend", "kata")
    assert done.returncode == 2
    known = b"process, docker, podman, gvisor, docker+runsc, podman+runsc, microvm"
    assert b"--backend kata: golem knows " + known in done.stderr


def test_exec_asks_for_a_tier_and_one_no_backend_serves_is_refused_saying_what_to_configure(
    golem_env: dict[str, str],
) -> None:
    served = golem(golem_env, "exec", "--tier", "container", "--", "echo", "boxed")
    assert (served.returncode, served.stdout) == (0, b"boxed\n")
    refused = golem(golem_env, "exec", "--tier", "microvm", "--", "true")
    assert refused.returncode == 2
    assert b"[engine.tiers.microvm]" in refused.stderr
    wrong = golem(golem_env, "exec", "--tier", "untrusted", "--", "true")
    assert wrong.returncode == 2
    assert b"tier" in wrong.stderr


def test_the_doctor_warns_of_a_tier_served_by_a_weaker_backend(
    golem_env: dict[str, str],
    tmp_path: Path,
) -> None:
    config = tmp_path / "golem.toml"
    config.write_text('[engine.tiers.microvm]\ntype = "process"\n')
    done = golem(golem_env, "doctor", "--backend", "process", "--config", str(config))
    assert done.returncode == 0, done.stderr
    shown = " ".join(done.stdout.decode().split())
    assert "tier microvm: process (engine.tiers.microvm)" in shown
    assert "tier gvisor: served by microvm" in shown
    assert "warning: engine.tiers.microvm: a process backend isolates as container" in shown


def test_exec_json_says_the_runsc_platform_and_flags_golem_chose(
    golem_env: dict[str, str],
) -> None:
    done = golem(golem_env, "exec", "--backend", "gvisor", "--json", "--", "true")
    assert done.returncode == 0, done.stderr
    isolation = json.loads(done.stdout)["isolation"]
    assert (isolation["tier"], isolation["backend"]) == ("gvisor", "gvisor")
    assert isolation["platform"] in PLATFORMS
    assert f"--platform={isolation['platform']}" in isolation["flags"]
    assert {"--rootless", "--network=none"} <= set(isolation["flags"])


async def test_sessions_ls_shows_a_gvisor_boxs_platform_and_its_json_the_flags(
    golem_env: dict[str, str],
) -> None:
    settings = {
        "state_dir": golem_env["GOLEM_STATE_DIR"],
        "engine": {"backend": {"type": "gvisor"}},
    }
    async with LocalEngine(load_config(settings, files=[])) as engine, engine.session() as box:
        assert box.isolation is not None
        listed = await asyncio.to_thread(golem, golem_env, "sessions", "ls")
        shown = await asyncio.to_thread(golem, golem_env, "sessions", "ls", "--json")
    row = next(line for line in listed.stdout.decode().splitlines() if box.id in line)
    assert f"gvisor ({box.isolation.platform})" in row
    (info,) = json.loads(shown.stdout)
    assert info["isolation"]["flags"] == box.isolation.flags
    assert f"--platform={box.isolation.platform}" in info["isolation"]["flags"]
