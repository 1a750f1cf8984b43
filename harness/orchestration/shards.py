"""Shards: one night's cells of a host kind split over N machines, each running ``--shard K/N``.

Every shard computes the same split from the same inputs, with no coordinator: the cells (case, variant, target)
sorted by name, then dealt out. With the durations the history knows (``--durations``: each cell's last
``duration_s``), longest first, each to the shard with the least work so far (a cell never timed counts as the
median of those timed); without them, by count (the i-th cell of the sorted list to shard i mod N + 1). Ties go to
the lower shard, so the split depends only on the cells and the durations: shards of one night, given the same
durations file, cover every cell exactly once.
"""
from __future__ import annotations

import dataclasses
import json
import re
import statistics
from pathlib import Path
from typing import Iterable, Mapping

ShardCell = tuple[str, str, str]  # (case, variant, target)
_SHARD = re.compile(r"^(\d+)/(\d+)$")


@dataclasses.dataclass(frozen=True)
class Shard:
    index: int  # 1-based
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    @property
    def slug(self) -> str:
        """'1of2': the shard in a directory or artifact name."""
        return f"{self.index}of{self.count}"


def parse_shard(text: str) -> Shard:
    """'2/3' -> Shard(2, 3); ValueError naming the rule otherwise."""
    match = _SHARD.match(text.strip())
    if not match or not 1 <= int(match.group(1)) <= int(match.group(2)):
        raise ValueError(f"{text!r} is not a shard: expected K/N with 1 <= K <= N, e.g. 1/2")
    return Shard(int(match.group(1)), int(match.group(2)))


def split(cells: Iterable[ShardCell], count: int,
          durations: Mapping[ShardCell, float] | None = None) -> list[list[ShardCell]]:
    """The cells of each of ``count`` shards (index 0 is shard 1/N)."""
    ordered = sorted(set(cells))
    shards: list[list[ShardCell]] = [[] for _ in range(count)]
    known = {cell: float(durations[cell]) for cell in ordered if durations and cell in durations}
    if not known:
        for i, cell in enumerate(ordered):
            shards[i % count].append(cell)
        return shards
    fill = statistics.median(known.values())
    load = [0.0] * count
    for cell in sorted(ordered, key=lambda c: (-known.get(c, fill), c)):
        target = min(range(count), key=lambda i: (load[i], i))
        shards[target].append(cell)
        load[target] += known.get(cell, fill)
    return [sorted(s) for s in shards]


def cells_of(shard: Shard, cells: Iterable[ShardCell],
             durations: Mapping[ShardCell, float] | None = None) -> set[ShardCell]:
    return set(split(cells, shard.count, durations)[shard.index - 1])


DURATIONS_FORMAT = "trt-matrix/durations/1"


def write_durations(durations: Mapping[ShardCell, float], path: Path) -> None:
    rows = [{"case": c, "variant": v, "target": t, "duration_s": round(d, 3)}
            for (c, v, t), d in sorted(durations.items())]
    Path(path).write_text(json.dumps({"format": DURATIONS_FORMAT, "cells": rows}, indent=0) + "\n")


def read_durations(path: Path) -> dict[ShardCell, float]:
    """The durations file ``nightly-plan --durations-out`` writes; ValueError naming the file and field."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: cannot be read as a durations file ({err})") from None
    if not isinstance(data, dict) or data.get("format") != DURATIONS_FORMAT or not isinstance(data.get("cells"), list):
        raise ValueError(f"{path}: field 'format' must be {DURATIONS_FORMAT!r} with a list 'cells' (written by "
                         "`trt-matrix nightly-plan --durations-out`)")
    found = {}
    for i, row in enumerate(data["cells"]):
        try:
            found[(row["case"], row["variant"], row["target"])] = float(row["duration_s"])
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"{path}: cells[{i}] needs case, variant, target and a number duration_s") from None
    return found
