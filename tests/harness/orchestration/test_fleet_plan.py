"""The night's plan (`python -m harness nightly-plan`) and the shard split every machine computes alone."""
from __future__ import annotations

import json
import random

import pytest

from harness.orchestration.shards import parse_shard, split
from tests.harness.commands.test_main import harness

CELLS = [(f"case-{i // 3}", f"v{i % 3}", target) for i in range(12) for target in ("trt86-x86", "trt11-x86")]


@pytest.mark.parametrize("count", [1, 2, 3, 5, 24, 30])
def test_the_shards_of_a_night_cover_every_cell_once_whatever_order_each_machine_lists_them(count):
    shuffled = CELLS[:]
    random.Random(count).shuffle(shuffled)
    shards = split(CELLS, count)
    assert split(shuffled, count) == shards  # each machine computes the same split
    assert sorted(c for shard in shards for c in shard) == sorted(CELLS)
    assert max(map(len, shards)) - min(map(len, shards)) <= 1  # by count


def test_durations_balance_the_shards_and_a_cell_never_timed_counts_as_the_median():
    durations = {cell: 1.0 for cell in CELLS}
    durations[CELLS[0]] = 40.0  # one long cell: its shard takes fewer of the others
    del durations[CELLS[1]]  # never timed
    first, second = split(CELLS, 2, durations)
    assert first == [CELLS[0]] and len(second) == 23  # 40 s against 23 x 1 s (the untimed one counted as 1 s)
    durations[CELLS[0]] = 10.0
    first, second = split(CELLS, 2, durations)
    loads = [sum(durations.get(c, 1.0) for c in shard) for shard in (first, second)]
    assert abs(loads[0] - loads[1]) <= 1.0 and sorted(first + second) == sorted(CELLS)


@pytest.mark.parametrize("text", ["0/2", "3/2", "1", "a/b", "1/0"])
def test_a_shard_that_is_not_k_of_n_is_refused_by_the_nightly(text, tmp_path):
    with pytest.raises(ValueError):
        parse_shard(text)
    result = harness("nightly", "--target", "ort-cpu", "--shard", text, "--runs", str(tmp_path), check=False)
    assert result.returncode == 2 and f"--shard: {text!r} is not a shard: expected K/N" in result.stderr


def runners_answer(*runners: tuple[str, str, list[str]]) -> dict:
    return {"total_count": len(runners), "runners": [
        {"id": i, "name": name, "os": "linux", "status": status, "busy": False,
         "labels": [{"id": j, "name": label, "type": "custom"} for j, label in enumerate(labels)]}
        for i, (name, status, labels) in enumerate(runners)]}


def test_a_kind_whose_runners_are_all_offline_is_planned_as_not_run_never_queued(tmp_path):
    answer = runners_answer(("gpu-07", "online", ["self-hosted", "Linux", "X64", "gpu", "sm_89"]),
                            ("gpu-03", "offline", ["self-hosted", "Linux", "X64", "gpu", "sm_86"]),
                            ("cpu-01", "online", ["self-hosted", "Linux", "X64", "cpu"]))
    (tmp_path / "runners.json").write_text(json.dumps(answer))
    outputs = tmp_path / "outputs"
    result = harness("nightly-plan", "--runners", str(tmp_path / "runners.json"), "--out", str(tmp_path / "plan.json"),
                     env={"GITHUB_OUTPUT": str(outputs)})
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert [job["slot"] for job in plan["include"]] == ["x86-gpu.sm_89.1of2", "x86-gpu.sm_89.2of2", "cpu"]
    not_run = {job["slot"]: job["reason"] for job in plan["not_run"]}
    assert set(not_run) >= {"x86-gpu.sm_86.1of2", "x86-gpu.sm_86.2of2", "orin-jp6.0", "thor-jp7.2"}
    assert not_run["x86-gpu.sm_86.1of2"] == "no online runner carries the labels self-hosted, linux, x64, gpu, sm_86"
    written = dict(line.split("=", 1) for line in outputs.read_text().splitlines())
    assert json.loads(written["matrix"]) == {"include": plan["include"]} and written["jobs"] == "3"
    assert "2 online runner(s): gpu-07, cpu-01" in result.stdout


def test_the_plan_writes_the_durations_every_shard_reads(tmp_path, control_cases_dir):
    from tests.harness.orchestration.test_nightly import nightly, run_dir_of

    run = run_dir_of(nightly("--target", "ort-cpu", "--cases", str(control_cases_dir), "--runs", str(tmp_path / "h"),
                             "--host", "cpu"))
    harness("nightly-plan", "--durations-from", str(tmp_path / "h"), "--durations-out", str(tmp_path / "d.json"))
    rows = json.loads((tmp_path / "d.json").read_text())["cells"]
    timed = {(r["case"], r["variant"]): r["duration_s"] for r in read(run)}
    assert {(r["case"], r["variant"]): r["duration_s"] for r in rows} == pytest.approx(timed, abs=1e-3)
    result = harness("nightly", "--target", "ort-cpu", "--cases", str(control_cases_dir), "--runs",
                     str(tmp_path / "m"), "--host", "cpu", "--shard", "1/2", "--durations", str(tmp_path / "d.json"))
    assert "balanced by the durations given" in result.stdout


def read(run):
    return [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]


def test_hosts_shards_and_architectures_are_checked_naming_the_key(tmp_path):
    from harness.matrix import MatrixError, load_hosts
    from tests.conftest import REPO

    base = (REPO / "matrix.yaml").read_text()
    for bad, message in [("    shards: 0\n", "hosts.x86-gpu.shards: must be a whole number of 1 or more"),
                         ("    architectures: [ada]\n", "hosts.x86-gpu.architectures: must be a list of distinct GPU "
                                                        "architectures like sm_89")]:
        key = bad.split(":")[0].strip()
        lines = [line for line in base.splitlines(keepends=True) if not line.startswith(f"    {key}:")]
        at = lines.index("  x86-gpu:\n") + 1
        path = tmp_path / f"{key}.yaml"
        path.write_text("".join(lines[:at] + [bad] + lines[at:]))
        with pytest.raises(MatrixError, match=message):
            load_hosts(path)
