"""Benchmark: the report and the trend page at scale, on generated (synthetic) records.

    python benchmarks/report_scale.py index [--cells 300] [--targets 15]
    python benchmarks/report_scale.py trend [--nights 365] [--series 12] [--cells 300] [--keep DIR]

``index``: a results file of CELLS case variants (in about 20 patterns) on TARGETS targets, its index.json, then
`python -m harness report`; prints the render time, the file size, where its bytes go, and its load time in headless
Chromium (navigation start to the end of the page's own script). Up to 15 targets come from matrix.yaml; more
(issue 21: 300 x 30) from a synthetic matrix of the 2026 platform lines (NGC releases on x86_64, JetPack 5/6/7 on
Orin with DLA, Thor where harness/matrix.py knows the platform, ONNX Runtime), passed with --matrix. Targets: under
3 MB, under 1 s. With --screenshots DIR the planning view is photographed at 1400 and 2560 px wide, in its default
view and with every group shown.

``trend``: NIGHTS nights of run directories, one per host kind, SERIES series (target @ host) of CELLS cells each,
added to a history store (validated and indexed once, as `history --add` does); then `python -m harness history`
renders the trend page in a fresh process; prints its wall time and peak memory. Targets: under 5 s and 500 MB for
a year (365 x 12 x 300). With --keep DIR the generated store is kept and reused by the next run.

Records are synthetic but shaped like real ones (built by harness.worker.record, about 2 KB each: environment,
per-node precision, metrics, a log excerpt for failures); nothing here is a result of any backend.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any, Iterator

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from harness.matrix import PLATFORMS, load_hosts, load_matrix  # noqa: E402
from harness.worker.record import build, failure  # noqa: E402

INDEX_SIZE_TARGET_MB, INDEX_LOAD_TARGET_S = 3.0, 1.0
TREND_TIME_TARGET_S, TREND_MEMORY_TARGET_MB = 5.0, 500.0
PATTERNS = [f"S{i}" for i in range(1, 6)] + [f"P{i}" for i in range(1, 14)] + ["control"]
ISSUE = "https://github.com/NVIDIA/TensorRT/issues/3640"
LOG = ("[TRT] [W] Missing scale and zero-point for tensor {node}_output_0, expect fall back to non-int8 implementation "
       "for any layer consuming or producing given tensor\n[TRT] [E] 10: Could not find any implementation for node "
       "{node} + PWN(PWN({node}/Sigmoid), {node}/Mul).\n[TRT] [E] 2: [builder.cpp::buildSerializedNetwork::751] Error "
       "Code 2: Internal Error (Assertion engine != nullptr failed. )\n")


def synthetic_index(cells: int) -> dict[str, Any]:
    """An index.json of ``cells`` variants spread over the patterns (each case: a failing form, two workarounds,
    sweeps), with upstream claims on a few TensorRT targets."""
    per_case = max(1, cells // (len(PATTERNS) + 1))
    cases, made = [], 0
    for number, pattern in enumerate(PATTERNS + ["control"]):
        case_id = f"{pattern.lower()}-case-{number}" if pattern != "control" else f"control-{number}"
        count = per_case if number < len(PATTERNS) else cells - made
        variants = []
        for index in range(count):
            role = "control" if pattern == "control" else (
                "failing" if index == 0 else "workaround" if index in (1, 2) else "sweep")
            claims = []
            if role == "failing":
                claims = [{"target": "trt86-orin", "outcome": "fail", "source": ISSUE, "strength": "issue-thread",
                           "category": "no-implementation", "note": ""},
                          {"target": "trt100-x86", "outcome": "pass", "source": ISSUE, "strength": "write-up-only",
                           "category": None, "note": ""}]
                # Upstream reports reach every TensorRT line: two more claims per pattern, in turn.
                for offset in (0, 11):
                    claimed = SYNTHETIC_TARGETS[(2 * number + offset) % len(SYNTHETIC_TARGETS)]
                    claims.append({"target": claimed[0], "outcome": ("pass", "fail")[(number + offset) % 2],
                                   "source": ISSUE, "strength": "issue-thread",
                                   "category": None if (number + offset) % 2 == 0 else "no-implementation",
                                   "note": ""})
            variants.append({"name": f"variant-{index:02d}", "role": role, "mode": "implicit-int8",
                             "description": f"{pattern} variant {index}: Conv({16 + index} channels, k3) -> "
                                            "activation, the form upstream reported with one knob moved.",
                             "claims": claims})
        made += count
        cases.append({"id": case_id, "title": f"{pattern}: synthetic pattern {number}", "pattern": pattern,
                      "links": [ISSUE], "backend_notes": {"onnxruntime": "ONNX Runtime has no analogue of the "
                                                          "TensorRT fusion this pattern is about."},
                      "remedy": f"Mark the activation's input as a graph output ({pattern}).", "variants": variants})
    return {"format": "trt-matrix/cases/1", "cases": cases}


def _cells(index: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(case["id"], variant) for case in index["cases"] for variant in case["variants"]]


def _environment(target, night: int) -> dict[str, Any]:
    version = target.version or "1.18.0"
    if target.backend == "tensorrt" and night >= 200:  # a backend update mid-year
        version = version.rsplit(".", 1)[0] + ".9"
    env = {"python": "3.10.12", "machine": "x86_64" if target.platform != "orin" else "aarch64",
           "os": "Linux-5.15.0-x86_64-with-glibc2.35", "cpu": "AMD EPYC 7763 64-Core Processor", "cpu_count": 16,
           "numpy": "1.26.4", "onnx": "1.16.1", "nv_tegra_release": None,
           "container_image": f"sha256:{zlib.crc32(target.id.encode()):08x}{'0' * 56} trt-matrix/{target.id}:latest",
           f"{target.backend}_version": version}
    env["gpus"] = [] if target.backend != "tensorrt" else [
        {"name": "NVIDIA A10", "compute_cap": "8.6", "driver_version": "550.54.15" if night < 100 else "555.42.02"}]
    return env


def _outcome(case_id: str, name: str, target_id: str, night: int) -> str:
    """A stable outcome per cell, with a few cells that change once, a few that flip, and rare infra errors."""
    seed = zlib.crc32(f"{case_id}/{name}@{target_id}".encode())
    base = ["pass"] * 11 + ["fallback"] * 5 + ["fail"] * 2 + ["mismatch", "crash"]
    outcome = base[seed % len(base)]
    if seed % 97 == 0 and night >= (seed % 300):
        outcome = "fail"  # a regression that stays
    if seed % 89 == 0 and (night + seed) % 3 == 0:
        outcome = "pass" if outcome != "pass" else "fail"  # a flaky cell
    if (seed + night * 7919) % 211 == 0:
        outcome = "infra-error"
    return outcome


def synthetic_record(case_id: str, variant: dict[str, Any], target, night: int, date: str,
                     provenance: dict[str, Any] | None = None) -> dict[str, Any]:
    """A finished record shaped like the worker's, for one synthetic cell on ``target`` in night ``night``."""
    if not target.available:
        outcome = "unavailable"
    else:
        outcome = _outcome(case_id, variant["name"], target.id, night)
    nodes = [f"/model.{i}/conv/Conv" for i in range(6)]
    cell = {"case": case_id, "variant": variant["name"], "mode": variant["mode"], "claims": variant["claims"],
            "expected_int8": nodes, "knobs": {"calibrator": "entropy2", "extra_outputs": [], "fp16": False,
                                              "layer_precisions": {}, "native_instancenorm": None,
                                              "precision_constraints": None, "strongly_typed": False}}
    reached = outcome in ("pass", "fallback", "mismatch")
    fallback = nodes[: 1 + zlib.crc32(variant["name"].encode()) % 3] if outcome == "fallback" else []
    metrics = None
    if reached:
        cosine = 0.9999 if outcome != "mismatch" else 0.71
        metrics = {"cosine": cosine, "max_abs_error": 0.0123, "sqnr_db": 38.5, "within_tolerance": outcome != "mismatch",
                   "tolerance": {"min_cosine": 0.999, "max_abs_error": 0.06, "reason": "INT8 of one conv against the "
                                 "FP32 reference: two quantization steps of the output, times the weight range."},
                   "outputs": {"output": {"cosine": cosine, "max_abs_error": 0.0123, "sqnr_db": 38.5}}}
    fail = None
    if outcome in ("fail", "crash"):
        fail = failure("no-implementation" if outcome == "fail" else "crash",
                       f"Could not find any implementation for node {nodes[0]} + PWN(PWN(Sigmoid), Mul)", nodes[0])
    elif outcome == "infra-error":
        fail = failure("harness", "the container was removed before its records were read", None)
    elif outcome == "unavailable":
        fail = failure("unavailable", target.reason or "cannot exist on this target", None)
    record = build(cell, {"id": target.id, "backend": target.backend}, outcome=outcome,
                   stage="compare" if reached else "build", duration_s=1.25,
                   started_at=f"{date}T02:{night % 60:02d}:00+00:00", environment=_environment(target, night),
                   failure=fail, precision={n: ("fp32" if n in fallback else "int8") for n in nodes} if reached else None,
                   fallback_nodes=fallback, metrics=metrics, warnings={"missing-scale": 3} if fallback else None,
                   log=LOG.format(node=nodes[0]) if fail else None, backend_time_s=0.9,
                   details={"unverified_nodes": [], "fallback_precision": {}})
    if provenance is not None:
        record["provenance"] = provenance
    return record


