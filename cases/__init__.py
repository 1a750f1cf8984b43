"""The reproducer case library: importing this package imports every module in it, and each case registers itself.

There is no hand-kept list: a module dropped into this folder is found (modules whose name starts with ``_`` and the
library's own machinery, ``model`` and ``generate``, are not case modules). See ``cases/README.md``.
"""
import importlib
import pkgutil

from cases.model import Case, Match, all_cases, get_case, iter_variants, library_signatures  # noqa: F401

NOT_CASE_MODULES = frozenset({"model", "generate", "matching", "rewriting"})


def case_module_names() -> list[str]:
    """The modules of this package that hold cases, in name order."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__)
                  if not m.name.startswith("_") and m.name not in NOT_CASE_MODULES and not m.ispkg)


for _name in case_module_names():
    importlib.import_module(f"{__name__}.{_name}")
