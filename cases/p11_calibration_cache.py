"""P11: a calibration cache carries the TensorRT version that wrote it; reusing it on another version.

A TensorRT calibration cache is text: a header ``TRT-<version code>-<algorithm>`` (``TRT-8601-EntropyCalibration2``
from 8.6.1, ``TRT-100700-MinMaxCalibration`` from 10.7.0) and one ``tensor: <float32 scale as 8 hex digits>`` line per
tensor. Upstream facts:

* https://github.com/NVIDIA/TensorRT/issues/1378 (TensorRT 7.2): asked whether a 7.2.1 cache works with 7.2.3, a
  maintainer: hand it to the calibrator's ``read_calibration_cache``, TensorRT skips the file if it is incompatible.
* https://github.com/NVIDIA/retinanet-examples/issues/261: an NVIDIA developer: the cache holds the version of the
  TensorRT that wrote it, and the scales depend on the calibration batches.
* https://github.com/NVIDIA/Deep-Learning-Accelerator-SW/issues/26: ``trtexec --int8 --calib=<cache>`` on TensorRT
  10.3.0 with a ``TRT-8600-EntropyCalibration2`` cache fails (``Tensor "input" is bound to nullptr``): trtexec has no
  data to calibrate with once the cache is not used.

The caches these variants hand over are written by the harness (harness.worker.trt.calibration_cache) in that format,
with MinMax-style scales (largest absolute value / 127 over the calibration batches, from the reference evaluation)
and the header the variant names. They were not written by the TensorRT version in their header: what a variant
tests is how a TensorRT treats a cache whose header names another version or another algorithm. The record says
whether TensorRT used the cache (the file was left as it was) or calibrated again (it was rewritten with the running
version's header).
"""
from __future__ import annotations

from cases import _graphs as g
from cases._graphs import gs
from cases.model import Built, Case, Claim, Knobs, Scope, Tolerance, Variant
from harness.judgement.claims import Conditions

INCOMPATIBLE_SKIPPED = "https://github.com/NVIDIA/TensorRT/issues/1378"
CACHE_HOLDS_VERSION = "https://github.com/NVIDIA/retinanet-examples/issues/261"
OLD_CACHE_ON_10_3 = "https://github.com/NVIDIA/Deep-Learning-Accelerator-SW/issues/26"

CHANNELS, SIZE = 16, 16
CONVS = ("/conv1/Conv", "/conv2/Conv")
OLD_CACHE = ("8.6.0", "EntropyCalibration2")  # the header of the 10.3.0 report


