"""Reading results files: the last record of a cell wins, a torn last line is skipped, other bad lines are errors."""
from __future__ import annotations

import json

import pytest

from tests.reports.conftest import make_record, write_jsonl
from harness.store.results_file import RecordError
from reports.results import TornLineWarning, read_results


def outcomes(records):
    return {(r["case"], r["variant"], r["target"]): r["outcome"] for r in records}


def test_the_last_record_of_a_cell_wins_within_and_across_files(tmp_path):
    first = write_jsonl(tmp_path / "a.jsonl", [
        make_record("c", "v", "ort-cpu", "fail", fail=("parser", "bad", None)),
        make_record("c", "w", "ort-cpu", "pass"),
        make_record("c", "v", "ort-cpu", "mismatch"),
    ])
    second = write_jsonl(tmp_path / "b.jsonl", [
        make_record("c", "v", "ort-cpu", "pass"),
        make_record("c", "v", "trt86-orin", "crash", fail=("crash", "sig", None)),
    ])

    assert outcomes(read_results([first]).records) == {("c", "v", "ort-cpu"): "mismatch", ("c", "w", "ort-cpu"): "pass"}
    assert outcomes(read_results([first, second]).records) == {
        ("c", "v", "ort-cpu"): "pass", ("c", "w", "ort-cpu"): "pass", ("c", "v", "trt86-orin"): "crash",
    }
    assert outcomes(read_results([second, first]).records)[("c", "v", "ort-cpu")] == "mismatch"


def test_a_torn_last_line_is_skipped_with_a_warning_naming_file_and_line(tmp_path):
    kept = make_record("c", "v", "ort-cpu")
    path = write_jsonl(tmp_path / "results.jsonl", [kept], tail=json.dumps(make_record("c", "w", "ort-cpu"))[:57])

    with pytest.warns(TornLineWarning, match=rf"{path}:2: skipped a torn last line"):
        results = read_results([path])

    assert results.records == [kept]
    assert len(results.skipped) == 1 and f"{path}:2" in results.skipped[0]


def test_blank_lines_are_not_records(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text("\n" + json.dumps(make_record("c", "v", "ort-cpu")) + "\n\n\n")
    results = read_results([path])
    assert len(results.records) == 1 and results.skipped == []


def test_a_malformed_line_before_the_last_is_an_error_naming_file_and_line(tmp_path):
    path = tmp_path / "results.jsonl"
    good = json.dumps(make_record("c", "v", "ort-cpu"))
    path.write_text(f"{good}\n{{not json\n{good}\n")
    with pytest.raises(RecordError, match=rf"{path}:2: not a JSON record"):
        read_results([path])


def test_a_line_that_breaks_the_record_schema_is_an_error_naming_file_line_and_field(tmp_path):
    bad = make_record("c", "v", "ort-cpu")
    bad["outcome"] = "sort-of-pass"
    path = write_jsonl(tmp_path / "results.jsonl", [make_record("c", "w", "ort-cpu"), bad])
    with pytest.raises(RecordError, match=rf"{path}:2: field 'outcome'"):
        read_results([path])


def test_a_missing_results_file_is_an_error_naming_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere.jsonl"):
        read_results([tmp_path / "nowhere.jsonl"])


def test_records_of_one_cell_from_two_hosts_are_both_kept(tmp_path):
    on_a100, on_l4 = make_record("c", "v", "trt86-x86", "pass"), make_record("c", "v", "trt86-x86", "fallback")
    on_a100["provenance"], on_l4["provenance"] = {"run": "r1", "host": "a100"}, {"run": "r2", "host": "l4"}
    merged = write_jsonl(tmp_path / "merged.jsonl", [on_a100, on_l4])
    kept = read_results([merged]).records
    assert sorted((r["provenance"]["host"], r["outcome"]) for r in kept) == [("a100", "pass"), ("l4", "fallback")]
