"""Images: bootstrapped from Debian's packages and built from recipes, skipped by hash."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from golem.core import ImageNotFound, ImageRecipe, SandboxError
from golem.sandbox import Engine
from golem.sandbox.image_build import build_image, recipe_script
from golem.sandbox.images import bootstrap, image_hash

pytestmark = pytest.mark.docker


@pytest.fixture
def client() -> Iterator[docker.DockerClient]:
    engine = docker.DockerClient(version="auto")
    yield engine
    engine.close()


@pytest.fixture
def backend() -> str:
    return "docker"


def test_recipe_script_quotes_what_it_is_given() -> None:
    script = recipe_script(ImageRecipe(tag="t", install=["git", "pip:pytest", "bad; rm -rf /"]))
    assert "apt-get install -y -qq --no-install-recommends git 'bad; rm -rf /'" in script
    assert "pip install --no-cache-dir --break-system-packages pytest" in script


def test_recipe_with_an_unknown_installer_is_refused() -> None:
    with pytest.raises(SandboxError, match="pip:NAME / npm:NAME"):
        recipe_script(ImageRecipe(tag="t", install=["gem:rails"]))


async def test_bootstrap_is_skipped_when_its_hash_exists(docker_image: str) -> None:
    with docker.APIClient(version="auto") as api:
        again = await bootstrap("devbox", api=api)
    assert not again.built
    assert again.hash == image_hash("devbox")
    assert again.tag == docker_image


async def test_a_recipe_builds_once_and_its_image_runs(
    client: docker.DockerClient, docker_image: str, engine: Engine
) -> None:
    nonce = uuid.uuid4().hex  # a recipe no earlier run has built
    recipe = ImageRecipe(
        tag=f"golem-test/recipe:{nonce[:8]}", base=docker_image, install=["cowsay"],
        setup=f"echo made-by-recipe > /etc/golem-recipe # {nonce}",
    )  # fmt: skip
    changed_recipe = recipe.model_copy(update={"setup": f"true # {nonce}", "tag": "t:" + nonce[:8]})
    try:
        first = await build_image(client, recipe)
        second = await build_image(client, recipe)
        changed = await build_image(client, changed_recipe)
        assert first.built
        assert (second.built, second.hash) == (False, first.hash)
        assert changed.built
        assert changed.hash != first.hash
        result = await engine.execute(
            "cat /etc/golem-recipe; /usr/games/cowsay hi | head -2", engine.spec(image=recipe.tag)
        )
        assert result.stdout_text.splitlines()[:2] == ["made-by-recipe", " ____"]
    finally:
        for tag in (recipe.tag, changed_recipe.tag):
            with contextlib.suppress(docker.errors.ImageNotFound):
                client.images.remove(tag, force=True)


async def test_a_build_trusts_the_hosts_cas_and_the_image_keeps_none_of_it(
    client: docker.DockerClient, docker_image: str, engine: Engine
) -> None:
    """Behind a TLS-inspecting gateway, pip and npm in a build need the host's CAs: the
    build sees the host's bundle through the usual variables; the image keeps neither."""
    nonce = uuid.uuid4().hex
    recipe = ImageRecipe(
        tag=f"golem-test/trust:{nonce[:8]}", base=docker_image,
        setup='test -s "$SSL_CERT_FILE" && test "$PIP_CERT" = "$NODE_EXTRA_CA_CERTS" && '
        f"echo trusted > /etc/golem-trust # {nonce}",
    )  # fmt: skip
    try:
        await build_image(client, recipe)
        image_env = client.images.get(recipe.tag).attrs["Config"]["Env"] or []
        assert not [v for v in image_env if v.startswith(("SSL_CERT_FILE", "PIP_CERT"))]
        result = await engine.execute(
            "cat /etc/golem-trust; ls /tmp/golem-host-ca.crt", engine.spec(image=recipe.tag)
        )
        assert result.stdout_text == "trusted\n"
        assert "No such file" in result.stderr_text
    finally:
        with contextlib.suppress(docker.errors.ImageNotFound):
            client.images.remove(recipe.tag, force=True)


async def test_a_failing_recipe_says_why(client: docker.DockerClient, docker_image: str) -> None:
    recipe = ImageRecipe(
        tag="golem-test/broken:1", base=docker_image, setup="echo nope >&2; exit 3"
    )
    with pytest.raises(SandboxError, match=r"exit 3.*nope"):
        await build_image(client, recipe)


async def test_a_missing_base_is_a_clear_error(client: docker.DockerClient) -> None:
    with pytest.raises(ImageNotFound, match="golem image bootstrap"):
        await build_image(client, ImageRecipe(tag="x:1", base="golem-test/absent:0"))


def test_golem_setup_builds_the_images_of_golem_toml(docker_image: str, tmp_path: Path) -> None:
    (tmp_path / "golem.toml").write_text(
        f'[[images]]\ntag = "golem-test/from-toml:1"\nbase = "{docker_image}"\n'
        'setup = "echo toml > /etc/golem-toml"\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOLEM_")}
    env |= {"GOLEM_STATE_DIR": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path)}
    run = [sys.executable, "-m", "golem"]
    done = subprocess.run([*run, "setup"], cwd=tmp_path, env=env, capture_output=True, check=False)
    assert done.returncode == 0, done.stderr
    assert b"golem-test/from-toml:1" in done.stdout
    listed = subprocess.run(
        [*run, "image", "ls", "--json"], env=env, capture_output=True, check=True
    )
    try:
        assert "golem-test/from-toml:1" in {row["tag"] for row in json.loads(listed.stdout)}
    finally:
        with docker.APIClient(version="auto") as api:
            api.remove_image("golem-test/from-toml:1", force=True)
