"""Run one target's cells in one container: worker code, cases and job go in by put_archive, records come out.

Nothing is dropped: every cell ends with exactly one stored record. Records stream out of the container's stdout
as they finish (behind the worker's ``@@record`` prefix), so a container killed mid-run keeps what it finished; at
the end the results file inside is fetched and reconciled with the stream. A cell left without a record (container
killed, out of memory, engine gone, image not buildable, engine unreachable) gets an ``infra-error`` record that
says why. What comes out is size-capped and schema-validated (by ``on_record``) before it is stored.
"""
from __future__ import annotations

import collections
import dataclasses
import importlib.util
import io
import json
import math
import os
import re
import tarfile
import tempfile
import threading
from pathlib import Path
from typing import Any

import docker
import docker.errors
import requests
from docker.types import DeviceRequest

import harness
from harness.orchestration.docker.images import BuildInputs, ImageBuildError, describe_image, ensure_image
from harness.orchestration.docker.intake import OnRecord, Progress, RecordIntake, capped_lines
from harness.matrix import Target
from harness.worker import CONTAINER_PACKAGES
from harness.worker.__main__ import RECORD_PREFIX
from harness.worker.backends import BACKENDS
from harness.worker.environment import IMAGE_ENV
from harness.worker.shapes import Cell, Job, variant_key

CONTAINER_WORK = "/work"  # the recipes create it, owned by the worker user
RESULTS_IN_CONTAINER = f"{CONTAINER_WORK}/out/results.jsonl"
NONROOT_USER = "65534:65534"  # nobody:nogroup, used when the image names no user
ENGINE_TIMEOUT_S = 120  # per API call (streams have none)
START_ALLOWANCE_S = 120.0  # container start, imports and backend preload, on top of the cells' own timeouts
WAIT_AFTER_STREAM_S = 60.0
LOG_TAIL_LINES = 15
LOG_LINE_CHARS = 400
WORKER_PROGRESS_LINE = re.compile(r"^\[\d+/\S+\s")  # the worker's own per-record line; on_record prints ours


class EngineUnreachable(RuntimeError):
    """The Docker engine of a target did not answer."""


@dataclasses.dataclass(frozen=True)
class ContainerLimits:
    """Resource limits of a worker container and caps on what comes out of it."""

    memory: str = "8g"
    pids: int = 1024
    record_bytes: int = 4 * 1024 * 1024  # one record line (a record carries a log excerpt, not whole logs)
    results_bytes: int = 256 * 1024 * 1024  # the results file fetched at the end
    saved_log_bytes: int = 64 * 1024 * 1024  # container output kept in the work dir

    @classmethod
    def from_env(cls) -> "ContainerLimits":
        """TRT_MATRIX_CONTAINER_MEMORY (e.g. 16g) and TRT_MATRIX_CONTAINER_PIDS override the defaults."""
        defaults = cls()
        return cls(memory=os.environ.get("TRT_MATRIX_CONTAINER_MEMORY") or defaults.memory,
                   pids=int(os.environ.get("TRT_MATRIX_CONTAINER_PIDS") or defaults.pids))


def engine_url(target: Target) -> str:
    """The engine a target runs on, as a user would write it."""
    return target.docker_host or os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


def engine_client(target: Target) -> tuple[docker.DockerClient, str]:
    """A client for the target's engine (docker_host, else DOCKER_HOST / the local socket) that answered a ping."""
    url = engine_url(target)
    over_ssh = url.startswith("ssh://")  # through the ssh command, so ~/.ssh/config and ssh-agent apply
    try:
        if target.docker_host:
            client = docker.DockerClient(base_url=url, timeout=ENGINE_TIMEOUT_S, use_ssh_client=over_ssh)
        else:
            client = docker.from_env(timeout=ENGINE_TIMEOUT_S, use_ssh_client=over_ssh)
        client.ping()
    except (docker.errors.DockerException, requests.RequestException, OSError) as err:
        where = "docker_host in matrix.yaml" if target.docker_host else "DOCKER_HOST or the local socket"
        raise EngineUnreachable(
            f"The Docker engine at {url} ({where}) of target {target.id!r} did not answer: {type(err).__name__}: "
            f"{err}.{_engine_hint(str(err))} Check that dockerd runs there and that this user may use it "
            f"(`docker -H {url} info`); for ssh:// the login must work without a password prompt (ssh-agent or a "
            "key).") from err
    return client, url


def whole_run_timeout(cells: int, jobs: int, cell_timeout_s: float) -> float:
    """Every cell may use its whole timeout, ``jobs`` at a time, plus the container's start-up."""
    return START_ALLOWANCE_S + cell_timeout_s * math.ceil(cells / max(jobs, 1))


