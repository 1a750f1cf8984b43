"""Work in a forked copy of this process while this process goes on: the way to put a second core to work (a thread
would wait for the interpreter's lock).

- :class:`Beside`: one function on data this process already holds. The copy shares the data's memory, writes its
  own files and ends.
- :class:`Ahead`: work whose start is slow (imports, templates) on data this process has yet to make. The copy is
  made early and gets ready while this process works; the data then reach it as bytes.

``wait`` raises the copy's failure, with its traceback, in this process. Where forking is not plainly safe
(:func:`~harness.scan.file_checks.fork_is_safe`: off Linux, or while other threads run), or with one core only, the
work simply runs here: a :class:`Beside` function at once, an :class:`Ahead` one when its data are sent.
"""
from __future__ import annotations

import os
import signal
import struct
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
        pid, self.pid = self.pid, None
        _wait(self.name, pid, self._read)


class Ahead:
    """``finish(prepare(), payload)``, with ``prepare`` started now in a forked process (see the module's docstring):
    the copy runs ``prepare()`` at once, then waits for the bytes :meth:`send` gives it and runs ``finish`` on them.
    The bytes go through a pipe, their length first: a copy of this process forked later, which holds the pipe's
    end too, cannot keep the data from arriving. :meth:`cancel` ends the copy without finishing."""

    def __init__(self, prepare: Callable[[], Any], finish: Callable[[Any, bytes], None]) -> None:
        self.name = getattr(finish, "__qualname__", repr(finish))
        self._prepare, self._finish = prepare, finish
        self.pid: int | None = None
        self._data: int | None = None  # the pipe's end the data go into, until they are sent
        if not fork_is_safe() or cores() < 2:
            return
        data_read, self._data = os.pipe()
        self._read, report = os.pipe()

        def work() -> None:
            prepared = prepare()
            with os.fdopen(data_read, "rb") as stream:
                size = struct.unpack("<Q", stream.read(8).ljust(8, b"\0"))[0]
                payload = stream.read(size) if size else b""
            if len(payload) == size > 0:  # cancelled, or this process ended before it sent: nothing to finish
                finish(prepared, payload)

        self.pid = run_forked(work, report, (self._data, self._read))
        os.close(data_read)
        os.close(report)

    def send(self, payload: bytes) -> None:
        """Give the copy its data (non-empty); it finishes on them while this process goes on (:meth:`wait`)."""
        if self.pid is None:
            self._finish(self._prepare(), payload)
            return
        data, self._data = self._data, None
        with os.fdopen(data, "wb") as stream:
            stream.write(struct.pack("<Q", len(payload)) + payload)

    def wait(self) -> None:
        """Wait for the copy to end; raise :class:`BesideError` when it failed."""
        if self.pid is None:
            return
        pid, self.pid = self.pid, None
        _wait(self.name, pid, self._read)

    def cancel(self) -> None:
        """End the copy without finishing (its data will not come: a scan stopped by bad input); nothing is raised."""
        if self.pid is None:
            return
        pid, self.pid = self.pid, None
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(self._read)
        if self._data is not None:
            os.close(self._data)
            self._data = None


def _wait(name: str, pid: int, report: int) -> None:
    """Wait for the copy ``pid``, reading its traceback from ``report``; raise :class:`BesideError` when it failed."""
    with os.fdopen(report, "rb") as stream:
        said = stream.read().decode(errors="replace").strip()
    status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    if status:
        ending = f"killed by signal {-status}" if status < 0 else f"exit status {status}"
        raise BesideError(f"{name} failed in its process ({ending})" + (f":\n{said}" if said else ""))
