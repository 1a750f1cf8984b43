"""Benchmark: the whole case library on ort-cpu. Prints wall time, cells per second and harness overhead per cell.

Harness overhead of a cell = its wall time as the run saw it (fork to record) minus the backend's own time
(quantize + session + inference inside the backend). Targets (issue 2): median overhead < 50 ms per cell, and the
whole library under 60 s on the 2-core machine.

    python benchmarks/run_library.py [--jobs N] [--keep DIR]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from harness.matrix import load_matrix  # noqa: E402
from harness.store.results_file import read_results_file  # noqa: E402
from harness.orchestration.run_targets import run_target  # noqa: E402

OVERHEAD_TARGET_MS = 50.0
WALL_TARGET_S = 60.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="cells at once (default: %(default)s)")
    parser.add_argument("--keep", type=Path, help="write cases and results here instead of a temporary directory")
    args = parser.parse_args()
    out = args.keep or Path(tempfile.mkdtemp(prefix="trt-matrix-bench-"))

    import cases
    from cases.generate import generate

    started = time.perf_counter()
    generate(out / "cases", cases.all_cases())
    generate_s = time.perf_counter() - started

    results = out / "results.jsonl"
    results.unlink(missing_ok=True)
    started = time.perf_counter()
    summary = run_target(load_matrix()["ort-cpu"], out / "cases", results, jobs=args.jobs, progress=lambda line: None)
    run_s = time.perf_counter() - started

    records = read_results_file(results).records
    overheads = [1000 * (r["duration_s"] - r["backend_time_s"]) for r in records if r["backend_time_s"] is not None]
    backend = [1000 * r["backend_time_s"] for r in records if r["backend_time_s"] is not None]
    median_overhead = statistics.median(overheads)
    print(f"cells:                    {len(records)} ({dict(summary.outcomes)})")
    print(f"generate (all cases):     {generate_s:.2f} s")
    print(f"run on ort-cpu, jobs={args.jobs}:   {run_s:.2f} s wall, {len(records) / run_s:.1f} cells/s")
    print(f"whole library (gen+run):  {generate_s + run_s:.2f} s   (target < {WALL_TARGET_S:.0f} s)")
    print(f"backend time per cell:    median {statistics.median(backend):.1f} ms, max {max(backend):.1f} ms")
    print(f"harness overhead per cell: median {median_overhead:.1f} ms, "
          f"p90 {statistics.quantiles(overheads, n=10)[-1]:.1f} ms, max {max(overheads):.1f} ms   "
          f"(target: median < {OVERHEAD_TARGET_MS:.0f} ms)")
    ok = median_overhead < OVERHEAD_TARGET_MS and generate_s + run_s < WALL_TARGET_S
    print("targets met" if ok else "TARGETS MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
