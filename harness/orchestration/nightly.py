"""One host's nightly run: its targets, into a run directory of their own, carrying unchanged cells over.

A cell is *settled* for this host when its latest record (in this run, else in the latest earlier run of this
host that has it) was taken with the same cell inputs and target environment (:mod:`harness.orchestration.fingerprint`) and
says something lasting: any outcome but ``infra-error`` and ``timeout``, which are always tried again. A settled
cell recorded in this run directory is done (an interrupted run resumes); one recorded in an earlier run is copied
into this run with ``provenance.carried_over_from`` naming the run that observed it, and its upstream expectation
is judged again against the current case library. Every other cell runs.
"""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import datetime
import fcntl
import os
import shutil
import socket
import sys
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from harness.orchestration import fingerprint
from harness.orchestration.shards import Shard, cells_of
from harness.matrix import Target
from harness.orchestration.run_targets import RunSummary, matches, run_targets
from harness.judgement import RETRIED_OUTCOMES
from harness.store.results_file import ResultsWriter, read_results_file, variant_on_target
from harness.store.seal import remove_seal, write_seal
from harness.store.run_dirs import (
    CASES_INDEX,
    MANIFEST,
    RESULTS,
    RUN_FORMAT,
    RunDirError,
    read_manifest,
    run_id,
    write_manifest,
)
from harness.worker import record as rec
from harness.worker.casedata import CasesDirError, damaged_input, load_cells
from harness.worker.errors import InputError
from harness.worker.shapes import Cell, variant_key

CASES_CACHE = ".cases"  # below the runs directory: generated case libraries by library hash
CASES_KEPT = 5
LOCK = ".lock"


class NightlyError(InputError):
    """The nightly cannot start; the message says why and what to do."""


class DamagedRunError(NightlyError):
    """The run directory to resume holds a damaged file the nightly will not overwrite."""


@dataclasses.dataclass(frozen=True)
class RunPlan:
    """Where a nightly run goes and what it runs."""

    runs_root: Path
    host: str
    host_kind: str | None
    date: str
    targets: tuple[Target, ...]
    cases_dir: Path | None = None  # None: the case library, generated (or reused) under the runs directory
    pattern: str | None = None
    force: bool = False
    # what the command adds to each variant's index entry when the library is generated (the engine prediction,
    # harness.scan.predicted.predicted_entry: orchestration imports none of harness.scan)
    entry_extras: Callable[..., dict] | None = None
    # the machine apart from the series (harness.orchestration.machine.machine_facts); None: the host names it
    machine: dict[str, Any] | None = None
    shard: Shard | None = None  # run only this shard of the cells (harness.orchestration.shards)
    durations: dict[tuple[str, str, str], float] | None = None  # per cell, what balances the shards
    contributor: str | None = None  # who ran it, for a run contributed from a machine the maintainers do not own

    @property
    def machine_name(self) -> str:
        return (self.machine or {}).get("name") or self.host

    @property
    def gpu_arch(self) -> str | None:
        return (self.machine or {}).get("gpu_arch")


@dataclasses.dataclass
class NightlyResult:
    run_dir: Path
    run_id: str
    carried_over: dict[str, int]  # target -> cells carried over from earlier runs
    resumed: dict[str, int]  # target -> cells already settled in this run directory
    summaries: list[RunSummary]

    @property
    def harness_broken(self) -> bool:
        return any(summary.harness_broken for summary in self.summaries)


def default_host() -> str:
    return socket.gethostname().split(".")[0] or "localhost"


def today() -> str:
    return datetime.datetime.now(datetime.timezone.utc).date().isoformat()


