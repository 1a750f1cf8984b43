"""`python -m harness merge`, black-box, on three hosts' real ort-cpu nightly runs."""
import json

import pytest

from tests.conftest import read_records
from tests.harness.commands.test_main import harness
from tests.harness.orchestration.test_nightly import nightly, run_dir_of


@pytest.fixture(scope="module")
def three_hosts(control_cases_dir, tmp_path_factory):
    """One nightly run of the control cases on ort-cpu for each of three hosts, as their artifacts arrive."""
    artifacts = tmp_path_factory.mktemp("artifacts")
    runs = {}
    for host in ("cpu-a", "cpu-b", "cpu-c"):
        result = nightly("--target", "ort-cpu", "--cases", str(control_cases_dir), "--runs", str(artifacts / host),
                         "--host", host, "--date", "2026-11-20")
        runs[host] = run_dir_of(result)
    return artifacts, runs


def test_three_hosts_merge_with_one_torn_results_file_reported_by_file_and_line(three_hosts, tmp_path):
    artifacts, runs = three_hosts
    torn = tmp_path / "cpu-c"
    import shutil

    shutil.copytree(runs["cpu-c"], torn)  # host c died while writing its last record
    results = torn / "results.jsonl"
    text = results.read_text()
    results.write_text(text[: len(text) - 200])
    result = harness("merge", str(runs["cpu-a"]), str(runs["cpu-b"]), str(torn), "--out", str(tmp_path / "site"),
                     check=False)
    assert result.returncode == 3, result.stdout + result.stderr
    assert f"{results}:3: torn last line" in result.stderr
    merged = read_records(tmp_path / "site" / "results.jsonl")
    by_host = {}
    for record in merged:
        by_host.setdefault(record["provenance"]["host"], []).append(record)
    assert {host: len(records) for host, records in by_host.items()} == {"cpu-a": 3, "cpu-b": 3, "cpu-c": 2}
    manifest = json.loads((tmp_path / "site" / "merge.json").read_text())
    assert manifest["problems"] == [
        f"{results}: its SHA-256 differs from the one files.json lists (the file was changed after the run sealed it)",
        f"{results}:3: torn last line (the file ends mid-record: the writer died while writing it)"]
    assert manifest["conflicts"] == []  # three hosts, the same outcomes
    rejected = (tmp_path / "site" / "rejected.txt").read_text()
    assert rejected.startswith(f"# {results}:3: torn last line") and text.splitlines()[2][:100] in rejected
    assert "cpu-c" in (tmp_path / "site" / "index.html").read_text()


def test_the_same_cell_from_two_hosts_is_kept_apart_and_disagreeing_outcomes_are_a_conflict(three_hosts, tmp_path):
    _, runs = three_hosts
    import shutil

    other = tmp_path / "cpu-b"
    shutil.copytree(runs["cpu-b"], other)
    lines = (other / "results.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    changed = next(r for r in records if r["case"] == "control-qdq-conv-relu")
    changed.update(outcome="fallback", fallback_nodes=["/conv/Conv"])  # as if host b's library ran the conv in FP32
    (other / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (other / "files.json").unlink()  # an edited copy is no longer the run its seal describes
    result = harness("merge", str(runs["cpu-a"]), str(other), "--out", str(tmp_path / "site"))
    assert "conflict: control-qdq-conv-relu/conv-relu on ort-cpu: cpu-a: pass, cpu-b: fallback" in result.stdout
    manifest = json.loads((tmp_path / "site" / "merge.json").read_text())
    assert manifest["conflicts"] == [{"case": "control-qdq-conv-relu", "variant": "conv-relu", "target": "ort-cpu",
                                      "outcomes": {"cpu-a": "pass", "cpu-b": "fallback"}}]
    assert len(read_records(tmp_path / "site" / "results.jsonl")) == 6


def test_a_directory_of_downloaded_artifacts_merges_every_run_below_it(three_hosts, tmp_path):
    artifacts, _ = three_hosts
    result = harness("merge", str(artifacts), "--out", str(tmp_path / "site"))
    assert "9 record(s), 0 conflict(s)" in result.stdout


def test_a_path_without_runs_is_a_readable_error(tmp_path):
    result = harness("merge", str(tmp_path), "--out", str(tmp_path / "site"), check=False)
    assert result.returncode == 2
    assert f"{tmp_path}: neither a run directory nor a directory holding any" in result.stderr


def test_the_merged_report_reads_the_case_index_each_run_kept(three_hosts, tmp_path):
    import shutil

    _, runs = three_hosts
    harness("merge", str(runs["cpu-a"]), "--out", str(tmp_path / "site"))
    page = (tmp_path / "site" / "index.html").read_text()
    assert "Control: explicit Q/DQ Conv + ReLU" in page and "not in the case library" not in page
    bare = tmp_path / "bare"
    shutil.copytree(runs["cpu-a"], bare)
    (bare / "cases-index.json").unlink()  # a run written before runs kept their case index (or sealed them)
    (bare / "files.json").unlink()
    result = harness("merge", str(bare), "--out", str(tmp_path / "bare-site"))
    assert "no run directory holds a cases-index.json" in result.stderr
    assert "not in the case library" in (tmp_path / "bare-site" / "index.html").read_text()
