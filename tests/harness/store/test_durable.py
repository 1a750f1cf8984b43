"""The history's durable copy: a runner's history directory deleted, rebuilt from a git branch (or a directory)
with nothing lost; `python -m harness history --durable` black-box on real ort-cpu runs."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from harness.store.history import HistoryStore
from tests.harness.commands.test_main import harness
from tests.harness.orchestration.test_nightly import nightly, run_dir_of


@pytest.fixture(scope="module")
def two_nights(tmp_path_factory, control_cases_dir):
    tmp = tmp_path_factory.mktemp("durable")
    common = ["--target", "ort-cpu", "--cases", str(control_cases_dir), "--runs", str(tmp / "runs"), "--host", "cpu"]
    return [run_dir_of(nightly(*common, "--date", date)) for date in ("2026-11-20", "2026-11-21")]


def everything(root) -> dict:
    """All a history store knows: its runs, its series and every record of every run of them."""
    with HistoryStore(root) as store:
        runs = [(r.id, r.host, r.date, r.started_at, r.status, r.problems) for r in store.runs()]
        series = store.series()
        records = {s.name: store.records_of(s, [run.run for run in s.runs]) for s in series}
        return {"runs": runs, "series": [(s.name, s.runs) for s in series], "records": records,
                "cases_index": store.cases_index()}


def files_of(root) -> dict:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
            and p.name != "history.sqlite"}  # hidden: the nightly's lock file, the git working copy


@pytest.mark.parametrize("kind", ["git", "dir"])
def test_a_deleted_history_directory_is_rebuilt_from_its_durable_copy_with_nothing_lost(two_nights, tmp_path, kind):
    if kind == "git":
        remote = tmp_path / "results.git"
        subprocess.run(["git", "init", "--quiet", "--bare", str(remote)], check=True)
        spec = f"git:{remote}#trt-matrix-history"
    else:
        (tmp_path / "bucket").mkdir()
        spec = f"dir:{tmp_path / 'bucket'}"
    history = tmp_path / "runner" / "history"
    first = harness("history", str(history), "--add", str(two_nights[0]), "--durable", spec,
                    "--out", str(tmp_path / "t1.html"))
    assert "durable copy" in first.stdout and "1 run(s) saved" in first.stdout
    second = harness("history", str(history), "--add", str(two_nights[1]), "--out", str(tmp_path / "t2.html"),
                     env={"TRT_MATRIX_HISTORY_STORE": spec})  # the setting, as the workflow gives it
    assert "1 run(s) saved" in second.stdout
    before, before_files = everything(history), files_of(history)
    assert len(before["runs"]) == 2 and before["records"]["ort-cpu@cpu"]

    shutil.rmtree(tmp_path / "runner")  # the runner is gone; a new one starts with an empty directory
    rebuilt = harness("history", str(history), "--durable", spec, "--out", str(tmp_path / "t3.html"))
    assert "2 run(s) restored" in rebuilt.stdout
    assert everything(history) == before
    assert files_of(history) == before_files  # logs and seals too: every file the store held
    assert "ort-cpu@cpu: " in rebuilt.stdout and "3 unchanged" in rebuilt.stdout  # the comparison continues
    if kind == "git":
        log = subprocess.run(["git", "--git-dir", str(remote), "log", "--format=%s", "trt-matrix-history"],
                             capture_output=True, text=True, check=True).stdout.splitlines()
        assert len(log) == 2 and all(line.startswith("history: 1 run(s): ") for line in log)
        names = subprocess.run(["git", "--git-dir", str(remote), "ls-tree", "-r", "--name-only", "trt-matrix-history"],
                               capture_output=True, text=True, check=True).stdout.split()
        assert not [n for n in names if n.endswith((".onnx", ".engine", ".plan", ".npz"))]


def test_a_durable_copy_that_cannot_be_reached_is_a_readable_error(tmp_path):
    result = harness("history", str(tmp_path / "h"), "--durable", f"git:{tmp_path / 'nowhere.git'}#results",
                     check=False)
    assert result.returncode == 2 and "TRT_MATRIX_HISTORY_STORE=git:" in result.stderr and "nowhere.git" in result.stderr
    bad = harness("history", str(tmp_path / "h"), "--durable", "s3-ish-thing", check=False)
    assert bad.returncode == 2 and "expected git:<repository>#<branch>, dir:<path> or an absolute path" in bad.stderr
