"""The night's job matrix for a fleet of self-hosted runners, made from matrix.yaml's ``hosts:`` section.

One job per host kind, per GPU architecture the kind must cover (``architectures:``; the job asks for a runner
with that label too) and per shard (``shards: N``; the job runs ``nightly --shard K/N``). GitHub Actions hands each
job to an idle runner carrying all its labels, so a pool of N machines drains N shards at once; no scheduler of
ours decides anything. Given the repository's runners (GitHub's ``GET /repos/{owner}/{repo}/actions/runners``
answer), a job no online runner can take is not queued (it would wait a day for one) but listed as *not run*, which
the merge reports: a kind whose runners are all offline is never shown as passed.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Mapping

from harness.matrix import HostKind

PLAN_FORMAT = "trt-matrix/nightly-plan/1"


def job_slot(host: str, arch: str | None, index: int, count: int) -> str:
    """'x86-gpu.sm_89.1of2': a job's name in artifact names (no '/')."""
    return ".".join(filter(None, [host, arch, f"{index}of{count}" if count > 1 else None]))


def online_runners(answer: Mapping[str, Any]) -> list[tuple[str, set[str]]]:
    """(name, lower-case labels) of each online runner in a GitHub runners API answer."""
    runners = answer.get("runners")
    if not isinstance(runners, list):
        raise ValueError("field 'runners' must be a list (GitHub's GET /repos/{owner}/{repo}/actions/runners answer)")
    return [(r.get("name", "?"), {label["name"].lower() for label in r.get("labels", [])})
            for r in runners if r.get("status") == "online"]


def plan_jobs(hosts: Mapping[str, HostKind], runners: Iterable[tuple[str, set[str]]] | None = None) -> dict[str, Any]:
    """``{"include": [job, ...], "not_run": [job + reason, ...]}`` (see the module docstring); ``runners``: the
    online runners, None when they are not known (every job is then planned)."""
    runners = None if runners is None else list(runners)
    include, not_run = [], []
    for kind in hosts.values():
        for arch in kind.architectures or (None,):
            labels = [*kind.labels, *([arch] if arch else [])]
            for index in range(1, kind.shards + 1):
                job = {"host": kind.id, "arch": arch or "", "shard": f"{index}/{kind.shards}" if kind.shards > 1
                       else "", "slot": job_slot(kind.id, arch, index, kind.shards), "labels": labels,
                       "targets": " ".join(kind.targets)}
                if runners is not None and not any({l.lower() for l in labels} <= have for _, have in runners):
                    not_run.append({**job, "reason": f"no online runner carries the labels {', '.join(labels)}"})
                else:
                    include.append(job)
    return {"format": PLAN_FORMAT, "include": include, "not_run": not_run}


def durations_from(paths: Iterable[Path], newest_runs: int = 60) -> dict[tuple[str, str, str], float]:
    """Each cell's duration_s in the newest run (of the ``newest_runs`` newest) that timed it, from run directories
    or directories holding them (a history store)."""
    from harness.store.run_dirs import RunDirError, find_run_dirs, read_run

    try:
        found = find_run_dirs(paths)
    except RunDirError:
        return {}
    runs = sorted((read_run(path) for path in found), key=lambda run: (run.started_at, run.id))[-newest_runs:]
    durations: dict[tuple[str, str, str], float] = {}
    for run in runs:  # oldest first: a newer run's duration replaces an older one
        for record in run.records:
            carried = (record.get("provenance") or {}).get("carried_over_from")
            if isinstance(record.get("duration_s"), (int, float)) and not carried:
                durations[(record["case"], record["variant"], record["target"])] = float(record["duration_s"])
    return durations


def read_runners(path: Path) -> list[tuple[str, set[str]]]:
    try:
        answer = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: cannot be read as JSON ({err})") from None
    try:
        return online_runners(answer)
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        raise ValueError(f"{path}: {err}") from None
