"""The mutation run of the TensorRT path (``tox -e mutation``): mutmut applies plausible one-line bugs to the modules
``[tool.mutmut] only_mutate`` lists, one at a time, and runs the TensorRT tests that reach the mutated function;
a mutant no test fails on is a bug those tests would let through.

Not part of the test run or CI (a whole run from nothing takes two to three hours on two cores). Steps:

1. a scratch copy of the repository's files in ``out/mutation/checkout`` (mutmut works in ``mutants/`` beside the
   code it copies; the copy keeps that out of the working tree), reference data included (``reference/``);
2. ``mutmut run`` there, on every mutant or on the modules named on the command line;
3. the score: mutants the tests detect (killed, timed out) over all mutants except the equivalent ones, which
   ``[tool.trt_matrix.mutation.equivalent]`` in pyproject.toml documents one by one (the mutated line and why no
   test can tell it apart); an entry whose mutant is gone, changed or detected is reported as stale;
4. mutmut's own summary, the score and every surviving mutant with its diff, printed and written to
   ``out/mutation/report.txt`` (and ``report.json``).

After adding tests, ``--resume`` keeps the last run's results (mutmut redoes the functions whose code changed),
runs the mutants the last run left undetected again (not the documented equivalent ones), then the ones not yet run;
``--time-limit MINUTES`` stops mutmut and reports what it ran; ``--report-only`` scores the last results again (after
documenting equivalent mutants). Generated cases are kept between mutants (``TRT_MATRIX_TEST_CASES_CACHE``).

Exit status 0 when the score reaches ``required_score`` and no entry is stale, 1 otherwise, 2 for a run that
did not finish.

    python tests/harness/worker/backends/tensorrt/mutation.py [MODULE ...]   # e.g. classify layers
    python tests/harness/worker/backends/tensorrt/mutation.py --resume --time-limit 40
"""
from __future__ import annotations

import argparse
import dataclasses
import filecmp
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[5]
PACKAGES = ("harness.tensorrt", "harness.worker.backends.tensorrt")  # the mutated modules' packages
DETECTED = {"killed", "timeout", "caught by type check", "segfault"}  # the tests failed or never finished
UNDETECTED = {"survived", "no tests", "suspicious"}
_RESULT_LINE = re.compile(r"^\s+(?P<name>\S+): (?P<status>.+)$")
_PROGRESS = re.compile(r"(\d+/\d+\s+🎉.*?🧙 \d+)")
# tests/conftest.py reuses the cases it generates from the directory this names: mutmut runs the tests once per
# mutant, and generating the case library each time would be most of the run; the case library is never mutated.
CASES_CACHE_VARIABLE = "TRT_MATRIX_TEST_CASES_CACHE"


@dataclasses.dataclass(frozen=True)
class Equivalent:
    """A mutant documented as equivalent: no test can tell it from the original."""

    mutation: str  # the mutated line, as ``mutmut show`` prints it after "+"
    reason: str


@dataclasses.dataclass
class Score:
    statuses: dict[str, str]  # mutant name -> mutmut status
    equivalent: dict[str, Equivalent]
    stale: dict[str, str]  # documented equivalent -> why the entry no longer holds

    @property
    def counted(self) -> dict[str, str]:
        return {name: status for name, status in self.statuses.items() if name not in self.equivalent
                and (status in DETECTED or status in UNDETECTED)}

    @property
    def detected(self) -> int:
        return sum(status in DETECTED for status in self.counted.values())

    @property
    def undetected(self) -> list[str]:
        return sorted(name for name, status in self.counted.items() if status in UNDETECTED)

    @property
    def percent(self) -> float:
        return 100.0 * self.detected / len(self.counted) if self.counted else 100.0

    @property
    def unfinished(self) -> list[str]:
        return sorted(name for name, status in self.statuses.items()
                      if status not in DETECTED and status not in UNDETECTED and status != "skipped")


def mutation_config(pyproject: Path) -> dict:
    return tomllib.loads(pyproject.read_text(encoding="utf-8"))["tool"]["trt_matrix"]["mutation"]


def equivalent_mutants(config: dict) -> dict[str, Equivalent]:
    return {name: Equivalent(entry["mutation"].strip(), entry["reason"])
            for name, entry in config.get("equivalent", {}).items()}


def parse_results(text: str) -> dict[str, str]:
    """mutant name -> status, from ``mutmut results --all true``."""
    return {match["name"]: match["status"].strip() for line in text.splitlines()
            if (match := _RESULT_LINE.match(line))}


def mutated_lines(diff: str) -> list[str]:
    """The lines a mutant adds, from its ``mutmut show`` diff."""
    return [line[1:].strip() for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]


