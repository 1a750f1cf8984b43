"""``python -m harness.worker.serve QUEUE``: a worker that stays up and runs job after job, for a host that sends
many small jobs to one container (``trt-matrix reduce``: one job per check).

The host puts a job directory into QUEUE (``<id>/job.json`` and its cases directory), then an empty ``<id>/ready``.
The server runs the job as ``python -m harness.worker`` would, appending each record to ``<id>/results.jsonl``, then
writes ``<id>/done`` and removes the job's cases and cell work directories. The backend is imported once, by the
first job, and every cell still runs in its own forked process. Standard library only (this runs in containers).
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
import traceback
from pathlib import Path

from harness.worker.job import run_job

POLL_S = 0.02
READY, DONE, RESULTS = "ready", "done", "results.jsonl"


def run_queued(job_dir: Path) -> None:
    """Run the job of one job directory; ``done`` holds "ok" or the traceback of a job that could not run."""
    (job_dir / READY).unlink()
    outcome = "ok"
    try:
        job = json.loads((job_dir / "job.json").read_text())
        with (job_dir / RESULTS).open("a") as results:
            def on_record(record):
                results.write(json.dumps(record, sort_keys=True) + "\n")
                results.flush()

            run_job(job, on_record)
    except Exception:  # the job's own problem (a bad job file): say so, keep serving
        outcome = traceback.format_exc()
    finally:
        shutil.rmtree(job_dir / "cases", ignore_errors=True)
        shutil.rmtree(job_dir / "out", ignore_errors=True)
        (job_dir / DONE).write_text(outcome)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.worker.serve", description=__doc__)
    parser.add_argument("queue", type=Path, help="the directory job directories are put into")
    args = parser.parse_args(argv)
    args.queue.mkdir(parents=True, exist_ok=True)
    print(f"serving jobs put into {args.queue}", flush=True)
    while True:
        for ready in sorted(args.queue.glob(f"*/{READY}")):
            run_queued(ready.parent)
        time.sleep(POLL_S)


if __name__ == "__main__":
    sys.exit(main())
