"""The worked examples of README.md and the docs/ pages, run as written, so that what they show is what the commands
print.

A worked example is a ```sh block followed by a ```text block. The commands run one after another, in the order of
:data:`PAGES` and of each page (a later example reads what an earlier one wrote, as on a user's machine), from a
scratch directory laid out as the repository root: ``reference/`` as in the repository, ``out/`` empty, and
``resnet18-qat.onnx``, README's "your model": the corpus's QAT ResNet-18 (a torch.onnx export quantized by
pytorch-quantization, corpus/models/resnet18-qat-pq-ts-op13). The text block is what the example's last command
prints, stdout and stderr interleaved as on a terminal.

    python scripts/readme_examples.py           # check: a diff per stale example, exit 1 when one is
    python scripts/readme_examples.py --write   # put what the commands print now into README.md

The check ignores what changes from run to run and is not the example's point: the seconds on progress lines and the
order in which cells running at once end. ``tests/test_readme_examples.py`` runs the check.
"""
from __future__ import annotations

import argparse
import difflib
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
PAGES = (README, REPO / "docs" / "scan.md", REPO / "docs" / "fix.md", REPO / "docs" / "diagnose.md")
YOUR_MODEL = ("resnet18-qat-pq-ts-op13", "resnet18-qat.onnx")  # corpus model, the name README scans it by
BLOCK_BODY = r"(?:(?!```)[^\n]*\n)*"  # lines up to the closing fence
EXAMPLE = re.compile(rf"^```sh\n(?P<commands>{BLOCK_BODY})```\n\n```text\n(?P<shown>{BLOCK_BODY})```$", re.M)
PROGRESS = re.compile(r"^\[\s*\d+/\d+\s+[\d.]+s\] ")  # "[2/3    0.4s] ort-cpu case/variant: outcome"


@dataclass
class Example:
    commands: list[str]
    shown: str  # the text block in its page
    printed: str = ""  # what the last command printed
    status: int | None = None  # its exit status
    span: tuple[int, int] = (0, 0)  # where the text block's body is in its page
    page: Path = README

    @property
    def stale(self) -> bool:
        return comparable(self.printed) != comparable(self.shown)


def comparable(text: str) -> list[str]:
    """``text`` without what differs between two runs of the same command: a run of progress lines, sorted, with
    their counters and seconds taken out."""
    lines, progress = [], []
    for line in text.splitlines():
        if PROGRESS.match(line):
            progress.append(PROGRESS.sub("[.] ", line))
            continue
        lines.extend(sorted(progress))
        progress = []
        lines.append(line.rstrip())
    return lines + sorted(progress)


def examples(text: str) -> list[Example]:
    found = []
    for match in EXAMPLE.finditer(text):
        commands = [line for line in match["commands"].splitlines() if line.strip() and not line.startswith("#")]
        found.append(Example(commands, match["shown"], span=match.span("shown")))
    return found


def command_line(line: str) -> str:
    """The README line as bash runs it here: ``python`` is this interpreter (a plain Debian has only python3)."""
    return re.sub(r"^python(?= )", lambda _: sys.executable, line)


def run_examples(text: str, work: Path, page: Path = README) -> list[Example]:
    """Run every example of ``text`` (the page ``page``) in ``work`` (laid out as the repository root), in order."""
    (work / "out").mkdir(parents=True, exist_ok=True)
    if not (work / "reference").exists():
        (work / "reference").symlink_to(REPO / "reference", target_is_directory=True)
    if not (work / "matrix.yaml").exists():  # the examples run where README's reader stands: beside matrix.yaml
        (work / "matrix.yaml").symlink_to(REPO / "matrix.yaml")
    if not (work / YOUR_MODEL[1]).exists():
        sys.path.insert(0, str(REPO))
        import corpus

        corpus.save(YOUR_MODEL[0], work).rename(work / YOUR_MODEL[1])
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONUNBUFFERED": "1"}
    env.pop("TRT_MATRIX_TRACEBACK", None)
    found = examples(text)
    for example in found:
        example.page = page
        *before, last = example.commands
        for line in before:
            subprocess.run(["bash", "-c", command_line(line)], cwd=work, env=env, check=True, timeout=900,
                           stdout=subprocess.DEVNULL)
        process = subprocess.run(["bash", "-c", command_line(last)], cwd=work, env=env, timeout=900,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        example.printed, example.status = process.stdout, process.returncode
    return found


def rewritten(text: str, found: list[Example]) -> str:
    """README ``text`` with each example's text block replaced by what its command printed."""
    for example in reversed(found):
        start, end = example.span
        text = text[:start] + example.printed + text[end:]
    return text


def run_pages(work: Path) -> list[Example]:
    """Run the examples of every page of :data:`PAGES`, in order, in one scratch directory."""
    found = []
    for page in PAGES:
        found += run_examples(page.read_text(encoding="utf-8"), work, page)
    return found


VERDICTS = re.compile(r"(<!-- verdicts: [^\n]*-->\n)(.*?)(<!-- /verdicts -->)", re.S)


def verdict_table() -> str:
    """README's table of the scan's verdicts, from the judgement package (its words and meanings, in its order)."""
    sys.path.insert(0, str(REPO))
    from harness.judgement import SCAN_VERDICT_MEANINGS

    rows = "".join(f"| `{verdict}` | {meaning} |\n" for verdict, meaning in SCAN_VERDICT_MEANINGS.items())
    return "| verdict | means |\n|---|---|\n" + rows


def with_verdict_table(text: str) -> str:
    """README ``text`` with its verdict table as the judgement package writes it now."""
    return VERDICTS.sub(lambda m: m.group(1) + verdict_table() + m.group(3), text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="write what the commands print into the pages")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="readme-examples-") as work:
        found = run_pages(Path(work))
    stale = [example for example in found if example.stale]
    for example in stale:
        print(f"stale: the example of `{example.commands[-1]}` in {example.page.name} (exit status {example.status}):")
        sys.stdout.writelines(difflib.unified_diff(example.shown.splitlines(True), example.printed.splitlines(True),
                                                   example.page.name, "printed now"))
    readme = README.read_text(encoding="utf-8")
    table_stale = with_verdict_table(readme) != readme
    if table_stale:
        print("stale: README.md's verdict table (harness.judgement's words changed)")
    if args.write and table_stale:
        README.write_text(with_verdict_table(readme), encoding="utf-8")
    if args.write and stale:
        for page in PAGES:
            mine = [example for example in found if example.page == page]
            page.write_text(rewritten(page.read_text(encoding="utf-8"), mine), encoding="utf-8")
        print(f"{len(stale)} example(s) of {len(found)} written")
        return 0
    if args.write:
        return 0
    print(f"{len(found)} example(s), {len(stale)} stale" + ("; `--write` puts what they print into the pages"
                                                            if stale or table_stale else ""))
    return 1 if stale or table_stale else 0


if __name__ == "__main__":
    sys.exit(main())