# (id, platform, version, base image, JetPack of the title, DLA, why it cannot exist): the 2026 platform lines, most
# wanted first. Synthetic: these facts shape the page, they are not the matrix (matrix.yaml is).
_NGC = "nvcr.io/nvidia/tensorrt:{}-py3"
_L4T = "nvcr.io/nvidia/l4t-jetpack:r{}"
_NO_DLA = "DLA is not in this TensorRT release on this platform"
SYNTHETIC_TARGETS = [
    ("trt86-x86", "x86_64", "8.6.1", _NGC.format("23.11"), None, False, None),
    ("trt103-x86", "x86_64", "10.3.0", _NGC.format("24.08"), None, False, None),
    ("trt107-x86", "x86_64", "10.7.0", _NGC.format("24.12"), None, False, None),
    ("trt1013-x86", "x86_64", "10.13.3", _NGC.format("25.11"), None, False, None),
    ("trt1016-x86", "x86_64", "10.16.1", _NGC.format("26.02"), None, False, None),
    ("trt114-x86", "x86_64", "11.4.0", _NGC.format("26.10"), None, False, None),
    ("trt85-orin", "orin", "8.5.2", _L4T.format("35.4.1"), "5.1.2", False, None),
    ("trt86-orin", "orin", "8.6.2", _L4T.format("36.3.0"), "6.0", False, None),
    ("trt103-orin", "orin", "10.3.0", _L4T.format("36.4.0"), "6.1", False, None),
    ("trt107-orin", "orin", "10.7.0", _L4T.format("36.4.3"), "6.2", False, None),
    ("trt1016-orin", "orin", "10.16.1", _L4T.format("39.2.0"), "7.2", False, None),
    ("trt114-orin", "orin", "11.4.1", _L4T.format("39.2.2"), "7.2.2", False, None),
    ("trt103-orin-dla", "orin", "10.3.0", _L4T.format("36.4.0"), "6.1", True, None),
    ("trt107-orin-dla", "orin", "10.7.0", _L4T.format("36.4.3"), "6.2", True, None),
    ("trt1016-orin-dla", "orin", "10.16.1", _L4T.format("39.2.0"), "7.2", True, _NO_DLA),
    ("trt114-orin-dla", "orin", "11.4.1", _L4T.format("39.2.2"), "7.2.2", True, None),
    ("trt1013-thor", "thor", "10.13.3", _L4T.format("38.2.0"), "7.0", False, None),
    ("trt1013-thor-jp71", "thor", "10.13.3", _L4T.format("38.4.0"), "7.1", False, None),
    ("trt1016-thor", "thor", "10.16.1", _L4T.format("39.2.0"), "7.2", False, None),
    ("trt114-thor", "thor", "11.4.1", _L4T.format("39.2.2"), "7.2.2", False, None),
    ("trt100-x86", "x86_64", "10.0.1", _NGC.format("24.05"), None, False, None),
    ("trt102-x86", "x86_64", "10.2.0", _NGC.format("24.07"), None, False, None),
    ("trt105-x86", "x86_64", "10.5.0", _NGC.format("24.10"), None, False, None),
    ("trt108-x86", "x86_64", "10.8.0", _NGC.format("25.01"), None, False, None),
    ("trt1011-x86", "x86_64", "10.11.0", _NGC.format("25.06"), None, False, None),
    ("trt100-orin", "orin", "10.0.1", _L4T.format("36.3.0"), "6.0", False, None),
    ("trt92-orin", "orin", "9.2.0", None, None, False, "TensorRT 9.x was never released for Jetson"),
    ("trt1015-x86", "x86_64", "10.15.1", _NGC.format("26.01"), None, False, None),
    ("trt1014-x86", "x86_64", "10.14.1", _NGC.format("25.12"), None, False, None),
    ("trt1010-x86", "x86_64", "10.10.0", _NGC.format("25.05"), None, False, None),
    ("trt109-x86", "x86_64", "10.9.0", _NGC.format("25.03"), None, False, None),
]
_ORT_TARGETS = [("ort1.20-cpu", "1.20.1"), ("ort1.31-cpu", "1.31.1")]