def cases_for_run(plan: RunPlan, library_sha: str, progress: Callable[[str], None]) -> tuple[Path, str]:
    """The cases directory of this run and its revision label: the given one, or the library generated once per
    library hash under ``<runs>/.cases/`` and reused by every later run of the same library."""
    if plan.cases_dir is not None:
        index = Path(plan.cases_dir) / "index.json"
        if not index.is_file():
            raise NightlyError(f"{index}: no such file; write a cases directory with `trt-matrix generate`")
        return Path(plan.cases_dir), f"cases.{fingerprint.sha256_of(index.read_text())[:12]}"
    revision = fingerprint.library_revision(library_sha)
    cache = plan.runs_root / CASES_CACHE
    cases_dir = cache / library_sha[:16]
    if (cases_dir / "index.json").is_file():
        damage = cache_damage(cases_dir)
        if damage is None:
            os.utime(cases_dir)  # most recently used: kept by the pruning below
            return cases_dir, revision
        progress(f"the cached case library in {cases_dir} is damaged ({damage}); generating it again")
    import cases
    from cases.generate import generate

    progress(f"generating the case library (hash {library_sha[:16]}) into {cases_dir}")
    staging = cache / f".generating-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    generate(staging, cases.all_cases(), entry_extras=plan.entry_extras)
    shutil.rmtree(cases_dir, ignore_errors=True)
    staging.rename(cases_dir)
    _prune_cases_cache(cache)
    return cases_dir, revision


def cache_damage(cases_dir: Path) -> str | None:
    """The first reason a cached case library cannot be used as it is (unreadable index, a file that fails its
    content hash), or None: a cache is generated again rather than giving every cell an infra-error night after
    night."""
    try:
        cells = load_cells(cases_dir)
    except CasesDirError as err:
        return str(err)
    return next(filter(None, map(damaged_input, cells)), None)


def _prune_cases_cache(cache: Path) -> None:
    libraries = sorted((p for p in cache.iterdir() if p.is_dir() and not p.name.startswith(".")),
                       key=lambda p: p.stat().st_mtime, reverse=True)
    for old in libraries[CASES_KEPT:]:
        shutil.rmtree(old, ignore_errors=True)


@contextlib.contextmanager
def locked(run_dir: Path) -> Iterator[None]:
    """Hold the run directory's lock: two nightlies never append to one results file."""
    path = run_dir / LOCK
    with path.open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise NightlyError(f"{run_dir}: another nightly is writing this run directory (it holds {path}); wait "
                               "for it to end, or stop it, then run again to resume") from None
        yield


CellOfHost = tuple[str, str, str]  # (case, variant, target): a cell of this host's runs


def latest_of(records: list[rec.Record]) -> dict[CellOfHost, rec.Record]:
    """The last of ``records`` for each cell."""
    return {variant_on_target(record): record for record in records}


def latest_records(results: Path, progress: Callable[[str], None]) -> dict[CellOfHost, rec.Record]:
    """The last valid record of each cell in an earlier run's results file; each damaged line is reported (its
    cell is then not carried over from that file)."""
    if not results.is_file():
        return {}
    read = read_results_file(results)
    for bad in read.bad_lines:
        progress(f"warning: {bad}; not carried over")
    return latest_of(read.records)


def earlier_runs(runs_root: Path, host: str, current: str, gpu_arch: str | None = None) -> list[Path]:
    """Run directories of ``host`` under ``runs_root`` other than ``current``, newest first; with ``gpu_arch``, only
    those whose machine had that GPU architecture (or said none): a pool's Turing server never carries its cells
    over to an Ada one."""
    found = []
    for child in runs_root.iterdir() if runs_root.is_dir() else ():
        if child.name.startswith(".") or child.name == current or not (child / MANIFEST).is_file():
            continue
        try:
            manifest = read_manifest(child)
        except ValueError:
            continue  # an unreadable manifest: that run is not used for carrying over
        if manifest["host"] == host and (gpu_arch is None or manifest.get("gpu_arch") in (None, gpu_arch)):
            found.append((manifest["started_at"], child.name, child))
    return [path for _, _, path in sorted(found, reverse=True)]


def latest_earlier_records(runs_root: Path, host: str, current: str, wanted: set[CellOfHost],
                           progress: Callable[[str], None], gpu_arch: str | None = None) -> dict[CellOfHost, rec.Record]:
    """Per wanted cell, its last record in the newest earlier run of ``host`` (on ``gpu_arch``) that has one."""
    found: dict[CellOfHost, rec.Record] = {}
    for run_dir in earlier_runs(runs_root, host, current, gpu_arch):
        missing = wanted - found.keys()
        if not missing:
            break
        found.update((key, record) for key, record in latest_records(run_dir / RESULTS, progress).items()
                     if key in missing)
    return found


