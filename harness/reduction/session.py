"""Where a reduction's checks run: each check is a cases directory of one cell, run on the target by the harness's
own worker, and ends in one schema-checked record appended to a results file.

A local target runs the cell as ``trt-matrix run`` does (its own forked process). A docker target keeps ONE container
alive for the whole reduction (:class:`ContainerSession`), its worker serving one check after another with the
backend imported once, so no check pays for a container's start nor for the worker's imports. ``--container-per-check``
(:class:`FreshContainerRunner`) runs each check as ``trt-matrix run`` does, in a fresh container: the benchmark's
comparison, and a way round a container that a failure leaves in a bad state.
"""
from __future__ import annotations

import dataclasses
import io
import tarfile
import time
import uuid
from pathlib import Path
from typing import Callable

from harness.matrix import Target
from harness.store.results_file import ResultsWriter, read_results_file
from harness.worker import record as rec
from harness.worker.casedata import load_cells
from harness.worker.serve import DONE, READY, RESULTS
from harness.worker.shapes import variant_key

CONTAINER_PREFIX = "trt-matrix-reduce-"  # every reduction container's name starts with it
QUEUE_IN_CONTAINER = "/work/queue"  # in CONTAINER_WORK
POLL_S = 0.05
Progress = Callable[[str], None]


def _quiet(line: str) -> None:
    """The harness's per-cell lines are left out: a reduction prints one line per check of its own."""


class RunnerError(RuntimeError):
    """The target cannot run checks (no engine, no image, the container died)."""


@dataclasses.dataclass
class LocalRunner:
    """Run each check in this Python, as ``trt-matrix run --target T`` does for a local target."""

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
    """Run each check in a fresh container of the target, as ``trt-matrix run`` does for a docker target."""

    kind = "container-per-check"


