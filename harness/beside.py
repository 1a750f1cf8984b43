"""Run one function in a forked copy of this process while this process goes on: the way to put a second core to
work on data this process already holds (a thread would wait for the interpreter's lock; a new process would need
the data copied to it). The copy shares the data's memory, writes its own files and ends; :meth:`Beside.wait`
raises its failure, with its traceback, in this process.

The function simply runs here, at once, with one core only, and where forking is not plainly safe
(:func:`~harness.scan.file_checks.fork_is_safe`: off Linux, or while other threads run).
"""
from __future__ import annotations

import os
from typing import Any, Callable

from harness.scan.file_checks import cores, fork_is_safe, run_forked


class BesideError(RuntimeError):
    """The function failed in its forked process; the message holds its traceback."""


class Beside:
    """``function(*args)`` started in a forked process (see the module's docstring); its return value is not kept:
    it runs for what it writes."""

    def __init__(self, function: Callable[..., Any], *args: Any) -> None:
        self.name = getattr(function, "__qualname__", repr(function))
        self.pid: int | None = None
        if not fork_is_safe() or cores() < 2:
            function(*args)
            return
        read, write = os.pipe()
        self.pid, self._read = run_forked(lambda: function(*args), write, (read,)), read
        os.close(write)

    def wait(self) -> None:
        """Wait for the process to end; raise :class:`BesideError` when the function failed in it."""
        if self.pid is None:
            return
        with os.fdopen(self._read, "rb") as stream:
            said = stream.read().decode(errors="replace").strip()
        status = os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
        self.pid = None
        if status:
            ending = f"killed by signal {-status}" if status < 0 else f"exit status {status}"
            raise BesideError(f"{self.name} failed in its process ({ending})" + (f":\n{said}" if said else ""))
