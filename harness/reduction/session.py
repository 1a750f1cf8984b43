"""Where a reduction's checks run: each check is a cases directory of one cell, run on the target by the harness's
own worker, and ends in one schema-checked record appended to a results file.

A local target runs the cell as ``harness run`` does (its own forked process). A docker target keeps ONE container
alive for the whole reduction (:class:`ContainerSession`): every check is put into it by ``put_archive`` and run by
``docker exec``, so no check pays for creating, starting and removing a container. ``--container-per-check``
(:class:`FreshContainerRunner`) runs each check as ``harness run`` does, in a fresh container: the benchmark's
comparison, and a way round a container that a failure leaves in a bad state.
"""
from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path
from typing import Callable

from harness.matrix import Target
from harness.store.results_file import ResultsWriter, read_results_file
from harness.worker import record as rec
from harness.worker.shapes import variant_key

CONTAINER_PREFIX = "trt-matrix-reduce-"  # every reduction container's name starts with it
CHECKS_IN_CONTAINER = "/work/checks"
Progress = Callable[[str], None]


def _quiet(line: str) -> None:
    """The harness's per-cell lines are left out: a reduction prints one line per check of its own."""


class RunnerError(RuntimeError):
    """The target cannot run checks (no engine, no image, the container died)."""


@dataclasses.dataclass
class LocalRunner:
    """Run each check in this Python, as ``harness run --target T`` does for a local target."""

    target: Target
    timeout_s: float

    kind = "local"

    def run(self, cases_dir: Path, results_path: Path) -> rec.Record:
        from harness.orchestration.run_targets import run_targets

        run_targets([self.target], cases_dir, results_path, timeout_s=self.timeout_s, force=True, progress=_quiet)
        return _last_record(results_path, self.target)

    def close(self) -> None:
        """Nothing to release."""


class FreshContainerRunner(LocalRunner):
    """Run each check in a fresh container of the target, as ``harness run`` does for a docker target."""

    kind = "container-per-check"