class CalibrationCache(Case):
    # No `find`: the pattern is in the cache file and the TensorRT version that wrote it, not in the graph's structure
    # (any model built with a calibrator has a cache). harness/tensorrt/calibration_cache.py reads a
    # cache file and names its version.
    id = "p11-calibration-cache"
    title = "Reusing a calibration cache whose header names another TensorRT version (or algorithm)"
    pattern = "P11"
    evidence_files = ("calibration-cache",)  # a cache's header names the version that wrote it: diagnose reads it
    links = (INCOMPATIBLE_SKIPPED, CACHE_HOLDS_VERSION, OLD_CACHE_ON_10_3)
    mode = "implicit-int8"
    opset = 17
    tolerance = Tolerance(
        min_cosine=0.99,
        max_abs_error=1.0,
        reason=(
            "INT8 against the FP32 reference: two Conv 3x3 + ReLU on N(0, 1) inputs, outputs in about [0, 4]. A cache "
            "with MinMax scales (no clipping) or a fresh calibration each stays well inside 1.0 (a quarter of the "
            "range); ONNX Runtime's quantize_static gave at most 0.17 off and cosine > 0.9997 on every variant."
        ),
    )
    variants = (
        Variant(
            name="old-cache-only",
            range_claims=(Claim(
                outcome="fail", source=INCOMPATIBLE_SKIPPED, strength="issue-thread",
                scope=Scope(since="10.0", before="11.0"),
                basis="a maintainer: TensorRT skips a calibration cache it finds incompatible (no version bound); a "
                "cache of 8.6 handed alone to 10.3 failed (Deep-Learning-Accelerator-SW#26)",
                note="Every 10.x release is a major version past the cache's 8.6 header: the cache is skipped "
                "and, handed without batches, the calibrator has no data."),),
            role="failing",
            description="A cache with the header TRT-8600-EntropyCalibration2 and no calibration batches, as "
            "`trtexec --int8 --calib=<cache>` builds: used, or nothing to calibrate with.",
            knobs=Knobs(calibration_cache=OLD_CACHE, cache_only=True),
            claims=(Claim(
                target="trt103-orin",
                outcome="fail",
                source=OLD_CACHE_ON_10_3,
                strength="issue-thread",
                note="trtexec on TensorRT 10.3.0 with a TRT-8600-EntropyCalibration2 cache (written by a conversion "
                "tool, not by TensorRT 8.6): 'Tensor \"input\" is bound to nullptr' (Error Code 3), i.e. TensorRT did "
                "not use the cache and tried to calibrate without data. The platform is inferred from the repository "
                "(Orin's DLA software).",
                conditions=Conditions(support="maintainer"),
            ),),
        ),
        Variant(
            name="old-cache",
            role="sweep",
            # The cache handed over is the pattern's subject: batches beside it change what TensorRT does
            varies="old-cache-only", inherits=False,
            description="The TRT-8600-EntropyCalibration2 cache with the calibration batches too: TensorRT may use "
            f"the cache or skip it and calibrate ({INCOMPATIBLE_SKIPPED}); the rewritten cache says which.",
            knobs=Knobs(calibration_cache=OLD_CACHE),
        ),
        Variant(
            name="own-version-cache-only",
            role="sweep",
            # The cache handed over is the pattern's subject: another header is another case
            varies="old-cache-only", inherits=False,
            description="A cache whose header names the running TensorRT version and the calibrator's algorithm, no "
            "batches: the cache format itself is accepted, so a failure of old-cache-only is the version.",
            knobs=Knobs(calibration_cache=("running", "EntropyCalibration2"), cache_only=True),
        ),
        Variant(
            name="other-algorithm-cache-only",
            role="sweep",
            # The cache handed over is the pattern's subject: another header is another case
            varies="old-cache-only", inherits=False,
            description="The running version's header with MinMaxCalibration for an entropy calibrator, no batches: "
            "'Calibration table does not match calibrator algorithm type'.",
            knobs=Knobs(calibration_cache=("running", "MinMaxCalibration"), cache_only=True),
        ),
        Variant(
            name="recalibrate",
            role="workaround",
            varies="old-cache-only", inherits=False,
            description="No cache: calibrate on the target and keep the cache it writes (its header names that "
            "version); what the harness does for every other implicit cell.",
        ),
    )
    not_applicable = {"onnxruntime": (
        "ONNX Runtime has no calibration cache: which TensorRT version wrote one cannot concern it."
    )}
    backend_notes = {
        "onnxruntime": (
            "ONNX Runtime has no calibration cache: quantize_static calibrates from the batches every time, so the "
            "cache knobs do not apply (listed as not applicable) and every variant is a fresh calibration."
        ),
    }
    remedy = (
        "Recalibrate on each TensorRT version (and keep one cache per version): TensorRT skips a cache it finds "
        "incompatible (#1378), so a build that gets only the cache, such as `trtexec --calib`, then has no data."
    )

    @staticmethod
    def build(variant: Variant) -> Built:
        graph = gs.Graph(name=CalibrationCache.id, opset=CalibrationCache.opset)
        x = g.graph_input("input", (1, CHANNELS, SIZE, SIZE))
        graph.inputs.append(x)
        for index in (1, 2):
            weight = g.conv_weight(f"conv{index}.weight", (CHANNELS, CHANNELS, 3, 3))
            x = g.torch_node(graph, "Conv", f"/conv{index}", [x, weight, g.bias(f"conv{index}.bias", CHANNELS)],
                             g.conv_attrs(3, pad=1))
            x = g.torch_node(graph, "Relu", f"/act{index}", [x])
        g.mark_output(graph, x, (1, CHANNELS, SIZE, SIZE))
        return Built(graph, expected_int8=CONVS)
