"""The observed records a scan's predictions rest on: results files, merged directories, run directories and
history stores, read through :mod:`harness.store`, keeping the latest record of each cell per host."""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Iterable, NamedTuple

from harness.worker.errors import InputError

Cell = tuple[str, str, str]  # (case, variant, target)


class ObservationsError(InputError):
    """A --results path that cannot be read at all; the message names it."""


class Observation(NamedTuple):
    """One observed record and where it was read from."""

    record: dict[str, Any]
    source: str  # the results file it came from
    host: str | None  # None: the record names no host (a plain `run`)


@dataclasses.dataclass
class Observations:
    sources: list[str]  # the paths read, as given
    problems: list[str]  # damaged lines and unreadable files, each naming the file (and line)
    cells: dict[Cell, list[Observation]]  # the latest record of each cell per host

    def of(self, case: str, variant: str, target: str) -> list[Observation]:
        return self.cells.get((case, variant, target), [])

    @classmethod
    def of_records(cls, records: Iterable[dict[str, Any]]) -> "Observations":
        """Every one of ``records`` (already read: a page's), each cell's in their order, the host each names."""
        from harness.store.results_file import record_host

        cells: dict[Cell, list[Observation]] = {}
        for record in records:
            cells.setdefault((record["case"], record["variant"], record["target"]), []).append(
                Observation(record, "", record_host(record)))
        return cls([], [], cells)

    def __len__(self) -> int:
        return sum(len(observations) for observations in self.cells.values())


def read_observations(paths: Iterable[Path | str]) -> Observations:
    """Every record of ``paths`` (each a results file, a merged directory, a run directory or a directory holding
    run directories, such as the history store); per cell and host the record that started last wins."""
    latest: dict[tuple[str, str, str, str], Observation] = {}  # per (case, variant, target, host)
    sources, problems = [], []
    for path in map(Path, paths):
        sources.append(str(path))
        for observation in _observations_in(path, problems):
            record = observation.record
            key = (record["case"], record["variant"], record["target"], observation.host or "")
            if key not in latest or latest[key].record["started_at"] <= record["started_at"]:
                latest[key] = observation
    cells: dict[Cell, list[Observation]] = {}
    for (case, variant, target, _), observation in sorted(latest.items()):
        cells.setdefault((case, variant, target), []).append(observation)
    return Observations(sources, problems, cells)


def _observations_in(path: Path, problems: list[str]) -> list[Observation]:
    # the results store's readers: imported by a scan that reads results (a scan of the library's evidence alone,
    # in a pre-commit hook, does not pay for them)
    from harness.store.merge import read_result_set
    from harness.store.results_file import record_host
    from harness.store.run_dirs import RunDirError

    if not path.exists():
        raise ObservationsError(f"{path}: no such results file or directory")
    try:
        read = read_result_set(path, problems)
    except RunDirError as err:
        raise ObservationsError(str(err)) from None
    return [Observation(r.record, str(r.source), record_host(r.record) or r.run_host) for r in read]
