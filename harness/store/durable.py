"""The history store's durable copy: its run directories kept where no runner's disk decides their fate.

The history store on a runner is a cache: ``history.sqlite`` is rebuilt from its run directories, and the run
directories are rebuilt from the durable copy, so a new runner (or one whose disk was wiped) continues the same
history. One setting (``--durable``, else the environment variable ``TRT_MATRIX_HISTORY_STORE``) names the copy:

- ``git:<repository URL or path>#<branch>``: a branch of a git repository holding one directory per run (the
  results branch of the project's own repository, as a scoreboard keeps its results). Pushing uses git's own
  credentials (in GitHub Actions, the workflow passes its token as an extra header, never on disk).
- ``dir:<path>`` (or an absolute path): a directory, e.g. an object-store bucket mounted with rclone or s3fs, or
  a network share.

What is kept is each run directory as the history holds it: run.json, results.jsonl, cases-index.json, files.json
and the cells' logs; never models, engines or tensors (the history never copies them in).
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Iterable

from harness.store.run_dirs import MANIFEST
from harness.store.seal import UNSEALED
from harness.worker.errors import InputError

SETTING = "TRT_MATRIX_HISTORY_STORE"
CLONE = ".durable"  # below the history store: the working copy of a git branch (hidden: not a run directory)
IDENTITY = {"GIT_AUTHOR_NAME": "trt-matrix nightly", "GIT_AUTHOR_EMAIL": "trt-matrix-nightly@users.noreply.github.com",
            "GIT_COMMITTER_NAME": "trt-matrix nightly",
            "GIT_COMMITTER_EMAIL": "trt-matrix-nightly@users.noreply.github.com"}


class DurableError(InputError):
    """The durable copy cannot be read or written; the message names the setting, the place and git's words."""


def _copy_run(source: Path, destination: Path) -> None:
    staging = destination.with_name(f".copying-{destination.name}")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(source, staging, ignore=shutil.ignore_patterns(*UNSEALED, ".*"))
    shutil.rmtree(destination, ignore_errors=True)
    staging.rename(destination)


def _run_names(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")
                  and (p / MANIFEST).is_file()) if root.is_dir() else []


class DirectoryCopy:
    """A durable copy in a directory (a mounted bucket, a network share)."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def __str__(self) -> str:
        return f"dir:{self.path}"

    def restore(self, store_root: Path) -> list[str]:
        """Copy every run the store lacks from the durable copy into it; the names copied."""
        store_root.mkdir(parents=True, exist_ok=True)
        if not self.path.is_dir():
            raise DurableError(f"{SETTING}={self}: {self.path} is not a directory (mount it, or create it empty)")
        restored = [name for name in _run_names(self.path) if not (store_root / name).exists()]
        for name in restored:
            _copy_run(self.path / name, store_root / name)
        return restored

    def save(self, store_root: Path, names: Iterable[str]) -> list[str]:
        saved = []
        for name in names:
            _copy_run(store_root / name, self.path / name)
            saved.append(name)
        return saved

    def names(self) -> list[str]:
        return _run_names(self.path)


class GitBranchCopy:
    """A durable copy on a branch of a git repository, worked on in ``<store>/.durable``."""

    def __init__(self, url: str, branch: str):
        self.url, self.branch = url, branch
        self.clone: Path | None = None

    def __str__(self) -> str:
        return f"git:{self.url}#{self.branch}"

    def _git(self, *args: str, cwd: Path | None = None, check: bool = True) -> subprocess.CompletedProcess:
        process = subprocess.run(["git", *args], cwd=cwd or self.clone, capture_output=True, text=True,
                                 env={**os.environ, **IDENTITY, "GIT_TERMINAL_PROMPT": "0"})
        if check and process.returncode != 0:
            raise DurableError(f"{SETTING}={self}: git {' '.join(args)} failed: "
                               f"{(process.stderr or process.stdout).strip()[-600:]}")
        return process

    def _remote_has_branch(self) -> bool:
        found = self._git("ls-remote", "--heads", self.url, self.branch, cwd=Path.cwd())
        return bool(found.stdout.strip())

    def restore(self, store_root: Path) -> list[str]:
        """Fetch the branch (none yet: an empty history) and copy every run the store lacks into it."""
        self.clone = Path(store_root) / CLONE
        if not (self.clone / ".git").is_dir():
            shutil.rmtree(self.clone, ignore_errors=True)
            self.clone.mkdir(parents=True)
            self._git("init", "--quiet")
            self._git("remote", "add", "origin", self.url)
        if self._remote_has_branch():
            self._git("fetch", "--quiet", "origin", self.branch)
            self._git("checkout", "--quiet", "-B", self.branch, "FETCH_HEAD")
            self._git("reset", "--quiet", "--hard", "FETCH_HEAD")
        else:  # a first night: the branch is made by the first save
            self._git("checkout", "--quiet", "--orphan", self.branch, check=False)
        restored = [name for name in _run_names(self.clone) if not (store_root / name).exists()]
        for name in restored:
            _copy_run(self.clone / name, store_root / name)
        return restored

    def save(self, store_root: Path, names: Iterable[str]) -> list[str]:
        if self.clone is None:
            self.restore(store_root)
        names = list(names)
        for name in names:
            _copy_run(store_root / name, self.clone / name)
        self._git("add", "--all")
        if not self._git("status", "--porcelain").stdout.strip():
            return []
        self._git("commit", "--quiet", "-m", f"history: {len(names)} run(s): {', '.join(names)}"[:2000])
        for attempt in range(3):
            pushed = self._git("push", "--quiet", "origin", f"HEAD:refs/heads/{self.branch}", check=False)
            if pushed.returncode == 0:
                return names
            # another writer pushed first: put this commit on top of theirs (runs are directories of their own)
            self._git("fetch", "--quiet", "origin", self.branch)
            self._git("rebase", "--quiet", "FETCH_HEAD")
        raise DurableError(f"{SETTING}={self}: push failed three times: {pushed.stderr.strip()[-600:]}")

    def names(self) -> list[str]:
        return _run_names(self.clone) if self.clone else []


def durable_copy(spec: str) -> DirectoryCopy | GitBranchCopy:
    """The durable copy ``spec`` names (see the module docstring); DurableError naming the form otherwise."""
    if spec.startswith("git:"):
        url, _, branch = spec[4:].rpartition("#")
        if not url or not branch:
            raise DurableError(f"{SETTING}={spec}: expected git:<repository>#<branch>, e.g. "
                               "git:https://github.com/OWNER/REPO.git#trt-matrix-history")
        return GitBranchCopy(url, branch)
    if spec.startswith("dir:"):
        return DirectoryCopy(Path(spec[4:]).expanduser())
    if os.path.isabs(os.path.expanduser(spec)):
        return DirectoryCopy(Path(spec).expanduser())
    raise DurableError(f"{SETTING}={spec}: expected git:<repository>#<branch>, dir:<path> or an absolute path")
