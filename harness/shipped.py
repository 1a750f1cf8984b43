"""Where the files the code reads at run time are: the repository's own in a checkout (an editable install included),
the copies built into the package in a wheel (``pip install .``, pipx).

The repository keeps one copy of each, where its layout puts it: ``matrix.yaml`` at the root, the recorded TensorRT
binding APIs in ``reference/trt-api``, the image recipes in ``containers/``. ``setup.py`` copies exactly the paths of
:data:`SHIPPED` into ``harness/shipped_data/`` of the built package, so an installed tool reads the files of the
clone it was built from, and nothing is kept twice in the repository.
"""
from __future__ import annotations

from pathlib import Path

# Repository-relative paths the code reads at run time; setup.py ships these and only these.
SHIPPED = ("matrix.yaml", "reference/trt-api", "containers")
PACKAGE = Path(__file__).resolve().parent
BUILT_IN = PACKAGE / "shipped_data"  # the copies in a built package; absent in a checkout


def checkout_root() -> Path | None:
    """The repository the harness runs from, or None when it runs from an installed package."""
    root = PACKAGE.parent
    return None if BUILT_IN.is_dir() or not (root / "pyproject.toml").is_file() else root


def shipped_path(relative: str) -> Path:
    """The file or directory ``relative`` (one of SHIPPED, or below one) as this installation has it: the copy built
    into the package, else the checkout's own."""
    if not any(relative == top or relative.startswith(f"{top}/") for top in SHIPPED):
        raise ValueError(f"{relative!r} is not below a shipped path {SHIPPED}: add it there (setup.py ships them)")
    if BUILT_IN.is_dir():
        return BUILT_IN / relative
    return PACKAGE.parent / relative
