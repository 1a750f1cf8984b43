"""What several commands share: exit codes, argument checks, default paths, and the options that choose and pace cells."""
from __future__ import annotations

import argparse
import datetime
import os
import textwrap
from pathlib import Path
from typing import Callable, Iterable, TypeVar

from harness.exit_codes import (  # noqa: F401  (the commands' names for them)
    EXIT_BROKEN, EXIT_INTERRUPTED, EXIT_MEANINGS, EXIT_OK, EXIT_PARTIAL, EXIT_REGRESSION, EXIT_USAGE,
)

EXIT_CODES_HELP = "Exit status, the same for every command:\n" + "\n".join(
    textwrap.fill(text, 116, initial_indent=f"  {code}  ", subsequent_indent="     ")
    for code, text in EXIT_MEANINGS.items())
T = TypeVar("T")
DEFAULT_CASES_DIR = Path("out/cases")
DEFAULT_RESULTS = Path("out/results.jsonl")


class CommandError(Exception):
    """A command cannot go on: one line for the user, and the exit status it ends with."""

    def __init__(self, message: str, status: int = EXIT_USAGE):
        super().__init__(message)
        self.status = status


def input_file(path: Path, what: str) -> Path:
    """``path`` when it is an existing file, else a CommandError naming it and what the command expected there."""
    if path.is_dir():
        raise CommandError(f"{path}: is a directory; expected {what}")
    if not path.is_file():
        raise CommandError(f"{path}: no such file; expected {what}")
    return path


def read_input(path: Path, what: str, reader: Callable[[Path], T], option: str) -> T:
    """``reader(path)`` of the file an ``option`` names (:func:`input_file`'s checks first, ``what`` the command
    expects there); its ValueError as a CommandError naming the option."""
    input_file(path, what)
    try:
        return reader(path)
    except ValueError as err:
        raise CommandError(f"{option}: {err}") from None


def output_directory(path: Path, option: str) -> Path:
    """``path`` when it is a directory or can become one, else a CommandError naming it."""
    for parent in (path, *path.parents):
        if parent.exists() and not parent.is_dir():
            raise CommandError(f"{option} {path}: {parent} is a file, not a directory; {option} names the directory "
                               "to write into")
    return path


def output_file(path: Path, option: str) -> Path:
    """``path`` when it is a file or can become one, else a CommandError naming it."""
    if path.is_dir():
        raise CommandError(f"{option} {path}: is a directory; {option} names a file")
    output_directory(path.parent, f"{option} {path}: its directory")
    return path


def iso_date(text: str) -> str:
    """argparse type: a date of the form YYYY-MM-DD."""
    try:
        return datetime.date.fromisoformat(text).isoformat()
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date of the form YYYY-MM-DD") from None


def positive_int(text: str) -> int:
    """argparse type: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not allowed: give 1 or more")
    return value


def positive_seconds(text: str) -> float:
    """argparse type: a number of seconds above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text} is not allowed: give a number of seconds above 0")
    return value


def input_shape(text: str) -> tuple[str, list[int]]:
    """argparse type of reduce's --input-shape: ``NAME:D1xD2...`` (e.g. ``input:8x3x224x224``), each dimension a
    whole number of at least 1."""
    name, colon, dims = text.rpartition(":")
    try:
        shape = [int(d) for d in dims.split("x")]
    except ValueError:
        shape = []
    if not colon or not name or not shape or min(shape) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME:D1xD2... (e.g. input:1x3x224x224: the input's name, "
                                         "a colon, and every dimension of its shape, each 1 or more, joined by x)")
    return name, shape


def closest(pattern: str, names: Iterable[str], count: int = 5) -> list[str]:
    """The ``count`` names most like ``pattern``, for a "matches nothing" message."""
    import difflib  # only for that message

    return difflib.get_close_matches(pattern, sorted(set(names)), n=count, cutoff=0.0)


def no_match_error(pattern: str, names: Iterable[str], where: str) -> CommandError:
    """The error of a ``-k`` that selects nothing in ``where``: the closest names it may have meant."""
    names = list(names)
    return CommandError(f"-k {pattern!r} matches none of the {len(names)} name(s) in {where}; closest: "
                        f"{', '.join(closest(pattern, names)) or '(none: it is empty)'}")