def _worker_code_files(target: Target) -> dict[str, Path]:
    """Files of the worker (harness/__init__.py, harness/worker/**, the words it judges with, harness/judgement/**, and
    TensorRT's readers it classifies with, harness/tensorrt/**) plus a custom backend's own module."""
    package = Path(harness.__file__).resolve().parent
    files = {"harness/__init__.py": package / "__init__.py"}
    for folder in CONTAINER_PACKAGES:
        for path in sorted((package / folder).rglob("*.py")):
            files[str(path.relative_to(package.parent))] = path
    module = target.backend.split(":", 1)[0] if target.backend not in BACKENDS else None
    if module and not module.startswith("harness."):
        files.update(_module_files(target, module))
    return files


def _module_files(target: Target, module: str) -> dict[str, Path]:
    """The source file of ``module`` and the __init__.py of its parent packages, by their import paths."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        raise ValueError(f"Target {target.id!r}: backend module {module!r} is not importable as a .py file here, "
                         "so it cannot be shipped into the container (make it importable on this host).")
    parts = module.split(".")
    origin = Path(spec.origin)
    files = {"/".join(parts[:-1] + [origin.name]): origin}
    for depth in range(1, len(parts)):
        init = origin.parents[len(parts) - 1 - depth] / "__init__.py"
        if init.exists():
            files["/".join(parts[:depth] + ["__init__.py"])] = init
    return files


def _job(target: Target, cells: list[Cell], jobs: int, timeout_s: float) -> Job:
    return {"target": target.to_job(), "cases_dir": f"{CONTAINER_WORK}/cases",
            "cells": [list(variant_key(c)) for c in cells], "jobs": jobs, "timeout_s": timeout_s,
            "work_dir": f"{CONTAINER_WORK}/out/cells"}


def input_archive(target: Target, cases_dir: Path | None, job: Job | None, uid: int, gid: int, *,
                  prefix: str = "", code: bool = True) -> bytes:
    """The tar put into /work: code/ (worker, unless ``code`` is False), cases/ (the whole cases directory), out/ and
    job.json (those two when given), each behind ``prefix`` (a directory of its own, e.g. "<id>/")."""
    buffer = io.BytesIO()

    def owned(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid, info.gid, info.uname, info.gname = uid, gid, "", ""
        info.mode = 0o755 if info.isdir() else 0o644
        return info

    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name in [prefix.rstrip("/")] * bool(prefix) + [f"{prefix}code"] * code + [f"{prefix}out"]:
            directory = tarfile.TarInfo(name)
            directory.type = tarfile.DIRTYPE
            tar.addfile(owned(directory))
        for name, path in _worker_code_files(target).items() if code else ():
            tar.add(path, arcname=f"{prefix}code/{name}", filter=owned)
        if cases_dir is not None:
            tar.add(cases_dir, arcname=f"{prefix}cases", filter=owned)
        if job is not None:
            payload = json.dumps(job, indent=1).encode()
            info = owned(tarfile.TarInfo(f"{prefix}job.json"))
            info.size = len(payload)
            tar.addfile(info, io.BytesIO(payload))
    return buffer.getvalue()


def run_user(image) -> tuple[str, int, int]:
    """The image's numeric USER (a recipe could say USER 0), else nobody; with the uid/gid the archive is owned by."""
    user = (image.attrs.get("Config") or {}).get("User") or NONROOT_USER
    uid, _, gid = user.partition(":")
    if not uid.isdigit() or (gid and not gid.isdigit()):
        return NONROOT_USER, 65534, 65534  # a user name cannot be resolved here; run as nobody
    return user, int(uid), int(gid or uid)


def python_path(image, code_dir: str = f"{CONTAINER_WORK}/code") -> str:
    """The worker code first, then whatever the image puts on PYTHONPATH (TensorRT recipes put their packages)."""
    env = dict(item.split("=", 1) for item in (image.attrs.get("Config") or {}).get("Env") or [] if "=" in item)
    return ":".join(filter(None, [code_dir, env.get("PYTHONPATH")]))


def worker_container_options(target: Target, image, limits: ContainerLimits) -> dict[str, Any]:
    """What every worker container is created with: the image's user (else nobody), no network, no capabilities,
    no new privileges, memory and pid limits, the target's label and GPU access, and the worker's environment."""
    user, _, _ = run_user(image)
    return dict(working_dir=CONTAINER_WORK, user=user, network_disabled=True, security_opt=["no-new-privileges"],
                cap_drop=["ALL"], mem_limit=limits.memory, memswap_limit=limits.memory, pids_limit=limits.pids,
                labels={"org.trt-matrix.target": target.id},
                environment={IMAGE_ENV: describe_image(image), "PYTHONPATH": python_path(image),
                             "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1", "HOME": CONTAINER_WORK},
                **_gpu_options(target))


