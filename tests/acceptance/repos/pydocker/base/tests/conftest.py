"""The greeting service, built and started with the docker SDK as testcontainers would:
an image from golem/busybox, its container on the engine's host network."""

import io
import time
import urllib.request

import docker
import pytest

PORT = 18081
DOCKERFILE = b"""FROM golem/busybox:latest
CMD ["sh", "-c", "mkdir -p /www && echo hello > /www/index.html && exec httpd -f -p 18081 -h /www"]
"""


@pytest.fixture(scope="session")
def service_url():
    client = docker.from_env()
    image, _ = client.images.build(fileobj=io.BytesIO(DOCKERFILE), tag="greet-service:test")
    container = client.containers.run(image.id, detach=True, network_mode="host")
    url = f"http://127.0.0.1:{PORT}/"
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(url, timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        yield url
    finally:
        container.remove(force=True)
