"""What several commands share: exit codes, default paths, and the options that choose and pace cells."""
from __future__ import annotations

import argparse
import os
from pathlib import Path

# One meaning per exit code, the same for every command (README, "Exit codes").
EXIT_OK, EXIT_REGRESSION, EXIT_USAGE, EXIT_BROKEN = 0, 1, 2, 3
DEFAULT_CASES_DIR = Path("out/cases")
DEFAULT_RESULTS = Path("out/results.jsonl")


def add_cell_options(p: argparse.ArgumentParser) -> None:
    """-k, --jobs and --timeout: which cells run, how many at once, and for how long each."""
    p.add_argument("-k", metavar="PATTERN", help="only cells whose 'case/variant' matches PATTERN (glob or substring)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="cells run at once (default: %(default)s)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per cell before it is killed (default: %(default)s)")