def create_worker_container(client, target: Target, image, limits: ContainerLimits, command: list[str],
                            name: str | None = None):
    """A worker container of ``image`` running ``command``, created with :func:`worker_container_options` (not
    started: put its inputs in with :func:`start_with_inputs`)."""
    return client.containers.create(image.id, name=name, command=command,
                                    **worker_container_options(target, image, limits))


def start_with_inputs(container, inputs: list[tuple[str, bytes]]) -> None:
    """Put each (directory, tar archive) of ``inputs`` into the created ``container``, then start it; RuntimeError
    when the engine refuses an archive."""
    for directory, archive in inputs:
        if not container.put_archive(directory, archive):
            raise RuntimeError(f"the engine refused the input archive for {directory}")
    container.start()


def remove_container(container, target: Target, url: str, progress: Progress) -> None:
    """Remove ``container`` (force: running or not); a failure is a warning naming the command that removes it."""
    try:
        container.remove(force=True)
    except (docker.errors.DockerException, requests.RequestException) as err:
        progress(f"{target.id}: warning: could not remove container {container.short_id} on {url}: {err}; remove it "
                 f"by hand (docker rm -f {container.short_id})")


# Engine errors whose cause is a missing piece of host setup, and what to do about it.
ENGINE_ERROR_HINTS = {
    "Install paramiko package": "the docker SDK reaches ssh:// engines only with paramiko installed: "
    "pip install 'docker[ssh]'",
    "could not select device driver": "this engine cannot hand GPUs to containers (gpu: all-gpus): install the "
    "NVIDIA Container Toolkit on the Docker host and restart dockerd (`nvidia-ctk runtime configure`)",
    "unknown or invalid runtime name: nvidia": "this engine has no 'nvidia' runtime (gpu: nvidia-runtime): on a "
    "Jetson, install nvidia-container (JetPack's container runtime) and restart dockerd",
    f"Could not find the file {CONTAINER_WORK}": f"the image has no {CONTAINER_WORK}; a recipe must create it for the "
    f"worker user (RUN mkdir -p {CONTAINER_WORK} && chown 65534:65534 {CONTAINER_WORK})",
}


def _engine_hint(error: str) -> str:
    return "".join(f" Hint: {hint}." for needle, hint in ENGINE_ERROR_HINTS.items() if needle in error)


def _gpu_options(target: Target) -> dict[str, Any]:
    """x86 GPUs through device requests (NVIDIA Container Toolkit), Jetson through the nvidia runtime."""
    if target.gpu == "all-gpus":
        return {"device_requests": [DeviceRequest(count=-1, capabilities=[["gpu"]])]}
    if target.gpu == "nvidia-runtime":
        return {"runtime": "nvidia"}
    return {}


def default_work_dir(target: Target) -> Path:
    """TRT_MATRIX_WORK_DIR/<target>, else a fresh temporary directory."""
    base = os.environ.get("TRT_MATRIX_WORK_DIR")
    if base:
        path = Path(base) / target.id
        path.mkdir(parents=True, exist_ok=True)
        return path
    return Path(tempfile.mkdtemp(prefix=f"trt-matrix-{target.id}-"))


def run_in_container(
    target: Target,
    cases_dir: Path,
    cells: list[Cell],
    on_record: OnRecord,
    *,
    jobs: int = 1,
    timeout_s: float = 300.0,
    progress: Progress = print,
    work_dir: Path | None = None,
    build_inputs: BuildInputs | None = None,
    limits: ContainerLimits | None = None,
    run_timeout_s: float | None = None,
) -> None:
    """Run ``cells`` of ``cases_dir`` on docker target ``target``; every cell ends with one record via on_record.

    ``timeout_s`` is per cell (inside the worker); the container as a whole is killed after ``run_timeout_s``
    (default: whole_run_timeout). A missing image is built first (``build_inputs``, default from the environment).
    """
    work_dir = Path(work_dir) if work_dir else default_work_dir(target)
    work_dir.mkdir(parents=True, exist_ok=True)
    limits = limits or ContainerLimits.from_env()
    if not cells:
        return
    intake = RecordIntake(target, cells, on_record, progress, work_dir, engine_url(target), limits.record_bytes)
    try:
        client, url = engine_client(target)
    except EngineUnreachable as err:
        intake.fail_missing(str(err))
        return
    try:
        image = ensure_image(client, target, build_inputs or BuildInputs.from_env(), log=progress)
    except ImageBuildError as err:
        intake.fail_missing(f"The worker image of target {target.id!r} is not on {url} and could not be built: {err}",
                            log_tail=err.log_tail or None)
        return
    except (docker.errors.DockerException, requests.RequestException) as err:
        intake.fail_missing(f"The Docker engine at {url} failed while looking up or building the image of target "
                            f"{target.id!r}: {type(err).__name__}: {err}")
        return
    intake.details["image"] = describe_image(image)
    run = ContainerRun(client, url, target, image, limits, intake, progress, work_dir)
    try:
        run.execute(cases_dir, _job(target, cells, jobs, timeout_s),
                    run_timeout_s or whole_run_timeout(len(cells), jobs, timeout_s))
    finally:
        intake.fail_missing(run.ending(), log_tail=run.log_tail() or None)


