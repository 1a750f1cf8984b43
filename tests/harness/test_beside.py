"""Running a function in a forked copy of the process: what it writes arrives, its failure is raised here."""
from __future__ import annotations

import os
import signal
import time

import pytest

from harness import beside
from harness.beside import Beside, BesideError


def _write(path, text):
    path.write_text(text)


def _fail(path):
    raise ValueError(f"no page for {path.name}")


def test_the_function_runs_in_another_process_and_its_file_is_there_after_wait(tmp_path):
    def write_pid(path):
        path.write_text(str(os.getpid()))

    job = Beside(write_pid, tmp_path / "pid")
    job.wait()
    assert (tmp_path / "pid").read_text() != str(os.getpid())  # forked: a second core could run it


def test_a_failure_in_the_process_is_raised_with_its_traceback(tmp_path):
    job = Beside(_fail, tmp_path / "scan.html")
    with pytest.raises(BesideError) as caught:
        job.wait()
    message = str(caught.value)
    assert "_fail failed in its process (exit status 1)" in message
    assert "ValueError: no page for scan.html" in message and "Traceback" in message
    job.wait()  # waited once: nothing left to wait for


def _kill_itself():
    os.kill(os.getpid(), signal.SIGKILL)  # in the copy: the copy's own process id


def test_a_copy_killed_before_its_work_is_done_is_reported_with_the_signal():
    job = Beside(_kill_itself)
    with pytest.raises(BesideError) as caught:
        job.wait()
    assert "killed by signal 9" in str(caught.value)


def test_a_copy_that_said_it_was_done_is_reaped_once_it_has_ended(tmp_path):
    """wait() returns when the copy says its work is done, not when the copy has ended: it is reaped later, so no
    ended copy is left behind."""
    job = Beside(_write, tmp_path / "scan.html", "page")
    pid = job.pid
    job.wait()
    assert (tmp_path / "scan.html").read_text() == "page"
    deadline = time.monotonic() + 10
    while pid in beside._UNREAPED and time.monotonic() < deadline:
        time.sleep(0.01)
        beside._reap()
    assert pid not in beside._UNREAPED
    with pytest.raises(ChildProcessError):  # reaped: no such child left
        os.waitpid(pid, os.WNOHANG)


def test_with_one_core_it_runs_here_at_once(tmp_path, monkeypatch):
    monkeypatch.setattr(beside, "cores", lambda: 1)
    job = Beside(_write, tmp_path / "out.txt", "here")
    assert job.pid is None and (tmp_path / "out.txt").read_text() == "here"
    job.wait()


def test_while_another_thread_runs_it_runs_here(tmp_path):
    import threading

    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        job = Beside(_write, tmp_path / "out.txt", "here")
        assert job.pid is None and (tmp_path / "out.txt").read_text() == "here"
    finally:
        release.set()
        other.join()


def _ready():
    return os.getpid()  # the process that got ready


def _finish_into(path):
    def finish(ready_pid, pieces):
        path.write_text(f"{ready_pid} {os.getpid()} " + "+".join(piece.decode() for piece in pieces))
    return finish


def test_ahead_gets_ready_in_its_own_process_then_finishes_on_the_bytes_sent(tmp_path):
    from harness.beside import Ahead

    out = tmp_path / "page"
    job = Ahead(_ready, _finish_into(out))
    job.send(b"x" * 200_000)  # more than a pipe holds: it is read while it is written
    job.wait()
    ready, finished, payload = out.read_text().split(" ")
    assert ready == finished != str(os.getpid()) and payload == "x" * 200_000


def test_ahead_works_on_each_piece_as_it_arrives_and_a_later_copy_of_this_process_does_not_hold_it_up(tmp_path):
    from harness.beside import Ahead

    seen = tmp_path / "seen"

    def finish(_, pieces):
        for piece in pieces:  # the first is worked on before the second is sent
            with seen.open("a") as log:
                log.write(piece.decode() + "\n")

    job = Ahead(_ready, finish)
    job.send(b"engine", last=False)
    deadline = time.monotonic() + 30
    while not seen.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert seen.read_text() == "engine\n"
    later = os.fork()  # holds the pipe's end too, as onnx's checks' process does, and outlives the pieces' end
    if later == 0:
        time.sleep(3)
        os._exit(0)
    try:
        started = time.monotonic()
        job.send(b"page")
        job.wait()
        assert seen.read_text() == "engine\npage\n" and time.monotonic() - started < 2.5
    finally:
        os.waitpid(later, 0)


def test_ahead_cancelled_ends_without_finishing_and_raises_nothing(tmp_path):
    from harness.beside import Ahead

    out = tmp_path / "page"
    job = Ahead(_ready, _finish_into(out))
    job.cancel()
    job.cancel()  # once is enough: the second does nothing
    assert job.pid is None and not out.exists()


def test_ahead_a_failure_in_its_process_is_raised_with_its_traceback(tmp_path):
    from harness.beside import Ahead

    def finish(_, pieces):
        raise ValueError(f"no page for {next(pieces).decode()}")

    job = Ahead(_ready, finish)
    job.send(b"scan.json")
    with pytest.raises(BesideError) as caught:
        job.wait()
    assert "ValueError: no page for scan.json" in str(caught.value) and "Traceback" in str(caught.value)


def test_ahead_that_failed_before_its_data_takes_no_more_and_its_failure_is_raised(tmp_path):
    """A copy that fails while it gets ready (a broken template) has closed its end of the pipe: sending to it must
    not raise BrokenPipeError (the command would take it for a closed standard output and exit 0 in silence), and
    ``wait`` raises the copy's own failure."""
    from harness.beside import Ahead

    def prepare():
        raise ValueError("template broken")

    job = Ahead(prepare, lambda *_: None)
    job.send(b"x" * (1 << 20), last=False)  # more than the pipe holds: written until the copy has ended
    job.send(b"scan.json")
    with pytest.raises(BesideError) as caught:
        job.wait()
    assert "ValueError: template broken" in str(caught.value)


def test_ahead_with_one_core_gets_ready_and_finishes_here_when_sent(tmp_path, monkeypatch):
    from harness.beside import Ahead

    monkeypatch.setattr(beside, "cores", lambda: 1)
    out = tmp_path / "page"
    job = Ahead(_ready, _finish_into(out))
    assert job.pid is None and not out.exists()
    job.send(b"engine", last=False)
    assert not out.exists()  # the pieces are kept until the last
    job.send(b"data")
    assert out.read_text() == f"{os.getpid()} {os.getpid()} engine+data"
    job.wait()
