"""The services a repository's CI declares, started in a box with a container engine of its
own (one microVM guest, the session's containers box): a check reaches each on the box's
loopback, at the port the CI file names."""

from __future__ import annotations

import pytest

from golem.checks import Service, detect_conventions, run_check, start_services
from golem.sandbox import Box
from tests.checks.conftest import MakeRepo
from tests.conftest import CONTAINERS_TIMEOUT, SHARED_LOOP

pytestmark = SHARED_LOOP

# GitLab's services may name their command; golem's base image (its CMD is `sh`) serves
# with busybox's httpd, its health command asking itself for the page.
PIPELINE = """\
test:
  services:
    - name: golem/busybox:latest
      alias: web
      command:
        - sh
        - -c
        - >-
          mkdir -p /www && echo served-by-$GREETING > /www/index.html
          && exec httpd -f -p 18080 -h /www
      variables:
        GREETING: web-service
  script:
    - python3 -m unittest -v test_web_service
"""
TEST = """\
import unittest
import urllib.request


class WebServiceTest(unittest.TestCase):
    def test_the_service_answers(self) -> None:
        page = urllib.request.urlopen("http://localhost:18080/").read().decode()
        print(page)
        self.assertIn("served-by-web-service", page)
"""


@pytest.mark.microvm
@CONTAINERS_TIMEOUT
async def test_a_declared_service_runs_in_the_box_and_its_check_reaches_it(
    containers_box: Box, make_repo: MakeRepo
) -> None:
    repo = make_repo({".gitlab-ci.yml": PIPELINE, "test_web_service.py": TEST}, use_git=False)
    conventions = detect_conventions(repo)
    await containers_box.put_file("test_web_service.py", TEST.encode())
    [service] = conventions.services
    service = service.model_copy(
        update={"ports": [18080], "health": "wget -q -O /dev/null http://127.0.0.1:18080/"}
    )

    failed = await start_services(containers_box, [service])
    result = await run_check(
        containers_box, "test", conventions.test[0], live=lambda stream, text: None
    )

    assert failed == {}
    assert result.passed, result.output_tail
    assert "test_the_service_answers" in result.output_tail


COMPOSE = """\
services:
  web:
    image: golem/busybox:latest
    command:
      - sh
      - -c
      - mkdir -p /www && echo served-by-compose > /www/index.html && exec httpd -f -p 8080 -h /www
    ports: ["18091:8080"]
  client:
    image: golem/busybox:latest
    command: ["sleep", "600"]
"""
WAIT_FOR_WEB = (
    "i=0; until curl -fsS http://127.0.0.1:18091/; do i=$((i+1)); "
    '[ $i -lt 600 ] || { echo "no answer on 18091" >&2; exit 1; }; sleep 0.2; done'
)


@pytest.mark.microvm
@CONTAINERS_TIMEOUT
async def test_a_compose_project_comes_up_in_the_box_its_services_reached_by_name_and_port(
    containers_box: Box,
) -> None:
    """Both spellings: ``docker compose`` (the CLI plugin golem's image has) brings the
    project up and down, ``docker-compose`` (compose v1 itself) runs in it."""
    await containers_box.put_file("golem-compose/compose.yaml", COMPOSE.encode())
    up = await containers_box.execute("cd golem-compose && docker compose up -d 2>&1")
    try:
        by_port = await containers_box.execute(WAIT_FOR_WEB)
        by_name = await containers_box.execute(
            "cd golem-compose && docker-compose exec -T client wget -q -O - http://web:8080/ 2>&1"
        )
    finally:
        down = await containers_box.execute("cd golem-compose && docker compose down -t 1 2>&1")

    assert up.exit_code == 0, up.stdout_text
    assert by_port.stdout_text.strip() == "served-by-compose", by_port.stderr_text
    assert by_name.stdout_text.strip() == "served-by-compose", by_name.stdout_text
    assert down.exit_code == 0, down.stdout_text


@pytest.mark.microvm
@CONTAINERS_TIMEOUT
async def test_a_service_not_ready_by_its_deadline_fails_with_what_to_look_at(
    containers_box: Box,
) -> None:
    """The limit is a deadline in seconds, not a count of probes: one of 0 s is past before
    the first probe, whatever the service does, and says what to look at."""
    service = Service(
        name="never",
        image="golem/busybox:latest",
        command=["sh", "-c", "echo starting; exec sleep 600"],
        health="false",
        origin=".gitlab-ci.yml",
    )

    failed = await start_services(containers_box, [service], ready_within=0)

    assert list(failed) == ["never"]
    assert failed["never"].startswith(
        "golem/busybox:latest: not ready within 0 s: look at its health command and its logs"
    ), failed