def score(statuses: dict[str, str], equivalent: dict[str, Equivalent], diffs: dict[str, str]) -> Score:
    """Leave out the documented equivalent mutants that still are what their entry says; report the others stale."""
    kept, stale = {}, {}
    for name, entry in equivalent.items():
        status = statuses.get(name)
        if status is None:
            continue  # a module not in this run
        if entry.mutation not in mutated_lines(diffs.get(name, "")):
            stale[name] = f"the mutant now changes {mutated_lines(diffs.get(name, ''))}, not {entry.mutation!r}"
        elif status in DETECTED:
            stale[name] = f"the tests detect it ({status}): it is not equivalent, delete the entry"
        else:
            kept[name] = entry
    return Score(statuses, kept, stale)


def module_of(mutant: str) -> str:
    """'classify' from 'harness.tensorrt.classify.x_parse_log_line__mutmut_2'."""
    return mutant.rsplit(".", 1)[0].rpartition(".")[2]


def sync_checkout(checkout: Path) -> None:
    """Copy the repository's files (tracked and new, not ignored) to ``checkout``; drop files deleted since."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            check=True, capture_output=True).stdout.decode().split("\0")
    wanted = {Path(name) for name in listed if name and (REPO / name).is_file()}
    for path in wanted:
        source, target = REPO / path, checkout / path
        if not target.exists() or not filecmp.cmp(source, target, shallow=False):
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    for directory, subdirectories, files in os.walk(checkout):
        if Path(directory) == checkout:
            subdirectories[:] = [d for d in subdirectories if d != "mutants"]
        for name in files:
            target = Path(directory) / name
            if target.relative_to(checkout) not in wanted:
                target.unlink()


def mutmut(checkout: Path, *arguments: str, log: Path | None = None, deadline: float | None = None) -> str:
    """Run mutmut in ``checkout``; with ``log``, its output goes there and a ``deadline`` (time.monotonic()) stops it
    and its workers: every result mutmut recorded stays in mutants/, the rest is reported as not run."""
    command = [sys.executable, "-m", "mutmut", *arguments]
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}  # the copy's code only
    environment[CASES_CACHE_VARIABLE] = str(checkout.parent / "generated-cases")
    if log is None:
        return subprocess.run(command, cwd=checkout, env=environment, check=True, capture_output=True,
                              text=True).stdout
    with log.open("w", encoding="utf-8") as output:
        process = subprocess.Popen(command, cwd=checkout, env=environment, stdout=output, stderr=subprocess.STDOUT,
                                   start_new_session=True)  # its own process group: the workers stop with it
        try:
            returncode = process.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            print("mutmut stopped at the time limit; the mutants it had not run are listed as not run", flush=True)
            return log.read_text(encoding="utf-8")
    if returncode != 0:
        raise SystemExit(f"mutmut {' '.join(arguments)} failed (exit {returncode}); its output: {log}")
    return log.read_text(encoding="utf-8")


def tool_summary(log_text: str) -> str:
    """mutmut's last progress line (done/total, killed, no tests, timeout, suspicious, survived, skipped) and speed."""
    progress = _PROGRESS.findall(log_text)
    speed = [line for line in log_text.splitlines() if line.endswith("mutations/second")]
    return "\n".join(([progress[-1]] if progress else []) + speed[-1:])