def settled(record: rec.Record | None, inputs_sha: str, environment_sha: str | None) -> bool:
    """Whether ``record`` still stands for a cell with these fingerprints (see the module docstring)."""
    if record is None or environment_sha is None or record["outcome"] in RETRIED_OUTCOMES:
        return False
    provenance = record.get("provenance") or {}
    return provenance.get("inputs_sha256") == inputs_sha and provenance.get("environment_sha256") == environment_sha


def carry_over(record: rec.Record, cell: Cell, run: str, host: str, machine: str | None = None) -> rec.Record:
    """A copy of an earlier run's record for this run, judged again against the cell's current upstream claim."""
    copy = rec.judged_again(record, cell.get("claims", []))
    observed_in = record["provenance"].get("carried_over_from") or record["provenance"]["run"]
    copy["provenance"] = {**record["provenance"], "run": run, "host": host, "carried_over_from": observed_in}
    if machine:
        copy["provenance"]["machine"] = machine
    return copy


def run_nightly(plan: RunPlan, *, jobs: int = 1, timeout_s: float = 300.0,
                progress: Callable[[str], None] = print) -> NightlyResult:
    """Run (or resume) the nightly ``plan``; see the module docstring for which cells run."""
    library_sha = fingerprint.library_sha256() if plan.cases_dir is None else None
    cases_dir, revision = cases_for_run(plan, library_sha or "", progress)
    rid = run_id(plan.date, plan.host, revision, machine=plan.machine_name, shard=plan.shard)
    run_dir = plan.runs_root / rid
    _check_resumable(run_dir, rid)
    cells = [c for c in load_cells(cases_dir) if matches(c, plan.pattern)]  # a damaged index: nothing is created
    run_dir.mkdir(parents=True, exist_ok=True)
    with locked(run_dir):
        manifest = _start(run_dir, plan, rid, revision, cases_dir, library_sha)
        shutil.copyfile(cases_dir / "index.json", run_dir / CASES_INDEX)  # what reports of this run read
        progress(f"run directory: {run_dir}")
        inputs = {variant_key(c): fingerprint.cell_inputs_sha256(c) for c in cells}
        worker = fingerprint.worker_sha256()
        environments = {t.id: fingerprint.environment_sha256(t, worker, progress) for t in plan.targets}
        wanted = {(c["case"], c["variant"], t.id) for c in cells for t in plan.targets}
        if plan.shard is not None:
            wanted = cells_of(plan.shard, wanted, plan.durations)
            progress(f"shard {plan.shard}: {len(wanted)} cell(s) of this night's "
                     f"{len(cells) * len(plan.targets)} (balanced by "
                     f"{'the durations given' if plan.durations else 'count'})")
        earlier = {} if plan.force else latest_earlier_records(plan.runs_root, plan.host, rid, wanted, progress,
                                                               plan.gpu_arch)
        todo: dict[str, list[Cell]] = {}
        carried: list[rec.Record] = []
        resumed: collections.Counter = collections.Counter()
        with ResultsWriter(run_dir / RESULTS) as writer:
            in_run = latest_of(writer.records)
            for target in plan.targets:
                todo[target.id] = []
                for cell in cells:
                    key, sha = (*variant_key(cell), target.id), inputs[variant_key(cell)]
                    if key not in wanted:
                        continue  # another shard's cell
                    if not plan.force and settled(in_run.get(key), sha, environments[target.id]):
                        resumed[target.id] += 1
                    elif settled(earlier.get(key), sha, environments[target.id]):
                        writer.append(carry_over(earlier[key], cell, rid, plan.host, plan.machine_name))
                        carried.append(earlier[key])
                    else:
                        todo[target.id].append(cell)
            carried_from = _carried_from(carried)
            for target in plan.targets:
                sources = ", ".join(f"{n} from {run}" for run, n in sorted(carried_from[target.id].items())) or "none"
                progress(f"{target.id}: {len(todo[target.id])} cell(s) to run; carried over: {sources}; already in "
                         f"this run: {resumed[target.id]}")

            def annotate(record: rec.Record) -> rec.Record:
                record["provenance"] = {"run": rid, "host": plan.host, "machine": plan.machine_name,
                                        "inputs_sha256": inputs[variant_key(record)],
                                        "environment_sha256": environments[record["target"]],
                                        "carried_over_from": None}
                return record

            summaries = run_targets(list(plan.targets), cases_dir, run_dir / RESULTS, pattern=plan.pattern,
                                    jobs=jobs, timeout_s=timeout_s, progress=progress, todo=todo, annotate=annotate,
                                    writer=writer)
            _finish(run_dir, manifest, plan, resumed, latest_of(writer.records).values())
    return NightlyResult(run_dir, rid, {t: sum(n.values()) for t, n in carried_from.items()}, dict(resumed),
                         summaries)


