"""Entry point inside a container (or any Python with a backend): ``python -m harness.worker JOB.json``."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from harness.worker.job import progress_line, run_job

RECORD_PREFIX = "@@record "  # a line on stdout that carries one finished record, for a host streaming the logs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m harness.worker",
        description="Run a job file (target, cases directory, cells) and append one JSON record per cell to RESULTS. "
        "Needs only the standard library, numpy, onnx and the target's backend.",
    )
    parser.add_argument("job", type=Path, help="job JSON written by the host (`trt-matrix run` writes it)")
    parser.add_argument("--results", type=Path, required=True, help="JSON Lines file; each record is appended as it ends")
    parser.add_argument("--stream-records", action="store_true",
                        help=f"also print each record on stdout behind {RECORD_PREFIX.strip()!r}")
    args = parser.parse_args(argv)
    job = json.loads(args.job.read_text())
    total = len(job["cells"]) if job.get("cells") is not None else "?"
    started, done = time.perf_counter(), 0
    args.results.parent.mkdir(parents=True, exist_ok=True)
    with args.results.open("a") as results:
        def on_record(record):
            nonlocal done
            done += 1
            line = json.dumps(record, sort_keys=True)
            results.write(line + "\n")
            results.flush()
            if args.stream_records:
                print(RECORD_PREFIX + line, flush=True)
            print(progress_line(done, total, record, started), flush=True)

        run_job(job, on_record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
