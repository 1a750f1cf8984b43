"""The history store: indexed once, compared night after night; `python -m harness history` black-box for a regression
behind an infra-error night and for a flaky cell (exit codes, JUnit)."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

import harness.store.history as history_module
from harness.store.history import INDEX_FILE, HistoryStore
from tests.harness.commands.test_main import harness
from tests.reports.conftest import make_record, write_run

STEM, FLIP, STEADY = ("s1-conv-silu", "stem"), ("s5-qdq-resnet-block", "identity"), ("control-qdq", "conv-relu")
FAIL = ("no-implementation", "Could not find any implementation", "/model.0/conv/Conv")


def night(root, number: int, outcomes: dict[tuple[str, str], str], host: str = "orin-01", gpu_arch: str = "sm_87"):
    """Run n<number> of trt86-orin on ``host`` (its GPU ``gpu_arch``), on 2026-11-<number>."""
    run = f"n{number}"
    records = []
    for (case, variant), outcome in outcomes.items():
        fail = FAIL if outcome == "fail" else ("harness", "docker went away", None) if outcome == "infra-error" else None
        records.append(make_record(case, variant, "trt86-orin", outcome, fail=fail,
                                   provenance={"run": run, "host": host, "carried_over_from": None}))
        records[-1]["environment"] = {**records[-1]["environment"], "gpu_arch": gpu_arch}
    return write_run(root, run, host, f"2026-11-{number:02d}T02:00:00+00:00", records)


@pytest.fixture
def nights(tmp_path):
    """Five nights in an incoming directory: STEM pass, pass, pass, infra-error, fail; FLIP flips every night."""
    incoming = tmp_path / "incoming"
    for number, (stem, flip) in enumerate(zip(["pass", "pass", "pass", "infra-error", "fail"],
                                              ["pass", "fail", "pass", "fail", "pass"]), start=1):
        night(incoming, number, {STEM: stem, FLIP: flip, STEADY: "pass"})
    return incoming


def test_pass_infra_error_fail_is_a_regression_exit_1_and_a_junit_failure(nights, tmp_path):
    junit = tmp_path / "regressions.xml"
    result = harness("history", str(tmp_path / "history"), "--add", str(nights), "--out", str(tmp_path / "trend.html"),
                     "--junit", str(junit), check=False)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 regression(s)" in result.stderr
    [line] = [line for line in result.stdout.splitlines() if line.split()[:2] == ["regression", "trt86-orin"]]
    assert "s1-conv-silu/stem" in line and "pass -> fail (no-implementation at /model.0/conv/Conv)" in line
    assert "(last comparable outcome in run n3)" in line
    cases = {case.get("name"): case for case in ET.parse(junit).getroot().iter("testcase")}
    failure = cases["s1-conv-silu/stem"].find("failure")
    assert failure is not None and failure.get("message").startswith("regression: pass -> fail")


def test_a_flaky_cell_is_never_a_regression_and_is_a_skipped_junit_case(nights, tmp_path):
    junit = tmp_path / "regressions.xml"
    result = harness("history", str(tmp_path / "history"), "--add", str(nights), "--out", str(tmp_path / "trend.html"),
                     "--junit", str(junit), check=False)
    [line] = [line for line in result.stdout.splitlines() if "s5-qdq-resnet-block/identity" in line]
    assert line.split()[0] == "flaky" and "changed 4 times in the last 5 runs" in line
    skipped = {case.get("name"): case.find("skipped") for case in ET.parse(junit).getroot().iter("testcase")}
    assert skipped["s5-qdq-resnet-block/identity"].get("message") == (
        "flaky: fail (no-implementation at /model.0/conv/Conv) -> pass; changed 4 times in the last 5 runs")
    # Without the regression behind it, the same history exits 0: a flaky cell fails nothing.
    calm = tmp_path / "calm"
    for number, flip in enumerate(["pass", "fail", "pass", "fail", "pass"], start=1):
        night(calm, number, {FLIP: flip, STEADY: "pass"})
    assert harness("history", str(tmp_path / "calm-history"), "--add", str(calm), "--out",
                   str(tmp_path / "calm.html")).returncode == 0


def test_a_latest_infra_error_is_not_compared_and_collapses_to_one_line(tmp_path):
    incoming = tmp_path / "incoming"
    night(incoming, 1, {STEM: "pass", FLIP: "pass", STEADY: "pass"})
    night(incoming, 2, {STEM: "infra-error", FLIP: "infra-error", STEADY: "pass"})
    result = harness("history", str(tmp_path / "history"), "--add", str(incoming), "--out", str(tmp_path / "t.html"))
    [line] = [line for line in result.stdout.splitlines() if line.startswith("not-compared")]
    assert line.split()[:4] == ["not-compared", "trt86-orin", "orin-01", "2"] and "infra-error 2" in line


def test_a_host_whose_gpu_changed_starts_a_series_of_its_own_and_is_not_compared_across_the_change(tmp_path):
    incoming = tmp_path / "incoming"
    night(incoming, 1, {STEM: "pass", STEADY: "pass"})
    night(incoming, 2, {STEM: "fail", STEADY: "pass"}, gpu_arch="sm_110")  # the board swapped for a newer one
    result = harness("history", str(tmp_path / "history"), "--add", str(incoming), "--out", str(tmp_path / "t.html"))
    assert "regression" not in result.stdout and result.returncode == 0
    assert "trt86-orin@orin-01/sm_87: first run n1: nothing to compare" in result.stdout
    assert "trt86-orin@orin-01/sm_110: first run n2: nothing to compare" in result.stdout
    with HistoryStore(tmp_path / "history") as store:
        assert {(s.name, tuple(r.run for r in s.runs)) for s in store.series()} == {
            ("trt86-orin@orin-01/sm_87", ("n1",)), ("trt86-orin@orin-01/sm_110", ("n2",))}


def test_records_are_validated_once_when_a_run_is_added(nights, tmp_path, monkeypatch):
    root = tmp_path / "history"
    with HistoryStore(root) as store:
        store.add([nights])
        series = store.series()
    read = []
    original = history_module.read_run
    monkeypatch.setattr(history_module, "read_run", lambda path: read.append(path) or original(path))
    with HistoryStore(root) as store:  # nothing changed: nothing is read again
        assert store.series() == series and read == []
    results = root / "n5" / "results.jsonl"
    results.write_text(results.read_text() + json.dumps(make_record(
        *STEADY, "trt86-orin", "pass", provenance={"run": "n5", "host": "orin-01", "carried_over_from": None})) + "\n")
    with HistoryStore(root) as store:  # a run that changed (a resumed copy added again) is read again, alone
        assert [path.name for path in read] == ["n5"]
        assert store.series()[0].latest.cells == 3
    (root / INDEX_FILE).unlink()
    with HistoryStore(root) as store:  # the run directories are the truth: the index is rebuilt from them
        assert [s.name for s in store.series()] == ["trt86-orin@orin-01/sm_87"] and len(store.runs()) == 5


def test_a_run_directory_removed_from_the_store_is_forgotten(nights, tmp_path):
    import shutil

    root = tmp_path / "history"
    with HistoryStore(root) as store:
        store.add([nights])
    shutil.rmtree(root / "n5")
    with HistoryStore(root) as store:
        assert [run.id for run in store.runs()] == ["n1", "n2", "n3", "n4"]
        assert store.series()[0].latest.run == "n4"


def test_the_trend_page_links_the_matrix_beside_it(nights, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<html></html>")
    harness("history", str(tmp_path / "history"), "--add", str(nights), "--out", str(site / "trend.html"), check=False)
    page = (site / "trend.html").read_text()
    assert 'href="index.html" id="index-link"' in page and 'href="index.html#s1-conv-silu/stem"' in page


def test_bad_flaky_limits_are_usage_errors(tmp_path):
    result = harness("history", str(tmp_path / "h"), "--flaky-flips", "0", check=False)
    assert result.returncode == 2 and "--flaky-flips >= 1" in result.stderr