def report(result: Score, summary: str, diffs: dict[str, str], required: float, modules: list[str]) -> str:
    lines = [f"Mutation testing of the TensorRT path ({', '.join(modules) or 'every module in only_mutate'})",
             "mutmut's summary (🎉 killed 🫥 no tests ⏰ timeout 🤔 suspicious 🙁 survived 🔇 skipped):", summary, "",
             f"Score: {result.percent:.1f} % ({result.detected} of {len(result.counted)} mutants detected; "
             f"{len(result.equivalent)} documented equivalent mutants left out; required {required:g} %)"]
    by_module: dict[str, list[str]] = {}
    for name, status in result.counted.items():
        by_module.setdefault(module_of(name), []).append(status)
    for module, statuses in sorted(by_module.items()):
        detected = sum(status in DETECTED for status in statuses)
        lines.append(f"  {module}: {100.0 * detected / len(statuses):.1f} % ({detected}/{len(statuses)})")
    if result.unfinished:
        lines.append(f"\nNot run to the end ({len(result.unfinished)}): {', '.join(result.unfinished)}")
    if result.stale:
        lines.append(f"\nStale equivalent-mutant entries in pyproject.toml ({len(result.stale)}):")
        lines += [f"  {name}: {why}" for name, why in sorted(result.stale.items())]
    lines.append(f"\nUndetected mutants ({len(result.undetected)}):")
    for name in result.undetected:
        lines += ["", f"{name}: {result.statuses[name]}", diffs.get(name, "").rstrip()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", help="modules of the TensorRT package to mutate (default: all listed)")
    parser.add_argument("--out", type=Path, default=REPO / "out" / "mutation", help="scratch copy and report")
    parser.add_argument("--max-children", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--time-limit", type=float, metavar="MINUTES",
                        help="stop mutmut after this long and report what it ran (the rest as not run, exit 2)")
    parser.add_argument("--report-only", action="store_true",
                        help="run nothing: score the last run's results again (after documenting equivalent mutants)")
    parser.add_argument("--resume", action="store_true",
                        help="keep the last run's results: run again every mutant the last run left undetected "
                             "(the tests may have changed; documented equivalent ones excepted), then the mutants of "
                             "functions whose code changed and those not yet run; minutes instead of hours after "
                             "adding tests")
    arguments = parser.parse_args(argv)
    arguments.out = arguments.out.resolve()
    deadline = None if arguments.time_limit is None else time.monotonic() + 60 * arguments.time_limit

    config = mutation_config(REPO / "pyproject.toml")
    checkout = arguments.out / "checkout"
    if arguments.report_only:
        if not (checkout / "mutants").is_dir():
            parser.error(f"--report-only: there are no results in {checkout / 'mutants'}; run without it first")
        log = arguments.out / "mutmut.log"
        return finish(arguments, config, checkout, log.read_text(encoding="utf-8") if log.exists() else "")
    checkout.mkdir(parents=True, exist_ok=True)
    sync_checkout(checkout)
    undetected_before: set[str] = set()
    if arguments.resume and (checkout / "mutants").is_dir():
        undetected_before = {name for name, status in parse_results(mutmut(checkout, "results", "--all", "true"))
                             .items() if status in UNDETECTED}
        # mutmut maps only new tests to functions on a resumed run, so a new function would miss the old tests that
        # call it: without the stats file it traces every test once more
        (checkout / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)
    else:  # results of earlier code must not carry over
        shutil.rmtree(checkout / "mutants", ignore_errors=True)
        shutil.rmtree(arguments.out / "generated-cases", ignore_errors=True)
    patterns = [f"{package}.{module}.*" for package in PACKAGES for module in arguments.modules]
    rerun = sorted(name for name in undetected_before - equivalent_mutants(config).keys()
                   if not arguments.modules or module_of(name) in arguments.modules)
    if rerun:  # first: the tests added since are meant for these
        print(f"mutmut run: the {len(rerun)} mutants the last run left undetected, again; progress in "
              f"{arguments.out / 'mutmut-rerun.log'}", flush=True)
        mutmut(checkout, "run", "--max-children", str(arguments.max_children), *rerun,
               log=arguments.out / "mutmut-rerun.log", deadline=deadline)
    print(f"mutmut run {' '.join(patterns) or '(all)'} in {checkout}; progress in {arguments.out / 'mutmut.log'}",
          flush=True)
    log_text = mutmut(checkout, "run", "--max-children", str(arguments.max_children), *patterns,
                      log=arguments.out / "mutmut.log", deadline=deadline)
    return finish(arguments, config, checkout, log_text)


def finish(arguments: argparse.Namespace, config: dict, checkout: Path, log_text: str) -> int:
    """Score the results in ``checkout``, print and write the report; the exit status."""
    statuses = parse_results(mutmut(checkout, "results", "--all", "true"))
    if arguments.modules:
        statuses = {name: status for name, status in statuses.items() if module_of(name) in arguments.modules}
    equivalent = equivalent_mutants(config)
    wanted_diffs = {name for name, status in statuses.items() if status in UNDETECTED} | (equivalent.keys() & statuses)
    diffs = {name: mutmut(checkout, "show", name) for name in sorted(wanted_diffs)}
    result = score(statuses, equivalent, diffs)
    required = float(config["required_score"])
    text = report(result, tool_summary(log_text), diffs, required, arguments.modules)
    (arguments.out / "report.txt").write_text(text, encoding="utf-8")
    (arguments.out / "report.json").write_text(json.dumps({
        "score_percent": round(result.percent, 2), "required_percent": required, "detected": result.detected,
        "counted": len(result.counted), "equivalent": sorted(result.equivalent), "stale": result.stale,
        "undetected": {name: result.statuses[name] for name in result.undetected}, "statuses": result.statuses,
    }, indent=1, ensure_ascii=False), encoding="utf-8")
    print(text + f"\nWritten: {arguments.out / 'report.txt'} and report.json")
    if result.unfinished:
        return 2
    return 0 if result.percent >= required and not result.stale else 1


if __name__ == "__main__":
    sys.exit(main())
