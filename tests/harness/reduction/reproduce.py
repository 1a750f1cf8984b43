"""What every reduction test does with a reduction's output: read reduce.json, and prove the case module it wrote
reproduces the failure like any case of the library (a temporary copy of the cases package with the module dropped
in, then `generate` and `run` on the target, and the test skeleton run with pytest)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import cases
from harness.reduction.failure import KeptFailure
from harness.store.results_file import read_results_file
from tests.harness.commands.test_main import REPO


def summary(out: Path) -> dict:
    return json.loads((out / "reduce.json").read_text())


def reproduce_case(out: Path, target: str, tmp: Path, timeout: float = 600) -> tuple[dict, subprocess.CompletedProcess]:
    """Drop the case module of the reduction in ``out`` into a copy of cases/, generate and run it on ``target``;
    return its record and the pytest run of its test skeleton."""
    data = summary(out)
    package = tmp / "cases"
    shutil.copytree(Path(cases.__file__).parent, package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(data["case_module"], package)
    (tmp / "skeleton").mkdir()
    shutil.copy(data["case_test"], tmp / "skeleton")
    env = {**os.environ, "PYTHONPATH": str(REPO)}  # cases/ comes from tmp (the working directory comes first)

    def run(*args):
        return subprocess.run([sys.executable, "-m", *args], cwd=tmp, env=env, capture_output=True, text=True,
                              timeout=timeout)

    generated = run("harness", "generate", "-k", data["case_id"], "--out", "generated")
    assert generated.returncode == 0, generated.stderr
    ran = run("harness", "run", "--target", target, "--cases", "generated", "--results", "results.jsonl")
    assert ran.returncode in (0, 1), ran.stdout + ran.stderr
    records = read_results_file(tmp / "results.jsonl").records
    assert [(r["case"], r["variant"]) for r in records] == [(data["case_id"], "as-reduced")]
    skeleton = run("pytest", "-q", "-p", "no:cacheprovider", "skeleton")
    return records[0], skeleton


def same_failure(record: dict, kept: dict) -> bool:
    return KeptFailure.from_dict(kept).reproduced_by(record)


def export_case(module: Path, tmp: Path) -> "onnx.ModelProto":
    """The ONNX model a case module builds, exported by the library (in a subprocess, with the module dropped into a
    copy of cases/: this process's registry stays as it is)."""
    import onnx

    package = tmp / "cases"
    if not package.exists():
        shutil.copytree(Path(cases.__file__).parent, package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(module, package)
    name = Path(module).stem
    code = (f"import onnx, cases; from cases.generate import export_model; from cases.{name} import *; "
            f"case = next(c for c in cases.all_cases() if c.__module__ == 'cases.{name}'); "
            f"onnx.save(export_model(case, case.variants[0])[0], '{name}.onnx')")
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp, env={**os.environ, "PYTHONPATH": str(REPO)},
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return onnx.load(tmp / f"{name}.onnx")
