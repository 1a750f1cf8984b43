"""`python -m harness nightly`, black-box: run directories, resume, incremental reruns, on the real ort-cpu target."""
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest
import yaml

from harness.store.results_file import validate_record
from tests.conftest import REPO, read_records
from tests.harness.commands.test_main import harness, slow_matrix

RUN_DIR_LINE = re.compile(r"^run directory: (.+)$", re.MULTILINE)


def nightly(*args, **kwargs):
    return harness("nightly", *args, **kwargs)


def run_dir_of(result):
    found = RUN_DIR_LINE.findall(result.stdout)
    assert found, result.stdout
    from pathlib import Path

    return Path(found[-1])


def probe_cases(tmp_path, name, **quantize_output):
    """A cases directory of the test-only probe case (tests/harness/param_probe_case.py), one variant per keyword."""
    out = tmp_path / name
    args = [f"{variant}={'yes' if quantized else 'no'}" for variant, quantized in quantize_output.items()]
    subprocess.run([sys.executable, "-m", "tests.harness.param_probe_case", str(out), *args], check=True, cwd=REPO,
                   env=dict(os.environ, PYTHONPATH=str(REPO)))
    return out


def test_a_nightly_generates_the_library_and_writes_a_dated_run_directory(tmp_path):
    outputs = tmp_path / "github-output"
    result = harness("nightly", "--host-kind", "cpu", "--target", "ort-cpu", "--runs", str(tmp_path / "runs"),
                     "--host", "cpu-01", "--date", "2026-11-20", "-k", "control-qdq*",
                     env={"GITHUB_OUTPUT": str(outputs)})
    run_dir = run_dir_of(result)
    assert run_dir.parent == tmp_path / "runs"
    assert re.fullmatch(r"2026-11-20_cpu-01_[0-9a-f]{12}(-dirty\.[0-9a-f]{8})?", run_dir.name), run_dir.name
    manifest = json.loads((run_dir / "run.json").read_text())
    assert manifest["status"] == "finished" and manifest["host"] == "cpu-01" and manifest["host_kind"] == "cpu"
    assert manifest["id"] == run_dir.name and manifest["cells"]["ort-cpu"]["outcomes"] == {"pass": 1}
    records = read_records(run_dir / "results.jsonl")
    assert [(r["case"], r["outcome"]) for r in records] == [("control-qdq-conv-relu", "pass")]
    provenance = records[0]["provenance"]
    assert provenance["run"] == run_dir.name and provenance["host"] == "cpu-01"
    assert provenance["carried_over_from"] is None and provenance["environment_sha256"]
    validate_record(records[0])
    assert (tmp_path / "runs" / ".cases").is_dir()  # the generated library, kept for the next night
    kept = json.loads((run_dir / "cases-index.json").read_text())  # what the reports of this run read
    assert [case["id"] for case in kept["cases"] if case["id"].startswith("control-qdq")] == ["control-qdq-conv-relu"]
    assert outputs.read_text().splitlines() == [f"run_dir={run_dir}", f"run_id={run_dir.name}"]


def test_an_unchanged_rerun_carries_every_cell_over_and_says_from_which_run(control_cases_dir, tmp_path):
    common = ["--target", "ort-cpu", "--cases", str(control_cases_dir), "--runs", str(tmp_path), "--host", "h"]
    first = run_dir_of(nightly(*common, "--date", "2026-11-20"))
    result = nightly(*common, "--date", "2026-11-21")
    second = run_dir_of(result)
    assert "ort-cpu: 0 cell(s) run, 3 carried over" in result.stdout
    before, after = read_records(first / "results.jsonl"), read_records(second / "results.jsonl")
    assert len(after) == 3
    for old, new in zip(sorted(before, key=lambda r: r["variant"]), sorted(after, key=lambda r: r["variant"])):
        assert new["provenance"]["carried_over_from"] == first.name and new["provenance"]["run"] == second.name
        assert (new["outcome"], new["started_at"], new["metrics"]) == (old["outcome"], old["started_at"], old["metrics"])
    manifest = json.loads((second / "run.json").read_text())
    assert manifest["cells"]["ort-cpu"]["carried_over_from"] == {first.name: 3}

    third = nightly(*common, "--date", "2026-11-22")  # carried over again: still names the run that observed it
    assert {r["provenance"]["carried_over_from"] for r in read_records(run_dir_of(third) / "results.jsonl")} == {
        first.name}
    forced = nightly(*common, "--date", "2026-11-23", "--force")
    assert "ort-cpu: 3 cell(s) run (pass 3), 0 carried over" in forced.stdout


def test_only_the_cells_whose_inputs_changed_run_again(tmp_path):
    runs = ["--target", "ort-cpu", "--runs", str(tmp_path / "runs"), "--host", "h"]
    nightly(*runs, "--cases", str(probe_cases(tmp_path, "a", first=True, second=True)), "--date", "2026-11-20")
    result = nightly(*runs, "--cases", str(probe_cases(tmp_path, "b", first=True, second=False)), "--date",
                     "2026-11-21")
    records = {r["variant"]: r for r in read_records(run_dir_of(result) / "results.jsonl")}
    assert records["first"]["provenance"]["carried_over_from"] is not None
    assert records["second"]["provenance"]["carried_over_from"] is None
    assert "ort-cpu: 1 cell(s) run (fallback 1), 1 carried over" in result.stdout


