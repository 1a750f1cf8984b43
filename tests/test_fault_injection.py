"""Fault injection: every kind of input the tool reads, damaged in several ways, through the real command.

For each damage the command must end without a traceback, with either one error line naming the damaged file (exit 2
for input that is not what the command takes, 3 for damage to what the tool wrote) or records that name it
(infra-error); never a verdict about a pattern from damaged input, and never a loss of what was already recorded.

Inputs (what reads them): models and data (run), index.json (run, nightly), results.jsonl (report, diff, merge, run),
run.json (merge, history, nightly), merge.json (diff), matrix.yaml (list, run), TensorRT logs (classify), engine
inspector JSON (layers). Damages: empty, truncated, garbage, wrong types, swapped with another file of the same
kind, a directory where a file is expected, and a file where a directory is expected.
"""
from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Callable

import pytest

from harness.worker.record import OBSERVED_OUTCOMES
from tests.conftest import REFERENCE, read_records
from tests.harness.commands.test_main import harness
from tests.harness.orchestration.test_nightly import nightly, run_dir_of

GARBAGE = bytes(range(256)) * 8  # binary noise, not UTF-8, not JSON, not protobuf


def empty(path: Path, other: Path) -> None:
    path.write_bytes(b"")


def truncated(path: Path, other: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def garbage(path: Path, other: Path) -> None:
    path.write_bytes(GARBAGE)


def swapped(path: Path, other: Path) -> None:
    path.write_bytes(other.read_bytes())


def directory(path: Path, other: Path) -> None:
    path.unlink()
    path.mkdir()
    (path / "inside").write_text("a directory where a file should be")


def json_of(value) -> Callable[[Path, Path], None]:
    """Damage: valid JSON of the wrong shape or types."""

    def damage(path: Path, other: Path) -> None:
        path.write_text(json.dumps(value) + ("\n" if path.suffix == ".jsonl" else ""))

    damage.__name__ = "wrong_types"
    return damage


@dataclasses.dataclass(frozen=True)
class Baseline:
    """What every fault starts from, made once: a cases directory, its ort-cpu results, and two nights of runs."""

    cases: Path
    results: Path
    runs: Path
    nights: tuple[Path, Path]


@pytest.fixture(scope="module")
def baseline(control_cases_dir, tmp_path_factory) -> Baseline:
    root = tmp_path_factory.mktemp("baseline")
    results = root / "results.jsonl"
    harness("run", "--cases", str(control_cases_dir), "--results", str(results))
    runs = root / "runs"
    common = ("--target", "ort-cpu", "--cases", str(control_cases_dir), "--runs", str(runs), "--host", "cpu-a")
    nights = (run_dir_of(nightly(*common, "--date", "2026-11-22")),
              run_dir_of(nightly(*common, "--date", "2026-11-23", "--force")))
    return Baseline(control_cases_dir, results, runs, nights)


@pytest.fixture()
def work(baseline, tmp_path) -> Baseline:
    """A private copy of the baseline to damage."""
    cases = Path(shutil.copytree(baseline.cases, tmp_path / "cases"))
    results = Path(shutil.copy(baseline.results, tmp_path / "results.jsonl"))
    runs = Path(shutil.copytree(baseline.runs, tmp_path / "runs", ignore=shutil.ignore_patterns(".cases", ".lock")))
    return Baseline(cases, results, runs, tuple(runs / night.name for night in baseline.nights))


def by_cell(record: dict) -> tuple[str, str]:
    return record["case"], record["variant"]


def assert_no_traceback(result) -> None:
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout, result.stderr


def assert_named_error(result, status: int, path: Path) -> None:
    """One `error:` line naming ``path``, exit ``status``."""
    assert_no_traceback(result)
    assert result.returncode == status, f"exit {result.returncode}, expected {status}:\n{result.stdout}{result.stderr}"
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and str(path) in errors[0], result.stderr


# --- models and data: each cell checks its files against index.json before it runs ------------------------------

CELL_FILE_DAMAGES = [empty, truncated, garbage, swapped]


@pytest.mark.parametrize("damage", CELL_FILE_DAMAGES, ids=lambda d: d.__name__)
@pytest.mark.parametrize("field", ["model", "data"])
def test_a_damaged_model_or_data_file_is_an_infra_error_never_a_verdict(work, field, damage):
    index = json.loads((work.cases / "index.json").read_text())
    victim, other = index["cases"][0]["variants"][0], index["cases"][1]["variants"][0]
    path, other_path = work.cases / victim[field], work.cases / other[field]
    damage(path, other_path)
    recorded = work.results.read_bytes()
    result = harness("run", "--cases", str(work.cases), "--results", str(work.results), "--force", "--jobs", "1",
                     check=False)
    assert_no_traceback(result)
    assert result.returncode == 3
    assert work.results.read_bytes().startswith(recorded)  # nothing already recorded is lost
    new = {(r["case"], r["variant"]): r for r in read_records(work.results)[recorded.count(b"\n"):]}
    damaged = new.pop((index["cases"][0]["id"], victim["name"]))
    assert damaged["outcome"] == "infra-error" and damaged["outcome"] not in OBSERVED_OUTCOMES
    assert str(path.resolve()) in damaged["failure"]["message"] and damaged["agrees"] is None
    assert {r["outcome"] for r in new.values()} == {"pass"}  # the undamaged cells still speak


@pytest.mark.parametrize("field", ["model", "data"])
def test_a_directory_where_a_model_or_data_file_should_be_is_a_named_error(work, field):
    index = json.loads((work.cases / "index.json").read_text())
    path = work.cases / index["cases"][0]["variants"][0][field]
    directory(path, path)
    recorded = work.results.read_bytes()
    result = harness("run", "--cases", str(work.cases), "--results", str(work.results), "--force", check=False)
    assert_named_error(result, 2, path)
    assert work.results.read_bytes() == recorded


# --- index.json ----------------------------------------------------------------------------------------------------

def other_index(path: Path, other: Path) -> None:
    """An index.json from another cases directory: names files this one does not have."""
    index = json.loads(path.read_text())
    for case in index["cases"]:
        case["id"] = "elsewhere-" + case["id"]
        for variant in case["variants"]:
            variant["model"] = "elsewhere/" + variant["model"]
    path.write_text(json.dumps(index))


@pytest.mark.parametrize("damage", [empty, truncated, garbage, json_of([1, 2, 3]),
                                    json_of({"format": "trt-matrix/cases/1", "cases": [{"id": 7}]}), other_index,
                                    directory], ids=lambda d: d.__name__ if d is not other_index else "swapped")
@pytest.mark.parametrize("command", ["run", "nightly"])
def test_a_damaged_index_is_a_named_error_and_nothing_runs(work, tmp_path, damage, command):
    index = work.cases / "index.json"
    damage(index, index)
    recorded = work.results.read_bytes()
    if command == "run":
        result = harness("run", "--cases", str(work.cases), "--results", str(work.results), check=False)
    else:
        result = nightly("--target", "ort-cpu", "--cases", str(work.cases), "--runs", str(tmp_path / "new-runs"),
                         check=False)
        assert not (tmp_path / "new-runs").exists()  # nothing created
    assert_named_error(result, 2, index if damage is not other_index else work.cases)
    assert work.results.read_bytes() == recorded


def test_a_file_where_the_cases_directory_should_be_is_a_named_error(work, tmp_path):
    not_a_dir = tmp_path / "cases-file"
    not_a_dir.write_text("x")
    result = harness("run", "--cases", str(not_a_dir), "--results", str(work.results), check=False)
    assert_named_error(result, 2, not_a_dir)


# --- results.jsonl ---------------------------------------------------------------------------------------------------

def bad_middle_line(path: Path, other: Path) -> None:
    lines = path.read_text().splitlines(keepends=True)
    path.write_text(lines[0] + "}{ not a record\n" + "".join(lines[1:]))


def wrong_type_record(path: Path, other: Path) -> None:
    lines = path.read_text().splitlines(keepends=True)
    record = json.loads(lines[1])
    record["outcome"] = 5
    path.write_text(lines[0] + json.dumps(record) + "\n" + "".join(lines[2:]))


RESULTS_DAMAGES = [empty, truncated, garbage, bad_middle_line, wrong_type_record, json_of([1, 2, 3])]


@pytest.mark.parametrize("damage", RESULTS_DAMAGES, ids=lambda d: d.__name__)
def test_merge_reads_past_a_damaged_results_file_and_names_it(work, tmp_path, damage):
    night = work.nights[1]
    good = read_records(night / "results.jsonl")
    damage(night / "results.jsonl", night / "results.jsonl")
    result = harness("merge", str(night), "--out", str(tmp_path / "site"), check=False)
    assert_no_traceback(result)
    assert result.returncode == 3 and str(night / "results.jsonl") in result.stderr
    merged = read_records(tmp_path / "site" / "results.jsonl")
    assert all(record in good for record in merged)  # nothing from a damaged line becomes a record
    assert 'id="incomplete"' in (tmp_path / "site" / "index.html").read_text()


@pytest.mark.parametrize("damage", RESULTS_DAMAGES, ids=lambda d: d.__name__)
def test_diff_against_a_damaged_results_file_is_red_and_names_it(work, damage):
    old, new = work.nights
    damage(new / "results.jsonl", new / "results.jsonl")
    result = harness("diff", str(old), str(new), check=False)
    assert_no_traceback(result)
    assert result.returncode == 3 and str(new / "results.jsonl") in result.stderr


@pytest.mark.parametrize("damage", [truncated, bad_middle_line, wrong_type_record, garbage], ids=lambda d: d.__name__)
def test_report_and_run_never_turn_a_damaged_results_file_into_records(work, tmp_path, damage):
    good = [line for line in work.results.read_text().splitlines() if line]
    damage(work.results, work.results)
    kept = [line for line in good if line in work.results.read_text(errors="replace").splitlines()]
    report = harness("report", "--results", str(work.results), "--cases", str(work.cases), "--out",
                     str(tmp_path / "index.html"), check=False)
    assert_no_traceback(report)
    assert str(work.results) in report.stderr
    assert report.returncode == (0 if damage is truncated else 3)  # a torn last line is skipped with a warning
    run = harness("run", "--cases", str(work.cases), "--results", str(work.results), check=False)
    assert_no_traceback(run)
    assert run.returncode == 0 and f"warning: {work.results}:" in run.stderr
    after = work.results.read_text().splitlines()
    assert all(line in after for line in kept)  # nothing already recorded is lost
    aside = b"".join(p.read_bytes() for p in work.results.parent.glob("results.jsonl.*"))
    assert aside  # the damaged lines are kept beside the file (.torn, .rejected), not dropped
    records = read_records(work.results)
    assert {(r["case"], r["variant"]) for r in records} == {(r["case"], r["variant"]) for r in map(json.loads, good)}
    assert {r["outcome"] for r in records} == {"pass"}  # every cell has a valid record again, none from damage


def test_a_directory_where_the_results_file_should_be_is_a_named_error(work, tmp_path):
    night = work.nights[1]
    directory(night / "results.jsonl", night / "results.jsonl")
    merge = harness("merge", str(night), "--out", str(tmp_path / "site"), check=False)
    assert_no_traceback(merge)
    assert merge.returncode == 3 and f"{night / 'results.jsonl'}: a directory" in merge.stderr
    run = harness("run", "--cases", str(work.cases), "--results", str(night / "results.jsonl"), check=False)
    assert_named_error(run, 2, night / "results.jsonl")


# --- run.json and merge.json (manifests) --------------------------------------------------------------------------

def other_run_json(path: Path, other: Path) -> None:
    """The run.json of the night before, copied over this night's."""
    path.write_bytes((path.parent.parent / other.name / "run.json").read_bytes())


RUN_JSON_DAMAGES = [empty, truncated, garbage, json_of({"format": "trt-matrix/run/1", "id": "x", "host": "cpu-a",
                                                        "started_at": "2026-11-23", "targets": "ort-cpu"}),
                    other_run_json, directory]


@pytest.mark.parametrize("damage", RUN_JSON_DAMAGES,
                         ids=lambda d: "swapped" if d is other_run_json else d.__name__)
def test_a_damaged_run_json_is_named_by_merge_and_history_and_its_records_survive(work, tmp_path, damage):
    old, new = work.nights
    damage(new / "run.json", old)
    merge = harness("merge", str(new), "--out", str(tmp_path / "site"), check=False)
    assert_no_traceback(merge)
    assert merge.returncode == 3 and str(new / "run.json") in merge.stderr
    merged = sorted(read_records(tmp_path / "site" / "results.jsonl"), key=by_cell)
    assert merged == sorted(read_records(new / "results.jsonl"), key=by_cell)  # the run's records all survive
    history = harness("history", str(tmp_path / "history"), "--add", str(old), str(new), "--out",
                      str(tmp_path / "trend.html"), check=False)
    assert_no_traceback(history)
    assert history.returncode in (2, 3) and "run.json" in history.stderr


@pytest.mark.parametrize("damage", RUN_JSON_DAMAGES[:-1],
                         ids=lambda d: "swapped" if d is other_run_json else d.__name__)
def test_a_nightly_never_rewrites_a_damaged_run_json_of_the_run_it_resumes(work, damage):
    old, new = work.nights
    damage(new / "run.json", old)
    damaged, results = (new / "run.json").read_bytes(), (new / "results.jsonl").read_bytes()
    result = nightly("--target", "ort-cpu", "--cases", str(work.cases), "--runs", str(work.runs), "--host", "cpu-a",
                     "--date", "2026-11-23", check=False)
    assert_no_traceback(result)
    assert (new / "run.json").read_bytes() == damaged and (new / "results.jsonl").read_bytes().startswith(results)
    assert_named_error(result, 3, new / "run.json")


@pytest.mark.parametrize("damage", [empty, garbage, directory], ids=lambda d: d.__name__)
def test_a_damaged_merge_json_leaves_diff_reading_the_merged_records(work, tmp_path, damage):
    old, new = work.nights
    harness("merge", str(new), "--out", str(tmp_path / "site"))
    damage(tmp_path / "site" / "merge.json", tmp_path / "site" / "merge.json")
    result = harness("diff", str(old), str(tmp_path / "site"), check=False)
    assert_no_traceback(result)
    assert result.returncode in (0, 3) and "3 gone" not in result.stdout  # the merged records are still compared


# --- matrix.yaml ---------------------------------------------------------------------------------------------------

def wrong_type_matrix(path: Path, other: Path) -> None:
    path.write_text("targets:\n  ort-cpu: [onnxruntime, local]\n")


@pytest.mark.parametrize("damage", [empty, truncated, garbage, wrong_type_matrix, swapped, directory],
                         ids=lambda d: d.__name__)
def test_a_damaged_matrix_is_a_named_error_for_every_command_that_reads_it(work, tmp_path, damage):
    from tests.conftest import REPO

    matrix = Path(shutil.copy(REPO / "matrix.yaml", tmp_path / "matrix.yaml"))
    damage(matrix, work.results)
    for argv in (["list"], ["run", "--cases", str(work.cases), "--results", str(tmp_path / "r.jsonl")]):
        result = harness("--matrix", str(matrix), *argv, check=False)
        assert_named_error(result, 2, matrix)
        assert not (tmp_path / "r.jsonl").exists()


# --- TensorRT logs and engine inspector JSON ---------------------------------------------------------------------

def reference(name: str, tmp_path: Path) -> Path:
    return Path(shutil.copy(REFERENCE / name, tmp_path / Path(name).name))


@pytest.mark.parametrize("damage", [empty, garbage, swapped, directory], ids=lambda d: d.__name__)
def test_classify_refuses_a_damaged_log_naming_it(tmp_path, damage):
    log = reference("trt-logs/F01.log", tmp_path)
    damage(log, REFERENCE / "engine-layers" / "a100-resnet-qat.graph.json")
    assert_named_error(harness("classify", str(log), check=False), 2, log)


def test_classify_of_a_log_cut_short_still_classifies_what_it_holds(tmp_path):
    log = reference("trt-logs/F01.log", tmp_path)
    truncated(log, log)
    assert json.loads(harness("classify", str(log)).stdout)["category"] == "no-implementation"


@pytest.mark.parametrize("damage", [empty, garbage, json_of({"Layers": [{"Name": 3}]}), json_of({"foo": 1}),
                                    swapped, directory], ids=lambda d: d.__name__)
def test_layers_refuses_damaged_engine_json_naming_it(tmp_path, damage):
    engine = reference("engine-layers/a100-resnet-qat.graph.json", tmp_path)
    damage(engine, REFERENCE / "trt-logs" / "F01.log")
    assert_named_error(harness("layers", str(engine), check=False), 2, engine)


def test_layers_of_engine_json_cut_short_reads_the_complete_layers_and_says_how_many(tmp_path):
    engine = reference("engine-layers/a100-resnet-qat.graph.json", tmp_path)
    truncated(engine, engine)
    result = harness("layers", str(engine))
    layers = json.loads(result.stdout)
    assert 0 < len(layers) < 37 and f"{engine}: {len(layers)} layer(s) read" in result.stderr


# --- a file where a directory is expected --------------------------------------------------------------------------

@pytest.mark.parametrize("argv", [
    ["generate", "--out", "{file}", "-k", "control-qdq"],
    ["merge", "{night}", "--out", "{file}"],
    ["merge", "{file}", "--out", "{dir}"],
    ["history", "{file}"],
    ["nightly", "--target", "ort-cpu", "--cases", "{cases}", "--runs", "{file}"],
    ["diff", "{file}", "{night}"],
], ids=["generate-out", "merge-out", "merge-path", "history-dir", "nightly-runs", "diff-old"])
def test_a_file_where_a_directory_is_expected_is_a_named_error(work, tmp_path, argv):
    blocker = tmp_path / "blocker"
    blocker.write_bytes(GARBAGE)
    values = {"file": blocker, "dir": tmp_path / "out", "night": work.nights[1], "cases": work.cases}
    result = harness(*[a.format(**values) for a in argv], check=False)
    assert_no_traceback(result)
    assert result.returncode in (2, 3) and str(blocker) in result.stderr
    assert blocker.read_bytes() == GARBAGE  # never written over
