"""Results files: the strict reader (the report) and the lenient one (merge, history, diff, resume) see the same
damage; the last record of a cell wins; the writer validates what it appends."""
from __future__ import annotations

import json

import pytest

from harness.store.results_file import RecordError, ResultsWriter, read_results, read_results_file
from tests.reports.conftest import make_record, write_jsonl


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


def test_a_torn_last_line_is_skipped_and_named_by_file_and_line(tmp_path):
    kept = make_record("c", "v", "ort-cpu")
    path = write_jsonl(tmp_path / "results.jsonl", [kept], tail=json.dumps(make_record("c", "w", "ort-cpu"))[:57])

    results = read_results([path])

    assert results.records == [kept]
    assert results.skipped == [f"{path}:2: torn last line (the file ends mid-record: the writer died while writing it)"]


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


def test_a_complete_last_line_that_is_not_json_is_damage_not_a_torn_write(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text(json.dumps(make_record("c", "v", "ort-cpu")) + "\n{not json\n")  # it ends with its newline
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


def test_the_lenient_reader_keeps_going_and_reports_every_damaged_line_the_strict_one_stops_at(tmp_path):
    bad_schema = make_record("c", "x", "ort-cpu")
    bad_schema["precision"] = {"conv": "int3"}
    good = [make_record("c", v, "ort-cpu") for v in ("a", "b", "c")]
    lines = ["[1, 2]", json.dumps(good[1]), "{oops", json.dumps(bad_schema), json.dumps(good[2])[:30]]
    path = write_jsonl(tmp_path / "results.jsonl", [good[0]], tail="\n".join(lines))

    read = read_results_file(path)

    assert [r["variant"] for r in read.records] == ["a", "b"]
    assert [(b.line, b.torn) for b in read.bad_lines] == [(2, False), (4, False), (5, False), (6, True)]
    assert "field '(top level)'" in read.bad_lines[0].reason and "not a JSON record" in read.bad_lines[1].reason
    assert "field 'precision/conv'" in read.bad_lines[2].reason
    assert read.bad_lines[1].text == "{oops"  # kept verbatim
    with pytest.raises(RecordError, match=rf"{path}:2: field '\(top level\)'"):
        read_results_file(path, strict=True)


def test_the_writer_refuses_a_record_that_breaks_the_schema_and_appends_nothing(tmp_path):
    bad = make_record("c", "v", "ort-cpu")
    bad["stage"] = "somewhere"
    with ResultsWriter(tmp_path / "r.jsonl") as writer:
        with pytest.raises(RecordError, match="record for c/v on ort-cpu: field 'stage'"):
            writer.append(bad)
        writer.append(make_record("c", "w", "ort-cpu"))
    assert [r["variant"] for r in read_results_file(tmp_path / "r.jsonl").records] == ["w"]


def test_the_writer_moves_a_torn_last_line_aside_and_knows_what_was_recorded(tmp_path, capsys):
    kept = make_record("c", "v", "ort-cpu")
    path = write_jsonl(tmp_path / "r.jsonl", [kept, make_record("c", "v", "trt86-orin")], tail='{"schema": "trt')
    with ResultsWriter(path) as writer:
        assert writer.recorded_cells("ort-cpu") == {("c", "v")} and writer.recorded_cells("trt86-x86") == set()
    assert (tmp_path / "r.jsonl.torn").read_text() == '{"schema": "trt\n'
    assert read_results_file(path).bad_lines == []
    assert "an unfinished last line was moved to r.jsonl.torn; its cell runs again" in capsys.readouterr().err


def test_a_fresh_writer_starts_an_empty_file(tmp_path):
    path = write_jsonl(tmp_path / "r.jsonl", [make_record("c", "v", "ort-cpu")])
    with ResultsWriter(path, fresh=True) as writer:
        assert writer.records == []
        writer.append(make_record("c", "w", "ort-cpu"))
    assert [r["variant"] for r in read_results_file(path).records] == ["w"]


def test_the_writer_moves_every_damaged_line_aside_and_keeps_the_others_byte_for_byte(tmp_path, capsys):
    good = [json.dumps(make_record("c", v, "ort-cpu")) for v in ("a", "b")]
    bad_schema = make_record("c", "x", "ort-cpu")
    bad_schema["agrees"] = "maybe"
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join([good[0], "garbage", json.dumps(bad_schema), "", good[1], '{"torn']))
    with ResultsWriter(path) as writer:
        assert writer.recorded_cells("ort-cpu") == {("c", "a"), ("c", "b")}
    assert path.read_text() == f"{good[0]}\n\n{good[1]}\n"
    assert (tmp_path / "r.jsonl.rejected").read_text() == f"garbage\n{json.dumps(bad_schema)}\n"
    assert (tmp_path / "r.jsonl.torn").read_text() == '{"torn\n'
    err = capsys.readouterr().err
    assert f"warning: {path}:2: not a JSON record" in err and f"warning: {path}:3: field 'agrees'" in err
    assert err.count("its cell runs again") == 3


def test_one_host_kind_on_two_gpu_architectures_fills_two_cells_and_one_architecture_one():
    """The nightly names its host by host kind: an Ampere and an Ada server of x86-gpu must not overwrite each other."""
    from harness.store.results_file import cell_key

    def on(arch):
        record = make_record("s1-conv-silu", "stem", "trt86-orin", provenance={"run": "r1", "host": "x86-gpu"})
        return {**record, "environment": {**record["environment"], "gpu_arch": arch}}

    assert cell_key(on("sm_86")) != cell_key(on("sm_89"))
    assert cell_key(on("sm_86")) == cell_key(on("sm_86"))
    assert cell_key(on("sm_86"))[-2:] == ("x86-gpu", "sm_86")
