"""The planning view's columns for about 30 targets: grouped by platform line, then release (NGC, L4T/JetPack), then
version; which of them the page shows by default (the newest release of each platform line, and every target this
project observed); the rest one click away."""
from __future__ import annotations

import dataclasses
import re
from typing import Any, Iterable, Sequence

from reports.tables import Column, jetpack_named, version_key


@dataclasses.dataclass(frozen=True)
class ReleaseGroup:
    """The planning columns of one release on one platform line, in column order."""

    key: str  # the page's handle for the group ("g0", "g1", ...)
    line: str  # the platform line heading ("TensorRT · Jetson AGX Orin")
    release: str  # "NGC 24.08", "JetPack 6.1/6.2 · L4T R36.4"; "" when matrix.yaml, title and image name none
    targets: tuple[str, ...]
    default: tuple[str, ...]  # the ones the default view shows

    @property
    def label(self) -> str:
        return self.release or (self.targets[0] if len(self.targets) == 1 else "other")


@dataclasses.dataclass(frozen=True)
class PlatformLine:
    """A platform line (TensorRT on one platform, ONNX Runtime) and its release groups, oldest first."""

    line: str
    groups: tuple[ReleaseGroup, ...]

    @property
    def targets(self) -> tuple[str, ...]:
        return tuple(target for group in self.groups for target in group.targets)

    @property
    def default(self) -> tuple[str, ...]:
        return tuple(target for group in self.groups for target in group.default)


def release_label(release: str | None, titles: Iterable[str]) -> str:
    """The heading of a release group: the release, with the JetPack releases its targets' titles name before an L4T
    release ("JetPack 6.1/6.2 · L4T R36.4")."""
    if not release:
        return ""
    named = [] if not release.startswith("L4T") else list(dict.fromkeys(filter(None, map(jetpack_named, titles))))
    if not named:
        return release
    return f"JetPack {'/'.join(sorted((n.removeprefix('JetPack ') for n in named), key=version_key))} · {release}"


def plan_lines(targets: Sequence[Any], columns: Sequence[Column], observed: Iterable[str],
               recommended: Iterable[str] = ()) -> list[PlatformLine]:
    """The planning view's ``targets`` (PlanTarget: id, group, available, version) as platform lines of release
    groups, in their column order; ``columns`` (the matrix columns) give each target's release, ``observed`` the
    targets with records, ``recommended`` those a row's recommendation names. Shown by default: the newest release of
    each line (by its newest available version), every observed target and every recommended one, never a target
    that cannot exist (one click away, with its reason)."""
    release = {column.target: column.release for column in columns}
    observed = set(observed) | set(recommended)
    available = {t.id for t in targets if t.available}
    spans: list[tuple[str, str | None, list[Any]]] = []
    for target in targets:
        key = release.get(target.id) or None
        if spans and spans[-1][0] == target.group and key is not None and spans[-1][1] == key:
            spans[-1][2].append(target)
        else:
            spans.append((target.group, key, [target]))
    lines: dict[str, list[tuple[str | None, list[Any]]]] = {}
    for line, key, members in spans:
        lines.setdefault(line, []).append((key, members))
    out, number = [], 0
    for line, releases in lines.items():
        newest = max(range(len(releases)), key=lambda i: max(
            (version_key(t.version) for t in releases[i][1] if t.available and t.version), default=(-1,)))
        groups = []
        for index, (key, members) in enumerate(releases):
            ids = tuple(t.id for t in members)
            default = tuple(t for t in ids if t in available and (index == newest or t in observed))
            titles = [column.title for column in columns if column.target in ids]
            groups.append(ReleaseGroup(f"g{number}", line, release_label(key, titles), ids, default))
            number += 1
        out.append(PlatformLine(line, tuple(groups)))
    return out


_COMPUTE = re.compile(r"\(compute (\d+\.\d+)\)")


def observed_architectures(columns: Iterable[Column]) -> dict[str, tuple[str, ...]]:
    """Per target, the GPU compute capabilities its records observed ("sm 8.7"), in first-seen order: the same
    TensorRT can build on one architecture and fail on another, so a planning column says which it saw."""
    found: dict[str, list[str]] = {}
    for column in columns:
        for gpu in column.observed.get("gpu", ()):
            match = _COMPUTE.search(gpu)
            if match and f"sm {match.group(1)}" not in found.setdefault(column.target, []):
                found[column.target].append(f"sm {match.group(1)}")
    return {target: tuple(values) for target, values in found.items()}
