"""Records that satisfy harness/record.schema.json, the targets and rows of a small matrix, writers of results files
and run directories, and a small HTML tree for assertions on what a page shows."""
from __future__ import annotations

import dataclasses
import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from harness.matrix import Target
from harness import judgement
from harness.worker.record import build, failure
from reports.case_index import VariantRow

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "harness" / "store" / "record.schema.json").read_text())
ISSUE = "https://github.com/NVIDIA/TensorRT/issues/3640"
WRITEUP = "https://example.org/write-up"
ENVIRONMENTS = {
    "onnxruntime": {"python": "3.11.9", "machine": "x86_64", "cpu": "Test CPU", "onnxruntime_version": "1.18.0",
                    "gpus": []},
    "tensorrt": {"python": "3.10.12", "machine": "aarch64", "cpu": "ARMv8", "tensorrt_version": "8.6.2",
                 "gpus": [{"name": "Orin", "compute_cap": "8.7", "driver_version": "540.3.0"}]},
}
TARGETS = {
    "ort-cpu": Target(id="ort-cpu", title="ONNX Runtime (CPU)", backend="onnxruntime", runner="local", platform="any"),
    "trt86-orin": Target(id="trt86-orin", title="TensorRT 8.6.2 on Orin", backend="tensorrt", runner="docker",
                         platform="orin", version="8.6.2", recipe="trt86-orin", gpu="nvidia-runtime"),
    "trt92-orin": Target(id="trt92-orin", title="TensorRT 9.2 on Orin", backend="tensorrt", runner="docker",
                         platform="orin", version="9.2.0", available=False,
                         reason="TensorRT 9.x was never released for Jetson."),
    "trt100-orin": Target(id="trt100-orin", title="TensorRT 10.0.1 on Orin", backend="tensorrt", runner="docker",
                          platform="orin", version="10.0.1", recipe="trt100-orin", gpu="nvidia-runtime"),
}


def claim(target: str, outcome: str, strength: str = "issue-thread", category: str | None = None,
          source: str = ISSUE, note: str = "") -> dict[str, Any]:
    return {"target": target, "outcome": outcome, "source": source, "strength": strength, "category": category,
            "note": note}


ROWS = [
    VariantRow(case="s1-conv-silu", case_title="Conv + SiLU under implicit INT8", case_links=(ISSUE,), pattern="S1",
               variant="stem", role="failing", description="YOLO stem, 16 channels.", mode="implicit-int8",
               claims=(claim("trt86-orin", "fail", category="no-implementation"),
                       claim("trt100-orin", "pass", strength="write-up-only", source=WRITEUP))),
    VariantRow(case="s1-conv-silu", case_title="Conv + SiLU under implicit INT8", case_links=(ISSUE,), pattern="S1",
               variant="split-output", role="workaround", description="Conv output marked as a network output.",
               mode="implicit-int8"),
    VariantRow(case="control-qdq", case_title="Control: Q/DQ Conv + ReLU", case_links=(), pattern="control",
               variant="conv-relu", role="control", description="The plainest Q/DQ conv.", mode="explicit-qdq"),
]


def make_record(case: str, variant: str, target: str, outcome: str = "pass", *, stage: str | None = None,
                claims: tuple[dict[str, Any], ...] = (), fail: tuple[str, str, str | None] | None = None,
                precision: dict[str, str] | None = None, fallback_nodes: list[str] | None = None,
                cosine: float | None = 0.99991, sqnr_db: float | None = 41.25, log: str | None = None,
                env_mismatch: str | None = None, duration_s: float = 1.5,
                provenance: dict[str, Any] | None = None) -> dict[str, Any]:
    """A finished record, built the way the worker builds it, checked against the record schema."""
    backend = TARGETS[target].backend if target in TARGETS else "tensorrt"
    cell = {"case": case, "variant": variant, "mode": "implicit-int8", "knobs": {"calibrator": "entropy2"},
            "expected_int8": ["/model.0/conv/Conv"], "claims": list(claims)}
    reached = judgement.meaning(outcome).ran
    metrics = None
    if reached:
        tolerance = {"min_cosine": 0.99, "max_abs_error": 0.25, "reason": "test tolerance"}
        metrics = {"cosine": cosine, "max_abs_error": 0.01, "sqnr_db": sqnr_db,
                   "within_tolerance": outcome != "mismatch", "tolerance": tolerance}
    record = build(
        cell, {"id": target, "backend": backend}, outcome=outcome, stage=stage or ("compare" if reached else "build"),
        duration_s=duration_s, environment=ENVIRONMENTS[backend], failure=failure(*fail) if fail else None,
        precision=precision if precision is not None else ({"/model.0/conv/Conv": "int8"} if reached else None),
        fallback_nodes=fallback_nodes, metrics=metrics, log=log, env_mismatch=env_mismatch,
        details={"unverified_nodes": ["/model.0/conv/Conv"]} if outcome == "unverified" else None,
    )
    if provenance is not None:
        record["provenance"] = provenance
    jsonschema.validate(record, SCHEMA)
    return record


