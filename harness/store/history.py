"""The history store: a plain directory of run directories, indexed once in ``history.sqlite`` beside them.

A *series* is what one host observed for one target on one GPU architecture, night after night (a pool's servers of
different GPUs are series of their own; a CPU target's series has no architecture); a run belongs to the series of every target
its run.json names, so a night that lost its records is a run of no cells (its cells are gone), never absent. Adding a run directory (or finding one the
index does not know yet, or whose results changed) reads and validates its records once and indexes what the trend
page and the comparisons need: one row per (run, target, case, variant) with the outcome and the evidence that
tells outcomes apart. A page then reads only the rows it shows, so its cost does not grow with the years stored.
The run directories stay the source of truth: delete ``history.sqlite`` and the next command rebuilds it.

A *night* of a series is all its runs of that date: the machines of a pool and the shards of a kind each add a run.
The latest night is compared with the night before, cell by cell: of a night's records of a cell, the newest speaks
(as in ``diff``), and records of other machines that disagree with it are said in the change's text.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any, Iterable, Iterator, NamedTuple

from harness.store.compare import CellChange, Comparison, classify_history, describe, other_gpu
from harness.store.results_file import record_gpu_arch
from harness.store.run_dirs import CASES_INDEX, RESULTS, RunDirError, find_run_dirs, read_run
from harness.judgement import COMPARED_OUTCOMES

DEFAULT_LAST = 14
DEFAULT_FLAKY_WINDOW = 14  # nights of a series looked at for flips
DEFAULT_FLAKY_FLIPS = 2  # a cell that changed band more often than this in the window is flaky
INDEX_FILE = "history.sqlite"
# 2: a run's targets with no records left are series runs of no cells; 3: each record's GPU architecture
# 4: series keyed by GPU architecture too; the machine and shard of each run
INDEX_FORMAT = "trt-matrix/history-index/4"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
  id TEXT PRIMARY KEY, dir TEXT NOT NULL, host TEXT NOT NULL, date TEXT NOT NULL, started_at TEXT NOT NULL,
  status TEXT, results_stamp TEXT NOT NULL, problems TEXT NOT NULL, cases_index TEXT);
CREATE TABLE IF NOT EXISTS case_indexes (sha256 TEXT PRIMARY KEY, text TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS series_runs (
  target TEXT NOT NULL, host TEXT NOT NULL, arch TEXT NOT NULL, run TEXT NOT NULL, run_key TEXT NOT NULL,
  date TEXT NOT NULL, backend_version TEXT, driver TEXT, image TEXT, cells INTEGER NOT NULL, carried INTEGER NOT NULL,
  machine TEXT NOT NULL, shard TEXT,
  PRIMARY KEY (target, host, arch, run));
CREATE TABLE IF NOT EXISTS records (
  target TEXT NOT NULL, host TEXT NOT NULL, arch TEXT NOT NULL, run_key TEXT NOT NULL, run TEXT NOT NULL, case_id TEXT NOT NULL,
  variant TEXT NOT NULL, outcome TEXT NOT NULL, category TEXT, node TEXT, message TEXT, fallback TEXT,
  fallback_count INTEGER NOT NULL, carried_from TEXT, gpu_arch TEXT,
  PRIMARY KEY (target, host, arch, run_key, case_id, variant))
  WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS cell_history ON records (target, host, arch, case_id, variant, run_key, outcome);
"""


def run_key(started_at: str, run_id: str) -> str:
    """The order of runs in a series: start time, then id (ISO times sort as text)."""
    return f"{started_at} {run_id}"


@dataclasses.dataclass(frozen=True)
class StoredRun:
    id: str
    dir: Path
    host: str
    date: str
    started_at: str
    status: str | None
    problems: tuple[str, ...]


class CellOutcome(NamedTuple):
    """A cell's outcome in one run, with what tells two of them apart on a trend square."""

    outcome: str
    category: str | None
    fallback_count: int
    carried_from: str | None


@dataclasses.dataclass(frozen=True)
class SeriesRun:
    """One run of a series, with the environment its records observed."""

    run: str
    key: str
    date: str
    backend_version: str | None
    driver: str | None
    image: str | None
    cells: int
    carried: int
    machine: str = ""
    shard: str | None = None