def synthetic_matrix(count: int) -> dict[str, Any]:
    """A matrix.yaml body of ``count`` targets: ort-cpu, two ONNX Runtime releases and the first TensorRT targets of
    SYNTHETIC_TARGETS whose platform harness/matrix.py accepts."""
    targets: dict[str, Any] = {"ort-cpu": {"title": "ONNX Runtime (CPU), harness Python", "backend": "onnxruntime",
                                           "runner": "local", "platform": "any", "default": True}}
    for target_id, version in _ORT_TARGETS:
        targets[target_id] = {"title": f"ONNX Runtime {version} (CPU) in a container", "backend": "onnxruntime",
                              "runner": "docker", "platform": "x86_64", "version": version, "recipe": "ort-cpu",
                              "base_image": "python:3.11-slim", "python": "3.11", "glibc": "2.36"}
    usable = [t for t in SYNTHETIC_TARGETS if t[1] in PLATFORMS]
    for target_id, platform, version, image, jetpack, dla, reason in usable[:max(0, count - len(targets))]:
        where = {"x86_64": "x86_64", "orin": "Jetson AGX Orin", "thor": "Jetson Thor"}[platform]
        title = f"TensorRT {version} on {where}" + (" DLA core 0, GPU fallback" if dla else "")
        if image:
            title += f" ({'JetPack ' + jetpack + ', ' if jetpack else ''}{image.rsplit('/', 1)[-1]})"
        body = {"title": title, "backend": "tensorrt", "runner": "docker", "platform": platform, "version": version}
        if reason:
            body.update(available=False, reason=reason)
        else:
            body.update(recipe="tensorrt", base_image=image, python="3.12", glibc="2.39",
                        gpu="all-gpus" if platform == "x86_64" else "nvidia-runtime")
        targets[target_id] = body
    return {"targets": targets}


