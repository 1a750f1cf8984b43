"""The guard: no verdict, outcome or precision word is written outside harness/judgement/, in Python (harness/,
reports/), a template or a script; what a word means, its order and its groups are the package's. The eyes are
scripts/verdict_words.py (also the count the issue asked for: ``python scripts/verdict_words.py --count``)."""
from __future__ import annotations

import importlib.util
import sys

import pytest

from harness import judgement as j
from tests.conftest import REPO


def _guard():
    spec = importlib.util.spec_from_file_location("verdict_words", REPO / "scripts" / "verdict_words.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up
    spec.loader.exec_module(module)
    return module


guard = _guard()


def test_no_word_is_written_outside_the_package():
    found = guard.findings()
    assert not found, ("verdict, outcome and precision words are harness.judgement's: import the constant (a "
                       "template reads J.<CONSTANT>, report.js J.<CONSTANT> from the page), or, where the word is "
                       "another vocabulary's, add it to HOMONYMS in scripts/verdict_words.py with the reason:\n"
                       + "\n".join(map(str, found)))


def test_at_most_five_literals_are_verdict_or_outcome_words_and_each_is_a_homonym():
    counts = guard.literal_count()
    assert sum(counts.values()) <= 5, counts
    assert set(counts) <= {path for path, _ in guard.HOMONYMS}, counts


@pytest.mark.parametrize("source, lines", [
    ('def f(r):\n    return r["outcome"] == "fallback"\n', [2]),
    ('VERDICTS = ("blocked",\n            "likely")\n', [1, 2]),
    ('COLOURS = {"unverified": "infra-error"}\n', [1, 1]),
    ('ASKED = "int8"\n', [1]),
    ('basis = "claimed"\nlabel = "not run"\n', [1]),  # a label is text, not a word
    ('if variant.role == "workaround" or v.role in ("failing", "workaround"):\n    pass\n', []),  # a role
])
def test_the_guard_sees_a_deliberately_added_literal_in_python(source, lines):
    assert [f.line for f in guard.python_findings("harness/scan/new.py", source)] == lines


def test_a_file_that_parses_a_tool_s_precisions_may_spell_one_never_an_order():
    spelling = "harness/tensorrt/layers.py"
    assert guard.python_findings(spelling, 'NAMES = {"half": "fp16"}\n') == []
    found = guard.python_findings(spelling, 'RANK = {"fp4": 0, "int8": 1}\nORDER = ("int8", "fp16")\n')
    assert [(f.line, f.word) for f in found] == [(1, "fp4"), (2, "int8")]
    assert "use harness.judgement.FP4" in str(found[0]) and found[0].path == spelling


def test_the_guard_sees_words_in_templates_and_scripts_and_names_the_constant():
    template = ('<style>\n.o-pass { color: red; }\n.plan td.v-claimed { }\n.role-workaround { }\n</style>\n'
                '{% if r.outcome == "fallback" %}{{ rec.claimed }}{% endif %}\n')
    found = guard.text_findings("reports/templates/new.html.j2", template)
    assert [(f.line, f.word) for f in found] == [(2, "pass"), (3, "claimed"), (6, "fallback")]
    assert str(found[2]) == ("reports/templates/new.html.j2:6: 'fallback' (a quoted word): use "
                             "harness.judgement.FALLBACK")
    script = 'var kinds = {cl: "claimed"};\nif (r.outcome === \'pass\') {}\nvar J = JSON.parse(text);\n'
    assert [(f.line, f.word) for f in guard.text_findings("reports/templates/new.js", script)] == [
        (1, "claimed"), (2, "pass")]


def test_the_guard_walks_the_real_tree(tmp_path):
    """A literal added to a real module of a copy of the tree is found, with its file, line and constant."""
    for name in ("harness", "reports/templates"):
        (tmp_path / name).mkdir(parents=True)
    (tmp_path / "harness" / "gate.py").write_text('FAILING = ("blocked", "fallback")\n')
    (tmp_path / "harness" / "judgement").mkdir()
    (tmp_path / "harness" / "judgement" / "words.py").write_text('BLOCKED = "blocked"\n')  # the package: allowed
    (tmp_path / "reports" / "templates" / "page.js").write_text('x = "unavailable";\n')
    assert sorted(map(str, guard.findings(tmp_path))) == [
        "harness/gate.py:1: 'blocked' (a string literal): use harness.judgement.BLOCKED",
        "harness/gate.py:1: 'fallback' (a string literal): use harness.judgement.FALLBACK",
        "reports/templates/page.js:1: 'unavailable' (a quoted word): use harness.judgement.UNAVAILABLE"]


def test_every_homonym_and_spelling_exemption_is_still_needed():
    for (path, word), why in guard.HOMONYMS.items():
        source = (REPO / path).read_text(encoding="utf-8")
        assert f'"{word}"' in source, f"{path} no longer writes {word!r} ({why}): remove it from HOMONYMS"
    for path in guard.PRECISION_SPELLINGS:
        assert (REPO / path).is_file(), path


def test_the_guarded_words_are_every_word_of_the_package():
    assert set(j.OUTCOMES) | set(j.SCAN_VERDICTS) | set(j.PLANNING_VERDICTS) <= guard.VERDICT_WORDS
    assert {j.OBSERVED, j.CLAIMED} <= guard.VERDICT_WORDS and guard.PRECISION_WORDS == set(j.PRECISION_ORDER)