def _carried_from(carried: list[rec.Record]) -> dict[str, collections.Counter]:
    """Per target, how many of the ``carried`` earlier records were observed in which run."""
    counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for record in carried:
        counts[record["target"]][record["provenance"].get("carried_over_from") or record["provenance"]["run"]] += 1
    return counts


def _check_resumable(run_dir: Path, rid: str) -> None:
    """Refuse to resume a run whose run.json exists but cannot be read, or is another run's: rewriting it would lose
    its attempts."""
    if not (run_dir / MANIFEST).exists():
        return
    try:
        if read_manifest(run_dir)["id"] != rid:
            raise RunDirError(f"{run_dir / MANIFEST}: describes run {read_manifest(run_dir)['id']}, not {rid} (a "
                              "run.json copied from another run)")
    except RunDirError as err:
        raise DamagedRunError(f"{err}. The nightly resumes this run directory but will not overwrite a damaged "
                              f"{MANIFEST} (its attempts would be lost): repair it, or move it aside (e.g. to "
                              f"{MANIFEST}.damaged) to resume with a new one") from None


def _start(run_dir: Path, plan: RunPlan, rid: str, revision: str, cases_dir: Path,
           library_sha: str | None) -> dict[str, Any]:
    """Write run.json as running: a new run's, or a resumed run's with this attempt added."""
    now = rec.now_iso()
    if (run_dir / MANIFEST).exists():
        manifest = read_manifest(run_dir)
    else:
        manifest = {"format": RUN_FORMAT, "id": rid, "host": plan.host, "date": plan.date, "revision": revision,
                    "started_at": now, "attempts": [], "targets": []}
    remove_seal(run_dir)  # the run changes from here on; _finish seals it again
    facts = plan.machine or {"name": plan.host, "kind": plan.host_kind}
    manifest.update(
        host_kind=plan.host_kind, machine=plan.machine_name, machine_facts=facts, gpu_arch=facts.get("gpu_arch"),
        shard=str(plan.shard) if plan.shard else None, contributor=plan.contributor,
        library_sha256=library_sha, cases_dir=str(cases_dir),
        targets=list(dict.fromkeys([*manifest.get("targets", []), *(t.id for t in plan.targets)])),
        status="running", finished_at=None,
    )
    manifest.setdefault("attempts", []).append(
        {"started_at": now, "argv": sys.argv[1:], "pattern": plan.pattern, "forced": plan.force})
    write_manifest(run_dir, manifest)
    return manifest


def _finish(run_dir: Path, manifest: dict[str, Any], plan: RunPlan, resumed: collections.Counter,
            latest: Iterable[rec.Record]) -> None:
    """Mark run.json finished, with each target's outcome and carried-over counts from ``latest`` (the last record
    of each cell in its results file)."""
    latest = list(latest)
    cells = manifest.setdefault("cells", {})
    for target in plan.targets:
        records = [r for r in latest if r["target"] == target.id]
        origins = collections.Counter((r.get("provenance") or {}).get("carried_over_from") for r in records)
        origins.pop(None, None)
        cells[target.id] = {
            "outcomes": dict(sorted(collections.Counter(r["outcome"] for r in records).items())),
            "carried_over": sum(origins.values()),
            "carried_over_from": dict(sorted(origins.items())),
        }
    manifest["attempts"][-1]["finished_at"] = manifest["finished_at"] = rec.now_iso()
    manifest["attempts"][-1]["resumed_cells"] = sum(resumed.values())
    manifest["status"] = "finished"
    write_manifest(run_dir, manifest)
    write_seal(run_dir, manifest.get("machine_facts") or {}, manifest.get("contributor"))