def write_index_inputs(out: Path, cells: int, targets: int) -> tuple[Path, Path, Path | None]:
    """out/cases/index.json, out/results.jsonl and (beyond matrix.yaml's 15 targets) out/matrix.yaml for the index
    benchmark."""
    index = synthetic_index(cells)
    (out / "cases").mkdir(parents=True, exist_ok=True)
    (out / "cases" / "index.json").write_text(json.dumps(index))
    matrix_path = None
    if targets > 15:
        import yaml

        matrix_path = out / "matrix.yaml"
        matrix_path.write_text(yaml.safe_dump(synthetic_matrix(targets), sort_keys=False))
    chosen = list((load_matrix(matrix_path) if matrix_path else load_matrix()).values())[:targets]
    with (out / "results.jsonl").open("w") as results:
        for target in chosen:
            if target.id == "trt-local":
                continue  # a local target is a developer's, never in a published matrix
            for case_id, variant in _cells(index):
                record = synthetic_record(case_id, variant, target, 0, "2026-11-23")
                results.write(json.dumps(record, sort_keys=True) + "\n")
    return out / "cases", out / "results.jsonl", matrix_path


def _series_hosts(count: int) -> list[tuple[str, str, list]]:
    """(host kind, host name, targets) for the first ``count`` targets of matrix.yaml's host kinds."""
    matrix, chosen, left = load_matrix(), [], count
    for kind, host in load_hosts().items():
        targets = [matrix[t] for t in host.targets if matrix[t].available][:left]
        if targets:
            chosen.append((kind, f"{kind}-01", targets))
            left -= len(targets)
        if not left:
            break
    return chosen


