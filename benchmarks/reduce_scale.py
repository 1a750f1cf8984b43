"""Benchmark: `harness reduce` against the model's size, with one container kept alive for every check against a
fresh container per check (--container-per-check).

The models are tests/models/f64_gelu.py's Q/DQ CNN of ``blocks`` Conv -> GELU blocks (10 nodes each, plus 2), one
GELU in float64: ONNX Runtime's CPU provider has no double Erf kernel, so the whole model fails and the reduction
ends at that Erf. Each run is the real command in a fresh output directory; the numbers come from its reduce.json:
checks (polygraphy iterations run through the harness), wall time, and the time inside checks.

    BASE_IMAGE=trt-matrix/debian-python:bookworm python benchmarks/reduce_scale.py \\
        [--target ort1.15-cpu] [--sizes 100 500 1000 2500 5000] [--modes kept-alive per-check] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import onnx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.models import f64_gelu  # noqa: E402

MODES = {"kept-alive": [], "per-check": ["--container-per-check"]}


def reduce_once(model: Path, target: str, mode: str, out: Path) -> dict:
    command = [sys.executable, "-m", "harness", "reduce", str(model), "--target", target, "--out", str(out),
               *MODES[mode]]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    result = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
    data = json.loads((out / "reduce.json").read_text())
    return {"nodes": data["nodes_before"], "mode": mode, "checks": data["checks"], "nodes_after": data["nodes_after"],
            "wall_s": data["wall_s"], "check_s": data["check_seconds"],
            "per_check_s": round(data["check_seconds"] / data["checks"], 2) if data["checks"] else None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", default="ort1.15-cpu", help="a docker target of matrix.yaml (default: %(default)s)")
    parser.add_argument("--sizes", nargs="+", type=int, default=[100, 500, 1000, 2500, 5000],
                        help="model sizes in nodes, rounded to whole blocks (default: %(default)s)")
    parser.add_argument("--modes", nargs="+", choices=list(MODES), default=list(MODES))
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    rows = []
    print(f"{'nodes':>6} {'mode':<10} {'checks':>6} {'after':>5} {'wall s':>8} {'in checks s':>11} {'s/check':>7}",
          flush=True)
    with tempfile.TemporaryDirectory(prefix="reduce-scale-") as tmp:
        for size in args.sizes:
            blocks = max(1, round((size - 2) / 10))
            model = Path(tmp) / f"f64-gelu-{blocks}.onnx"
            onnx.save(f64_gelu.build(blocks), model)
            for mode in args.modes:
                row = reduce_once(model, args.target, mode, Path(tmp) / f"{blocks}-{mode}")
                rows.append(row)
                print(f"{row['nodes']:>6} {mode:<10} {row['checks']:>6} {row['nodes_after']:>5} {row['wall_s']:>8.1f} "
                      f"{row['check_s']:>11.1f} {row['per_check_s']:>7}", flush=True)
    if args.json:
        args.json.write_text(json.dumps({"target": args.target, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
