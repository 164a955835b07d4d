"""A ``postgres:16`` service from the warm image cache: the PostgreSQL image made from
Debian's packages (``tests.checks.postgres_image``, no registry) seeded into a tenant's cache
under the key a repository whose CI declares the service computes, loaded into a microVM
box's engine by the run's own path (``RunImages``), started as the CI declares it, and
answering ``psql`` over 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

import pytest

from golem.blueprint.dependencies import image_of
from golem.blueprint.images import RunImages
from golem.checks import load_conventions, start_services
from golem.core import load_config
from golem.sandbox import Box
from tests.checks.conftest import MakeRepo
from tests.checks.postgres_image import POSTGRES_TAG, seed_postgres
from tests.conftest import CONTAINERS_BOOT_TIMEOUT, SHARED_LOOP

pytestmark = SHARED_LOOP

WORKFLOW = """\
name: ci
on: [push]
jobs:
  test:
    runs-on: ubuntu-latest
    services:
      postgres:
        image: postgres:16
        env:
          POSTGRES_PASSWORD: sesame
          POSTGRES_DB: shop
        ports:
          - 5432:5432
        options: --health-cmd "pg_isready -h 127.0.0.1 -U postgres"
    steps:
      - run: python3 -m unittest
"""


@pytest.mark.microvm
@pytest.mark.timeout(CONTAINERS_BOOT_TIMEOUT + 900)
async def test_a_postgres_16_service_from_the_warm_image_cache_accepts_psql(
    containers_box: Box, make_repo: MakeRepo, tmp_path: Path
) -> None:
    repo = make_repo({".github/workflows/ci.yml": WORKFLOW, "test_shop.py": "\n"})
    conventions = load_conventions(repo)
    config = load_config({"state_dir": str(tmp_path / "state")}, files=[])
    image = image_of(containers_box.spec, config)
    key, seeded = await seed_postgres(
        config, repo, conventions, tenant="acme", repo="acme/shop", image=image
    )
    notes: list[str] = []
    images = RunImages(
        config, repo, tenant="acme", repo="acme/shop", base="main", note=notes.append
    )
    keys = await images.keys(conventions, containers_box)
    assert keys is not None
    try:
        loaded = await images.warm(containers_box, keys)
        failed = await start_services(containers_box, conventions.services)
        psql = await containers_box.execute(
            "docker exec -e PGPASSWORD=sesame golem-service-postgres "
            "psql -h 127.0.0.1 -U postgres -d shop -tAc 'select 1'"
        )
    finally:
        await containers_box.execute(
            f"docker rm -f golem-service-postgres; docker image rm -f {POSTGRES_TAG}"
        )

    assert seeded.tags == [POSTGRES_TAG]
    assert loaded == key, notes
    assert failed == {}
    assert psql.stdout_text.strip() == "1", psql.stderr_text