@dataclasses.dataclass(frozen=True)
class EnvChange:
    """A night where a series' backend version, GPU driver or container image differs from its previous run."""

    run: str
    date: str
    what: tuple[str, ...]  # e.g. ("tensorrt 10.0.1 -> 10.0.9", "driver 550.54 -> 555.42")

    @property
    def text(self) -> str:
        return "; ".join(self.what)


@dataclasses.dataclass(frozen=True)
class Series:
    """The runs of one target on one host and GPU architecture ("" for none), oldest first."""

    target: str
    host: str
    runs: tuple[SeriesRun, ...]
    arch: str = ""

    @property
    def name(self) -> str:
        return f"{self.target}@{self.host}" + (f"/{self.arch}" if self.arch else "")

    @property
    def latest(self) -> SeriesRun:
        return self.runs[-1]

    def nights(self) -> list[tuple[str, tuple[SeriesRun, ...]]]:
        """(date, its runs oldest first) of each night of the series, oldest first. A night's runs are those of
        one date on different machines or shards (a pool, a sharded kind); a second run of the same machine and
        shard on that date (a run again by hand) starts a night of its own."""
        nights: list[tuple[str, list[SeriesRun]]] = []
        for run in self.runs:
            if nights and nights[-1][0] == run.date and all(
                    (other.machine, other.shard) != (run.machine, run.shard) for other in nights[-1][1]):
                nights[-1][1].append(run)
            else:
                nights.append((run.date, [run]))
        return [(date, tuple(runs)) for date, runs in nights]

    def env_changes(self) -> list[EnvChange]:
        """Nights where a machine's backend, driver or image differs from that machine's run before."""
        changes = []
        last: dict[str, SeriesRun] = {}
        pairs = []
        for run in self.runs:
            if run.machine in last:
                pairs.append((last[run.machine], run))
            last[run.machine] = run
        for before, after in pairs:
            what = [f"{label} {old or '?'} -> {new or '?'}" for label, old, new in (
                ("backend", before.backend_version, after.backend_version), ("driver", before.driver, after.driver),
                ("image", _short_image(before.image), _short_image(after.image))) if old != new]
            if what:
                changes.append(EnvChange(after.run, after.date, tuple(what)))
        return changes


def _short_image(image: str | None) -> str | None:
    """An image as '<id prefix> <tag>' (the environment holds '<image id> <repo digest or tag>')."""
    if not image:
        return image
    parts = image.split()
    return " ".join([parts[0].replace("sha256:", "")[:12], *parts[1:2]])


def _record_summary(row: sqlite3.Row | tuple, run: str, host: str, machine: str | None = None) -> dict[str, Any]:
    """The fields of a record the comparisons read, rebuilt from an index row."""
    outcome, category, node, message, fallback, carried, gpu_arch = row
    failure = None if category is None else {"category": category, "node": node, "message": message or ""}
    return {"outcome": outcome, "failure": failure, "fallback_nodes": json.loads(fallback) if fallback else [],
            "provenance": {"run": run, "host": host, "carried_over_from": carried,
                           **({"machine": machine} if machine and machine != host else {})},
            "environment": {"gpu_arch": gpu_arch}}


def _series_arch(records: list[dict[str, Any]], machine_arch: str | None) -> str:
    """The GPU architecture of a run's series for one target: the one most of its records observed, else the
    machine's, else "" (a CPU target)."""
    counted: dict[str, int] = {}
    for record in records:
        arch = record_gpu_arch(record)
        if arch:
            counted[arch] = counted.get(arch, 0) + 1
    return max(sorted(counted), key=counted.get) if counted else (machine_arch or "")


def _environment_facts(records: list[dict[str, Any]]) -> tuple[str | None, str | None, str | None]:
    """The backend version, driver and image most of ``records`` observed."""
    def most(values: Iterable[str | None]) -> str | None:
        counted: dict[str, int] = {}
        for value in values:
            if value:
                counted[value] = counted.get(value, 0) + 1
        return max(counted, key=counted.get) if counted else None

    backend = most(r["environment"].get(f"{r['backend']}_version") for r in records)
    driver = most(next((g.get("driver_version") for g in r["environment"].get("gpus") or [] if isinstance(g, dict)),
                       None) for r in records)
    image = most(r["environment"].get("container_image") for r in records)
    return backend, driver, image


