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
