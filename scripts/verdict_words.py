"""Find every verdict, outcome and precision word written outside harness/judgement/: the guard test's eyes
(tests/harness/judgement/test_guard.py) and the issue's count.

    python scripts/verdict_words.py            # each finding: file:line: the word, where, the constant to use
    python scripts/verdict_words.py --count    # per file and in all, the verdict and outcome words of Python literals

Python (harness/ and reports/): a string literal that is a verdict or outcome word (an outcome, a verdict of the scan
or the planning view, an answer, a basis), or a precision word; a word that is also the word of another vocabulary
is allowed where that other vocabulary is meant: a variant's role compared with ``.role``, and the files and words
of :data:`HOMONYMS`, each with its reason. Where an external tool's spelling of a precision is parsed
(:data:`PRECISION_SPELLINGS`), a single precision word may be written, but never an order or a group of them (a
sequence or set of two or more, or a table of them to numbers). Templates (reports/templates/*.j2) and scripts
(*.js): a quoted word, and a CSS class named after a word (``.o-pass``, ``.v-claimed``, ``tr.fallback``).
"""
from __future__ import annotations

import argparse
import ast
import collections
import dataclasses
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import harness.judgement as j  # noqa: E402  (after the repository is importable)

PACKAGE = "harness/judgement/"
PYTHON_ROOTS = ("harness", "reports")
TEMPLATES = "reports/templates"


def constant_names() -> dict[str, str]:
    """Each guarded word -> the name of its constant in harness.judgement (the first name that spells it)."""
    names: dict[str, str] = {}
    for name, value in vars(j).items():
        if name.isupper() and isinstance(value, str):
            names.setdefault(value, name)
    return names


VERDICT_WORDS = frozenset((*j.OUTCOMES, *j.SCAN_VERDICTS, *j.PLANNING_VERDICTS, *j.ANSWERS,
                           *(b.name for b in j.BASES)))
PRECISION_WORDS = frozenset(j.PRECISION_ORDER)
WORDS = VERDICT_WORDS | PRECISION_WORDS
CONSTANTS = constant_names()
# (file, word) -> why the word there is another vocabulary's, not a verdict, outcome or precision.
HOMONYMS = {
    ("harness/tensorrt/classify.py", j.CRASH): "a failure category of TensorRT's log",
    ("harness/scan/fix_places.py", j.WORKAROUND): "scan.json's field naming the workaround variant of a fix",
    ("harness/scan/fixing.py", j.WORKAROUND): "scan.json's field naming the workaround variant of a fix",
    ("harness/orchestration/fingerprint.py", j.OBSERVED): "the local environment as observed, in a fingerprint",
    ("harness/worker/backends/tensorrt/backend.py", j.OBSERVED): "a parser flag as observed, in a record's details",
    **{("harness/worker/backends/tensorrt/network.py", p): "a knob's name (cases.model.Knobs: fp16, fp8, fp4)"
       for p in (j.FP16, j.FP8, j.FP4)},
}
# Files that parse or drive an external tool's precisions (its spellings, its flags): a single precision word is
# allowed there, an order or a group of them never.
PRECISION_SPELLINGS = {
    "harness/tensorrt/layers.py": "TensorRT's layer information and tactic names",
    "harness/worker/backends/tensorrt/network.py": "TensorRT's network API (data types, layer precisions)",
    "harness/worker/backends/tensorrt/build_config.py": "TensorRT's builder flags per precision",
    "harness/worker/backends/ort_kernels.py": "ONNX Runtime's kernel names and types",
    "harness/diagnosis/kinds/command_line.py": "trtexec's precision flags",
    "harness/diagnosis/kinds/engine_build_metadata.py": "trtexec's precision words (its Precision line, TREx's options)",
}


@dataclasses.dataclass(frozen=True)
class Found:
    path: str
    line: int
    word: str
    what: str

    def __str__(self) -> str:
        constant = CONSTANTS.get(self.word)
        use = f"harness.judgement.{constant}" if constant else "a table of harness.judgement"
        return f"{self.path}:{self.line}: {self.word!r} ({self.what}): use {use}"