class ContainerSession:
    """One long-lived container of a docker target that every check of a reduction runs in.

    The container runs ``python -m harness.worker.serve`` (the worker, staying up with the backend imported): a
    check puts its job directory into the queue (``put_archive``), marks it ready, and fetches its records when the
    server marks it done. What comes out goes through the same intake as ``trt-matrix run``'s containers.
    """

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
                              f"{self.url}; rerun `trt-matrix reduce` to resume with a new one") from None
        self.image = self.client.images.get(container.image.id)
        return container

    def _start(self):
        """Create the hardened worker container (orchestration's own: the options, inputs and removal of `harness
        run`'s containers), put the worker code and an empty queue in, and start its server."""
        import docker.errors
        import requests

        from harness.orchestration.docker.containers import (CONTAINER_WORK, create_worker_container, input_archive,
                                                             remove_container, run_user, start_with_inputs)
        from harness.orchestration.docker.images import BuildInputs, ImageBuildError, describe_image, ensure_image

        container = None
        try:
            self.image = ensure_image(self.client, self.target, BuildInputs.from_env(), log=self.progress)
            name = f"{CONTAINER_PREFIX}{self.target.id}-{uuid.uuid4().hex[:8]}"
            container = create_worker_container(self.client, self.target, self.image, self.limits,
                                                ["python3", "-m", "harness.worker.serve", QUEUE_IN_CONTAINER], name)
            _, uid, gid = run_user(self.image)
            queue = _marker(QUEUE_IN_CONTAINER.rsplit("/", 1)[1], uid, gid, directory=True)
            start_with_inputs(container, [(CONTAINER_WORK, input_archive(self.target, None, None, uid, gid)),
                                          (CONTAINER_WORK, queue)])
        except ImageBuildError as err:
            raise RunnerError(f"the worker image of target {self.target.id!r} could not be built: {err}") from err
        except (docker.errors.DockerException, requests.RequestException, RuntimeError) as err:
            if container is not None:  # created, not started: nothing of it may stay behind
                remove_container(container, self.target, self.url, self.progress)
            raise RunnerError(f"the container of target {self.target.id!r} could not start on {self.url}: "
                              f"{type(err).__name__}: {err}") from err
        self.progress(f"{self.target.id}: container {name} ({container.short_id}) started on {self.url} from "
                      f"{describe_image(self.image)}; its worker serves every check of this reduction")
        return container

    @property
    def container_id(self) -> str:
        return self.container.id

    def run(self, cases_dir: Path, results_path: Path) -> rec.Record:
        """Queue ``cases_dir``'s one cell in the container's server, wait until it is done, and store its record
        (an infra-error record when none comes back)."""
        import docker.errors
        import requests

        from harness.orchestration.docker.containers import input_archive, run_user
        from harness.orchestration.docker.intake import RecordIntake

        cells = load_cells(cases_dir)
        job_id = uuid.uuid4().hex[:12]
        job_dir = f"{QUEUE_IN_CONTAINER}/{job_id}"
        job = {"target": self.target.to_job(), "cases_dir": f"{job_dir}/cases",
               "cells": [list(variant_key(c)) for c in cells], "jobs": 1, "timeout_s": self.timeout_s,
               "work_dir": f"{job_dir}/out/cells"}
        _, uid, gid = run_user(self.image)
        work_dir = Path(results_path).parent / "container"
        work_dir.mkdir(parents=True, exist_ok=True)
        with ResultsWriter(results_path) as writer:
            intake = RecordIntake(self.target, cells, writer.append, _quiet, work_dir, self.url,
                                  self.limits.record_bytes)
            try:
                archive = input_archive(self.target, cases_dir, job, uid, gid, prefix=f"{job_id}/", code=False)
                if not (self.container.put_archive(QUEUE_IN_CONTAINER, archive)
                        and self.container.put_archive(job_dir, _marker(READY, uid, gid))):
                    raise RuntimeError(f"the engine refused the check's files for {job_dir}")
                done = self._wait_until_done(job_dir)
                for line in self._read(f"{job_dir}/{RESULTS}").splitlines():
                    intake.take_line(line, "results file")
                ending = ("the worker served the check without a record for this cell" if done == "ok" else
                          f"the worker could not run the check: {done.strip().splitlines()[-1]}")
                self.container.exec_run(["rm", "-rf", job_dir], user=f"{uid}:{gid}")
            except (docker.errors.DockerException, requests.RequestException, OSError, RuntimeError) as err:
                ending = (f"the check in container {self.container.short_id} broke off: {type(err).__name__}: "
                          f"{err}")
            intake.fail_missing(ending)
        return _last_record(results_path, self.target)

    def _wait_until_done(self, job_dir: str) -> str:
        """The server's ``done`` text once it is written; RuntimeError when the container stops or time runs out."""
        import docker.errors

        from harness.orchestration.docker.containers import whole_run_timeout

        limit = whole_run_timeout(1, 1, self.timeout_s)  # one check, the worker's start and imports allowed for
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            try:
                return self._read(f"{job_dir}/{DONE}")
            except docker.errors.NotFound:
                pass
            self.container.reload()
            if self.container.status != "running":
                tail = self.container.logs(tail=10).decode(errors="replace").strip()
                raise RuntimeError(f"the container's worker stopped ({self.container.status}, exit status "
                                   f"{self.container.attrs['State'].get('ExitCode')}): {tail}")
            time.sleep(POLL_S)
        raise RuntimeError(f"no answer from the container's worker within {limit:.0f} s")

    def _read(self, path: str) -> str:
        chunks, _ = self.container.get_archive(path)
        with tarfile.open(fileobj=io.BytesIO(b"".join(chunks))) as tar:
            return tar.extractfile(tar.getmembers()[0]).read().decode(errors="replace")

    def close(self) -> None:
        """Remove the container (a resumed reduction starts a new one)."""
        from harness.orchestration.docker.containers import remove_container

        remove_container(self.container, self.target, self.url, self.progress)


def _marker(name: str, uid: int, gid: int, directory: bool = False) -> bytes:
    """A tar of one empty file (or directory) owned by the worker's user."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo(name)
        info.uid, info.gid, info.mode = uid, gid, 0o755 if directory else 0o644
        if directory:
            info.type = tarfile.DIRTYPE
        tar.addfile(info, io.BytesIO(b""))
    return buffer.getvalue()


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
