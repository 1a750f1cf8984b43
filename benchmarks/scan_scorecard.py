"""Scorecard of `harness scan` on corpora with known answers (the idea of trtcheck's SCORECARD: measure, say how).

1. The library's own graphs: each S case's matcher run on every variant graph of the library. Recall: the variant
   graphs its own case finds; naming: those it names with the variant that built them (a variant that differs only
   in knobs, which no ONNX file carries, cannot be named); other cases' findings are listed, to be judged.
2. The test models (tests/models: backbone with SiLU or Mish, U-Net, transformer block, plain CNN; with and without
   Q/DQ), whose S-pattern occurrences are known: precision and recall of (anchor node, variant) per case.
3. Prediction on ort-cpu: for every finding of the test models, the verdict the library's minimal graph gives
   (observed on ort-cpu) against the verdict of the user's own layer, cut out and run on ort-cpu (--run).

    python benchmarks/scan_scorecard.py [--keep DIR]
"""
from __future__ import annotations

import argparse
import collections
import sys
import tempfile
from pathlib import Path

import onnx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

S_PATTERNS = ("S1", "S2", "S3", "S4", "S5")


def library_graphs() -> None:
    import cases

    print("1. The library's own graphs")
    print(f"{'case':<22}{'variants':>9}{'found':>7}{'named':>7}  not named (the graph's variant -> named) / others")
    for case in (c for c in cases.all_cases() if c.pattern in S_PATTERNS):
        graphs = [(v, case.build(v).graph) for v in case.variants if v.role != "control"]
        found = named = 0
        misses, others = [], collections.Counter()
        for variant, graph in graphs:
            matches = case.find(graph)
            found += bool(matches)
            if matches and all(m.variant == variant.name for m in matches):
                named += 1
            elif matches:
                misses.append(f"{variant.name} -> {matches[0].variant}")
            for other in cases.all_cases():
                if other is not case and other.find(graph):
                    others[other.id] += 1
        extra = "; ".join(misses + [f"{n} graph(s) also hold {c}" for c, n in others.items()])
        print(f"{case.id:<22}{len(graphs):>9}{found:>7}{named:>7}  {extra}")


def test_models(out: Path) -> dict[str, Path]:
    import cases  # noqa: F401
    from harness.scan.loading import load_model
    from harness.scan.matching import find_patterns
    from tests.models.fixtures import CORPUS

    print("\n2. The test models (tests/models), S patterns only")
    expected_all, found_all = set(), set()
    paths = {}
    for name, (build, expected) in CORPUS.items():
        paths[name] = out / f"{name}.onnx"
        onnx.save(build(), paths[name])
        found = find_patterns(load_model(paths[name]).graph)
        found_all |= {(name, f.case.id, o.anchor, f.variant.name if f.variant else None)
                      for f in found.findings if f.case.pattern in S_PATTERNS for o in f.occurrences}
        expected_all |= {(name, case, anchor, variant) for case, pairs in expected.items() for anchor, variant in pairs}
    print(f"{'case':<22}{'expected':>9}{'found':>7}{'correct':>9}{'precision':>11}{'recall':>8}")
    for case in sorted({item[1] for item in expected_all | found_all}):
        expected = {e for e in expected_all if e[1] == case}
        found = {f for f in found_all if f[1] == case}
        correct = len(expected & found)
        precision = correct / len(found) if found else 1.0
        recall = correct / len(expected) if expected else 1.0
        print(f"{case:<22}{len(expected):>9}{len(found):>7}{correct:>9}{precision:>11.3f}{recall:>8.3f}")
    clean = [name for name, (_, expected) in CORPUS.items() if not expected]
    false_alarms = sorted({f[0] for f in found_all if f[0] in clean})
    print(f"models with no S pattern: {len(clean)}, false alarms on them: {len(false_alarms)} {false_alarms or ''}")
    return paths


def predictions(paths: dict[str, Path], out: Path) -> None:
    import cases
    from cases.generate import generate
    from harness.matrix import load_matrix
    from harness.orchestration.run_targets import run_targets
    from harness.scan.prediction import predict
    from harness.scan.scanner import ScanOptions, scan

    ort = load_matrix()["ort-cpu"]
    generate(out / "library", [c for c in cases.all_cases() if c.pattern in S_PATTERNS])
    results = out / "library.jsonl"
    results.unlink(missing_ok=True)
    run_targets([ort], out / "library", results, jobs=2, progress=lambda line: None)
    print("\n3. ort-cpu: the library's minimal graph's verdict against your layer's")
    print(f"{'model':<22}{'finding':<58}{'library':>10}{'your layer':>12}")
    agree = total = 0
    for name, path in paths.items():
        result = scan(path, ScanOptions(targets=[ort], results=[results], run_targets=[ort], out_dir=out / name))
        for finding, verdicts in zip(result.findings, result.verdicts):
            if finding.case.pattern not in S_PATTERNS:
                continue
            library = predict(finding, ort, result.observations).verdict
            layer = verdicts[ort.id].verdict
            total += 1
            agree += _band(library) == _band(layer)
            print(f"{name:<22}{finding.label:<58}{library:>10}{layer:>12}")
    print(f"agreement (pass band: likely = verified): {agree} of {total}")


def _band(verdict: str) -> str:
    return "pass" if verdict in ("likely", "verified") else verdict


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keep", type=Path, help="write models and results here instead of a temporary directory")
    args = parser.parse_args()
    out = args.keep or Path(tempfile.mkdtemp(prefix="trt-matrix-scorecard-"))
    out.mkdir(parents=True, exist_ok=True)
    library_graphs()
    paths = test_models(out)
    predictions(paths, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
