"""A reduction's directory: what it keeps between the reduce command and the check processes polygraphy starts, and
between an interrupted run and the run that resumes it.

``DIR/session.json`` holds the model, target, failure kept, the current phase and where checks run (the kept-alive
container's id); ``DIR/steps.jsonl`` one line per check, appended as each ends; ``DIR/checks.jsonl`` every check's
harness record.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from harness.reduction.failure import KeptFailure

SESSION_FILE = "session.json"
STEPS_FILE = "steps.jsonl"
CHECK_RECORDS = "checks.jsonl"
PHASES = ("bisect", "linear")


@dataclasses.dataclass
class Session:
    model: str
    model_sha256: str
    target: str
    matrix: str
    kept: KeptFailure
    timeout_s: float
    runner: str  # local, container, container-per-check
    container_id: str | None = None
    phase: str = "whole-model"

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["kept"] = self.kept.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Session":
        return cls(**{**data, "kept": KeptFailure.from_dict(data["kept"])})


class SessionFileError(ValueError):
    """A reduction directory's session file that cannot be read (damaged, or not one)."""


def read_session(out_dir: Path) -> Session | None:
    path = Path(out_dir) / SESSION_FILE
    if not path.is_file():
        return None
    try:
        return Session.from_dict(json.loads(path.read_text()))
    except (json.JSONDecodeError, KeyError, TypeError) as err:
        raise SessionFileError(f"{path}: not a reduction's session file ({type(err).__name__}: {err}); remove it to start "
                         "the reduction over") from None


def write_session(out_dir: Path, session: Session) -> None:
    write_json(Path(out_dir) / SESSION_FILE, session.to_dict())


def read_steps(out_dir: Path) -> list[dict[str, Any]]:
    path = Path(out_dir) / STEPS_FILE
    if not path.is_file():
        return []
    lines = path.read_text().split("\n")[:-1]  # a line still being written has no newline yet
    return [json.loads(line) for line in lines if line.strip()]


def append_step(out_dir: Path, step: dict[str, Any]) -> None:
    with (Path(out_dir) / STEPS_FILE).open("a") as steps:
        steps.write(json.dumps(step, sort_keys=True) + "\n")


def write_json(path: Path, data: dict[str, Any]) -> None:
    Path(path).write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
