"""Run each task in its own forked process with a timeout, so a segfault or a hang ends one task, not the run.

Forking from a parent that has already imported the heavy backend modules costs a few milliseconds a task, where a
fresh interpreter would pay the imports again. A task's result travels back as JSON over a pipe.
"""
from __future__ import annotations

import dataclasses
import faulthandler
import json
import os
import select
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Iterable

from harness.judgement.vocabulary import CRASH, TIMEOUT


@dataclasses.dataclass
class TaskEnd:
    """How a task's process ended: with a result, or killed, crashed, or silent."""

    task: Any
    result: dict[str, Any] | None
    kind: str  # "result", "timeout", "crash"
    wall_s: float
    detail: str = ""
    stderr_path: Path | None = None


@dataclasses.dataclass
class _Running:
    task: Any
    pid: int
    fd: int
    started: float
    stderr_path: Path | None
    chunks: list[bytes] = dataclasses.field(default_factory=list)


def _child(fn: Callable[[Any], dict], task: Any, write_fd: int, stderr_path: Path | None) -> None:
    """Body of a forked task process; never returns."""
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if stderr_path is not None:
            log_fd = os.open(stderr_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(log_fd, 2)
            os.close(log_fd)
            sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)
        faulthandler.enable(file=sys.stderr, all_threads=True)
        payload = json.dumps(fn(task), allow_nan=False).encode()
        view = memoryview(payload)
        while view:
            written = os.write(write_fd, view)
            view = view[written:]
    except BaseException:  # report everything: the parent turns it into a record
        traceback.print_exc(file=sys.stderr)
        code = 70
    finally:
        sys.stderr.flush()
        os._exit(code)


def _reap(running: _Running, kind: str, detail: str = "") -> TaskEnd:
    """Wait for a finished or killed child and describe how it ended."""
    os.close(running.fd)
    _, status = os.waitpid(running.pid, 0)
    wall = time.perf_counter() - running.started
    data = b"".join(running.chunks)
    if kind == "result":
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            return TaskEnd(running.task, None, CRASH, wall, f"killed by signal {sig} ({signal.Signals(sig).name})",
                           running.stderr_path)
        if not data or os.WEXITSTATUS(status) != 0:
            return TaskEnd(running.task, None, CRASH, wall,
                           f"exited with status {os.WEXITSTATUS(status)} without a result", running.stderr_path)
        return TaskEnd(running.task, json.loads(data), "result", wall, "", running.stderr_path)
    return TaskEnd(running.task, None, kind, wall, detail, running.stderr_path)


def run_isolated(
    tasks: Iterable[Any],
    fn: Callable[[Any], dict],
    *,
    jobs: int,
    timeout_s: float,
    on_end: Callable[[TaskEnd], None],
    stderr_path_for: Callable[[Any], Path | None] = lambda task: None,
) -> None:
    """Run ``fn(task)`` for every task in a forked process, at most ``jobs`` at once; call ``on_end`` as each ends."""
    pending = list(tasks)
    pending.reverse()
    running: dict[int, _Running] = {}
    try:
        while pending or running:
            while pending and len(running) < jobs:
                task = pending.pop()
                stderr_path = stderr_path_for(task)
                read_fd, write_fd = os.pipe()
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    os.close(read_fd)
                    _child(fn, task, write_fd, stderr_path)
                os.close(write_fd)
                running[read_fd] = _Running(task, pid, read_fd, time.perf_counter(), stderr_path)
            now = time.perf_counter()
            wait = max(0.0, min(r.started + timeout_s for r in running.values()) - now)
            readable, _, _ = select.select(list(running), [], [], wait)
            for fd in readable:
                chunk = os.read(fd, 1 << 16)
                if chunk:
                    running[fd].chunks.append(chunk)
                else:
                    on_end(_reap(running.pop(fd), "result"))
            now = time.perf_counter()
            for fd in [fd for fd, r in running.items() if now - r.started > timeout_s]:
                overdue = running.pop(fd)
                os.kill(overdue.pid, signal.SIGKILL)
                on_end(_reap(overdue, TIMEOUT, f"no result after {timeout_s:g} s; the process was killed"))
    finally:
        for leftover in running.values():
            os.kill(leftover.pid, signal.SIGKILL)
            os.waitpid(leftover.pid, 0)
            os.close(leftover.fd)