def write_history_nights(root: Path, nights: int, series: int, cells: int, start: str = "2026-01-01") -> int:
    """``nights`` nights of run directories under ``root`` (one per host kind); returns the records written."""
    index = synthetic_index(cells)
    pairs = _cells(index)
    written = 0
    first = datetime.date.fromisoformat(start)
    hosts = _series_hosts(series)
    for night in range(nights):
        date = (first + datetime.timedelta(days=night)).isoformat()
        for kind, host, targets in hosts:
            run = f"{date}_{host}_lib.0123456789ab"
            run_dir = root / run
            run_dir.mkdir(parents=True, exist_ok=True)
            manifest = {"format": "trt-matrix/run/1", "id": run, "host": host, "host_kind": kind, "date": date,
                        "revision": "lib.0123456789ab", "started_at": f"{date}T02:00:00+00:00",
                        "finished_at": f"{date}T03:00:00+00:00", "status": "finished",
                        "targets": [t.id for t in targets]}
            (run_dir / "run.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
            (run_dir / "cases-index.json").write_text(json.dumps(index))
            with (run_dir / "results.jsonl").open("w") as results:
                for target in targets:
                    for case_id, variant in pairs:
                        carried = night > 0 and zlib.crc32(f"{case_id}{variant['name']}{night}".encode()) % 10 != 0
                        provenance = {"run": run, "host": host,
                                      "carried_over_from": f"{first.isoformat()}_{host}_lib.0123456789ab"
                                      if carried else None}
                        record = synthetic_record(case_id, variant, target, night, date, provenance)
                        results.write(json.dumps(record, sort_keys=True) + "\n")
                        written += 1
    return written


def _chromium(width: int = 1400, height: int = 1000):
    """Headless Chromium through chromedriver, kept off the network (no background services, updates or sync)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                     "--disable-component-update", "--disable-sync", "--no-first-run",
                     f"--window-size={width},{height}"):
        options.add_argument(argument)
    return webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"),
                            options=options)


def _chromium_load_seconds(page: Path) -> float:
    """Navigation start to the end of the page's load event, and of its own script's work, in headless Chromium."""
    driver = _chromium()
    try:
        driver.get(page.resolve().as_uri())
        timing = driver.execute_script(
            "var t = performance.timing; return [t.navigationStart, t.loadEventEnd, "
            "(window.trtReady || t.loadEventEnd)];")
        return (max(timing[1], timing[2]) - timing[0]) / 1000
    finally:
        driver.quit()


def page_parts(html: str) -> dict[str, int]:
    """Bytes of the page by part: the embedded evidence, the planning view, the per-target summary, the full matrix,
    the script, the rest."""
    parts: dict[str, int] = {}
    marks = [("evidence", '<script type="application/octet-stream" id="evidence"', "</script>"),
             ("planning view", '<section id="plan">', "</section>"),
             ("per-target summary", '<section id="summary">', "</section>"),
             ("full matrix", '<div class="matrix-wrap">', "</table>"),
             ("script", "<script>", "</script>")]
    for name, start, end in marks:
        begin = html.find(start)
        if begin >= 0:  # the matrix is the page's last table (its headers hold tables of their own)
            finish = html.rindex(end) if name == "full matrix" else html.index(end, begin)
            parts[name] = len(html[begin:finish + len(end)].encode())
    parts["rest"] = len(html.encode()) - sum(parts.values())
    return parts


def render_index(work: Path, cells: int, targets: int, observe: set[str] | None = None) -> tuple[Path, int, float]:
    """The report of a synthetic night (records only on ``observe`` when given); returns its path, the records in
    it and the render time of the `report` command."""
    cases_dir, results, matrix_path = write_index_inputs(work, cells, targets)
    if observe is not None:
        kept = [line for line in results.read_text().splitlines() if json.loads(line)["target"] in observe]
        results.write_text("\n".join(kept) + "\n")
    out = work / "index.html"
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "harness", *(["--matrix", str(matrix_path)] if matrix_path else []),
                    "report", "--results", str(results), "--cases", str(cases_dir), "--out", str(out)],
                   check=True, cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True)
    return out, sum(1 for _ in results.open()), time.perf_counter() - started


def bench_index(args) -> bool:
    work = Path(tempfile.mkdtemp(prefix="trt-matrix-index-bench-"))
    out, cells, render_s = render_index(work, args.cells, args.targets)
    size_mb = out.stat().st_size / 1e6
    load_s = min(_chromium_load_seconds(out) for _ in range(3))
    print(f"index: {args.cells} cells x {args.targets} targets ({cells} records): rendered in {render_s:.2f} s "
          f"(fresh process), {size_mb:.2f} MB ({size_mb * 1e6 / max(cells, 1):.0f} bytes per record), "
          f"loads in {load_s:.2f} s in headless Chromium (best of 3; load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} CPUs: a busy machine measures slower)")
    print("bytes: " + ", ".join(f"{name} {size / 1e6:.2f} MB" for name, size in
                                page_parts(out.read_text(encoding="utf-8")).items()))
    ok = size_mb < INDEX_SIZE_TARGET_MB and load_s < INDEX_LOAD_TARGET_S
    print(f"targets: < {INDEX_SIZE_TARGET_MB} MB, < {INDEX_LOAD_TARGET_S} s: {'met' if ok else 'MISSED'}")
    if args.screenshots:
        # A lab's night: records on ONNX Runtime and a few TensorRT hosts, upstream claims elsewhere.
        shots = Path(tempfile.mkdtemp(prefix="trt-matrix-shots-"))
        page, _, _ = render_index(shots, args.cells, args.targets, observe=set(LAB_TARGETS))
        for path in screenshot_plan(page, args.screenshots):
            print(f"screenshot: {path}")
        shutil.rmtree(shots, ignore_errors=True)
    shutil.rmtree(work, ignore_errors=True)
    return ok


LAB_TARGETS = ("ort-cpu", "trt86-orin", "trt103-orin", "trt1016-x86", "trt103-x86")


def screenshot_plan(page: Path, directory: Path) -> list[Path]:
    """PNGs of the planning view at 1400 and 2560 px wide, in the default view and with every group shown."""
    from selenium.webdriver.common.by import By

    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for width in (1400, 2560):
        driver = _chromium(width, 1300)
        try:
            driver.get(page.resolve().as_uri())
            driver.execute_script("document.getElementById('plan').scrollIntoView()")
            for view in ("default", "all"):
                if view == "all":
                    driver.find_element(By.ID, "plan-show-all").click()
                path = directory / f"planning-view-{width}-{view}.png"
                driver.find_element(By.ID, "plan").screenshot(str(path))
                written.append(path)
        finally:
            driver.quit()
    return written


def _peak_child_mb() -> float:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def bench_trend(args) -> bool:
    from harness.store.history import HistoryStore

    work = args.keep or Path(tempfile.mkdtemp(prefix="trt-matrix-trend-bench-"))
    store = work / "history"
    stamp = work / "generated.json"
    wanted = {"nights": args.nights, "series": args.series, "cells": args.cells}
    if not stamp.is_file() or json.loads(stamp.read_text()) != wanted:
        shutil.rmtree(store, ignore_errors=True)
        started = time.perf_counter()
        records = write_history_nights(store, args.nights, args.series, args.cells)
        print(f"generated {records} records in {args.nights} nights: {time.perf_counter() - started:.1f} s")
        stamp.write_text(json.dumps(wanted))
    started = time.perf_counter()
    HistoryStore(store).close()  # indexes the run directories it lacks (all, the first time), each validated once
    added = time.perf_counter() - started
    print(f"indexing the history store (each record validated once, when its run is added): {added:.1f} s"
          + (f", {added / args.nights:.2f} s per night" if added > 1 else " (already indexed)"))
    out = work / "trend.html"
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "harness", "history", str(store), "--out", str(out)],
                          cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode not in (0, 1, 3):  # 1: a regression, 3: damage or gone cells; both still write the page
        print(done.stdout[-2000:], done.stderr[-2000:])
        return False
    peak = _peak_child_mb()
    print(f"trend: {args.nights} nights x {args.series} series x {args.cells} cells: `history` took {wall:.2f} s, "
          f"peak memory {peak:.0f} MB, page {out.stat().st_size / 1e6:.2f} MB (exit {done.returncode})")
    ok = wall < TREND_TIME_TARGET_S and peak < TREND_MEMORY_TARGET_MB
    print(f"targets: < {TREND_TIME_TARGET_S} s, < {TREND_MEMORY_TARGET_MB} MB: {'met' if ok else 'MISSED'}")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    p = sub.add_parser("index", help="the compatibility matrix page")
    p.add_argument("--cells", type=int, default=300)
    p.add_argument("--targets", type=int, default=30)
    p.add_argument("--screenshots", type=Path, metavar="DIR",
                   help="also write PNGs of the planning view (1400 and 2560 px; default view, all shown) to DIR")
    p = sub.add_parser("trend", help="the trend page of a history store")
    p.add_argument("--nights", type=int, default=365)
    p.add_argument("--series", type=int, default=12)
    p.add_argument("--cells", type=int, default=300)
    p.add_argument("--keep", type=Path, help="keep (and reuse) the generated history store in this directory")
    args = parser.parse_args()
    ok = bench_index(args) if args.what == "index" else bench_trend(args)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
