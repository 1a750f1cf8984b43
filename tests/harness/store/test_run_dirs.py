"""Run directories are read past damage: every good record is kept and every bad line is named by file and line."""
import json

from harness.store.run_dirs import find_run_dirs, read_run, run_id
from tests.reports.conftest import make_record


def write_run(path, lines, manifest=True):
    path.mkdir(parents=True)
    if manifest:
        (path / "run.json").write_text(json.dumps({"format": "trt-matrix/run/1", "id": path.name, "host": "orin-01",
                                                   "started_at": "2026-11-20T02:00:00+00:00"}))
    (path / "results.jsonl").write_text("".join(line + "\n" for line in lines))


def good(variant, host="orin-01"):
    record = make_record("s1-conv-silu", variant, "trt86-orin")
    record["provenance"] = {"run": "run", "host": host}  # the run directory write_run makes, named "run" below
    return json.dumps(record)


def test_a_corrupt_middle_line_and_a_schema_breaking_record_are_reported_and_the_rest_is_kept(tmp_path):
    bad_schema = json.loads(good("c"))
    bad_schema["outcome"] = "sort-of"
    write_run(tmp_path / "run", [good("a"), '{"case": "s1-conv-silu", "varia', good("b"), json.dumps(bad_schema)])
    run = read_run(tmp_path / "run")
    assert [r["variant"] for r in run.records] == ["a", "b"]
    assert [str(b) for b in run.bad_lines][0] == (f"{tmp_path / 'run' / 'results.jsonl'}:2: not a JSON record "
                                                  "(Unterminated string starting at, column 26)")
    assert run.bad_lines[1].line == 4 and "field 'outcome'" in run.bad_lines[1].reason
    assert run.bad_lines[0].text == '{"case": "s1-conv-silu", "varia'  # kept verbatim: nothing is lost
    assert run.problems == [] and run.id == "run" and run.host == "orin-01"


def test_a_run_without_a_readable_manifest_still_gives_its_records_and_their_host(tmp_path):
    write_run(tmp_path / "run", [good("a", host="jetson-7")], manifest=False)
    run = read_run(tmp_path / "run")
    assert run.host == "jetson-7" and len(run.records) == 1
    assert run.problems == [f"{tmp_path / 'run' / 'run.json'}: no such file: {tmp_path / 'run'} is not a run "
                            "directory (written by `trt-matrix nightly`)"]


def test_run_directories_are_found_below_a_folder_but_not_inside_a_run(tmp_path):
    write_run(tmp_path / "artifacts" / "run-orin" / "2026-11-20_orin_abc", [good("a")])
    write_run(tmp_path / "artifacts" / "run-x86" / "2026-11-20_x86_abc", [good("a")])
    (tmp_path / "artifacts" / "run-orin" / "2026-11-20_orin_abc" / "work" / "t").mkdir(parents=True)
    write_run(tmp_path / "artifacts" / "run-orin" / "2026-11-20_orin_abc" / "work" / "t" / "nested", [good("b")])
    found = find_run_dirs([tmp_path / "artifacts"])
    assert [p.name for p in found] == ["2026-11-20_orin_abc", "2026-11-20_x86_abc"]


def test_a_run_id_is_a_safe_directory_name():
    assert run_id("2026-11-20", "orin 01/lab", "4b3c3b7a9e12") == "2026-11-20_orin-01-lab_4b3c3b7a9e12"


def test_a_run_json_of_another_run_and_lost_records_are_named(tmp_path):
    write_run(tmp_path / "run", [good("a"), good("b")])
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    (tmp_path / "run" / "run.json").write_text(json.dumps({**manifest, "id": "other-night",
                                                           "cells": {"trt86-orin": {"outcomes": {"pass": 3}}}}))
    run = read_run(tmp_path / "run")
    assert [r["variant"] for r in run.records] == ["a", "b"]  # the records are still read
    assert run.problems == [
        f"{tmp_path / 'run' / 'results.jsonl'}: holds 2 record(s) of trt86-orin, but {tmp_path / 'run' / 'run.json'} "
        "counts 3 cell(s): 1 record(s) lost",
        f"{tmp_path / 'run' / 'run.json'}: describes run other-night, but the records in "
        f"{tmp_path / 'run' / 'results.jsonl'} are of run run: a run.json from another run",
    ]