class ContainerRun:
    """One container's life: create (hardened), put the inputs, start, stream, wait, fetch results, remove."""

    def __init__(self, client, url: str, target: Target, image, limits: ContainerLimits, intake: RecordIntake,
                 progress: Progress, work_dir: Path):
        self.client, self.url, self.target, self.image, self.limits = client, url, target, image, limits
        self.intake, self.progress, self.work_dir = intake, progress, work_dir
        self.container = None
        self.tail: collections.deque[str] = collections.deque(maxlen=LOG_TAIL_LINES)
        self.failure: str | None = None  # what broke the run, when something did
        self.timed_out = False
        self.run_timeout_s = 0.0
        self.state: dict[str, Any] = {}

    def execute(self, cases_dir: Path, job: Job, run_timeout_s: float) -> None:
        self.run_timeout_s = run_timeout_s
        user, uid, gid = run_user(self.image)
        try:
            self.container = create_worker_container(
                self.client, self.target, self.image, self.limits,
                ["python3", "-m", "harness.worker", f"{CONTAINER_WORK}/job.json", "--results", RESULTS_IN_CONTAINER,
                 "--stream-records"])
            self.intake.details["container"] = self.container.short_id
            start_with_inputs(self.container, [(CONTAINER_WORK, input_archive(self.target, cases_dir, job, uid, gid))])
            self.progress(f"{self.target.id}: container {self.container.short_id} started on {self.url} from "
                          f"{describe_image(self.image)} as user {user}; {len(job['cells'])} cell(s), whole-run "
                          f"timeout {run_timeout_s:.0f} s")
            self._stream_until_exit()
            self._fetch_results()
        except (docker.errors.DockerException, requests.RequestException, OSError, RuntimeError, ValueError) as err:
            self.failure = f"{type(err).__name__}: {err}{_engine_hint(str(err))}"
            self.progress(f"{self.target.id}: the container run failed: {self.failure}")
        finally:
            self._remove()

    def _stream_until_exit(self) -> None:
        watchdog = threading.Timer(self.run_timeout_s, self._kill_at_timeout)
        watchdog.daemon = True
        watchdog.start()
        saved = 0
        try:
            with (self.work_dir / "container-stdout.log").open("w") as saved_log:
                chunks = self.container.logs(stream=True, follow=True, stdout=True, stderr=False)
                for line in capped_lines(chunks, self.limits.record_bytes):
                    self.intake.take_line(line, "log stream")
                    if isinstance(line, str) and not line.startswith(RECORD_PREFIX):
                        self.tail.append(line[:LOG_LINE_CHARS])
                        if not WORKER_PROGRESS_LINE.match(line):
                            self.progress(f"{self.target.id} container | {line}")
                    if isinstance(line, str) and saved < self.limits.saved_log_bytes:
                        saved += len(line) + 1
                        saved_log.write(line + "\n")
            self._wait()
        finally:
            watchdog.cancel()

    def _kill_at_timeout(self) -> None:
        self.timed_out = True
        self.progress(f"{self.target.id}: whole-run timeout of {self.run_timeout_s:.0f} s reached; killing the "
                      f"container {self.container.short_id}")
        try:
            self.container.kill()
        except (docker.errors.DockerException, requests.RequestException):
            pass  # it ended by itself meanwhile

    def _wait(self) -> None:
        try:
            self.container.wait(timeout=WAIT_AFTER_STREAM_S)
        except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
            self.progress(f"{self.target.id}: the container did not exit {WAIT_AFTER_STREAM_S:.0f} s after its "
                          "output ended; killing it")
            self.container.kill()
        self.container.reload()
        state = self.container.attrs.get("State", {})
        self.state.update(exit_status=state.get("ExitCode"), oom_killed=state.get("OOMKilled"),
                          error=state.get("Error") or None)
        stderr = self.container.logs(stdout=False, stderr=True, tail=LOG_TAIL_LINES)
        stderr_lines = stderr.decode(errors="replace").splitlines()
        self.tail.extend(f"stderr: {line[:LOG_LINE_CHARS]}" for line in stderr_lines)
        (self.work_dir / "container-stderr-tail.log").write_text("\n".join(stderr_lines) + "\n")
        self.intake.details.update(self.state, timed_out=self.timed_out)

    def _fetch_results(self) -> None:
        """Reconcile with the results file inside: records the stream did not carry are stored now."""
        try:
            chunks, stat = self.container.get_archive(RESULTS_IN_CONTAINER)
        except docker.errors.NotFound:
            return  # the worker never wrote a record
        if stat.get("size", 0) > self.limits.results_bytes:
            self.intake.note(f"the results file in the container is {stat['size']} bytes, over the cap of "
                             f"{self.limits.results_bytes} bytes (ContainerLimits.results_bytes); it was not fetched")
            return
        archive, received = io.BytesIO(), 0
        for chunk in chunks:
            received += len(chunk)
            if received > self.limits.results_bytes + 1024 * 1024:  # the tar adds headers and padding only
                self.intake.note(f"the results archive grew past the cap of {self.limits.results_bytes} bytes "
                                 "while it was fetched; it was not read")
                return
            archive.write(chunk)
        archive.seek(0)
        with tarfile.open(fileobj=archive) as tar:
            member = tar.extractfile(tar.getmembers()[0])
            for line in capped_lines(iter(lambda: member.read(1024 * 1024), b""), self.limits.record_bytes):
                self.intake.take_line(line, "results file")

    def _remove(self) -> None:
        if self.container is not None:
            remove_container(self.container, self.target, self.url, self.progress)

    def ending(self) -> str:
        """Why cells may lack a record, from what is known about the container's end."""
        status, oom = self.state.get("exit_status"), self.state.get("oom_killed")
        if self.container is None:
            return f"The container for target {self.target.id!r} could not be created on {self.url}: {self.failure}."
        if self.failure:
            what = f"The container run on {self.url} broke off: {self.failure}."
        elif self.timed_out:
            what = (f"The whole-run timeout of {self.run_timeout_s:.0f} s expired and the container was killed before "
                    "this cell finished (raise --timeout, the per-cell timeout it is derived from).")
        elif oom:
            what = (f"The container ran out of its memory limit ({self.limits.memory}) and was killed (OOMKilled, "
                    f"exit status {status}); raise TRT_MATRIX_CONTAINER_MEMORY.")
        elif status == 137:
            what = "The container was killed (exit status 137: SIGKILL from outside) before this cell finished."
        elif status == 0:
            what = "The worker exited normally (status 0) without a record for this cell."
        else:
            what = f"The worker exited with status {status} before this cell finished."
        return f"{what} Container output is kept in {self.work_dir}."

    def log_tail(self) -> str:
        return "\n".join(self.tail)


