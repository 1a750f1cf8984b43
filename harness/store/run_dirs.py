"""Run directories: what one nightly run on one host leaves on disk, and how to read it back.

A run directory is named ``<date>_<host>_<revision>`` (e.g. ``2026-11-23_orin-01_4b3c3b7a9e12``) and holds:

- ``run.json``: the manifest (host, host kind, machine, revision, targets, start/end, status, counts);
- ``results.jsonl``: one record per cell, appended the moment the cell ends (a crash loses nothing finished);
- ``cases-index.json``: a copy of the index.json of the case library the run ran (rows, claims, remedies and
  backend notes for the reports of merge and history, without the case library's code);
- ``work/``: per-cell logs and intermediate files.

The history store is a plain directory of run directories; merging reads any number of them. Readers keep going
past damage: a run whose files are torn or corrupt still gives its good records, and every bad line is reported
with its file and line number.
"""
from __future__ import annotations

import collections
import dataclasses
import json
import os
import re
from pathlib import Path
from typing import Any, Iterable, Iterator

from harness.store.results_file import UNKNOWN_HOST, BadLine, read_results_file, record_host
from harness.worker.errors import InputError
from harness.worker.record import Record

RUN_FORMAT = "trt-matrix/run/1"
MANIFEST = "run.json"
RESULTS = "results.jsonl"
CASES_INDEX = "cases-index.json"
STATUSES = ("running", "finished")
_UNSAFE = re.compile(r"[^A-Za-z0-9.\-]+")


class RunDirError(InputError):
    """A path that is not a usable run directory; the message names the path and what is missing."""


def safe_name(text: str) -> str:
    """``text`` reduced to letters, digits, '.' and '-', for a directory name part."""
    return _UNSAFE.sub("-", text).strip("-.") or "unnamed"


def run_id(date: str, host: str, revision: str, *, machine: str | None = None, shard: Any = None) -> str:
    """``<date>_<host>_<revision>``, then ``_<machine>`` when the machine is not the host (two machines of one
    kind on one night) and ``_<K>of<N>`` for a shard: the runs of one night never share a name."""
    parts = [date, safe_name(host), safe_name(revision)]
    if machine and machine != host:
        parts.append(safe_name(machine))
    if shard is not None:
        parts.append(shard.slug)
    return "_".join(parts)