def _role_words(tree: ast.AST) -> set[int]:
    """ids of the string constants compared with a variant's ``.role`` (``v.role == "workaround"``,
    ``v.role in ("failing", "workaround")``)."""
    allowed = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(isinstance(side, ast.Attribute) and side.attr == "role" for side in sides):
                for side in sides:
                    allowed |= {id(c) for c in ast.walk(side) if isinstance(c, ast.Constant)}
    return allowed


def _orders(path: str, tree: ast.AST) -> list[tuple[int, list[str]]]:
    """(line, words) of each sequence or set of two or more precision words, and each table of them to numbers
    (words that are :data:`HOMONYMS` there left out)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            words = [e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in PRECISION_WORDS
                     and (path, e.value) not in HOMONYMS]
        elif isinstance(node, ast.Dict):
            words = [k.value for k, v in zip(node.keys, node.values) if isinstance(k, ast.Constant)
                     and k.value in PRECISION_WORDS and (path, k.value) not in HOMONYMS
                     and isinstance(v, ast.Constant) and isinstance(v.value, int)]
        else:
            continue
        if len(words) >= 2:
            found.append((node.lineno, words))
    return found


def python_findings(path: str, source: str) -> list[Found]:
    tree = ast.parse(source)
    roles = _role_words(tree)
    found = []
    spellings = path in PRECISION_SPELLINGS
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in WORDS):
            continue
        word = node.value
        if id(node) in roles or (path, word) in HOMONYMS or (spellings and word in PRECISION_WORDS):
            continue
        found.append(Found(path, node.lineno, word, "a string literal"))
    if spellings:
        found += [Found(path, line, word, f"an order or a group of precisions {words}")
                  for line, words in _orders(path, tree) for word in words[:1]]
    return found


_WORD_ALTERNATION = "|".join(sorted(map(re.escape, WORDS), key=len, reverse=True))
_QUOTED = re.compile(r"""(["'])(%s)\1""" % _WORD_ALTERNATION)
_CSS_CLASS = re.compile(r"""\.(?!role-)(?:[a-z]+-)??(%s)(?![\w-])""" % _WORD_ALTERNATION)  # role-: a variant's role
_STYLE_START = re.compile(r"<style|{%-?\s*block style\b")
_STYLE_END = re.compile(r"</style>|{%-?\s*endblock\b")


def text_findings(path: str, text: str) -> list[Found]:
    """Quoted words in a template or a script, and CSS classes named after a word in a template's style."""
    found, in_style = [], False
    for number, line in enumerate(text.splitlines(), 1):
        in_style = in_style or bool(_STYLE_START.search(line))
        found += [Found(path, number, m.group(2), "a quoted word") for m in _QUOTED.finditer(line)]
        if in_style:
            found += [Found(path, number, m.group(1), "a CSS class named after the word")
                      for m in _CSS_CLASS.finditer(line)]
        in_style = in_style and not _STYLE_END.search(line)
    return found


def findings(repo: Path = REPO) -> list[Found]:
    found = []
    for root in PYTHON_ROOTS:
        for path in sorted((repo / root).rglob("*.py")):
            name = path.relative_to(repo).as_posix()
            if not name.startswith(PACKAGE):
                found += python_findings(name, path.read_text(encoding="utf-8"))
    for path in sorted((repo / TEMPLATES).iterdir()):
        if path.suffix in (".j2", ".js"):
            found += text_findings(path.relative_to(repo).as_posix(), path.read_text(encoding="utf-8"))
    return found


def literal_count(repo: Path = REPO) -> collections.Counter:
    """Per file, the string literals that are verdict or outcome words in harness/ and reports/ Python files outside
    the judgement package (the issue's measure: whatever the context, homonyms included)."""
    counts: collections.Counter = collections.Counter()
    for root in PYTHON_ROOTS:
        for path in sorted((repo / root).rglob("*.py")):
            name = path.relative_to(repo).as_posix()
            if name.startswith(PACKAGE) or name == "harness/store/judgement.py":
                continue
            counts[name] += sum(isinstance(node, ast.Constant) and node.value in VERDICT_WORDS
                                for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))))
    return +counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", action="store_true", help="count the verdict and outcome literals per file")
    args = parser.parse_args()
    if args.count:
        counts = literal_count()
        for name, count in counts.most_common():
            print(f"{count:4d} {name}")
        print(f"{sum(counts.values()):4d} in all")
        return 0
    found = findings()
    print("\n".join(map(str, found)) or "none")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
