"""`nightly` through the real command with damaged inputs: validated before anything is created, a damaged run.json
is never rewritten, a damaged cached library is generated again."""
import pytest

from tests.conftest import read_records
from tests.harness.orchestration.test_nightly import nightly, run_dir_of


def test_a_corrupt_cases_index_stops_the_nightly_before_anything_is_created(cases_copy, tmp_path):
    (cases_copy / "index.json").write_text('{"format": "trt-matrix/cases/1", "cases": [')
    result = nightly("--target", "ort-cpu", "--cases", str(cases_copy), "--runs", str(tmp_path / "runs"), check=False)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"{cases_copy / 'index.json'}: not valid JSON" in result.stderr
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("library", [True, False], ids=["case-library", "cases-dir"])
def test_a_k_that_selects_nothing_stops_the_nightly_and_lists_the_closest_names(control_cases_dir, tmp_path, library):
    cases = [] if library else ["--cases", str(control_cases_dir)]
    result = nightly("--target", "ort-cpu", "--runs", str(tmp_path / "runs"), "-k", "control-qdq-conv-rleu", *cases,
                     check=False)
    assert result.returncode == 2 and "matches none of the" in result.stderr
    assert "closest: control-qdq-conv-relu/conv-relu" in result.stderr
    assert not (tmp_path / "runs").exists()


def test_a_damaged_run_json_of_the_run_to_resume_is_never_rewritten(control_cases_dir, tmp_path):
    args = ("--target", "ort-cpu", "--cases", str(control_cases_dir), "--runs", str(tmp_path / "runs"),
            "--date", "2026-11-22")
    run_dir = run_dir_of(nightly(*args))
    damaged = b'{"attempts": [{"started_at": "2026-11-22T01:00:00+00:00"}, {"started_at": "2026-11'
    (run_dir / "run.json").write_bytes(damaged)
    results = (run_dir / "results.jsonl").read_bytes()
    result = nightly(*args, "--force", check=False)
    assert result.returncode == 3 and "Traceback" not in result.stderr
    assert f"{run_dir / 'run.json'}: not valid JSON" in result.stderr and "will not overwrite" in result.stderr
    assert (run_dir / "run.json").read_bytes() == damaged and (run_dir / "results.jsonl").read_bytes() == results


def test_a_damaged_cached_case_library_is_generated_again(tmp_path):
    args = ("--target", "ort-cpu", "--runs", str(tmp_path / "runs"), "-k", "control-qdq*")
    nightly(*args, "--date", "2026-11-22")
    (cache,) = (tmp_path / "runs" / ".cases").iterdir()
    model = cache / "control-qdq-conv-relu" / "conv-relu.onnx"
    model.write_bytes(model.read_bytes()[:64])
    result = nightly(*args, "--date", "2026-11-23", "--force")
    assert f"the cached case library in {cache} is damaged ({model}: 64 bytes" in result.stdout
    assert [r["outcome"] for r in read_records(run_dir_of(result) / "results.jsonl")] == ["pass"]


def test_runs_that_is_a_file_is_one_error_line(control_cases_dir, tmp_path):
    (tmp_path / "runs").write_text("")
    result = nightly("--target", "ort-cpu", "--cases", str(control_cases_dir), "--runs", str(tmp_path / "runs"),
                     check=False)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
    assert f"--runs {tmp_path / 'runs'}: {tmp_path / 'runs'} is a file, not a directory" in result.stderr
