"""The worked examples of README and the docs pages (scan, --fix, --to-explicit, diagnose) print what they show:
scripts/readme_examples.py runs them as written, in a scratch directory laid out as the repository root, and a stale
text block fails here. `python scripts/readme_examples.py --write` puts what they print now into the pages."""
import importlib.util
import sys

import pytest

from tests.conftest import REPO

SCRIPT = REPO / "scripts" / "readme_examples.py"
# The exit status README's text says each example ends with, in README order.
EXIT_STATUSES = {
    "scan resnet18-qat.onnx": 0,  # README's first answer: fallback, not blocked
    "scan out/backbone.onnx --results": 0,  # "The exit status is 0: ... not known to hold for this model"
    "scan out/backbone.onnx --targets": 0,  # --fix: "the fixed model is no longer expected to fail there: exit 0"
    "scan out/resnet18.onnx --to-explicit": 0,  # "The exit status is 0." (weights float with a Q/DQ pair)
    "diagnose reference/trt-logs/F04.log": 1,  # "The exit status is 1."
    "diagnose reference/trt-logs/F03.log": 1,
}


def readme_examples():
    """scripts/readme_examples.py as a module (registered first: its dataclass looks its module up)."""
    if "readme_examples" not in sys.modules:
        spec = importlib.util.spec_from_file_location("readme_examples", SCRIPT)
        sys.modules["readme_examples"] = module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return sys.modules["readme_examples"]


@pytest.fixture(scope="module")
def examples(tmp_path_factory):
    script = readme_examples()
    return script.run_pages(tmp_path_factory.mktemp("repository-root"))


def test_every_worked_example_is_run(examples):
    assert [next(key for key in EXIT_STATUSES if key in example.commands[-1]) for example in examples] == list(
        EXIT_STATUSES)


@pytest.mark.parametrize("key", list(EXIT_STATUSES))
def test_a_worked_example_prints_what_readme_shows_and_exits_as_it_says(examples, key):
    (example,) = [example for example in examples if key in example.commands[-1]]
    assert not example.stale, (f"{example.page.name} is stale: `{example.commands[-1]}` now prints\n{example.printed}\n"
                               "run `python scripts/readme_examples.py --write` and check the prose around it")
    assert example.status == EXIT_STATUSES[key], example.printed


def test_the_check_ignores_seconds_and_the_order_of_cells_that_end_together_and_nothing_else():
    script = readme_examples()
    shown = "3 reproducer(s)\n[1/2    0.4s] ort-cpu a: pass\n[2/2    0.5s] ort-cpu b: pass\nmodel: m\n"
    assert script.comparable(shown) == script.comparable(
        "3 reproducer(s)\n[1/2    1.1s] ort-cpu b: pass\n[2/2    1.3s] ort-cpu a: pass\nmodel: m\n")
    assert script.comparable(shown) != script.comparable(
        "3 reproducer(s)\n[1/2    0.4s] ort-cpu a: pass\n[2/2    0.5s] ort-cpu b: fail\nmodel: m\n")
    assert script.comparable(shown) != script.comparable(shown.replace("model: m", "model: n"))


def test_readmes_verdict_table_is_the_judgement_packages():
    script = readme_examples()
    text = script.README.read_text(encoding="utf-8")
    assert script.VERDICTS.search(text), "README.md has no verdict table between its markers"
    assert script.with_verdict_table(text) == text, "run `python scripts/readme_examples.py --write`"
