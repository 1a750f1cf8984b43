"""Reading the observed records a scan rests on: results files, run directories, merged directories, history."""
from __future__ import annotations

import json

import pytest

from harness.evidence.observations import ObservationsError, read_observations
from harness.store.merge import merge_runs, write_merged
from harness.store.run_dirs import RUN_FORMAT, write_manifest
from tests.conftest import read_records

CELL = ("s1-conv-silu", "as-reported", "ort-cpu")


def a_record(library_results, **changes) -> dict:
    record = next(r for r in read_records(library_results) if (r["case"], r["variant"], r["target"]) == CELL)
    return {**record, **changes}


def write_run(path, host, started_at, records) -> None:
    path.mkdir(parents=True)
    write_manifest(path, {"format": RUN_FORMAT, "id": path.name, "host": host, "started_at": started_at})
    (path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def test_a_results_file_gives_one_observation_per_cell(library_results):
    observations = read_observations([library_results])
    records = read_records(library_results)
    assert len(observations) == len(records) and observations.problems == []
    (observation,) = observations.of(*CELL)
    assert observation.source == str(library_results) and observation.host is None
    assert observation.record["outcome"] == "pass"


def test_the_record_that_started_last_wins_per_host(library_results, tmp_path):
    """A history store: two nights of one host and one night of another; the latest record of each host is kept."""
    history = tmp_path / "history"
    old = a_record(library_results, outcome="fail", started_at="2026-11-20T01:00:00+00:00",
                   failure={"category": "no-implementation", "message": "m", "node": None})
    new = a_record(library_results, started_at="2026-11-21T01:00:00+00:00")
    other = a_record(library_results, outcome="fallback", started_at="2026-11-19T01:00:00+00:00")
    write_run(history / "2026-11-21_orin-01_abc", "orin-01", "2026-11-21T01:00:00+00:00", [new])
    write_run(history / "2026-11-20_orin-01_abc", "orin-01", "2026-11-20T01:00:00+00:00", [old])
    write_run(history / "2026-11-19_orin-02_abc", "orin-02", "2026-11-19T01:00:00+00:00", [other])
    observations = read_observations([history])
    by_host = {o.host: o.record["outcome"] for o in observations.of(*CELL)}
    assert by_host == {"orin-01": "pass", "orin-02": "fallback"}
    sources = {o.host: o.source for o in observations.of(*CELL)}
    assert sources["orin-01"] == str(history / "2026-11-21_orin-01_abc" / "results.jsonl")


def test_a_merged_directory_is_read_through_its_results(library_results, tmp_path):
    write_run(tmp_path / "runs" / "2026-11-21_h1_abc", "h1", "2026-11-21T01:00:00+00:00", [a_record(library_results)])
    write_merged(merge_runs([tmp_path / "runs"]), tmp_path / "merged")
    (observation,) = read_observations([tmp_path / "merged"]).of(*CELL)
    assert observation.host == "h1" and observation.source == str(tmp_path / "merged" / "results.jsonl")


def test_damaged_lines_are_problems_and_the_rest_is_read(library_results, tmp_path):
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text(library_results.read_text() + '{"case": "s1-conv-silu"}\n{"torn')
    observations = read_observations([damaged])
    assert len(observations) == len(read_records(library_results))
    assert len(observations.problems) == 2 and all(str(damaged) in p for p in observations.problems)


def test_a_path_that_does_not_exist_or_holds_no_run_is_an_error(tmp_path):
    with pytest.raises(ObservationsError, match="no such results file or directory"):
        read_observations([tmp_path / "nope.jsonl"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(ObservationsError, match="neither a run directory"):
        read_observations([tmp_path / "empty"])
