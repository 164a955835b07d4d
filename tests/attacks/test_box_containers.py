"""Attacks on a box's private container engine, from inside the box: the engine is the
guest's, so whoever holds its socket is root of the guest, and no further.

- the host's engines (dockerd, Podman), their sockets, images and containers are nowhere
  in the box: no socket file, no route, and the engine that answers is another one;
- a ``--privileged`` container, even one that enters the guest init's namespaces, sees
  the guest's kernel, devices and files, never the host's;
- a container reaches nothing but the box's egress proxy, which refuses what the box's
  policy refuses (the engine's own pulls included); one on a compose network (a bridge of
  the guest's) reaches not even that.
"""

from __future__ import annotations

import io
import json
import platform
import secrets
import shlex
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from golem.core.config import MicroVMBackendConfig
from golem.sandbox import Box
from golem.sandbox.backends.microvm.assets import find_kernel
from golem.sandbox.backends.microvm.qemu import KERNEL_ARGS
from tests.conftest import CONTAINERS_TIMEOUT, SHARED_LOOP, engine_api
from tests.sandbox.nethosts import NetHosts

pytestmark = [pytest.mark.microvm, SHARED_LOOP, CONTAINERS_TIMEOUT]

BUSYBOX = Path("/bin/busybox")


@pytest.fixture
def host_container() -> Iterator[tuple[str, str, str]]:
    """A container (created, never started) and its image on the host's dockerd, both
    named by a fresh token; and that dockerd's ID. Removed afterwards."""
    token = secrets.token_hex(6)
    image, name = f"golem-test/host-only-{token}:1", f"host-only-{token}"
    with engine_api("docker") as api:
        layer = _busybox_layer()
        api.import_image_from_data(layer, repository=image.split(":", maxsplit=1)[0], tag="1")
        api.create_container(image, command=["/bin/busybox", "true"], name=name)
        try:
            yield image, name, str(api.info()["ID"])
        finally:
            api.remove_container(name, force=True)
            api.remove_image(image, force=True)


def _busybox_layer() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as layer:
        data = BUSYBOX.read_bytes()
        program = tarfile.TarInfo("bin/busybox")
        program.size, program.mode = len(data), 0o755
        layer.addfile(program, io.BytesIO(data))
    return buffer.getvalue()


@pytest.mark.docker
async def test_the_hosts_engines_sockets_images_and_containers_are_unreachable_from_the_box(
    containers_box: Box, host_container: tuple[str, str, str]
) -> None:
    image, name, host_id = host_container
    listing = await containers_box.execute(
        "docker info --format '{{.ID}}'; docker images -a --format '{{.Repository}}:{{.Tag}}'; "
        "docker ps -a --format '{{.Names}}'"
    )
    assert listing.exit_code == 0, listing.stderr_text
    lines = listing.stdout_text.splitlines()
    assert lines[0]
    assert lines[0] != host_id  # another engine answers: the guest's
    assert image not in lines
    assert name not in lines
    # The host's sockets are no files of the box, and no address of it leads out.
    code = """
import json, os, socket
out = {}
for path in ("/run/podman/podman.sock", "/var/run/podman/podman.sock",
             "/run/containerd/containerd.sock", "/run/user/0/docker.sock"):
    out[path] = os.path.exists(path)
for host, port in (("10.0.2.2", 2375), ("172.17.0.1", 2375), ("192.168.122.1", 2376),
                   ("169.254.169.254", 80), ("2001:db8::1", 2375)):
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect((host, port)); out[host] = "connected"
    except OSError as exc:
        out[host] = type(exc).__name__
print(json.dumps(out))
"""
    reach = await containers_box.execute(["python3", "-c", code])
    outcome = json.loads(reach.stdout_text)
    assert not any(value is True for value in outcome.values()), outcome
    assert "connected" not in outcome.values(), outcome
    routes = await containers_box.execute("tail -n +2 /proc/net/route | wc -l")
    assert routes.stdout_text.strip() == "0"


async def test_a_privileged_container_sees_the_guests_kernel_and_devices_never_the_hosts(
    containers_box: Box, tmp_path: Path
) -> None:
    marker = tmp_path / f"host-marker-{secrets.token_hex(6)}"
    marker.write_text("the host's\n")
    guest_release = find_kernel(MicroVMBackendConfig()).release
    in_guest_init = f"ls / | tr '\\n' ' '; echo; test -e {marker} && echo SEEN-BY-GUEST-INIT"
    script = (
        "uname -r; cat /proc/cmdline; ls /sys/block | tr '\\n' ' '; echo; "
        f"test -e /guest{marker} && echo SEEN-IN-GUEST-ROOT; "
        f"test -e {marker} && echo SEEN-IN-CONTAINER; "
        f"nsenter -t 1 -m -p -- sh -c {shlex.quote(in_guest_init + '; true')}"
    )
    privileged = ["docker", "run", "--rm", "--privileged", "--pid", "host", "--network", "host"]
    result = await containers_box.execute(
        [*privileged, "-v", "/:/guest", "golem/busybox", "sh", "-c", script]
    )
    assert result.exit_code == 0, result.stderr_text
    release, cmdline, blocks, init_root, *rest = result.stdout_text.splitlines()
    assert release == guest_release
    assert release != platform.release()
    assert cmdline.strip() == KERNEL_ARGS
    assert blocks.split() == ["vda", "vdb"]  # the guest's root disk and its engine's disk
    assert {"golem", "init", "newroot"} <= set(init_root.split())  # the guest's initramfs
    assert rest == []  # the marker: nowhere


