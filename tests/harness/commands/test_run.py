"""`python -m harness report`, black-box: the report reads the case index of --cases (never the case library's
code) and shows its remedies, backend notes and claims."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import REPO
from tests.harness.commands.test_main import harness
from tests.reports.conftest import ISSUE, make_record, write_jsonl

NOTE = "ONNX Runtime has no analogue of the Conv + PWN fusion: a pass here says nothing about TensorRT."
REMEDY = "Mark /model.0/act/Sigmoid's output as a network output: it breaks the fusion."


def cases_dir(tmp_path):
    """A cases directory holding only an index.json (all the report reads) with one S1 case."""
    index = {"format": "trt-matrix/cases/1", "cases": [{
        "id": "s1-conv-silu", "title": "YOLO stem Conv + SiLU", "pattern": "S1", "links": [ISSUE],
        "backend_notes": {"onnxruntime": NOTE}, "remedy": REMEDY,
        "variants": [
            {"name": "as-reported", "role": "failing", "description": "the stem as reported", "mode": "implicit-int8",
             "claims": [{"target": "trt86-orin", "outcome": "fail", "source": ISSUE, "strength": "issue-thread",
                         "category": "no-implementation", "note": ""}]},
            {"name": "sigmoid-output-marked", "role": "workaround", "description": "the workaround",
             "mode": "implicit-int8", "claims": []}]}]}
    out = tmp_path / "cases"
    out.mkdir()
    (out / "index.json").write_text(json.dumps(index))
    return out


def test_the_report_shows_the_index_remedy_claims_and_backend_notes(tmp_path):
    results = write_jsonl(tmp_path / "r.jsonl", [make_record("s1-conv-silu", "as-reported", "ort-cpu")])
    harness("report", "--results", str(results), "--cases", str(cases_dir(tmp_path)), "--out", str(tmp_path / "i.html"))
    html = (tmp_path / "i.html").read_text()
    assert REMEDY.replace("'", "&#39;") in html and ISSUE in html and "YOLO stem Conv + SiLU" in html
    assert NOTE in html and "ℹ ONNX Runtime note" in html


def test_a_missing_index_is_a_usage_error_naming_the_file(tmp_path):
    results = write_jsonl(tmp_path / "r.jsonl", [make_record("s1-conv-silu", "as-reported", "ort-cpu")])
    result = harness("report", "--results", str(results), "--cases", str(tmp_path / "nowhere"), "--out",
                     str(tmp_path / "i.html"), check=False)
    assert result.returncode == 2 and f"{tmp_path / 'nowhere' / 'index.json'}: no such file" in result.stderr
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "index.json").write_text(json.dumps({"format": "trt-matrix/cases/1", "cases": [{"id": "x"}]}))
    result = harness("report", "--results", str(results), "--cases", str(broken), "--out", str(tmp_path / "i.html"),
                     check=False)
    assert result.returncode == 2 and "cases[0] (x): field 'title' must be a str, found missing" in result.stderr
    assert "Traceback" not in result.stderr


def test_rendering_never_imports_the_case_library(tmp_path):
    results = write_jsonl(tmp_path / "r.jsonl", [make_record("s1-conv-silu", "as-reported", "ort-cpu")])
    script = (f"import sys; from reports.html import build_report; "
              f"build_report([{str(results)!r}], {str(tmp_path / 'i.html')!r}, {str(cases_dir(tmp_path))!r}); "
              f"print(sorted(m for m in sys.modules if m.split('.')[0] in ('cases', 'onnx_graphsurgeon')))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO, check=True,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert done.stdout.strip() == "[]"
