"""Scorecard of `harness scan` on the third-party corpus (corpus/thirdparty/: ultralytics, timm and transformers
exports, quantized by ModelOpt and ONNX Runtime): every model scanned by the real command on every target of
matrix.yaml, each verdict compared with the one written by hand in corpus/thirdparty/expected.json.

Per (model, target that exists): answered (not unverified), and where an expectation covers it, right or wrong; a
wrong answer is classed by its direction:

  false promise   expected blocked (the parser refuses the model), scan said likely/clear/fallback/verified
  false alarm     expected to build (likely, clear or fallback), scan said blocked
  other           any other verdict outside the expected set (e.g. fallback where likely is expected)
  unsettled       unverified where the documents settle it (not wrong, not answered)

and the predicted engine against expected.json's "engine" part: the float type of a network ModelOpt cast to
FP16, and every SiLU after an INT8 conv fused (no Sigmoid layer of its own).

    python benchmarks/thirdparty_scorecard.py                       # every model
    python benchmarks/thirdparty_scorecard.py --models yolo11n-detect-ul-mo-int8 --json out.json
    python benchmarks/thirdparty_scorecard.py --from out.json       # score a saved run again, no scanning
    python benchmarks/thirdparty_scorecard.py --compare corpus/thirdparty/baseline.json   # what changed since then
    python benchmarks/thirdparty_scorecard.py --save-baseline corpus/thirdparty/baseline.json

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


def scan_model(name: str, work: Path, reuse: bool = False) -> dict:
    """`harness scan` of the model (or, with ``reuse``, its scan.json already in ``work``), read back."""
    from corpus import thirdparty

    out = work / "scans" / name
    report = out / "scan.json"
    if not (reuse and report.is_file()):
        path = thirdparty.save(name, work / "models")
        done = subprocess.run([sys.executable, "-m", "harness", "scan", str(path), "--out", str(out)], cwd=REPO,
                              capture_output=True, text=True, timeout=900)
        if not report.is_file():
            raise RuntimeError(f"scan of {name} exited {done.returncode} with no scan.json:\n{done.stderr[-2000:]}")
    return read_scan(json.loads(report.read_text()))


def read_scan(report: dict) -> dict:
    """{"targets": {target id: {"verdict", "basis", "reason", "available"}}, "engine": {"float_precision",
    "unfused_sigmoid"}}: the verdicts, the float type the predicted engine gives the model's float layers, and how
    many Sigmoid nodes it leaves as layers of their own (a SiLU after a conv that TensorRT did not fuse)."""
    engine = report.get("engine") or {}
    layers = engine.get("layers") or []
    unfused = sorted(layer["nodes"][0] for layer in layers if layer.get("op") == "Sigmoid" and len(layer.get("nodes", [])) == 1)
    return {"targets": {t["target"]: {k: t[k] for k in ("verdict", "basis", "reason", "available")}
                        for t in report["targets"]},
            "engine": {"float_precision": engine.get("float_precision"), "unfused_sigmoid": unfused,
                       "layers": len(layers), "strong_float_precision": _strongly_typed_float(engine)}}


def _strongly_typed_float(engine: dict) -> str | None:
    """The float type of the model's float layers in the engine predicted for a strongly typed build (TensorRT 11,
    the main prediction or one of the others), None where none was predicted."""
    for prediction in (engine, *(engine.get("other_predictions") or [])):
        if str(prediction.get("float_text") or "").startswith("strongly typed"):
            return prediction.get("float_precision")
    return None


ALREADY = ("already comes through", "already in the workaround form")


def fix_model(name: str, work: Path, reuse: bool = False) -> dict:
    """`harness scan --fix` of the model: its exit status, and the places it left unfixed with their reasons."""
    from corpus import thirdparty

    out = work / "fixes" / name
    report = out / "scan.json"
    if not (reuse and report.is_file()):
        path = thirdparty.save(name, work / "models")
        subprocess.run([sys.executable, "-m", "harness", "scan", str(path), "--fix", "--out", str(out)], cwd=REPO,
                       capture_output=True, text=True, timeout=900)
    if not report.is_file():
        return {"exit": None, "places": []}
    data = json.loads(report.read_text())
    places = sorted({(entry["place"], entry["reason"]) for group in (data.get("fix") or {}).get("groups", [])
                     for entry in group.get("not_fixed", []) if entry.get("place")})
    return {"exit": data["exit_code"], "places": [list(p) for p in places]}


def fix_summary(fixes: dict[str, dict]) -> None:
    """Print how often --fix exits 4 (partial), and how often only with places that needed no fix."""
    partial = {n: f for n, f in fixes.items() if f["exit"] == 4}
    nothing = [n for n, f in partial.items() if all(any(a in reason for a in ALREADY) for _, reason in f["places"])]
    codes = collections.Counter(f["exit"] for f in fixes.values())
    print(f"\n--fix on {len(fixes)} quantized models: exit codes {dict(sorted(codes.items(), key=str))}; "
          f"partial (4) {len(partial)}, of them {len(nothing)} with only places already in a workaround form "
          "(nothing that needed fixing)")


def _sigmoids_after_conv(name: str) -> set[str]:
    """Names of the model's Sigmoid nodes that read a Conv's output."""
    from corpus import thirdparty

    model = thirdparty.load(name)
    producers = {o: n.op_type for n in model.graph.node for o in n.output}
    return {n.name for n in model.graph.node if n.op_type == "Sigmoid" and producers.get(n.input[0]) == "Conv"}


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
    engine_wrong = []
    for name, run in runs.items():
        expected = thirdparty.expected(name)
        want = thirdparty.expected_engine(name)
        got_engine = run["engine"]
        strong = got_engine.get("strong_float_precision")  # the expectation is for a strongly typed build
        if "float_precision" in want and strong != want["float_precision"]:
            engine_wrong.append({"model": name, "check": "float type (strongly typed)", "got": strong,
                                 "expected": want["float_precision"], "why": want["why_float"]})
        after_conv = set(got_engine["unfused_sigmoid"]) & _sigmoids_after_conv(name) if want.get("silu_fused") else set()
        if after_conv:
            engine_wrong.append({"model": name, "check": "SiLU fused", "got": f"{len(after_conv)} unfused",
                                 "expected": "all fused", "why": want["why_silu"]})
        for target, got in run["targets"].items():
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
    return {"rows": rows, "answered": answered, "classes": dict(classes), "wrong": wrong, "engine_wrong": engine_wrong}


def main(argv: list[str] | None = None) -> int:
    from corpus import thirdparty

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", help="model names (default: every one)")
    parser.add_argument("--json", type=Path, help="write every verdict and the score here")
    parser.add_argument("--from", dest="saved", type=Path, help="score the verdicts of a saved --json run")
    parser.add_argument("--keep", type=Path, help="write the models and scans here instead of a temporary directory")
    parser.add_argument("--compare", type=Path, help="a --save-baseline file: count the answers that changed")
    parser.add_argument("--save-baseline", type=Path, help="write each (model, target) verdict and basis here")
    parser.add_argument("--fix", action="store_true", help="also run `scan --fix` on every quantized model and "
                                                          "count the partial fixes with nothing to fix")
    parser.add_argument("--reuse", action="store_true", help="with --keep: read a scan.json already there")
    args = parser.parse_args(argv)
    if args.saved:
        runs = json.loads(args.saved.read_text())["verdicts"]
    else:
        work = args.keep or Path(tempfile.mkdtemp(prefix="trt-matrix-thirdparty-"))
        runs, started = {}, time.perf_counter()
        for name in args.models or thirdparty.names():
            runs[name] = scan_model(name, work, reuse=args.reuse)
            line = " ".join(f"{t}={v['verdict']}" for t, v in runs[name]["targets"].items() if v["available"])
            print(f"{name}: {line}", flush=True)
        print(f"scanned {len(runs)} models in {time.perf_counter() - started:.0f} s")
        if args.fix:
            for name in runs:
                if thirdparty.info(name)["kind"] == "quantized":
                    runs[name]["fix"] = fix_model(name, work, reuse=args.reuse)
        if args.json:
            args.json.write_text(json.dumps({"verdicts": runs}, indent=1))
    result = score(runs)
    fixes = {name: run["fix"] for name, run in runs.items() if "fix" in run}
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
    print(f"\npredicted engine against expectations: {len(result['engine_wrong'])} wrong")
    for check in sorted({w["check"] for w in result["engine_wrong"]}):
        wrong = [w for w in result["engine_wrong"] if w["check"] == check]
        print(f"  {check}: {len(wrong)} model(s), expected {wrong[0]['expected']} ({wrong[0]['why']})")
        for w in wrong:
            print(f"    {w['model']}: {w['got']}")
    if fixes:
        fix_summary(fixes)
    if args.compare:
        compare(json.loads(args.compare.read_text()), runs)
    if args.save_baseline:
        args.save_baseline.write_text(json.dumps(
            {"about": "harness scan's verdict and basis per (model, target that exists) on corpus/thirdparty, every "
                      "target of matrix.yaml, no results file; written by benchmarks/thirdparty_scorecard.py "
                      "--save-baseline", "commit": _commit(), "score": {k: result[k] for k in ("rows", "answered",
                                                                                                 "classes")},
             "verdicts": {name: {t: [v["verdict"], v["basis"]] for t, v in run["targets"].items() if v["available"]}
                          for name, run in runs.items()}, "fix": fixes}, indent=0))
    if args.json:
        args.json.write_text(json.dumps({"verdicts": runs, "score": result}, indent=1))
    return 0


def _commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    return done.stdout.strip() or "unknown"


def _band(verdict: str) -> str:
    return "builds" if verdict in PASSING else verdict


def compare(baseline: dict, runs: dict) -> None:
    """Print how many answers changed since ``baseline``, and how many changed direction (builds <-> blocked)."""
    changed, direction_changed, newly_unverified, newly_answered = 0, collections.Counter(), 0, 0
    for name, old in baseline["verdicts"].items():
        for target, (verdict, _) in old.items():
            new = runs.get(name, {}).get("targets", {}).get(target)
            if new is None or new["verdict"] == verdict:
                continue
            changed += 1
            newly_unverified += new["verdict"] == "unverified"
            newly_answered += verdict == "unverified"
            if {_band(verdict), _band(new["verdict"])} == {"builds", "blocked"}:
                direction_changed[f"{_band(verdict)} -> {_band(new['verdict'])}"] += 1
    answered = baseline["score"]["answered"] / max(baseline["score"]["rows"], 1)
    print(f"\nagainst the baseline of commit {baseline['commit']} (answered {100 * answered:.1f} %): {changed} answers "
          f"changed; {newly_unverified} became unverified, {newly_answered} were unverified")
    for change, count in direction_changed.most_common():
        print(f"  changed direction {change}: {count}")
    if baseline.get("fix"):
        print("the baseline's --fix:", end="")
        fix_summary(baseline["fix"])


if __name__ == "__main__":
    sys.exit(main())
