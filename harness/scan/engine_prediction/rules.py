"""The rules TensorRT documents for explicit quantization, and which TensorRT versions each applies to.

A :class:`Rule` states one documented behaviour in our words, names the documentation section it comes from and the
link, and says from which version (and, where a later version changed it, up to which) it holds. A :class:`Ruleset`
is what one documented TensorRT version does: the rules in force and how its float layers are typed. A target is
predicted with the ruleset of the nearest documented version at or below its own (:func:`ruleset_for`); a version
below every documented one takes the oldest, and the prediction says so.

Sources (facts, not text):

* TensorRT 8.6 developer guide, "Working with Quantized Types" / "Explicit Versus Implicit Quantization", "Q/DQ
  Fusion", "Q/DQ Layer-Placement Recommendations", "Q/DQ Limitations":
  https://docs.nvidia.com/deeplearning/tensorrt/archives/tensorrt-861/developer-guide/index.html
* TensorRT 10.x / 11.x "Explicit Quantization" (same rules, plus FP8, FP4, INT4 weights, strong typing):
  https://docs.nvidia.com/deeplearning/tensorrt/latest/inference-library/quantized-types-explicit-quantization.html
* Release notes: 10.0.1 (INT4 weight-only quantization, FP8 convolution and GEMM on Hopper and Ada):
  https://docs.nvidia.com/deeplearning/tensorrt/archives/tensorrt-1001/release-notes/index.html ; 10.8 (FP4, on
  Blackwell; reference/trt-api: BuilderFlag.FP4 first in 10.16.1 of the wheels read, absent from 10.3);
  10.12 (weakly typed APIs deprecated):
  https://docs.nvidia.com/deeplearning/tensorrt/latest/getting-started/release-notes-10/10.12.0.html ; 11.0 (weakly
  typed networks and implicit quantization removed: reference/platforms-2026.md, "TensorRT 11 changes").
* TensorRT's own engines of a QAT ResNet (reference/engine-layers, from NVIDIA's TREx examples) where the guide is
  silent: which convolution an Add fuses into, and convolution + activation + max pooling fused in INT8. Those rules
  name SEEN_IN_ENGINES instead of a documentation section.
"""
from __future__ import annotations

import re
from typing import NamedTuple

GUIDE_86 = "https://docs.nvidia.com/deeplearning/tensorrt/archives/tensorrt-861/developer-guide/index.html"
GUIDE_10 = ("https://docs.nvidia.com/deeplearning/tensorrt/latest/inference-library/"
            "quantized-types-explicit-quantization.html")
NOTES_100 = "https://docs.nvidia.com/deeplearning/tensorrt/archives/tensorrt-1001/release-notes/index.html"
NOTES_1012 = "https://docs.nvidia.com/deeplearning/tensorrt/latest/getting-started/release-notes-10/10.12.0.html"
NOTES_11 = "https://docs.nvidia.com/deeplearning/tensorrt/latest/getting-started/release-notes-11/11.4.1.html"
SEEN_IN_ENGINES = "TensorRT's own engines (the guide is silent)"
ENGINES = "reference/engine-layers (TensorRT's engine inspector JSON of a QAT ResNet, NVIDIA TREx examples)"


class Rule(NamedTuple):
    id: str
    text: str  # what TensorRT does, in our words
    section: str  # the documentation section, or SEEN_IN_ENGINES for a behaviour only TensorRT's engines show
    link: str
    since: str = "8.6"  # first version it holds in (the oldest documented one when it always did)
    until: str | None = None  # first version it no longer holds in
    remedy: str | None = None  # what to change in the model for INT8 here, where the rule leaves a layer float

    def holds_in(self, version: tuple[int, ...]) -> bool:
        return _parsed(self.since) <= version and (self.until is None or version < _parsed(self.until))

    def to_dict(self) -> dict[str, str | None]:
        return self._asdict()


