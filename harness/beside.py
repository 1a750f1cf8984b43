"""Work in a forked copy of this process while this process goes on: the way to put a second core to work (a thread
would wait for the interpreter's lock).

- :class:`Beside`: one function on data this process already holds. The copy shares the data's memory, writes its
  own files and ends.
- :class:`Ahead`: work whose start is slow (imports, templates) on data this process has yet to make. The copy is
  made early and gets ready while this process works; the data then reach it as bytes.

``wait`` raises the copy's failure, with its traceback, in this process, and returns as soon as the copy says its
work is done: the copy's end (the system letting go of its memory, 3 ms after a 3,000-node scan's page) is not
waited for, and the copy is reaped later. Where forking is not plainly safe
(:func:`~harness.scan.file_checks.fork_is_safe`: off Linux, or while other threads run), or with one core only, the
work simply runs here: a :class:`Beside` function at once, an :class:`Ahead` one when its data are sent.
"""
from __future__ import annotations

import os
import signal
import struct
from typing import IO, Any, Callable, Iterator

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
        self.pid, self._read = run_forked(_saying_done(lambda: function(*args), write), write, (read,)), read
        os.close(write)

    def wait(self) -> None:
        """Wait for the process to end; raise :class:`BesideError` when the function failed in it."""
        if self.pid is None:
            return
        pid, self.pid = self.pid, None
        _wait(self.name, pid, self._read)


class Ahead:
    """``finish(prepare(), payloads)``, with ``prepare`` started now in a forked process (see the module's
    docstring): the copy runs ``prepare()`` at once, then ``finish`` on the bytes :meth:`send` gives it, an iterator
    that yields each piece as it arrives (a piece sent early can be worked on while this process makes the next).
    Each piece goes through a pipe with its length first, and the last is followed by an empty one: a copy of this
    process forked later, which holds the pipe's end too, cannot keep the data from arriving or their end from being
    seen. :meth:`cancel` ends the copy without finishing."""

    def __init__(self, prepare: Callable[[], Any], finish: Callable[[Any, Iterator[bytes]], None]) -> None:
        self.name = getattr(finish, "__qualname__", repr(finish))
        self._prepare, self._finish = prepare, finish
        self.pid: int | None = None
        self._data: int | None = None  # the pipe's end the data go into, until the last is sent
        self._kept: list[bytes] = []  # without a copy: the pieces, until the last is sent
        if not fork_is_safe() or cores() < 2:
            return
        data_read, self._data = os.pipe()
        self._read, report = os.pipe()

        def work() -> None:
            prepared = prepare()
            with os.fdopen(data_read, "rb") as stream:
                finish(prepared, _pieces(stream))

        self.pid = run_forked(_saying_done(work, report), report, (self._data, self._read))
        os.close(data_read)
        os.close(report)

    def send(self, payload: bytes, last: bool = True) -> None:
        """Give the copy a piece of its data (non-empty); after the ``last`` it finishes on them while this process
        goes on (:meth:`wait`). A copy that has already ended (it failed) gets nothing more: :meth:`wait` raises its
        failure."""
        if self.pid is None:
            self._kept.append(payload)
            if last:
                self._finish(self._prepare(), iter(self._kept))
            return
        if self._data is None:  # the copy ended before its data
            return
        try:
            os.write(self._data, _FRAME.pack(len(payload)))
            view = memoryview(payload)
            while view:  # a piece larger than the pipe holds goes as the copy reads it
                view = view[os.write(self._data, view):]
            if last:
                os.write(self._data, _FRAME.pack(0))
        except BrokenPipeError:  # the copy ended (failed): wait() says why
            last = True
        if last:
            os.close(self._data)
            self._data = None

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


_FRAME = struct.Struct("<Q")  # a piece's length, before it


def _pieces(stream: IO[bytes]) -> Iterator[bytes]:
    """The pieces sent through ``stream`` (:meth:`Ahead.send`), up to the empty one after the last; a stream that
    ends before it (the sender stopped, or ended) ends them there."""
    while True:
        header = stream.read(_FRAME.size)
        if len(header) < _FRAME.size:
            return
        size = _FRAME.unpack(header)[0]
        payload = stream.read(size) if size else b""
        if not size or len(payload) < size:
            return
        yield payload


def _wait(name: str, pid: int, report: int) -> None:
    """Wait for the copy ``pid`` to say it is done (it is then reaped later), else to end, reading its traceback from
    ``report``; raise :class:`BesideError` when it failed or was killed."""
    _reap()
    with os.fdopen(report, "rb") as stream:
        first = stream.read(1)
        if first == _DONE:
            _UNREAPED.append(pid)
            return
        said = (first + stream.read()).decode(errors="replace").strip()
    status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    if status:
        ending = f"killed by signal {-status}" if status < 0 else f"exit status {status}"
        raise BesideError(f"{name} failed in its process ({ending})" + (f":\n{said}" if said else ""))


_DONE = b"\0"  # what a copy writes to its report once its work is done (no traceback starts with it)
_UNREAPED: list[int] = []  # copies that said they were done, until they are seen to have ended


def _saying_done(work: Callable[[], None], report: int) -> Callable[[], None]:
    """``work``, then :data:`_DONE` written to the descriptor ``report`` (in the copy)."""
    def work_then_say_done() -> None:
        work()
        os.write(report, _DONE)
    return work_then_say_done


def _reap() -> None:
    """Reap the copies that said they were done and have ended since (none is waited for)."""
    for pid in list(_UNREAPED):
        try:
            ended = os.waitpid(pid, os.WNOHANG)[0]
        except ChildProcessError:  # reaped by another
            ended = pid
        if ended:
            _UNREAPED.remove(pid)