class HistoryStore:
    """The history store at ``root``; ``sync`` (run on opening) indexes run directories the index lacks."""

    def __init__(self, root: Path | str, *, sync: bool = True):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.root / INDEX_FILE)
        self.db.executescript(_SCHEMA)
        found = self.db.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
        if found is None:
            self.db.execute("INSERT INTO meta VALUES ('format', ?)", (INDEX_FORMAT,))
            self.db.commit()
        elif found[0] != INDEX_FORMAT:  # an index written by another version of this code: rebuild it
            self.db.close()
            (self.root / INDEX_FILE).unlink()
            self.__init__(root, sync=sync)
            return
        if sync:
            self.sync()

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "HistoryStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---------- adding and indexing ----------

    def add(self, sources: Iterable[Path | str]) -> list[Path]:
        """Copy the run directories named by ``sources`` into the store and index them (a run already there is
        replaced: the copy being added is the later, resumed state of the same run). Returns the stored paths."""
        stored = []
        for source in find_run_dirs(sources):
            run = read_run(source)
            destination = self.root / run.id
            if destination.resolve() != source.resolve():
                staging = self.root / f".adding-{run.id}"
                shutil.rmtree(staging, ignore_errors=True)
                shutil.copytree(source, staging,
                                ignore=shutil.ignore_patterns("*.onnx", "*.npz", "*.engine", "*.plan"))
                if destination.exists():
                    shutil.rmtree(destination)
                staging.rename(destination)
            stored.append(destination)
        self.sync()
        return stored

    def _stored_dirs(self) -> list[Path]:
        try:
            return find_run_dirs([self.root])
        except RunDirError:
            return []  # an empty store

    def sync(self) -> None:
        """Index every run directory of the store that is new or whose files changed; forget removed ones."""
        known = {row[0]: row[1] for row in self.db.execute("SELECT dir, results_stamp FROM runs")}
        present = set()
        for path in self._stored_dirs():
            relative = str(path.relative_to(self.root))
            present.add(relative)
            if known.get(relative) != _stamp(path):
                self._index(path, relative)
        for gone in set(known) - present:
            self._forget("dir", gone)
        self.db.commit()

    def _forget(self, column: str, value: str) -> None:
        for (run,) in self.db.execute(f"SELECT id FROM runs WHERE {column} = ?", (value,)).fetchall():
            for target, host, arch, key in self.db.execute(
                    "SELECT target, host, arch, run_key FROM series_runs WHERE run = ?", (run,)).fetchall():
                self.db.execute("DELETE FROM records WHERE target = ? AND host = ? AND arch = ? AND run_key = ?",
                                (target, host, arch, key))
            self.db.execute("DELETE FROM series_runs WHERE run = ?", (run,))
            self.db.execute("DELETE FROM runs WHERE id = ?", (run,))

    def _index(self, path: Path, relative: str) -> None:
        """Read (and validate, once) one run directory into the index."""
        stamp = _stamp(path)
        run = read_run(path)
        self._forget("dir", relative)
        self._forget("id", run.id)
        manifest = run.manifest or {}
        index_path = path / CASES_INDEX
        cases_index = None
        if index_path.is_file():  # the same library in every run: stored once, by its hash
            text = index_path.read_text(encoding="utf-8", errors="replace")
            cases_index = hashlib.sha256(text.encode()).hexdigest()
            self.db.execute("INSERT OR IGNORE INTO case_indexes VALUES (?, ?)", (cases_index, text))
        self.db.execute("INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", (
            run.id, relative, run.host, manifest.get("date") or run.started_at[:10], run.started_at,
            manifest.get("status"), stamp, json.dumps(run.problems + [str(b) for b in run.bad_lines]), cases_index))
        key = run_key(run.started_at, run.id)
        by_target: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
        for record in run.records:  # the last record of a cell in the run wins
            by_target.setdefault(record["target"], {})[(record["case"], record["variant"])] = record
        for target in run.targets():  # a target run.json names but whose records are lost: a run of no cells
            by_target.setdefault(target, {})
        for target, cells in by_target.items():
            records = list(cells.values())
            carried = sum(1 for r in records if (r.get("provenance") or {}).get("carried_over_from"))
            arch = _series_arch(records, run.gpu_arch)
            self.db.execute("INSERT INTO series_runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", (
                target, run.host, arch, run.id, key, manifest.get("date") or run.started_at[:10],
                *_environment_facts(records), len(records), carried, run.machine, run.shard))
            self.db.executemany("INSERT INTO records VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", [
                (target, run.host, arch, key, run.id, case, variant, r["outcome"],
                 (r.get("failure") or {}).get("category"), (r.get("failure") or {}).get("node"),
                 (r.get("failure") or {}).get("message"),
                 json.dumps(r["fallback_nodes"]) if r["fallback_nodes"] else None, len(r["fallback_nodes"]),
                 (r.get("provenance") or {}).get("carried_over_from"), record_gpu_arch(r))
                for (case, variant), r in cells.items()])

    # ---------- reading ----------

    def runs(self) -> list[StoredRun]:
        """Every indexed run, oldest first."""
        return [StoredRun(id_, self.root / dir_, host, date, started, status, tuple(json.loads(problems)))
                for id_, dir_, host, date, started, status, problems in self.db.execute(
                    "SELECT id, dir, host, date, started_at, status, problems FROM runs ORDER BY started_at, id")]

    def problems(self) -> list[str]:
        """Everything in the store that could not be read, each naming the file (and line)."""
        return [problem for run in self.runs() for problem in run.problems]

    def series(self) -> list[Series]:
        """Every (target, host, architecture) series with its runs, oldest first (ordered by target, host, arch)."""
        members: dict[tuple[str, str, str], list[SeriesRun]] = {}
        for target, host, arch, *rest in self.db.execute(
                "SELECT target, host, arch, run, run_key, date, backend_version, driver, image, cells, carried, "
                "machine, shard FROM series_runs ORDER BY target, host, arch, run_key"):
            members.setdefault((target, host, arch), []).append(SeriesRun(*rest))
        return [Series(target, host, tuple(runs), arch) for (target, host, arch), runs in members.items()]

    def cases_index(self) -> str | None:
        """The text of the case index the newest run that kept one ran (see run_dirs.CASES_INDEX)."""
        found = self.db.execute("SELECT text FROM runs JOIN case_indexes ON sha256 = cases_index "
                                "ORDER BY started_at DESC, id DESC LIMIT 1").fetchone()
        return found[0] if found else None

    def records_of(self, series: Series, runs: Iterable[str]) -> dict[str, dict[tuple[str, str], dict[str, Any]]]:
        """run -> (case, variant) -> record summary (outcome, failure, fallback nodes, provenance), for ``runs``."""
        found: dict[str, dict[tuple[str, str], dict[str, Any]]] = {run: {} for run in runs}
        machines = {run.run: run.machine for run in series.runs}
        for run, case, variant, *rest in self._rows(series, list(found), "outcome, category, node, message, "
                                                     "fallback, carried_from, gpu_arch"):
            found[run][(case, variant)] = _record_summary(rest, run, series.host, machines.get(run))
        return found

    def outcomes_of(self, series: Series, runs: Iterable[str]) -> dict[str, dict[tuple[str, str], CellOutcome]]:
        """run -> (case, variant) -> the little a trend square shows, for ``runs`` of ``series``."""
        found: dict[str, dict[tuple[str, str], CellOutcome]] = {run: {} for run in runs}
        for run, case, variant, *row in self._rows(series, list(found),
                                                   "outcome, category, fallback_count, carried_from"):
            found[run][(case, variant)] = CellOutcome(*row)
        return found

    def _rows(self, series: Series, runs: list[str], columns: str) -> Iterator[tuple]:
        """(run, case, variant, *columns) of ``runs`` of ``series``: each run's records are one range of the key."""
        keys = {run.run: run.key for run in series.runs}
        for run in runs:
            yield from self.db.execute(
                f"SELECT run, case_id, variant, {columns} FROM records WHERE target = ? AND host = ? AND arch = ? "
                f"AND run_key = ?", (series.target, series.host, series.arch, keys[run]))

    def _previous_comparable(self, series: Series, cell: tuple[str, str], before: str) -> tuple[str, dict] | None:
        marks = ",".join("?" * len(COMPARED_OUTCOMES))
        row = self.db.execute(
            f"SELECT run, outcome, category, node, message, fallback, carried_from, gpu_arch FROM records "
            f"WHERE target = ? AND host = ? AND arch = ? AND case_id = ? AND variant = ? AND run_key < ? "
            f"AND outcome IN ({marks}) ORDER BY run_key DESC LIMIT 1",
            (series.target, series.host, series.arch, *cell, before, *COMPARED_OUTCOMES)).fetchone()
        return (row[0], _record_summary(row[1:], row[0], series.host)) if row else None

    def _seen_before(self, series: Series, cell: tuple[str, str], before: str) -> bool:
        return self.db.execute("SELECT 1 FROM records WHERE target = ? AND host = ? AND arch = ? AND case_id = ? "
                               "AND variant = ? AND run_key < ? LIMIT 1",
                               (series.target, series.host, series.arch, *cell, before)).fetchone() is not None

    def latest_change(self, series: Series, *, flaky_window: int = DEFAULT_FLAKY_WINDOW,
                      flaky_flips: int = DEFAULT_FLAKY_FLIPS) -> Comparison | None:
        """How each cell of the series' latest night compares with the night before (see the module docstring
        and compare.classify_history); None while the series has a single night."""
        nights = series.nights()
        if len(nights) < 2:
            return None
        (_, latest), (_, previous) = nights[-1], nights[-2]
        window = nights[-flaky_window:]
        outcomes = self.outcomes_of(series, [run.run for _, runs in window for run in runs])
        records = self.records_of(series, [run.run for run in (*previous, *latest)])
        now, before = _newest_of(records, latest), _newest_of(records, previous)
        previous_runs = {run.run for run in previous}
        first_key = latest[0].key
        changes = []
        for cell in sorted(set(now) | set(before)):
            new = now.get(cell)
            earlier = self._previous_comparable(series, cell, first_key) if new else None
            seen_before = new is None or earlier is not None or self._seen_before(series, cell, first_key)
            history = [night[cell].outcome for night in (_newest_of(outcomes, runs) for _, runs in window)
                       if cell in night]
            kind, flips = classify_history(new, before.get(cell), earlier[1] if earlier else None, history,
                                           seen_before, flaky_flips)
            old = earlier[1] if earlier else before.get(cell)
            why = f"{describe(old)} -> {describe(new)}"
            if earlier and earlier[0] not in previous_runs:
                why += f" (last comparable outcome in run {earlier[0]})"
            if kind == "flaky":
                why += f"; changed {flips} times in the last {len(window)} runs"
            gpus = other_gpu(old, new) if old and new else None
            if gpus:
                why += f" (GPU {gpus}: another GPU, not compared)"
            disagreement = _disagreement(records, latest, cell)
            if disagreement:
                why += f"; machines disagree that night: {disagreement} (the newest record speaks)"
            changes.append(CellChange(*cell, series.target, series.host, kind, why, old, new,
                                      old_run=earlier[0] if earlier else old["provenance"]["run"] if old else None,
                                      disagreement=disagreement))
        return Comparison(_night_label(previous), _night_label(latest), changes)


