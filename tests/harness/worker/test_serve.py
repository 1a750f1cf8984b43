"""The serving worker (``python -m harness.worker.serve``, what a reduction's kept-alive container runs): a job
directory marked ready is run once, its records written, ``done`` written last, its cases and cell outputs removed;
a job that cannot run says why in ``done`` and the server goes on."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time

from cases.control import QdqConvRelu
from harness.matrix import load_matrix
from harness.worker.serve import DONE, READY, RESULTS, run_queued
from tests.conftest import REPO


def job_dir(queue, name, cases, cells):
    path = queue / name
    shutil.copytree(cases, path / "cases")
    job = {"target": load_matrix()["ort-cpu"].to_job(), "cases_dir": str(path / "cases"), "cells": cells,
           "jobs": 1, "timeout_s": 60, "work_dir": str(path / "out" / "cells")}
    (path / "job.json").write_text(json.dumps(job))
    (path / READY).write_text("")
    return path


def test_a_ready_job_runs_once_and_leaves_only_its_records_and_done(generated_cases, tmp_path):
    cases = generated_cases("serve-control", [QdqConvRelu])
    path = job_dir(tmp_path, "a", cases, [[QdqConvRelu.id, QdqConvRelu.variants[0].name]])
    run_queued(path)
    assert (path / DONE).read_text() == "ok" and not (path / READY).exists()
    records = [json.loads(line) for line in (path / RESULTS).read_text().splitlines()]
    assert [(r["case"], r["outcome"]) for r in records] == [(QdqConvRelu.id, "pass")]
    assert not (path / "cases").exists() and not (path / "out").exists()


def test_the_server_reports_a_job_it_cannot_run_and_serves_the_next(generated_cases, tmp_path):
    cases = generated_cases("serve-control", [QdqConvRelu])
    queue = tmp_path / "queue"
    server = subprocess.Popen([sys.executable, "-m", "harness.worker.serve", str(queue)], cwd=REPO,
                              stdout=subprocess.DEVNULL)
    try:
        bad = job_dir(queue, "1-bad", cases, [["no-such-case", "x"]])
        good = job_dir(queue, "2-good", cases, [[QdqConvRelu.id, QdqConvRelu.variants[0].name]])
        deadline = time.monotonic() + 120
        while not (good / DONE).exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "the job names cells the cases directory does not have" in (bad / DONE).read_text()
        assert (good / DONE).read_text() == "ok" and (good / RESULTS).read_text().count("\n") == 1
    finally:
        server.kill()
        server.wait()