def write_manifest(run_dir: Path, manifest: dict[str, Any]) -> None:
    """Replace run.json atomically, so a reader never sees half a manifest."""
    path = Path(run_dir) / MANIFEST
    tmp = path.with_name(f".{MANIFEST}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)


def read_manifest(run_dir: Path) -> dict[str, Any]:
    path = Path(run_dir) / MANIFEST
    try:
        manifest = json.loads(path.read_text())
    except FileNotFoundError:
        raise RunDirError(f"{path}: no such file: {run_dir} is not a run directory (written by "
                          "`trt-matrix nightly`)") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise RunDirError(f"{path}: not valid JSON ({err}); the run's results may still be readable") from None
    except OSError as err:
        raise RunDirError(f"{path}: cannot be read ({(err.strerror or str(err)).lower()}); the run's results may "
                          "still be readable") from None
    if not isinstance(manifest, dict) or manifest.get("format") != RUN_FORMAT:
        found = manifest.get("format") if isinstance(manifest, dict) else type(manifest).__name__
        raise RunDirError(f"{path}: field 'format' is {found!r}, expected {RUN_FORMAT!r}")
    for field in ("id", "host", "started_at"):
        if not isinstance(manifest.get(field), str) or not manifest[field]:
            raise RunDirError(f"{path}: field {field!r} must be a non-empty string, found {manifest.get(field)!r}")
    problem = _manifest_type_problem(manifest)
    if problem:
        raise RunDirError(f"{path}: {problem}")
    return manifest


def _manifest_type_problem(manifest: dict[str, Any]) -> str | None:
    """What is of the wrong type in the optional fields of run.json that readers rely on, or None."""
    if manifest.get("date") is not None and not isinstance(manifest["date"], str):
        return f"field 'date' must be a string, found {type(manifest['date']).__name__}"
    if manifest.get("status") is not None and manifest["status"] not in STATUSES:
        return f"field 'status' is {manifest['status']!r}, expected one of {', '.join(STATUSES)}"
    for field in ("targets", "attempts"):
        value = manifest.get(field, [])
        if not isinstance(value, list) or (field == "targets" and not all(isinstance(t, str) for t in value)):
            return f"field {field!r} must be a list{' of target ids' if field == 'targets' else ''}, found {value!r:.80}"
    cells = manifest.get("cells", {})
    if not isinstance(cells, dict) or not all(
            isinstance(counts, dict) and isinstance(counts.get("outcomes", {}), dict)
            and all(isinstance(n, int) for n in counts.get("outcomes", {}).values()) for counts in cells.values()):
        return f"field 'cells' must map each target to {{'outcomes': {{outcome: count}}}}, found {cells!r:.80}"
    return None


def find_run_dirs(paths: Iterable[Path | str]) -> list[Path]:
    """Run directories named by ``paths``: each path is a run directory (it holds run.json or results.jsonl) or a
    directory with run directories somewhere below it (e.g. downloaded CI artifacts)."""
    found: list[Path] = []
    for path in map(Path, paths):
        if not path.is_dir():
            raise RunDirError(f"{path}: no such directory")
        if _looks_like_run(path):
            found.append(path)
            continue
        below = sorted(_runs_below(path))
        if not below:
            raise RunDirError(f"{path}: neither a run directory nor a directory holding any (no {MANIFEST} or "
                              f"{RESULTS} in it or below it); pass the directories `trt-matrix nightly` wrote")
        found.extend(below)
    return list(dict.fromkeys(found))


def _runs_below(root: Path) -> Iterator[Path]:
    """Run directories below ``root``, not descending into a run directory or a hidden directory."""
    for current, dirs, _ in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        if current != str(root) and _looks_like_run(Path(current)):
            dirs[:] = []
            yield Path(current)


def _looks_like_run(path: Path) -> bool:
    return (path / MANIFEST).is_file() or (path / RESULTS).is_file()


@dataclasses.dataclass
class LoadedRun:
    """A run directory as read: its manifest (when readable), its valid records, and what could not be read."""

    path: Path
    manifest: dict[str, Any] | None
    records: list[Record]  # in file order; a later record of a cell supersedes an earlier one
    bad_lines: list[BadLine]
    problems: list[str]  # whole-file problems (manifest unreadable, results missing), each naming the file

    @property
    def id(self) -> str:
        return (self.manifest or {}).get("id") or self.path.name

    @property
    def host(self) -> str:
        if self.manifest:
            return self.manifest["host"]
        hosts = {record_host(r) for r in self.records} - {None}
        return hosts.pop() if len(hosts) == 1 else UNKNOWN_HOST

    @property
    def started_at(self) -> str:
        if self.manifest:
            return self.manifest["started_at"]
        return min((r["started_at"] for r in self.records), default="")

    @property
    def night(self) -> str:
        """The night (YYYY-MM-DD) of this run: run.json's date, else the day it started."""
        return (self.manifest or {}).get("date") or self.started_at[:10]

    @property
    def machine(self) -> str:
        """The machine that ran it (run.json's machine; before machines were recorded, its host)."""
        return (self.manifest or {}).get("machine") or self.host

    @property
    def shard(self) -> str | None:
        """'1/2' for a run of one shard of the night's cells, None for a whole run."""
        return (self.manifest or {}).get("shard")

    @property
    def gpu_arch(self) -> str | None:
        return (self.manifest or {}).get("gpu_arch")

    @property
    def slot(self) -> tuple[str, str, str | None]:
        """(host, machine, shard): runs of one night with the same slot are one run resumed or run again (the
        newest stands); runs of different slots (two machines of a pool, the shards of a kind) all stand."""
        return self.host, self.machine, self.shard

    @property
    def label(self) -> str:
        """'x86-gpu' or 'x86-gpu on gpu-07, shard 1/2': the run's series and, when it differs, its machine."""
        text = self.host if self.machine == self.host else f"{self.host} on {self.machine}"
        return text + (f", shard {self.shard}" if self.shard else "")

    def targets(self) -> list[str]:
        """The targets of this run: those run.json names (even when their records are lost), and those recorded."""
        return sorted({*(self.manifest or {}).get("targets", []), *(r["target"] for r in self.records)})

    def foreign_manifest(self) -> list[str]:
        """A run.json of another run than the one whose records lie beside it (copied or swapped in), named; empty
        when they agree or the records do not say their run."""
        runs = {(r.get("provenance") or {}).get("run") for r in self.records} - {None}
        if not self.manifest or not runs or self.manifest["id"] in runs:
            return []
        return [f"{self.path / MANIFEST}: describes run {self.manifest['id']}, but the records in "
                f"{self.path / RESULTS} are of run {', '.join(sorted(runs))}: a run.json from another run"]

    def lost_records(self) -> list[str]:
        """Per target, the cells run.json counts that results.jsonl does not hold (records lost after the run
        ended), each naming both files; empty when nothing is missing, or when its bad lines account for it."""
        held = collections.Counter(target for _, _, target in {(r["case"], r["variant"], r["target"])
                                                               for r in self.records})
        counted = {target: sum(counts.get("outcomes", {}).values())
                   for target, counts in ((self.manifest or {}).get("cells") or {}).items()}
        short = {target: n - held[target] for target, n in sorted(counted.items()) if held[target] < n}
        if sum(short.values()) <= len(self.bad_lines):
            return []
        return [f"{self.path / RESULTS}: holds {held[target]} record(s) of {target}, but {self.path / MANIFEST} "
                f"counts {counted[target]} cell(s): {n} record(s) lost" for target, n in short.items()]


def read_run(path: Path) -> LoadedRun:
    """Read a run directory, keeping every valid record and reporting every bad line and unreadable file."""
    path = Path(path)
    problems: list[str] = []
    try:
        manifest = read_manifest(path)
    except RunDirError as err:
        manifest = None
        problems.append(str(err))
    results = path / RESULTS
    records, bad_lines = [], []
    if results.is_file():
        read = read_results_file(results)
        records, bad_lines = read.records, read.bad_lines
    elif results.is_dir():
        problems.append(f"{results}: a directory where the run's results file should be")
    else:
        problems.append(f"{results}: no such file: the run recorded no cell")
    run = LoadedRun(path, manifest, records, bad_lines, problems)
    problems.extend(run.lost_records())
    problems.extend(run.foreign_manifest())
    return run


def read_runs(paths: Iterable[Path | str]) -> list[LoadedRun]:
    """Every run directory named by ``paths`` (see :func:`find_run_dirs`), read, oldest first."""
    return sorted((read_run(path) for path in find_run_dirs(paths)), key=lambda run: (run.started_at, run.id))


def problems_of(runs: Iterable[LoadedRun]) -> list[str]:
    """Everything in ``runs`` that could not be read: unreadable files, then bad lines, each naming file (and line)."""
    return [p for run in runs for p in run.problems + [str(b) for b in run.bad_lines]]