RULES = {rule.id: rule for rule in (
    Rule("dq-forward", "A DequantizeLinear moves forward through layers that commute with it (max pooling, "
         "reshape, transpose, flatten, squeeze, unsqueeze, slice, a concatenation of inputs all dequantized alike; "
         "resize, as the library's P5 cases record): they move INT8 data and run in INT8.",
         "Explicit Quantization: Q/DQ propagation (commuting layers)", GUIDE_86),
    Rule("q-backward", "A QuantizeLinear moves backward through commuting layers, but only where every reader of "
         "the tensor is a quantizer (TensorRT compares their scales): a tensor also read in float keeps its Q in "
         "place.", "Explicit Quantization: Q/DQ propagation (commuting layers)", GUIDE_86),
    Rule("weighted-int8", "A convolution, deconvolution, MatMul or Gemm whose input and weights are both "
         "dequantized from INT8 fuses the DQs and runs in INT8.", "Q/DQ Fusion", GUIDE_86),
    Rule("weighted-float-input", "A convolution, MatMul or Gemm whose input is not dequantized (or whose weights "
         "are not) runs in float: the DQ on its other side is left unfused.", "Q/DQ Fusion", GUIDE_86,
         remedy="quantize its input and its weights (a Q/DQ pair on each) for an INT8 layer"),
    Rule("weighted-int8-output", "The QuantizeLinear reading a fused INT8 layer's output fuses into it: the layer "
         "writes INT8.", "Q/DQ Fusion", GUIDE_86),
    Rule("weighted-float-output", "With no QuantizeLinear reading it, a fused INT8 layer writes float.",
         "Q/DQ Fusion", GUIDE_86,
         remedy="quantize every reader of its output (a Q/DQ before each, a residual Add's "
         "identity input included) for an INT8 output"),
    Rule("bn-activation-fusion", "Batch normalization and a pointwise activation after a convolution fuse into it, "
         "in the network's order; no BN folding in training is needed.", "Q/DQ Fusion", GUIDE_86),
    Rule("residual-add-fusion", "An element-wise Add after a convolution fuses into it; the fused layer writes INT8 "
         "only when the Add's other (residual) input is itself dequantized INT8: with a float residual, output and "
         "residual are float and the trailing Q stays unfused.", "Q/DQ Layer-Placement Recommendations", GUIDE_86,
         remedy="quantize the Add's residual input (a Q/DQ on the identity branch) for an INT8 output"),
    Rule("residual-add-choice", "When both inputs of the Add come from convolutions that could take it, the later "
         "one (the Add's second input in a torchvision ResNet) takes it.", SEEN_IN_ENGINES, ENGINES),
    Rule("conv-act-pool", "A convolution with its activation and a following max pooling fuse into one INT8 layer "
         "(ConvActPool) when the pooling's output is quantized.", SEEN_IN_ENGINES, ENGINES),
    Rule("quantizable-int8", "A quantizable layer (average and global pooling, element-wise Add, Reduce) "
         "runs in INT8 when every input is dequantized and its output is quantized; the Q and DQs fuse into it.",
         "Explicit Quantization: quantizable layers", GUIDE_86),
    Rule("quantizable-float", "A quantizable layer missing a DQ on an input or a Q on its output runs in float; its "
         "Q/DQs stay unfused.", "Explicit Quantization: quantizable layers", GUIDE_86,
         remedy="a DQ on every input and a Q on the output make it INT8"),
    Rule("float-layer", "A layer with no quantized input runs in the network's float precision.",
         "Explicit Versus Implicit Quantization", GUIDE_86),
    Rule("unfused-quantize", "A QuantizeLinear that no layer fuses becomes a Reformat layer converting float to "
         "INT8.", "Q/DQ Layer-Placement Recommendations", GUIDE_86,
         remedy="an extra pass over the tensor (unavoidable on a network input): quantize every reader of the "
         "tensor so the layer producing it writes INT8 and takes the Q"),
    Rule("merged-quantize", "Unfused quantizers of one tensor to one type become a single Reformat (TensorRT's "
         "engine holds one where the model quantizes a block's input twice, for its conv1 and its downsample).",
         SEEN_IN_ENGINES, ENGINES),
    Rule("unfused-dequantize", "A DequantizeLinear that no layer fuses becomes a Reformat layer converting INT8 to "
         "float.", "Q/DQ Layer-Placement Recommendations", GUIDE_86,
         remedy="an extra pass over the tensor: a layer reads this tensor in float; quantize that reader too"),
    Rule("io-types", "Network inputs and outputs keep their ONNX types: a layer writing a network output writes that "
         "type (or TensorRT adds a Reformat after it).", "I/O formats", GUIDE_86),
    Rule("weakly-typed-float", "Weakly typed build: float layers run FP32, or FP16 or FP32 by timing when the "
         "build enables FP16.", "Explicit Versus Implicit Quantization", GUIDE_86, until="11.0"),
    Rule("strongly-typed-float", "Strongly typed only: float layers run in the model's own float type; there is no "
         "FP16 flag.", "Strong Typing vs Weak Typing", NOTES_11, since="11.0"),
    Rule("fp8-qdq", "FP8 (E4M3) Q/DQ around convolutions and GEMMs fuse as INT8 ones do, on GPUs with FP8 (Ada, "
         "Hopper and later).", "Explicit Quantization: FP8", NOTES_100, since="10.0"),
    Rule("int4-weight-only", "INT4 weights dequantized into a MatMul or Gemm are weight-only quantization: weights "
         "stored INT4, math in float.", "Explicit Quantization: INT4 weight-only quantization", NOTES_100,
         since="10.0"),
    Rule("fp4-qdq", "FP4 (E2M1) Q/DQ around GEMMs fuse on Blackwell GPUs.", "Explicit Quantization: FP4", GUIDE_10,
         since="10.8"),
    Rule("quantized-type-unsupported", "This version documents no Q/DQ of this type: the layer is not predicted "
         "(the parser or builder refuses it).", "Explicit Quantization", GUIDE_86),
)}