def run_targets_concurrently(
    targets: list[Target],
    cases_dir: Path,
    cells_by_target: dict[str, list[Cell]],
    on_record: OnRecord,
    *,
    jobs: int = 1,
    timeout_s: float = 300.0,
    progress: Progress = print,
    work_dirs: dict[str, Path] | None = None,
) -> None:
    """Run docker targets, one thread per Docker engine (targets on one engine run one after another).

    ``on_record`` and ``progress`` are called under one lock, so a results file is appended by one thread at a time.
    An exception from a thread (e.g. on_record failing to write) is raised here after every thread has ended.
    """
    lock = threading.Lock()

    def locked(fn):
        def call(value):
            with lock:
                fn(value)
        return call

    by_engine: dict[str, list[Target]] = collections.defaultdict(list)
    for target in targets:
        by_engine[engine_url(target)].append(target)
    errors: list[BaseException] = []

    def run_engine(engine_targets: list[Target]) -> None:
        try:
            for target in engine_targets:
                run_in_container(target, cases_dir, cells_by_target.get(target.id, []), locked(on_record), jobs=jobs,
                                 timeout_s=timeout_s, progress=locked(progress),
                                 work_dir=(work_dirs or {}).get(target.id))
        except BaseException as err:  # re-raised in the calling thread below
            errors.append(err)

    threads = [threading.Thread(target=run_engine, args=(group,), name=f"trt-matrix {url}", daemon=True)
               for url, group in by_engine.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
