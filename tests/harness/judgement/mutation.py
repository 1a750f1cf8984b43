"""The mutation run of the engine (``tox -e mutation-judgement``): plausible one-token bugs applied to
harness/judgement/engine.py one at a time, in a scratch copy of the repository, each run against the judgement tests;
a mutant no test fails on is a bug the tests would let through.

The mutants, mutmut's operators written out: a comparison turned around (``==``/``!=``, ``<``/``<=``/``>``/``>=``,
``in``/``not in``, ``is``/``is not``), ``and``/``or`` swapped, a ``not`` dropped, ``min``/``max`` swapped, a number
moved by one, a string constant changed, ``True``/``False`` swapped, an ``x if c else y`` with its branches
swapped, a ``return`` of None. Equivalent mutants (no test can tell them apart) are listed in :data:`EQUIVALENT`
with the reason, and left out of the score.

    python tests/harness/judgement/mutation.py            # every mutant; the score and the survivors
    python tests/harness/judgement/mutation.py --list     # the mutants, not run
"""
from __future__ import annotations

import argparse
import ast
import copy
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
TARGET = "harness/judgement/engine.py"
TESTS = ["tests/harness/judgement/test_engine.py", "tests/harness/judgement/test_meaning.py",
         "tests/harness/store/test_claims.py", "tests/harness/scan/test_prediction.py"]
COPIED = ("harness", "cases", "reports", "tests", "scripts", "matrix.yaml", "pyproject.toml", "README.md", "docs")
SWAPS = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
         ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}
# (line of the original, the mutated line) -> why no test can tell the mutant apart.
EQUIVALENT = {
    ('SAME_BAND = "same-band"', "string changed"): "a sentinel compared by name only (compare.classify): any other "
                                                  "string behaves the same",
}


def mutants(source: str) -> list[tuple[int, str, str]]:
    """(line, description, mutated source) of every mutant of ``source`` (docstrings left alone)."""
    tree = ast.parse(source)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and node.body
                  and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    found = []

    def emit(node, change, what):
        mutated = copy.deepcopy(tree)
        target = next(n for n in ast.walk(mutated) if _same(n, node))
        change(target)
        found.append((node.lineno, what, ast.unparse(mutated)))

    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for k, op in enumerate(node.ops):
                if type(op) in SWAPS:
                    emit(node, lambda n, k=k: n.ops.__setitem__(k, SWAPS[type(n.ops[k])]()),
                         f"{type(op).__name__} -> {SWAPS[type(op)].__name__}")
        elif isinstance(node, ast.BoolOp):
            emit(node, lambda n: setattr(n, "op", ast.Or() if isinstance(n.op, ast.And) else ast.And()),
                 "and <-> or")
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            emit(node, lambda n: setattr(n, "op", ast.UAdd()), "not dropped")
        elif isinstance(node, ast.Name) and node.id in ("min", "max"):
            emit(node, lambda n: setattr(n, "id", "max" if n.id == "min" else "min"), "min <-> max")
        elif isinstance(node, ast.Constant) and id(node) not in docstrings:
            value = node.value
            if isinstance(value, bool):
                emit(node, lambda n: setattr(n, "value", not n.value), "True <-> False")
            elif isinstance(value, int):
                emit(node, lambda n: setattr(n, "value", n.value + 1), "number + 1")
            elif isinstance(value, str) and value:
                emit(node, lambda n: setattr(n, "value", "XX" + n.value + "XX"), "string changed")
        elif isinstance(node, ast.IfExp):
            emit(node, lambda n: (setattr(n, "body", n.orelse), setattr(n, "orelse", n.body)), "branches swapped")
        elif isinstance(node, ast.Return) and node.value is not None:
            emit(node, lambda n: setattr(n, "value", ast.Constant(None)), "returns None")
    return found


def _same(a: ast.AST, b: ast.AST) -> bool:
    return (type(a) is type(b) and getattr(a, "lineno", None) == getattr(b, "lineno", None)
            and getattr(a, "col_offset", None) == getattr(b, "col_offset", None)
            and getattr(a, "end_col_offset", None) == getattr(b, "end_col_offset", None))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--list", action="store_true", help="list the mutants, run nothing")
    args = parser.parse_args()
    source = (REPO / TARGET).read_text(encoding="utf-8")
    original = source.splitlines()
    found = mutants(source)
    if args.list:
        for line, what, _ in found:
            print(f"{TARGET}:{line}: {what}: {original[line - 1].strip()}")
        print(f"{len(found)} mutants")
        return 0
    scratch = Path(tempfile.mkdtemp(prefix="judgement-mutation-"))
    for name in COPIED:
        (shutil.copytree if (REPO / name).is_dir() else shutil.copy)(REPO / name, scratch / name)
    command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", *TESTS]
    env = {"PYTHONPATH": str(scratch), "PATH": "/usr/bin:/bin", "HOME": str(Path.home()), "PYTHONDONTWRITEBYTECODE": "1"}
    baseline = subprocess.run(command, cwd=scratch, env=env, capture_output=True, text=True)
    if baseline.returncode != 0:
        print(baseline.stdout[-3000:], baseline.stderr[-3000:])
        shutil.rmtree(scratch, ignore_errors=True)
        return 2
    killed, survived, equivalent = 0, [], 0
    started = time.monotonic()
    for number, (line, what, mutated) in enumerate(found, 1):
        (scratch / TARGET).write_text(mutated, encoding="utf-8")
        try:
            result = subprocess.run(command, cwd=scratch, env=env, capture_output=True, text=True, timeout=300)
            detected = result.returncode != 0
        except subprocess.TimeoutExpired:
            detected = True
        where = f"{TARGET}:{line}: {what}: {original[line - 1].strip()}"
        known = (original[line - 1].split("#")[0].strip(), what) in EQUIVALENT
        if detected:
            killed += 1
        elif known:
            equivalent += 1
        else:
            survived.append(where)
        status = "killed" if detected else "equivalent" if known else "SURVIVED"
        print(f"[{number}/{len(found)}] {status} {where}", flush=True)
    (scratch / TARGET).write_text(source, encoding="utf-8")
    scored = len(found) - equivalent
    print(f"\n{killed} of {scored} mutants killed ({100 * killed / scored:.1f} %), {equivalent} equivalent, "
          f"{time.monotonic() - started:.0f} s")
    for where in survived:
        print(f"survived: {where}")
    shutil.rmtree(scratch, ignore_errors=True)
    return 0 if killed >= 0.95 * scored else 1


if __name__ == "__main__":
    sys.exit(main())