class Ruleset(NamedTuple):
    """What one documented TensorRT version does with explicit quantization."""

    name: str
    version: str  # the documented version
    documentation: str

    @property
    def rules(self) -> tuple[Rule, ...]:
        parsed = _parsed(self.version)
        return tuple(rule for rule in RULES.values() if rule.holds_in(parsed))

    def has(self, rule_id: str) -> bool:
        return RULES[rule_id].holds_in(_parsed(self.version))

    @property
    def strongly_typed_only(self) -> bool:
        return self.has("strongly-typed-float")

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "version": self.version, "source": self.documentation,
                "rules": [rule.id for rule in self.rules]}


RULESETS = (
    Ruleset("trt-8.6", "8.6", GUIDE_86),
    Ruleset("trt-10.0", "10.0", NOTES_100),
    Ruleset("trt-10.8", "10.8", GUIDE_10),
    Ruleset("trt-10.12", "10.12", NOTES_1012),
    Ruleset("trt-11", "11.0", NOTES_11),
)


# TensorRT 9.x was released for LLM use without a developer guide of its own (reference/platforms.md: no public 9.2
# wheel, a superset of 8.6 that adds STRONGLY_TYPED).
UNDOCUMENTED_MAJOR = 9


class RulesetChoice(NamedTuple):
    ruleset: Ruleset
    note: str | None  # why this ruleset, where the version is not documented itself


def ruleset_for(version: str | None) -> RulesetChoice:
    """The ruleset of the nearest documented version at or below ``version`` ("8.6.1", "10.16", "11"); the oldest
    for a version below all of them (8.5 is predicted by 8.6's rules), the newest when no version is given."""
    if not version or not _parsed(version):
        return RulesetChoice(RULESETS[-1], f"version {version!r} not read: predicted with the newest rules")
    wanted = _parsed(version)
    below = [r for r in RULESETS if _parsed(r.version) <= wanted]
    if not below:
        return RulesetChoice(RULESETS[0], f"TensorRT {version} predates the {RULESETS[0].version} developer guide, "
                                          "the oldest documented here: its rules are assumed")
    chosen = below[-1]
    if wanted[0] == UNDOCUMENTED_MAJOR:
        return RulesetChoice(chosen, f"TensorRT {version} has no explicit-quantization guide of its own: the nearest "
                                     f"documented version below it, {chosen.version}, is used")
    return RulesetChoice(chosen, None)  # the rules of the last documented change at or before this version


def _parsed(version: str) -> tuple[int, ...]:
    """(major, minor, patch), missing parts 0: "11" is 11.0.0; () when the text holds no number."""
    parts = [int(part) for part in re.findall(r"\d+", version)[:3]]
    return tuple(parts + [0] * (3 - len(parts))) if parts else ()
