"""Fingerprints that decide whether a nightly may carry a cell's earlier record over instead of running it again.

- the case library's *source* (the ``cases`` package, the generator library versions and the engine prediction's
  rules, which write each variant's predicted engine into the index): generated cases are a pure function of it
  (generation is deterministic), so a run reuses the cases generated for the same source;
- a cell's *inputs*: the content hashes of its generated model and data, its parameters, knobs, tolerance and
  expected nodes with the precision each is asked for (not its description or upstream claims, which change no
  observation);
- a target's *environment*: the target's definition, the harness's worker code, and what identifies the library
  under test: the image id for a docker target, the observed library versions, CPU, GPU and driver for a local one.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import subprocess
from pathlib import Path
from typing import Any, Callable

from harness.matrix import Target
from harness.worker import CONTAINER_PACKAGES
from harness.worker.environment import nvidia_gpus, package_version

CELL_INPUT_FIELDS = ("mode", "opset", "params", "knobs", "expected_int8", "expected_precision", "tolerance",
                     "inputs", "outputs", "calibration_batches", "model_sha256", "data_sha256", "log_signatures")
GENERATOR_PACKAGES = ("numpy", "onnx", "onnx-graphsurgeon")
# The rules that write each variant's predicted engine into the generated index (read as files, never imported).
ENGINE_PREDICTION = Path("scan") / "engine_prediction"
ENGINE_FACTS = ("Architecture", "KernelVersion", "OperatingSystem")  # docker info: the host under the container


def sha256_of(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def _tree_sha256(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def package_dir(name: str) -> Path:
    """The directory of a top-level package of this project, found without importing it."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"package {name!r} is not importable here; install the project (pip install -e .)")
    return Path(next(iter(spec.submodule_search_locations)))


def library_sha256() -> str:
    """The case library's source and the versions of what generates it (see the module docstring)."""
    import platform

    versions = {name: package_version(name) for name in GENERATOR_PACKAGES}
    return sha256_of({"cases": _tree_sha256(package_dir("cases")), "versions": versions,
                      "python": platform.python_version_tuple()[:2],
                      "engine_rules": _tree_sha256(package_dir("harness") / ENGINE_PREDICTION)})


def worker_sha256() -> str:
    """The harness code that runs cells and writes records (the packages a worker container holds)."""
    return sha256_of({folder: _tree_sha256(package_dir("harness") / folder) for folder in CONTAINER_PACKAGES})


def library_revision(library_sha: str) -> str:
    """The git revision of the checkout holding the case library (``-dirty.<library hash>`` with local edits), or
    ``lib.<library hash>`` outside a git checkout."""
    cases_dir = package_dir("cases")

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(cases_dir), *args], capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    revision = git("rev-parse", "--short=12", "HEAD")
    if not revision:
        return f"lib.{library_sha[:12]}"
    if git("status", "--porcelain", "--", ".", *(f"../harness/{folder}" for folder in CONTAINER_PACKAGES)):
        return f"{revision}-dirty.{library_sha[:8]}"
    return revision


def cell_inputs_sha256(cell: dict[str, Any]) -> str:
    """What a cell's observation depends on in the case library (see the module docstring)."""
    return sha256_of({"case": cell["case"], "variant": cell["variant"],
                      **{field: cell.get(field) for field in CELL_INPUT_FIELDS}})


def environment_sha256(target: Target, worker_sha: str, progress: Callable[[str], None] = print) -> str | None:
    """The target's environment fingerprint, or None when it cannot be taken (nothing is then carried over).

    Local targets import their backend here (the run does so anyway). Docker targets need their image: a missing
    one is built now, as the run would build it.
    """
    identity = {"target": target.to_job(), "worker": worker_sha}
    if not target.available:
        return sha256_of(identity)
    try:
        if target.runner == "local":
            return sha256_of({**identity, "observed": _local_environment(target)})
        return sha256_of({**identity, **_docker_environment(target, progress)})
    except Exception as err:  # noqa: BLE001 - any failure only means "run it again"; the run reports the cause
        progress(f"{target.id}: environment fingerprint not taken ({type(err).__name__}: {err}); every cell runs")
        return None


def _local_environment(target: Target) -> dict[str, Any]:
    from harness.worker.backends import load_backend
    from harness.worker.environment import observe

    backend = load_backend(target.to_job())
    backend.preload()
    return observe(backend.environment())


def _docker_environment(target: Target, progress: Callable[[str], None]) -> dict[str, Any]:
    from harness.orchestration.docker.images import BuildInputs, ensure_image
    from harness.orchestration.docker.containers import engine_client

    client, url = engine_client(target)
    image = ensure_image(client, target, BuildInputs.from_env(), log=progress)
    info = client.info()
    facts = {"image": image.id, "engine": {key: info.get(key) for key in ENGINE_FACTS}}
    if not target.docker_host and url.startswith("unix://"):
        facts["gpus"] = nvidia_gpus()  # a local engine's GPUs and driver, as this host sees them
    return facts
