"""Docker for the reduction's container tests: the same rule as the other container tests (FAIL under CI=true,
skip elsewhere), the same fixtures."""
from tests.harness.orchestration.docker.conftest import base_image, docker_client, ort_images  # noqa: F401