def write_jsonl(path: Path, records: list[dict[str, Any]], tail: str = "") -> Path:
    """Write ``records`` one per line, then ``tail`` verbatim (e.g. a line cut off by a crash)."""
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + tail)
    return path


def write_run(root: Path, run_id: str, host: str, started_at: str, records: list[dict[str, Any]],
              tail: str = "") -> Path:
    """A finished run directory ``root/run_id`` as `harness nightly` leaves it: run.json and results.jsonl."""
    run_dir = root / run_id
    run_dir.mkdir(parents=True)
    manifest = {"format": "trt-matrix/run/1", "id": run_id, "host": host, "started_at": started_at,
                "status": "finished"}
    (run_dir / "run.json").write_text(json.dumps(manifest))
    write_jsonl(run_dir / "results.jsonl", records, tail)
    return run_dir


@dataclasses.dataclass
class Element:
    """An HTML element as parsed: tag, attributes, children (elements and text, in order)."""

    tag: str
    attrs: dict[str, str | None]
    children: list[Element | str] = dataclasses.field(default_factory=list)

    @property
    def classes(self) -> set[str]:
        return set((self.attrs.get("class") or "").split())

    @property
    def text(self) -> str:
        """The text a reader sees, whitespace collapsed."""
        return " ".join(self._raw_text().split())

    def _raw_text(self) -> str:
        return "".join(child if isinstance(child, str) else child._raw_text() for child in self.children)

    def find_all(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> list[Element]:
        """Descendants with ``tag``, class ``cls`` and data attributes ``attrs`` (data_kind="x" means data-kind="x")."""
        wanted = {name.replace("_", "-"): value for name, value in attrs.items()}
        found = []
        for child in self.children:
            if isinstance(child, Element):
                if ((tag is None or child.tag == tag) and (cls is None or cls in child.classes)
                        and all(child.attrs.get(name) == value for name, value in wanted.items())):
                    found.append(child)
                found += child.find_all(tag, cls, **attrs)
        return found

    def find(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> Element:
        """The only descendant that matches; fails the test when there is none or several."""
        [found] = self.find_all(tag, cls, **attrs)
        return found


VOID_TAGS = {"meta", "br", "hr", "img", "input", "link"}


class TreeBuilder(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Element("document", {})
        self._open = [self.root]

    def handle_starttag(self, tag, attrs):
        element = Element(tag, dict(attrs))
        self._open[-1].children.append(element)
        if tag not in VOID_TAGS:
            self._open.append(element)

    def handle_endtag(self, tag):
        if any(element.tag == tag for element in self._open[1:]):
            while self._open.pop().tag != tag:
                pass

    def handle_data(self, data):
        self._open[-1].children.append(data)


def parse_html(html: str) -> Element:
    builder = TreeBuilder()
    builder.feed(html)
    return builder.root


@pytest.fixture
def sample_records() -> list[dict[str, Any]]:
    """One matrix's worth of records: every kind of cell a user can meet."""
    s1_claims = ROWS[0].claims
    return [
        make_record("s1-conv-silu", "stem", "ort-cpu"),
        make_record("s1-conv-silu", "stem", "trt86-orin", "fail", claims=s1_claims,
                    fail=("no-implementation", "Could not find any implementation for node <b>&amp", "/model.0/<b>&"),
                    log="[TRT] [E] 10: <script>alert(1)</script>\nbuild failed"),
        make_record("s1-conv-silu", "split-output", "ort-cpu", "fallback", fallback_nodes=["/model.0/conv/Conv"],
                    precision={"/model.0/conv/Conv": "fp32", "/model.0/act/Mul": "fp32"}, cosine=0.9993, sqnr_db=None),
        make_record("s1-conv-silu", "split-output", "trt86-orin", "mismatch", cosine=0.71, sqnr_db=3.2,
                    env_mismatch="nominal version 8.6.2, observed 8.6.1"),
        make_record("control-qdq", "conv-relu", "ort-cpu"),
        make_record("control-qdq", "conv-relu", "trt86-orin", "crash", stage="infer",
                    fail=("crash", "The cell's process was killed by signal 11 (SIGSEGV).", None)),
    ]
