"""README's worked examples of `diagnose` are real: each command block, run as written, prints its text block."""
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO, SHARED_REFERENCE
from tests.test_readme import FENCE, section

SECTION = "Diagnose a failed build: what your log, engine JSON, cache or command says"


def examples() -> list[tuple[str, str]]:
    blocks = FENCE.findall(section(SECTION))
    return [(body, blocks[i + 1][1]) for i, (lang, body) in enumerate(blocks)
            if lang == "sh" and i + 1 < len(blocks) and blocks[i + 1][0] == "text"]


def test_the_section_has_its_two_worked_examples():
    assert len(examples()) == 2


@pytest.mark.parametrize("index", [0, 1])
def test_a_worked_example_prints_what_the_readme_shows(tmp_path, index):
    """Run where ../shared/reference resolves as in the repository root, with out/ in a scratch directory."""
    commands, expected = examples()[index]
    (tmp_path / "shared").symlink_to(SHARED_REFERENCE.resolve().parent)
    work = tmp_path / "work"
    (work / "out").mkdir(parents=True)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    script = commands.replace("python -m harness", f"{sys.executable} -m harness")
    result = subprocess.run(["bash", "-c", script], cwd=work, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stderr  # the README says: a known failure applies
    assert result.stdout.endswith(expected), result.stdout
