"""Scorecard of `harness scan` on the third-party corpus (corpus/thirdparty/: ultralytics, timm and transformers
exports, quantized by ModelOpt and ONNX Runtime): every model scanned by the real command on every target of
matrix.yaml, each verdict compared with the one written by hand in corpus/thirdparty/expected.json.

Per (model, target that exists): answered (not unverified), and where an expectation covers it, right or wrong; a
wrong answer is classed by its direction:

  false promise   expected blocked (the parser refuses the model), scan said likely/clear/fallback/verified
  false alarm     expected to build (likely, clear or fallback), scan said blocked
  other           any other verdict outside the expected set (e.g. fallback where likely is expected)
  unsettled       unverified where the documents settle it (not wrong, not answered)

    python benchmarks/thirdparty_scorecard.py                       # every model
    python benchmarks/thirdparty_scorecard.py --models yolo11n-detect-ul-mo-int8 --json out.json
    python benchmarks/thirdparty_scorecard.py --from out.json       # score a saved run again, no scanning

It runs `python -m harness scan MODEL --out DIR` once per model (about 4 s each on a quiet host).
"""
from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

PASSING = ("likely", "clear", "fallback", "verified")


def scan_verdicts(name: str, work: Path) -> dict[str, dict]:
    """{target id: {"verdict", "basis", "reason", "available"}} from scan.json of `harness scan` on the model."""
    from corpus import thirdparty

    path = thirdparty.save(name, work / "models")
    out = work / "scans" / name
    done = subprocess.run([sys.executable, "-m", "harness", "scan", str(path), "--out", str(out)], cwd=REPO,
                          capture_output=True, text=True, timeout=900)
    report = out / "scan.json"
    if not report.is_file():
        raise RuntimeError(f"scan of {name} exited {done.returncode} with no scan.json:\n{done.stderr[-2000:]}")
    return {t["target"]: {k: t[k] for k in ("verdict", "basis", "reason", "available")}
            for t in json.loads(report.read_text())["targets"]}


def direction(verdict: str, allowed: set[str]) -> str:
    if verdict in allowed:
        return "right"
    if verdict == "unverified":
        return "unsettled"
    if allowed == {"blocked"} and verdict in PASSING:
        return "false promise"
    if "blocked" not in allowed and verdict == "blocked":
        return "false alarm"
    return "other"


def score(runs: dict[str, dict[str, dict]]) -> dict:
    from corpus import thirdparty

    rows = answered = 0
    classes: collections.Counter = collections.Counter()
    wrong = []
    for name, verdicts in runs.items():
        expected = thirdparty.expected(name)
        for target, got in verdicts.items():
            if not got["available"]:
                continue
            rows += 1
            answered += got["verdict"] != "unverified"
            if target not in expected:
                continue
            allowed = set(expected[target]["verdict"].split("|"))
            kind = direction(got["verdict"], allowed)
            classes[kind] += 1
            if kind not in ("right", "unsettled"):
                wrong.append({"model": name, "target": target, "got": got["verdict"], "basis": got["basis"],
                              "expected": expected[target]["verdict"], "rule": expected[target]["rule"],
                              "class": kind})
    return {"rows": rows, "answered": answered, "classes": dict(classes), "wrong": wrong}


def main(argv: list[str] | None = None) -> int:
    from corpus import thirdparty

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", help="model names (default: every one)")
    parser.add_argument("--json", type=Path, help="write every verdict and the score here")
    parser.add_argument("--from", dest="saved", type=Path, help="score the verdicts of a saved --json run")
    parser.add_argument("--keep", type=Path, help="write the models and scans here instead of a temporary directory")
    args = parser.parse_args(argv)
    if args.saved:
        runs = json.loads(args.saved.read_text())["verdicts"]
    else:
        work = args.keep or Path(tempfile.mkdtemp(prefix="trt-matrix-thirdparty-"))
        runs, started = {}, time.perf_counter()
        for name in args.models or thirdparty.names():
            runs[name] = scan_verdicts(name, work)
            line = " ".join(f"{t}={v['verdict']}" for t, v in runs[name].items() if v["available"])
            print(f"{name}: {line}", flush=True)
        print(f"scanned {len(runs)} models in {time.perf_counter() - started:.0f} s")
        if args.json:
            args.json.write_text(json.dumps({"verdicts": runs}, indent=1))
    result = score(runs)
    rows = result["rows"]
    print(f"\n{len(runs)} models x targets that exist: {rows} rows")
    print(f"answered (not unverified): {result['answered']} = {100 * result['answered'] / max(rows, 1):.1f} %")
    judged = sum(result["classes"].values())
    print(f"rows an expectation covers: {judged}")
    for kind in ("right", "false promise", "false alarm", "other", "unsettled"):
        count = result["classes"].get(kind, 0)
        print(f"  {kind:<14} {count:>5} = {100 * count / max(judged, 1):5.1f} %")
    by_rule = collections.Counter((w["rule"], w["class"], w["got"]) for w in result["wrong"])
    if by_rule:
        print("\nwrong answers by rule (rule, direction, verdict given: rows)")
        for (rule, kind, got), count in by_rule.most_common():
            print(f"  {rule:<34} {kind:<14} {got:<10} {count:>4}")
    if args.json:
        args.json.write_text(json.dumps({"verdicts": runs, "score": result}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
