"""Benchmark: `harness classify` on a long log whose lines carry no logger tag (no severity, no timestamp, no
``[TRT]``), the shape of a verbose build log copied out of a notebook or a CI page that dropped the tags. Every such
line may be failure evidence or a wrapped message's continuation, so this is the classifier's slowest input.

The log is ``--lines`` lines (default 20,000) cycled from the message bodies of a verbose INT8 build (tactic timing,
layer fusions, missing scales), ending in a no-implementation failure, untagged like the rest. Each run is the real
command (``python -m harness classify``) in a fresh process; the figure is its wall time, best of ``--runs``.

    python benchmarks/classify_untagged.py [--lines 20000] [--runs 1] [--keep FILE]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

BODIES = (
    "--------------- Timing Runner: /model.{i}/conv/Conv + PWN(PWN(/model.{i}/act/Sigmoid), /model.{i}/act/Mul) "
    "(CaskConvolution)",
    "CaskConvolution has no valid tactics for this config, skipping",
    "Tactic: 0x{i:016x} Time: 0.0{i}",
    "Fastest Tactic: 0x{i:016x} Time: 0.0{i}",
    "Missing scale and zero-point for tensor /model.{i}/m.0/cv1/act/Mul_output_0, expect fall back to non-int8 "
    "implementation for any layer consuming or producing given tensor",
    "Running: ConstShuffleFusion on /model.{i}/Constant_output_0",
    "ConvReluFusion: Fusing /model.{i}/conv/Conv with /model.{i}/act/Relu",
    "Eliminating concatenation /model.{i}/Concat",
    "Adding reformat layer: Reformatted Input Tensor 0 to /model.{i}/Add (/model.{i}/Add_output_0) from Int8(1,80,80,"
    "64) to Float(409600,6400,80,1)",
    "Formats and tactics selection completed in 0.{i} seconds.",
)
FAILURE = ("10: Could not find any implementation for node /model.22/Concat_3 + /model.22/dfl/Reshape, try increasing "
           "the workspace size with IBuilderConfig::setMemoryPoolLimit().")


def untagged_log(lines: int) -> str:
    body = [BODIES[n % len(BODIES)].format(i=n % 97) for n in range(lines - 1)]
    return "\n".join(body + [FAILURE]) + "\n"


def classify_once(path: Path) -> float:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "harness", "classify", str(path)], cwd=REPO, env=env,
                            capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"classify exited {result.returncode}:\n{result.stderr}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lines", type=int, default=20_000, help="lines in the log (default: %(default)s)")
    parser.add_argument("--runs", type=int, default=1, help="runs; the best is reported (default: %(default)s)")
    parser.add_argument("--keep", type=Path, help="write the generated log here too")
    args = parser.parse_args()
    text = untagged_log(args.lines)
    if args.keep:
        args.keep.write_text(text, encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="classify-untagged-") as tmp:
        path = Path(tmp) / "untagged.log"
        path.write_text(text, encoding="utf-8")
        times = [classify_once(path) for _ in range(args.runs)]
    print(f"classify, {args.lines} untagged lines: {min(times):.2f} s (best of {len(times)}; "
          f"{', '.join(f'{t:.2f}' for t in times)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
