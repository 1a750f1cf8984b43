"""Running a function in a forked copy of the process: what it writes arrives, its failure is raised here."""
from __future__ import annotations

import os

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
    def finish(ready_pid, payload):
        path.write_text(f"{ready_pid} {os.getpid()} {payload.decode()}")
    return finish


def test_ahead_gets_ready_in_its_own_process_then_finishes_on_the_bytes_sent(tmp_path):
    from harness.beside import Ahead

    out = tmp_path / "page"
    job = Ahead(_ready, _finish_into(out))
    job.send(b"x" * 200_000)  # more than a pipe holds: it is read while it is written
    job.wait()
    ready, finished, payload = out.read_text().split(" ")
    assert ready == finished != str(os.getpid()) and payload == "x" * 200_000


def test_ahead_cancelled_ends_without_finishing_and_raises_nothing(tmp_path):
    from harness.beside import Ahead

    out = tmp_path / "page"
    job = Ahead(_ready, _finish_into(out))
    job.cancel()
    job.cancel()  # once is enough: the second does nothing
    assert job.pid is None and not out.exists()


def test_ahead_a_failure_in_its_process_is_raised_with_its_traceback(tmp_path):
    from harness.beside import Ahead

    def finish(_, payload):
        raise ValueError(f"no page for {payload.decode()}")

    job = Ahead(_ready, finish)
    job.send(b"scan.json")
    with pytest.raises(BesideError) as caught:
        job.wait()
    assert "ValueError: no page for scan.json" in str(caught.value) and "Traceback" in str(caught.value)


def test_ahead_with_one_core_gets_ready_and_finishes_here_when_sent(tmp_path, monkeypatch):
    from harness.beside import Ahead

    monkeypatch.setattr(beside, "cores", lambda: 1)
    out = tmp_path / "page"
    job = Ahead(_ready, _finish_into(out))
    assert job.pid is None and not out.exists()
    job.send(b"data")
    assert out.read_text() == f"{os.getpid()} {os.getpid()} data"
    job.wait()