def _newest_of(by_run: dict[str, dict], runs: Iterable[SeriesRun]) -> dict:
    """Per cell, the record of the newest of ``runs`` (oldest first) that has one."""
    merged: dict = {}
    for run in runs:
        merged.update(by_run.get(run.run, {}))
    return merged


def _disagreement(records: dict[str, dict], runs: tuple[SeriesRun, ...], cell: tuple[str, str]) -> str | None:
    """'gpu-07 pass, gpu-09 fail' when the machines of one night recorded different outcomes of ``cell``."""
    seen = {run.machine: records[run.run][cell]["outcome"] for run in runs if cell in records.get(run.run, {})}
    if len({o for o in seen.values() if o in COMPARED_OUTCOMES}) < 2:
        return None
    return ", ".join(f"{machine} {outcome}" for machine, outcome in sorted(seen.items()))


def _night_label(runs: tuple[SeriesRun, ...]) -> str:
    """A night of a series as the comparison names it: its run, or its runs joined with '+'."""
    return " + ".join(run.run for run in runs)


def _stamp(run_dir: Path) -> str:
    """What says a run directory changed: size and modification time of its results and manifest."""
    parts = []
    for name in (RESULTS, "run.json"):
        try:
            stat = (run_dir / name).stat()
            parts.append(f"{stat.st_size}:{stat.st_mtime_ns}")
        except FileNotFoundError:
            parts.append("-")
    return " ".join(parts)