class ContainerSession:
    """One long-lived container of a docker target that every check of a reduction runs in (``docker exec``)."""

    kind = "container"

    def __init__(self, target: Target, timeout_s: float, container_id: str | None = None,
                 progress: Progress = print):
        from harness.orchestration.docker.containers import ContainerLimits, EngineUnreachable, engine_client

        self.target, self.timeout_s, self.progress = target, timeout_s, progress
        self.limits = ContainerLimits.from_env()
        try:
            self.client, self.url = engine_client(target)
        except EngineUnreachable as err:
            raise RunnerError(str(err)) from err
        self.container = self._attach(container_id) if container_id else self._start()

    def _attach(self, container_id: str):
        import docker.errors

        try:
            container = self.client.containers.get(container_id)
        except docker.errors.NotFound:
            raise RunnerError(f"the reduction's container {container_id} of target {self.target.id!r} is gone from "
                              f"{self.url}; rerun `harness reduce` to resume with a new one") from None
        self.image = self.client.images.get(container.image.id)
        return container

    def _start(self):
        import docker.errors
        import requests

        from harness.orchestration.docker.containers import worker_container_options
        from harness.orchestration.docker.images import BuildInputs, ImageBuildError, describe_image, ensure_image

        try:
            self.image = ensure_image(self.client, self.target, BuildInputs.from_env(), log=self.progress)
            name = f"{CONTAINER_PREFIX}{self.target.id}-{uuid.uuid4().hex[:8]}"
            # The container idles until it is removed; each check is one `docker exec` of the worker.
            container = self.client.containers.create(
                self.image.id, name=name, command=["python3", "-c", "import time\nwhile True: time.sleep(3600)"],
                **worker_container_options(self.target, self.image, self.limits))
            container.start()
        except ImageBuildError as err:
            raise RunnerError(f"the worker image of target {self.target.id!r} could not be built: {err}") from err
        except (docker.errors.DockerException, requests.RequestException) as err:
            raise RunnerError(f"the container of target {self.target.id!r} could not start on {self.url}: "
                              f"{type(err).__name__}: {err}") from err
        self.progress(f"{self.target.id}: container {name} ({container.short_id}) started on {self.url} from "
                      f"{describe_image(self.image)}; it runs every check of this reduction")
        return container

    @property
    def container_id(self) -> str:
        return self.container.id

    def run(self, cases_dir: Path, results_path: Path) -> rec.Record:
        """Put ``cases_dir`` into the container, run its one cell with the worker through ``docker exec``, and store
        the record it streams out (an infra-error record when none comes out)."""
        import docker.errors
        import requests

        from harness.orchestration.docker.containers import CONTAINER_WORK, input_archive, python_path, run_user
        from harness.orchestration.docker.intake import RecordIntake, capped_lines
        from harness.worker.casedata import load_cells

        cells = load_cells(cases_dir)
        check_dir = f"{CHECKS_IN_CONTAINER}/{uuid.uuid4().hex[:12]}"
        job = {"target": self.target.to_job(), "cases_dir": f"{check_dir}/cases",
               "cells": [list(variant_key(c)) for c in cells], "jobs": 1, "timeout_s": self.timeout_s,
               "work_dir": f"{check_dir}/out/cells"}
        user, uid, gid = run_user(self.image)
        work_dir = Path(results_path).parent / "container"
        work_dir.mkdir(parents=True, exist_ok=True)
        with ResultsWriter(results_path) as writer:
            intake = RecordIntake(self.target, cells, writer.append, _quiet, work_dir, self.url,
                                  self.limits.record_bytes)
            ending = "the worker's `docker exec` ended without a record for this cell"
            try:
                self._exec(["mkdir", "-p", check_dir], user)
                if not self.container.put_archive(check_dir, input_archive(self.target, cases_dir, job, uid, gid)):
                    raise RuntimeError(f"the engine refused the check's input archive for {check_dir}")
                command = ["python3", "-m", "harness.worker", f"{check_dir}/job.json", "--results",
                           f"{check_dir}/out/results.jsonl", "--stream-records"]
                environment = {"PYTHONPATH": python_path(self.image, f"{check_dir}/code")}
                result = self.client.api.exec_create(self.container.id, command, user=user, workdir=CONTAINER_WORK,
                                                     environment=environment, stdout=True, stderr=False)
                stream = self.client.api.exec_start(result["Id"], stream=True)
                for line in capped_lines(stream, self.limits.record_bytes):
                    intake.take_line(line, "log stream")  # records behind the prefix; the worker's own lines skipped
                status = self.client.api.exec_inspect(result["Id"]).get("ExitCode")
                ending += f" (exit status {status})"
                # The check's model, data and cell outputs go (the worker user owns them); its code stays.
                self.container.exec_run(["rm", "-rf", f"{check_dir}/cases", f"{check_dir}/out"], user=user)
            except (docker.errors.DockerException, requests.RequestException, OSError, RuntimeError) as err:
                ending = f"the check's `docker exec` in container {self.container.short_id} broke off: " \
                         f"{type(err).__name__}: {err}"
            intake.fail_missing(ending)
        return _last_record(results_path, self.target)

    def _exec(self, command: list[str], user: str) -> None:
        code, output = self.container.exec_run(command, user=user)
        if code != 0:
            raise RuntimeError(f"`{' '.join(command)}` in the container exited {code}: {output.decode(errors='replace')}")

    def close(self) -> None:
        """Remove the container (a resumed reduction starts a new one)."""
        import docker.errors
        import requests

        try:
            self.container.remove(force=True)
        except (docker.errors.DockerException, requests.RequestException) as err:
            self.progress(f"{self.target.id}: warning: could not remove container {self.container.name}: {err}; "
                          f"remove it by hand (docker rm -f {self.container.name})")


def open_runner(target: Target, timeout_s: float, *, container_per_check: bool = False,
                container_id: str | None = None, progress: Progress = print):
    """The runner of ``target``'s checks: local, one kept-alive container, or a fresh container per check."""
    if not target.available:
        raise RunnerError(f"target {target.id!r} is unavailable here: {target.reason}")
    if target.runner == "local":
        return LocalRunner(target, timeout_s)
    if container_per_check:
        return FreshContainerRunner(target, timeout_s)
    return ContainerSession(target, timeout_s, container_id, progress)


def _last_record(results_path: Path, target: Target) -> rec.Record:
    records = [r for r in read_results_file(results_path).records if r["target"] == target.id]
    if not records:
        raise RunnerError(f"{results_path}: the check ended without a record on {target.id}")
    return records[-1]
