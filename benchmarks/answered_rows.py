"""How much of the matrix a scan answers without a results file: every corpus model (corpus/, real torch.onnx
exports) scanned against every target of matrix.yaml, no records, and the share of (model, target) rows on targets
that exist whose model verdict is not unverified, split by the basis it rests on (facts, range claims, claims for the
target, predictions from TensorRT's documented rules; "none" is a model with no finding: clear).

    python benchmarks/answered_rows.py [--models NAME ...]

Issue 29's goals: at least 35 % of the rows answered by facts and range claims alone, 60 % with predictions.
"""
from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def main(argv: list[str] | None = None) -> int:
    import corpus
    from harness import judgement as j
    from harness.matrix import load_matrix
    from harness.scan.scanner import ScanOptions, scan

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=None, help="corpus model names (default: every one)")
    args = parser.parse_args(argv)
    targets = [t for t in load_matrix().values()]
    rows, answered, by_basis = 0, 0, collections.Counter()
    started = time.perf_counter()
    for name in args.models or corpus.names():
        result = scan(None, ScanOptions(targets=targets), loaded=_loaded(corpus.load(name)))
        for verdict in result.model_verdicts:
            if not verdict.target.available:
                continue
            rows += 1
            if verdict.verdict != j.UNVERIFIED:
                answered += 1
                by_basis[verdict.basis or "none"] += 1
        print(f"{name}: " + " ".join(f"{v.target.id}={v.verdict}" + (f"({v.basis})" if v.basis else "")
                                     for v in result.model_verdicts if v.target.available), flush=True)
    print(f"\n{len(args.models or corpus.names())} models x targets that exist: {rows} rows, "
          f"{time.perf_counter() - started:.1f} s")
    print(f"answered (not {j.UNVERIFIED}): {answered} = {100 * answered / rows:.1f} %")
    for basis, count in by_basis.most_common():
        print(f"  {basis:<12} {count:>5} = {100 * count / rows:5.1f} %")
    known = sum(count for basis, count in by_basis.items() if basis != getattr(j, "PREDICTED", None))
    print(f"without predictions: {known} = {100 * known / rows:.1f} %")
    return 0


def _loaded(model):
    from harness.scan.loading import load_model
    import tempfile
    import onnx

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.onnx"
        onnx.save(model, str(path))
        return load_model(path)


if __name__ == "__main__":
    sys.exit(main())