def test_a_changed_target_environment_runs_every_cell_again(control_cases_dir, tmp_path):
    common = ["--target", "ort-cpu", "--cases", str(control_cases_dir), "--runs", str(tmp_path / "runs"),
              "--host", "h"]
    nightly(*common, "--date", "2026-11-20")
    matrix = tmp_path / "matrix.yaml"  # the same target, without the session option ORT needs for signed INT8
    data = yaml.safe_load((REPO / "matrix.yaml").read_text())
    del data["targets"]["ort-cpu"]["session_config"]
    matrix.write_text(yaml.safe_dump(data))
    result = harness("--matrix", str(matrix), "nightly", *common, "--date", "2026-11-21")
    assert "ort-cpu: 3 cell(s) run" in result.stdout and "0 carried over" in result.stdout


def test_infra_error_cells_are_never_carried_over(control_cases_dir, tmp_path):
    common = ["--target", "trt-local", "--cases", str(control_cases_dir), "--runs", str(tmp_path), "--host", "h"]
    first = nightly(*common, "--date", "2026-11-20", check=False)
    assert first.returncode == 3  # no TensorRT here: the harness reports its environment broken, not the pattern
    second = nightly(*common, "--date", "2026-11-21", check=False)
    assert "trt-local: 3 cell(s) run (infra-error 3), 0 carried over" in second.stdout


def test_a_killed_nightly_resumes_in_the_same_run_directory_without_losing_a_cell(control_cases_dir, tmp_path):
    matrix, runs = slow_matrix(tmp_path), tmp_path / "runs"
    args = ["--matrix", str(matrix), "nightly", "--target", "slow", "--cases", str(control_cases_dir), "--runs",
            str(runs), "--host", "h", "--date", "2026-11-20", "--jobs", "1"]
    process = subprocess.Popen([sys.executable, "-m", "harness", *args], cwd=REPO, start_new_session=True,
                               env=dict(os.environ, PYTHONPATH=str(REPO)), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    results = None
    while time.monotonic() < deadline:
        found = list(runs.glob("2026-11-20_h_*/results.jsonl"))
        if found and found[0].read_text().count("\n") >= 1:
            results = found[0]
            break
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGKILL)  # the host dies: no cleanup runs
    process.wait()
    assert results is not None, "the nightly never recorded a cell"
    first = read_records(results)
    assert 1 <= len(first) < 3, "the nightly should have been killed between two cells"
    assert json.loads((results.parent / "run.json").read_text())["status"] == "running"

    rerun = harness(*args)
    assert run_dir_of(rerun) == results.parent
    assert f"{len(first)} already in this run" in rerun.stdout
    records = read_records(results)
    assert records[: len(first)] == first  # nothing finished before the kill was lost or rewritten
    keys = [(r["case"], r["variant"]) for r in records]
    assert len(keys) == len(set(keys)) == 3
    manifest = json.loads((results.parent / "run.json").read_text())
    assert manifest["status"] == "finished" and len(manifest["attempts"]) == 2


@pytest.mark.parametrize("args, message", [
    (["--host-kind", "mars-gpu"], "--host-kind 'mars-gpu': not a host kind of"),
    (["--target", "trt99-mars"], "--target 'trt99-mars': not a target of"),
    (["--date", "23/11/2026"], "'23/11/2026' is not a date of the form YYYY-MM-DD"),
])
def test_bad_nightly_arguments_are_readable_errors(args, message, tmp_path):
    result = nightly(*args, "--runs", str(tmp_path), check=False)
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr


def test_an_earlier_record_that_breaks_the_schema_is_run_again_not_carried_over(control_cases_dir, tmp_path):
    common = ["--target", "ort-cpu", "--cases", str(control_cases_dir), "--runs", str(tmp_path), "--host", "h"]
    first = run_dir_of(nightly(*common, "--date", "2026-11-20"))
    records = read_records(first / "results.jsonl")
    records[0]["outcome"] = "passed-mostly"  # e.g. written by a later harness with another vocabulary
    (first / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    result = nightly(*common, "--date", "2026-11-21")
    assert f"warning: {first / 'results.jsonl'}:1: field 'outcome'" in result.stdout
    assert "; not carried over" in result.stdout
    assert "ort-cpu: 1 cell(s) run (pass 1), 2 carried over" in result.stdout


def test_a_resumed_nightly_moves_a_garbage_line_aside_and_its_merge_is_clean(control_cases_dir, tmp_path):
    common = ["--target", "ort-cpu", "--cases", str(control_cases_dir), "--runs", str(tmp_path / "runs"), "--host",
              "h", "--date", "2026-11-20"]
    run_dir = run_dir_of(nightly(*common))
    results = run_dir / "results.jsonl"
    lines = results.read_text().splitlines()
    lines[0] = "\x00\x00 disk garbage \x00"  # the record of one cell destroyed in place
    results.write_text("\n".join(lines) + "\n")

    rerun = nightly(*common)

    assert f"warning: {results}:1: not a JSON record" in rerun.stderr
    assert "moved to results.jsonl.rejected, its cell runs again" in rerun.stderr
    assert "ort-cpu: 1 cell(s) run (pass 1), 0 carried over" in rerun.stdout
    assert (run_dir / "results.jsonl.rejected").read_text() == lines[0] + "\n"
    assert len(read_records(results)) == 3
    merged = harness("merge", str(run_dir), "--out", str(tmp_path / "site"))
    assert "3 record(s), 0 conflict(s)" in merged.stdout and merged.returncode == 0
