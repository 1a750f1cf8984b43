"""Exit codes: one table in README.md and in `--help`, and one meaning per code for every command."""
import re

from harness.commands.options import EXIT_BROKEN, EXIT_MEANINGS, EXIT_OK, EXIT_REGRESSION, EXIT_USAGE
from tests.conftest import REPO
from tests.harness.commands.test_main import harness


def test_readme_has_one_exit_code_table_saying_what_the_code_says():
    readme = (REPO / "README.md").read_text()
    assert readme.count("\n## Exit codes\n") == 1
    section = readme.split("\n## Exit codes\n", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| (\d) \| (.+) \|$", section, re.MULTILINE))
    assert {int(code): text for code, text in rows.items()} == EXIT_MEANINGS
    assert (EXIT_OK, EXIT_REGRESSION, EXIT_USAGE, EXIT_BROKEN) == (0, 1, 2, 3)


def test_help_ends_with_the_same_exit_codes():
    out = " ".join(harness("--help").stdout.split())
    for code, text in EXIT_MEANINGS.items():
        assert f"{code} {text}" in out

