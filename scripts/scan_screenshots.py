"""The "after" screenshots of scan.html in docs/screenshots/: the page of two models, scanned with the default targets
and no results, photographed in headless Chromium at a laptop's 1366x768 and a phone's 390x844.

    python scripts/scan_screenshots.py                 # writes docs/screenshots/scan-*-after-*.png
    python scripts/scan_screenshots.py --out DIR       # elsewhere, to compare

The models: the corpus's QAT ResNet-18 (corpus/models/resnet18-qat-pq-ts-op13, README's "your model") and the
FP32 YOLO-style backbone of the tests (tests/models/backbone.py, SiLU, no Q/DQ: S1 on TensorRT 8.6 on Orin, P10's
refusal from TensorRT 11). Each is scanned by its file name from a scratch directory, so the page's title names the
file, not the scratch path. The YOLO page is also photographed 1600 pixels tall (``-desktop-grid``): the answer and the
findings x targets grid on one picture. Look at every picture after writing it.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

SIZES = {"desktop": (1366, 768), "phone": (390, 844)}
GRID_HEIGHT = 1600  # the YOLO page's answer and grid, at the laptop's width


def models(work: Path) -> dict[str, Path]:
    """The two models, written into ``work``: picture name -> model file."""
    import onnx

    import corpus
    from tests.models import backbone

    yolo = work / "backbone-silu-fp32.onnx"
    onnx.save(backbone.build(qdq=False), yolo)
    return {"scan-resnet18-qat": corpus.save("resnet18-qat-pq-ts-op13", work), "scan-yolo-fp32": yolo}


def scan_page(model: Path, out: Path) -> Path:
    """scan.html of ``model`` (default targets, no results), by the real command run from the model's directory."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}  # this checkout's harness, whatever is installed
    process = subprocess.run([sys.executable, "-m", "harness", "scan", model.name, "--out", str(out)], cwd=model.parent,
                             env=env, capture_output=True, text=True, timeout=300)
    if process.returncode not in (0, 1):  # 1: expected to fail on a target, the YOLO backbone's answer
        raise SystemExit(f"scan of {model.name} exited {process.returncode}:\n{process.stderr}")
    return out / "scan.html"


def photograph(page: Path, picture: Path, width: int, height: int) -> None:
    """``page`` in headless Chromium with a ``width`` x ``height`` viewport, scrolled to the top, as a PNG."""
    from tests.reports.test_browser import chromium

    driver = chromium(javascript=True, width=width)
    try:
        driver.set_window_size(width, height)
        inner = driver.execute_script("return [window.innerWidth, window.innerHeight]")
        driver.set_window_size(2 * width - inner[0], 2 * height - inner[1])  # the viewport, not the window, as asked
        driver.get(page.as_uri())
        driver.save_screenshot(str(picture))
    finally:
        driver.quit()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "screenshots", help="where the PNGs go")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        for name, model in models(work).items():
            page = scan_page(model, work / name)
            for size, (width, height) in SIZES.items():
                photograph(page, args.out / f"{name}-after-{size}.png", width, height)
                print(args.out / f"{name}-after-{size}.png")
            if name == "scan-yolo-fp32":
                photograph(page, args.out / f"{name}-after-desktop-grid.png", SIZES["desktop"][0], GRID_HEIGHT)
                print(args.out / f"{name}-after-desktop-grid.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
