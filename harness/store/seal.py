"""A run directory's seal: ``files.json``, the SHA-256 of each of its files and the facts of the machine that ran it.

The nightly writes it when a run finishes (and removes it while a run is being written or resumed), so a run
directory copied anywhere (a CI artifact, a user's contributed tarball) can be checked: every listed file present
with its hash, and no file that is not listed. Models, engines and tensors (``*.onnx``, ``*.engine``, ``*.plan``,
``*.npz``) are left out of the seal: uploads and the history leave them behind and they can be made again.

A run whose seal names a ``contributor`` was run on a machine the maintainers do not own: reports show it as
contributed, with who ran it and on what.
"""
from __future__ import annotations

import fnmatch
import hashlib
import json
import os
from pathlib import Path
from typing import Any

SEAL = "files.json"
SEAL_FORMAT = "trt-matrix/files/1"
UNSEALED = ("*.onnx", "*.engine", "*.plan", "*.npz")  # large, regenerated: never uploaded, never sealed
_SKIPPED = (".lock",)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def sealed_files(run_dir: Path) -> list[str]:
    """The files of ``run_dir`` a seal covers, as sorted relative POSIX paths."""
    found = []
    for current, dirs, files in os.walk(run_dir):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in files:
            relative = (Path(current) / name).relative_to(run_dir).as_posix()
            if relative == SEAL or name.startswith(".") or name in _SKIPPED:
                continue
            if any(fnmatch.fnmatch(name, pattern) for pattern in UNSEALED):
                continue
            found.append(relative)
    return sorted(found)


def write_seal(run_dir: Path, machine: dict[str, Any], contributor: str | None = None) -> Path:
    run_dir = Path(run_dir)
    seal = {"format": SEAL_FORMAT, "machine": machine, "contributor": contributor,
            "files": {name: _sha256(run_dir / name) for name in sealed_files(run_dir)}}
    path = run_dir / SEAL
    tmp = path.with_name(f".{SEAL}.tmp")
    tmp.write_text(json.dumps(seal, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)
    return path


def remove_seal(run_dir: Path) -> None:
    (Path(run_dir) / SEAL).unlink(missing_ok=True)


def read_seal(run_dir: Path) -> dict[str, Any] | None:
    """The seal of ``run_dir``, None when it has none; ValueError naming the file when it is unreadable."""
    path = Path(run_dir) / SEAL
    if not path.is_file():
        return None
    try:
        seal = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: not a readable seal ({err})") from None
    if not isinstance(seal, dict) or seal.get("format") != SEAL_FORMAT or not isinstance(seal.get("files"), dict):
        raise ValueError(f"{path}: field 'format' must be {SEAL_FORMAT!r} with a mapping 'files'")
    return seal


def seal_problems(run_dir: Path, seal: dict[str, Any] | None = None) -> list[str]:
    """Each file of ``run_dir`` that does not match its seal (changed, missing, not listed), naming the file; an
    empty list when it matches or has no seal."""
    run_dir = Path(run_dir)
    try:
        seal = seal if seal is not None else read_seal(run_dir)
    except ValueError as err:
        return [str(err)]
    if seal is None:
        return []
    problems = []
    listed = seal["files"]
    for name, digest in sorted(listed.items()):
        path = run_dir / name
        if not path.is_file():
            problems.append(f"{path}: listed in {SEAL} but missing")
        elif _sha256(path) != digest:
            problems.append(f"{path}: its SHA-256 differs from the one {SEAL} lists (the file was changed after the "
                            "run sealed it)")
    for name in sealed_files(run_dir):
        if name not in listed:
            problems.append(f"{run_dir / name}: not listed in {SEAL} (a file added after the run sealed it)")
    return problems


def describe_machine(machine: dict[str, Any] | None) -> str:
    """'orin-nano-01 (orin-jp6.1; NVIDIA Jetson Orin Nano, sm_87)'."""
    if not machine:
        return "an unnamed machine"
    gpus = ", ".join(dict.fromkeys(g.get("name", "?") for g in machine.get("gpus") or [])) or "no GPU"
    arch = f", {machine['gpu_arch']}" if machine.get("gpu_arch") else ""
    kind = f"{machine['kind']}; " if machine.get("kind") else ""
    return f"{machine.get('name') or '?'} ({kind}{gpus}{arch})"