def add_cell_options(p: argparse.ArgumentParser) -> None:
    """-k, --jobs and --timeout: which cells run, how many at once, and for how long each."""
    p.add_argument("-k", metavar="PATTERN", help="only cells whose 'case/variant' matches PATTERN (glob or substring); "
                   "a PATTERN that matches no cell is an error that lists the closest names")
    p.add_argument("--jobs", type=positive_int, default=os.cpu_count() or 1,
                   help="cells run at once, 1 or more (default: %(default)s)")
    p.add_argument("--timeout", type=positive_seconds, default=300.0,
                   help="seconds per cell before it is killed, above 0 (default: %(default)s)")


def add_observations_option(p: argparse.ArgumentParser) -> None:
    """--results: the observed records a scan's (or a diagnosis's) verdicts rest on."""
    p.add_argument("--results", nargs="+", type=Path, metavar="PATH", action="extend",
                   help="observed records: results files (.jsonl), run directories, merged directories or a history "
                   "store")


# --- Target selection: every argument that names targets or host kinds of matrix.yaml, checked once by main --------

TARGET_OPTIONS = "target_options"  # on the parsed arguments: (dest, label, kind) of each such argument of the command
ANY_TARGET, DOCKER_TARGET, HOST_KIND = "target", "docker target", "host kind"


def _label(action: argparse.Action) -> str:
    return action.option_strings[0] if action.option_strings else action.metavar or action.dest


def _register(p: argparse.ArgumentParser, action: argparse.Action, kind: str) -> None:
    p.set_defaults(**{TARGET_OPTIONS: (*(p.get_default(TARGET_OPTIONS) or ()), (action.dest, _label(action), kind))})


def add_target_argument(p: argparse.ArgumentParser, *flags: str, docker: bool = False, **kwargs) -> None:
    """An argument of target ids of the matrix (one, a list, or repeated: as ``kwargs`` say). main checks its ids
    against the matrix the command reads before the command runs: an unknown id (or, with ``docker``, one that is not
    a docker target) stops it with exit 2, naming the id, the matrix file and the nearest valid ids."""
    _register(p, p.add_argument(*flags, **kwargs), DOCKER_TARGET if docker else ANY_TARGET)


def add_host_kind_argument(p: argparse.ArgumentParser, **kwargs) -> None:
    """--host-kind KIND: a host kind of the matrix's ``hosts:`` section, checked as target ids are."""
    _register(p, p.add_argument("--host-kind", metavar="KIND", **kwargs), HOST_KIND)


def check_target_arguments(args: argparse.Namespace) -> None:
    """Every target id and host kind given to the command is one of ``args.matrix``; else a CommandError (exit 2)
    naming the first bad one, the matrix file and the nearest valid names. Reads the matrix only when one was given."""
    chosen = [(label, kind, value) for dest, label, kind in getattr(args, TARGET_OPTIONS, ())
              if (value := getattr(args, dest, None))]
    if not chosen:
        return
    from harness.matrix import load_hosts, load_matrix

    targets = load_matrix(args.matrix)
    valid = {ANY_TARGET: list(targets), DOCKER_TARGET: [t.id for t in targets.values() if t.runner == "docker"]}
    if any(kind == HOST_KIND for _, kind, _ in chosen):
        valid[HOST_KIND] = list(load_hosts(args.matrix))
    for label, kind, value in chosen:
        names = [value] if isinstance(value, str) else value
        bad = [name for name in names if name not in valid[kind]]
        if bad:
            where = f"{args.matrix} (hosts:)" if kind == HOST_KIND else args.matrix
            more = f" (and {', '.join(map(repr, bad[1:]))})" if len(bad) > 1 else ""
            nearest = ", ".join(closest(bad[0], valid[kind])) or "(none: it has none)"
            raise CommandError(f"{label} {bad[0]!r}{more}: not a {kind} of {where}; nearest: {nearest}")
