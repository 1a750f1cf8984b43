"""`merge`, `history` and `diff` through the real command when records are lost or damaged: a night that lost its
records is red (exit 3) and says so at the top of the page; a merge is one night's matrix and names what it left
out."""
import json
import shutil

import pytest

from tests.conftest import read_records
from tests.harness.commands.test_main import harness
from tests.harness.orchestration.test_nightly import nightly, run_dir_of


@pytest.fixture(scope="module")
def two_nights(control_cases_dir, tmp_path_factory):
    """Two nights of the control cases on ort-cpu, host cpu-a (the second carries every cell over)."""
    runs = tmp_path_factory.mktemp("nights") / "runs"
    common = ["--target", "ort-cpu", "--cases", str(control_cases_dir), "--runs", str(runs), "--host", "cpu-a"]
    first = run_dir_of(nightly(*common, "--date", "2026-11-22"))
    second = run_dir_of(nightly(*common, "--date", "2026-11-23"))
    return runs, first, second


def copy_runs(two_nights, tmp_path):
    runs, first, second = two_nights
    copy = shutil.copytree(runs, tmp_path / "runs", ignore=shutil.ignore_patterns(".cases", ".lock"))
    return copy, copy / first.name, copy / second.name


def test_history_of_a_night_that_lost_its_records_is_red_and_says_so_at_the_top(two_nights, tmp_path):
    runs, _, second = copy_runs(two_nights, tmp_path)
    (second / "results.jsonl").write_text("")  # run.json still counts 3 cells
    page = tmp_path / "trend.html"
    result = harness("history", str(tmp_path / "history"), "--add", str(runs), "--out", str(page), check=False)
    assert result.returncode == 3, result.stdout + result.stderr
    assert "first run" not in result.stdout and "3 gone" in result.stdout
    history_copy = tmp_path / "history" / second.name
    assert (f"warning: {history_copy / 'results.jsonl'}: holds 0 record(s) of ort-cpu, but "
            f"{history_copy / 'run.json'} counts 3 cell(s): 3 record(s) lost") in result.stderr
    assert "3 cell(s) gone: the newer side has no record of them" in result.stderr
    html = page.read_text()
    top = html[:html.index("</header>")]
    assert 'id="incomplete"' in top and f"3 cell(s) gone in {second.name}" in top


def test_history_of_two_whole_nights_exits_0(two_nights, tmp_path):
    runs, _, _ = copy_runs(two_nights, tmp_path)
    result = harness("history", str(tmp_path / "history"), "--add", str(runs), "--out", str(tmp_path / "t.html"))
    assert 'id="incomplete"' not in (tmp_path / "t.html").read_text() and "warning" not in result.stderr


@pytest.mark.parametrize("last", ["0", "-3", "many"])
def test_history_last_is_checked_at_parse_time(tmp_path, last):
    result = harness("history", str(tmp_path / "history"), "--last", last, check=False)
    assert result.returncode == 2 and "argument --last" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("damage", ["empty", "not-results", "lost-run-json-counts"])
def test_diff_against_a_new_side_that_lost_its_records_exits_3(two_nights, tmp_path, damage):
    _, first, second = copy_runs(two_nights, tmp_path)
    new = second
    if damage == "empty":
        (second / "results.jsonl").write_text("")
    elif damage == "not-results":
        new = tmp_path / "notes.txt"
        new.write_text("these are not records\n")
    else:
        lines = (second / "results.jsonl").read_text().splitlines()
        (second / "results.jsonl").write_text("\n".join(lines[:1]) + "\n")
    result = harness("diff", str(first), str(new), check=False)
    assert result.returncode == 3, result.stdout + result.stderr
    assert "gone" in result.stdout and "cell(s) gone" in result.stderr
    named = f"{new}:1: not a JSON record" if damage == "not-results" else f"{second / 'results.jsonl'}: holds"
    assert named in result.stderr


def test_merge_is_one_night_and_names_the_runs_it_left_out(two_nights, tmp_path):
    runs, first, second = copy_runs(two_nights, tmp_path)
    lines = (second / "results.jsonl").read_text().splitlines()
    (second / "results.jsonl").write_text("\n".join(lines[:2]) + "\n")  # the second night lost a record
    result = harness("merge", str(runs), "--out", str(tmp_path / "site"), check=False)
    assert result.returncode == 3  # lost against run.json's count, never filled in from the night before
    assert len(read_records(tmp_path / "site" / "results.jsonl")) == 2
    assert "night 2026-11-23:" in result.stdout
    assert f"left out: {first.name} (cpu-a, {first}): a run of 2026-11-22, not of 2026-11-23" in result.stdout
    manifest = json.loads((tmp_path / "site" / "merge.json").read_text())
    assert manifest["night"] == "2026-11-23"
    assert manifest["left_out"] == [{"path": str(first), "run": first.name, "host": "cpu-a",
                                     "reason": "a run of 2026-11-22, not of 2026-11-23"}]
    assert 'id="incomplete"' in (tmp_path / "site" / "index.html").read_text()

    older = harness("merge", str(runs), "--out", str(tmp_path / "site-22"), "--night", "2026-11-22")
    assert len(read_records(tmp_path / "site-22" / "results.jsonl")) == 3 and "left out: " + second.name in older.stdout

    none = harness("merge", str(runs), "--out", str(tmp_path / "site-01"), "--night", "2026-11-01", check=False)
    assert none.returncode == 2
    assert f"error: no run of 2026-11-01 in {runs}; the runs found are of 2026-11-22, 2026-11-23" in none.stderr


def test_merge_into_a_file_is_one_error_line(two_nights, tmp_path):
    (tmp_path / "site").write_text("not a directory")
    result = harness("merge", str(two_nights[1]), "--out", str(tmp_path / "site"), check=False)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr == (f"error: --out {tmp_path / 'site'}: {tmp_path / 'site'} is a file, not a directory; "
                             "--out names the directory to write into\n")
