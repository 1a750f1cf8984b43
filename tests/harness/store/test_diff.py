"""`python -m harness diff`, black-box: a regression and a progression on the real ort-cpu target, JUnit read back."""
import xml.etree.ElementTree as ET

import pytest

from tests.harness.commands.test_main import harness
from tests.harness.orchestration.test_nightly import nightly, probe_cases, run_dir_of


@pytest.fixture(scope="module")
def two_nights(tmp_path_factory):
    """Night 1: 'first' quantizes its conv output, 'second' does not; night 2 swaps the parameters."""
    tmp = tmp_path_factory.mktemp("two-nights")
    common = ["--target", "ort-cpu", "--runs", str(tmp / "runs"), "--host", "cpu-a"]
    old = run_dir_of(nightly(*common, "--cases", str(probe_cases(tmp, "a", first=True, second=False)),
                             "--date", "2026-11-20"))
    new = run_dir_of(nightly(*common, "--cases", str(probe_cases(tmp, "b", first=False, second=True)),
                             "--date", "2026-11-21"))
    return tmp, old, new


def test_a_regression_exits_1_and_is_a_failed_junit_test_case(two_nights):
    tmp, old, new = two_nights
    junit = tmp / "regressions.xml"
    result = harness("diff", str(old), str(new), "--junit", str(junit), check=False)
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert "1 regression, 1 progression" in lines[0]
    assert any(line.split()[:2] == ["regression", "ort-cpu"] and "probe-conv-output-quantizer/first" in line
               and "pass -> fallback (1 node(s) not INT8: /conv/Conv)" in line for line in lines)
    assert any(line.split()[:2] == ["progression", "ort-cpu"] and "probe-conv-output-quantizer/second" in line
               and "-> pass" in line for line in lines)

    root = ET.parse(junit).getroot()
    cases = {case.get("name"): case for case in root.iter("testcase")}
    assert set(cases) == {"probe-conv-output-quantizer/first", "probe-conv-output-quantizer/second"}
    failure = cases["probe-conv-output-quantizer/first"].find("failure")
    assert failure is not None and failure.get("message") == (
        "regression: pass -> fallback (1 node(s) not INT8: /conv/Conv)")
    assert f"{old}: pass" in failure.text and f"{new}: fallback" in failure.text
    assert cases["probe-conv-output-quantizer/second"].find("failure") is None
    suite = root.find("testsuite")
    assert (suite.get("name"), suite.get("tests"), suite.get("failures")) == ("ort-cpu@cpu-a", "2", "1")


def test_a_night_without_changes_exits_0(two_nights):
    _, _, new = two_nights
    result = harness("diff", str(new), str(new))
    assert result.stdout.splitlines()[0].endswith(": 2 unchanged") and "no changes" in result.stdout


def test_diff_reads_results_files_and_merged_directories_too(two_nights):
    tmp, old, new = two_nights
    harness("merge", str(new), "--out", str(tmp / "merged"))
    result = harness("diff", str(old / "results.jsonl"), str(tmp / "merged"), check=False)
    assert result.returncode == 1 and "1 regression, 1 progression" in result.stdout


def test_diff_of_a_missing_path_is_a_usage_error(tmp_path):
    result = harness("diff", str(tmp_path / "old"), str(tmp_path / "new"), check=False)
    assert result.returncode == 2 and f"{tmp_path / 'old'}: no such file or directory" in result.stderr


def machine_record(outcome: str, machine: str, started_at: str) -> dict:
    """The trt86-orin record of one cell from one machine of the pool orin-jp6.0, started at ``started_at``."""
    from tests.reports.conftest import make_record

    fail = ("no-implementation", "Could not find any implementation", "/conv") if outcome == "fail" else None
    made = make_record("s1-conv-silu", "stem", "trt86-orin", outcome, fail=fail)
    made["provenance"] = {"run": f"run-{machine}", "host": "orin-jp6.0", "machine": machine}
    made["started_at"] = started_at
    return made


@pytest.mark.parametrize("newest_first", [True, False], ids=["newest-first-in-file", "newest-last-in-file"])
@pytest.mark.parametrize("newest, kind", [("fail", "regression"), ("pass", "unchanged")])
def test_the_newest_record_of_a_cell_speaks_in_diff_whatever_the_file_order(tmp_path, newest_first, newest, kind):
    """Two machines of one pool recorded the same cell on the NEW side: the later observation is the one compared,
    not the first or last line of the file, and not the other machine's."""
    from tests.reports.conftest import write_jsonl

    old = write_jsonl(tmp_path / "old.jsonl", [machine_record("pass", "orin-a", "2026-11-20T01:00:00+00:00")])
    older = machine_record("fail" if newest == "pass" else "pass", "orin-a", "2026-11-21T01:00:00+00:00")
    newer = machine_record(newest, "orin-b", "2026-11-21T03:00:00+00:00")
    new = write_jsonl(tmp_path / "new.jsonl", [newer, older] if newest_first else [older, newer])
    result = harness("diff", str(old), str(new), check=False)
    assert result.returncode == (1 if kind == "regression" else 0), result.stdout + result.stderr
    if kind == "regression":
        assert any(line.split()[:2] == ["regression", "trt86-orin"] and "pass -> fail" in line
                   for line in result.stdout.splitlines()), result.stdout
    else:
        assert not [line for line in result.stdout.splitlines() if line.split()[:1] == ["regression"]]
