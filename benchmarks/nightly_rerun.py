"""Benchmark: an unchanged nightly rerun on ort-cpu against a full nightly run (target of issue 7: under 5 %).

A full run starts from an empty runs directory: it generates the case library and runs every cell. The unchanged
rerun is the next night's run (another date) of the same library on the same host: every cell is carried over.
Both run in this process after the heavy modules are imported once (ONNX Runtime, onnx, onnx-graphsurgeon,
jsonschema), so the ratio compares the nightly's own work; the same two steps as fresh processes
(`python -m harness nightly ...`, interpreter start-up and imports included) are printed for information.

    python benchmarks/nightly_rerun.py [--repeat N] [--jobs N] [--keep DIR]
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from harness.matrix import load_matrix  # noqa: E402
from harness.orchestration.nightly import RunPlan, run_nightly  # noqa: E402

RATIO_TARGET = 0.05


def _warm_imports() -> None:
    import onnxruntime.quantization  # noqa: F401

    import cases  # noqa: F401
    import cases.generate  # noqa: F401
    from harness.store.results_file import _validator

    _validator()


def _nightly(runs: Path, date: str, jobs: int) -> tuple[float, int, int]:
    """Wall seconds of one nightly on ort-cpu, how many cells it ran and how many it carried over."""
    plan = RunPlan(runs_root=runs, host="bench", host_kind=None, date=date, targets=(load_matrix()["ort-cpu"],))
    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        result = run_nightly(plan, jobs=jobs, progress=lambda line: None)
    return time.perf_counter() - started, result.summaries[0].total, result.carried_over.get("ort-cpu", 0)


def _process(runs: Path, date: str, jobs: int) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "harness", "nightly", "--target", "ort-cpu", "--runs", str(runs),
                    "--host", "bench-process", "--date", date, "--jobs", str(jobs)],
                   check=True, capture_output=True, cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)))
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5, help="unchanged reruns measured (default: %(default)s)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="cells at once (default: %(default)s)")
    parser.add_argument("--keep", type=Path, help="runs directory to use instead of a temporary one")
    args = parser.parse_args()
    runs = args.keep or Path(tempfile.mkdtemp(prefix="trt-matrix-nightly-bench-"))

    _warm_imports()
    full_s, cells, _ = _nightly(runs / "in-process", "2026-01-01", args.jobs)
    reruns = [_nightly(runs / "in-process", f"2026-01-{day:02d}", args.jobs)[::2] for day in range(2, 2 + args.repeat)]
    rerun_s = statistics.median(seconds for seconds, _ in reruns)
    carried = {count for _, count in reruns}
    ratio = rerun_s / full_s
    print(f"full nightly run (generate the library, run its {cells} cells on ort-cpu, jobs={args.jobs}): {full_s:.3f} s")
    print(f"unchanged rerun, median of {args.repeat}: {rerun_s * 1000:.1f} ms "
          f"(min {min(s for s, _ in reruns) * 1000:.1f}, max {max(s for s, _ in reruns) * 1000:.1f}); "
          f"cells carried over per rerun: {sorted(carried)}")
    print(f"rerun / full: {ratio:.2%}   (target < {RATIO_TARGET:.0%})")

    process_full = _process(runs / "processes", "2026-02-01", args.jobs)
    process_rerun = _process(runs / "processes", "2026-02-02", args.jobs)
    print(f"as fresh processes (start-up and imports included): full {process_full:.2f} s, unchanged rerun "
          f"{process_rerun:.2f} s ({process_rerun / process_full:.0%})")
    ok = ratio < RATIO_TARGET and carried == {cells}
    print("target met" if ok else "TARGET MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