def http_get(url: str, host: str, via: str, wait: int = 20) -> str:
    """A busybox shell line: a plain HTTP GET of ``url`` sent to ``via`` (host:port) with nc,
    printing the answer, or ``refused`` when no connection was made (within ``wait``
    seconds, where nothing answers at all)."""
    request = f"GET {url} HTTP/1.0\\r\\nHost: {host}\\r\\n\\r\\n"
    address, port = via.rsplit(":", 1)
    return f"printf '{request}' | nc -w {wait} {address} {port} || echo refused"


async def test_a_container_reaches_nothing_but_the_egress_proxy(
    containers_box: Box, net: NetHosts
) -> None:
    seen_plain, seen_internal = len(net.plain.seen), len(net.internal.seen)
    port = net.plain.port
    allowed = f"http://allowed.test:{port}/hello.txt"
    attempts = {
        "direct": http_get("/hello.txt", "allowed.test", f"127.0.0.2:{port}"),
        "gateway": http_get("/", "gateway", "10.0.2.2:80"),
        "metadata": http_get("/", "metadata", "169.254.169.254:80"),
        "allowed": http_get(allowed, f"allowed.test:{port}", "127.0.0.1:3128"),
        "denied": http_get(f"http://denied.test:{port}/", f"denied.test:{port}", "127.0.0.1:3128"),
    }
    script = "".join(f"echo '== {name}'; {line}; " for name, line in attempts.items())
    host_network = await containers_box.execute(
        ["docker", "run", "--rm", "--network", "host", "golem/busybox", "sh", "-c", script]
    )
    answers = dict(part.split("\n", 1) for part in host_network.stdout_text.split("== ")[1:])
    assert answers["direct"].strip() == "refused"  # the guest's loopback is its own
    assert answers["gateway"].strip() == "refused"  # no route off the guest
    assert answers["metadata"].strip() == "refused"
    assert "hello from the allowed host" in answers["allowed"]  # the one door
    assert " 403 " in answers["denied"].splitlines()[0]
    own_network = await containers_box.execute(
        ["docker", "run", "--rm", "golem/busybox", "sh", "-c", attempts["allowed"]]
    )
    assert own_network.stdout_text.strip() == "refused"  # a container's own network: nothing
    assert len(net.plain.seen) == seen_plain + 1  # the one allowed request, through the proxy
    assert len(net.internal.seen) == seen_internal
    refused = [event.host for event in host_network.network if not event.allowed]
    assert refused == ["denied.test"]


async def test_a_container_on_a_compose_network_reaches_only_its_network_never_out(
    containers_box: Box, net: NetHosts
) -> None:
    """A user-defined bridge (compose's default network): its gateway is the guest, which
    forwards nothing (no device beyond, no forwarding) and keeps the egress proxy on its
    own loopback; so neither the proxy nor anything past the guest answers."""
    seen_plain, seen_internal = len(net.plain.seen), len(net.internal.seen)
    port = net.plain.port
    allowed = f"http://allowed.test:{port}/hello.txt"
    attempts = {
        "direct": http_get("/hello.txt", "allowed.test", f"127.0.0.2:{port}", wait=5),
        "gateway": http_get("/", "gateway", "10.0.2.2:80", wait=5),
        "metadata": http_get("/", "metadata", "169.254.169.254:80", wait=5),
        "proxy": http_get(allowed, f"allowed.test:{port}", "127.0.0.1:3128", wait=5),
        "proxy-on-the-bridge": http_get(allowed, f"allowed.test:{port}", "$bridge:3128", wait=5),
    }
    script = "bridge=$(ip route | awk '/^default/ {print $3}'); echo '== bridge'; echo $bridge; "
    script += "".join(f"echo '== {name}'; {line}; " for name, line in attempts.items())
    result = await containers_box.execute(
        "docker network create golem-attack >/dev/null && "
        f"docker run --rm --network golem-attack golem/busybox sh -c {shlex.quote(script)}; "
        "docker network rm golem-attack >/dev/null"
    )
    answers = dict(part.split("\n", 1) for part in result.stdout_text.split("== ")[1:])
    assert answers.pop("bridge").strip(), result.stdout_text  # it has a network: a gateway
    assert {name: answer.strip() for name, answer in answers.items()} == dict.fromkeys(
        attempts, "refused"
    )
    assert len(net.plain.seen) == seen_plain
    assert len(net.internal.seen) == seen_internal
    assert result.network == []  # not even the proxy was asked


async def test_the_engines_pulls_go_through_the_proxy_and_are_refused_where_the_box_is(
    containers_box: Box, net: NetHosts
) -> None:
    result = await containers_box.execute(
        f"docker pull denied.test:{net.secure.port}/library/postgres:16"
    )
    assert result.exit_code != 0
    refused = [(event.host, event.allowed) for event in result.network]
    assert ("denied.test", False) in refused


async def test_the_box_can_neither_replace_its_engines_socket_nor_write_its_run(
    containers_box: Box,
) -> None:
    result = await containers_box.execute(
        "touch /run/planted 2>&1; rm -f /run/docker.sock 2>&1; mv /run/docker.sock /tmp/ 2>&1; "
        "stat -c '%U %a %F' /run/docker.sock; docker version --format '{{.Server.Os}}'"
    )
    lines = result.stdout_text.splitlines()
    assert all("Read-only file system" in line for line in lines[:3]), lines
    assert lines[3:] == ["root 660 socket", "linux"]
