"""Export the real-exporter corpus (corpus/models/) with torch.onnx, where torch is installed.

Each model is a torchvision or timm architecture (random initialisation: nothing is downloaded), exported by
torch.onnx's TorchScript exporter (``dynamo=False``) or its dynamo exporter (``dynamo=True``), FP32 or quantized in one
of three ways users meet:

* ``pq``: pytorch-quantization style fake quant: every Conv/Linear reads its input through a per-tensor symmetric INT8
  quantizer and its weight through a per-channel (axis 0) symmetric INT8 quantizer, exported as
  ``torch.fake_quantize_per_*_affine`` -> QuantizeLinear/DequantizeLinear. BatchNorm stays (a fake-quantized weight is
  no initializer the exporter can fold it into).
* ``pq-residual`` / ``pq-residual-gap``: the same, plus a quantizer on each residual Add's identity branch (the
  ModelOpt-style residual quantizer), plus one before the global average pool.
* ``ort-static``: ONNX Runtime's ``quantize_static`` (QDQ format) of the FP32 TorchScript export, calibrated on random
  inputs.

The stored file keeps every node and every small tensor; each initializer of more than ``KEEP_ELEMENTS`` elements that
is not a Q/DQ scale or zero point is emptied (its data removed, its name, type and shape kept) and its mean and standard
deviation are written to the model's JSON, from which ``corpus.load`` re-draws it with a fixed seed.

    python3 scripts/export_torch_corpus.py --out /tmp/corpus            # everything
    python3 scripts/export_torch_corpus.py --out /tmp/corpus --only resnet18-fp32-ts-op13
    python3 scripts/export_torch_corpus.py --list

Needs torch, torchvision, timm, onnx and onnxruntime (onnxscript for the dynamo exporter). Nothing here imports the
project: the script runs alone on a host that has torch.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tempfile
import time
import traceback

import numpy as np
import onnx
from onnx import numpy_helper

KEEP_ELEMENTS = 1024
SEED = 0
DEADLINE_S = 500.0  # stop starting new exports after this many seconds (the device limits a command to 10 minutes)


# ---------------------------------------------------------------------------------------------------------- shrinking
def _qdq_parameters(model: onnx.ModelProto) -> set[str]:
    """Names of the scale and zero-point inputs of every Q/DQ node: always kept verbatim."""
    names = set()
    for node in model.graph.node:
        if node.op_type in ("QuantizeLinear", "DequantizeLinear"):
            names.update(node.input[1:])
    return names


def _large_constants_to_initializers(model: onnx.ModelProto) -> None:
    """A Constant node holding a large tensor becomes an initializer of the same name (the graph computes the same),
    so that it can be emptied like the others."""
    keep = []
    for node in model.graph.node:
        value = next((a for a in node.attribute if a.name == "value"), None) if node.op_type == "Constant" else None
        if value is not None and int(np.prod(value.t.dims)) > KEEP_ELEMENTS:
            tensor = onnx.TensorProto()
            tensor.CopyFrom(value.t)
            tensor.name = node.output[0]
            model.graph.initializer.append(tensor)
        else:
            keep.append(node)
    if len(keep) != len(model.graph.node):
        del model.graph.node[:]
        model.graph.node.extend(keep)


BULKY_METADATA = ("pkg.torch.onnx.stack_trace", "pkg.torch.onnx.fx_node")


def _drop_bulky_metadata(model: onnx.ModelProto) -> None:
    """The dynamo exporter writes each node's Python stack trace and FX node: most of the file once the weights are
    emptied, and no part of the graph. The module path (``namespace``, ``pkg.torch.onnx.name_scopes``) stays."""
    for node in model.graph.node:
        kept = [p for p in node.metadata_props if p.key not in BULKY_METADATA]
        if len(kept) != len(node.metadata_props):
            del node.metadata_props[:]
            node.metadata_props.extend(kept)


def shrink(model: onnx.ModelProto) -> list[dict]:
    """Empty the large initializers of ``model`` in place (and drop the bulky node metadata); returns, for each
    emptied initializer, what re-draws it."""
    _drop_bulky_metadata(model)
    _large_constants_to_initializers(model)
    kept = _qdq_parameters(model)
    redrawn = []
    for tensor in model.graph.initializer:
        count = int(np.prod(tensor.dims)) if tensor.dims else 1
        if count <= KEEP_ELEMENTS or tensor.name in kept or not _has_data(tensor):
            continue
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            raise ValueError(f"{tensor.name}: external data; load the model with its data before shrinking")
        values = numpy_helper.to_array(tensor).astype(np.float64)
        redrawn.append({"name": tensor.name, "data_type": int(tensor.data_type), "dims": [int(d) for d in tensor.dims],
                        "mean": float(values.mean()), "std": float(values.std()),
                        "min": float(values.min()), "max": float(values.max())})
        dims, name, data_type = list(tensor.dims), tensor.name, tensor.data_type
        tensor.Clear()
        tensor.name, tensor.data_type = name, data_type
        tensor.dims.extend(dims)
    return redrawn


def _has_data(tensor: onnx.TensorProto) -> bool:
    """False for an initializer already emptied (shrinking twice changes nothing)."""
    return bool(tensor.raw_data) or any(len(getattr(tensor, f)) for f in (
        "float_data", "int32_data", "int64_data", "double_data", "uint64_data", "string_data"))


def op_histogram(model: onnx.ModelProto) -> dict[str, int]:
    counts: dict[str, int] = {}
    for node in model.graph.node:
        counts[node.op_type] = counts.get(node.op_type, 0) + 1
    return dict(sorted(counts.items()))


# ------------------------------------------------------------------------------------------------ torch-side helpers
def _torch():
    import torch  # noqa: PLC0415 - heavy, only where the exports run
    return torch


def fake_quant_modules():
    """The quantizer and the quantized-layer classes (defined lazily: they subclass torch modules)."""
    torch = _torch()
    nn = torch.nn
    F = torch.nn.functional

    class TensorQuantizer(nn.Module):
        """Symmetric INT8 fake quant; per tensor, or per channel along ``axis``; calibrated by the max of |x|, then
        frozen (``freeze``): the scale becomes a Python float (per tensor) or a constant buffer (per channel), which
        both exporters write as the Q/DQ scale initializer."""

        def __init__(self, axis: int | None = None):
            super().__init__()
            self.axis = axis
            self.calibrating = False
            self.amax = None
            self.scale = None

        def forward(self, x):
            if self.calibrating:
                dims = [d for d in range(x.ndim) if d != self.axis] if self.axis is not None else list(range(x.ndim))
                amax = x.detach().abs().amax(dim=dims)
                self.amax = amax if self.amax is None else torch.maximum(self.amax, amax)
                return x
            if self.axis is None:
                return torch.fake_quantize_per_tensor_affine(x, self.scale, 0, -128, 127)
            return torch.fake_quantize_per_channel_affine(x, self.scale, self.zero_point, self.axis, -128, 127)

        def freeze(self):
            if self.amax is None:  # never called (a module the model's forward does not use)
                return
            amax = self.amax.clamp(min=1e-6)
            if self.axis is None:
                self.scale = float(amax) / 127.0
            else:
                del self.scale
                self.register_buffer("scale", (amax / 127.0).float().contiguous())
                self.register_buffer("zero_point", torch.zeros(amax.shape, dtype=torch.int32))

    def _conv_forward(self, x):
        weight = self.weight_quantizer(self.weight)
        x = self.input_quantizer(x)
        ops = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
        return ops[weight.ndim - 2](x, weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    def _linear_forward(self, x):
        return F.linear(self.input_quantizer(x), self.weight_quantizer(self.weight), self.bias)

    forwards = {nn.Conv1d: _conv_forward, nn.Conv2d: _conv_forward, nn.Conv3d: _conv_forward,
                nn.Linear: _linear_forward}
    return TensorQuantizer, forwards


def quantize_pq(model, residual: bool = False, gap: bool = False):
    """pytorch-quantization style: quantizers on every Conv/Linear input (per tensor) and weight (per channel, axis 0),
    named ``input_quantizer``/``weight_quantizer`` as in pytorch-quantization and ModelOpt; with ``residual``, a
    ``residual_quantizer`` on the identity of every torchvision BasicBlock/Bottleneck; with ``gap``, a ``gap_quantizer``
    before ResNet's average pool."""
    torch = _torch()
    TensorQuantizer, forwards = fake_quant_modules()
    quantized_classes: dict[type, type] = {}
    for module in list(model.modules()):
        base = next((b for b in forwards if isinstance(module, b)), None)
        if base is None:
            continue
        # A subclass of the module's own class (torchvision's Conv3DSimple is a Conv3d): its other methods stay
        cls = type(module)
        if cls not in quantized_classes:
            quantized_classes[cls] = type(f"Quant{cls.__name__}", (cls,), {"forward": forwards[base]})
        module.__class__ = quantized_classes[cls]
        module.input_quantizer = TensorQuantizer()
        module.weight_quantizer = TensorQuantizer(axis=0)
    if residual:
        from torchvision.models.resnet import BasicBlock, Bottleneck  # noqa: PLC0415

        for module in model.modules():
            if isinstance(module, (BasicBlock, Bottleneck)):
                module.residual_quantizer = TensorQuantizer()
                module.forward = _residual_forward(module)
    if gap:  # ResNet's forward calls avgpool once: the quantizer goes in front of it
        model.avgpool = torch.nn.Sequential(TensorQuantizer(), model.avgpool)
    return model


def _residual_forward(block):
    from torchvision.models.resnet import Bottleneck  # noqa: PLC0415

    def forward(x):
        identity = x
        out = block.relu(block.bn1(block.conv1(x)))
        if isinstance(block, Bottleneck):
            out = block.relu(block.bn2(block.conv2(out)))
            out = block.bn3(block.conv3(out))
        else:
            out = block.bn2(block.conv2(out))
        if block.downsample is not None:
            identity = block.downsample(x)
        out = out + block.residual_quantizer(identity)
        return block.relu(out)
    return forward


def calibrate(model, example, steps: int = 2):
    """Max calibration of every TensorQuantizer on random inputs shaped like ``example``, then weights' amax."""
    torch = _torch()
    quantizers = [m for m in model.modules() if type(m).__name__ == "TensorQuantizer"]
    for q in quantizers:
        q.calibrating = True
    generator = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for _ in range(steps):
            model(torch.randn(example.shape, generator=generator))
    for q in quantizers:
        q.calibrating = False
        q.freeze()
    return model


# -------------------------------------------------------------------------------------------------------- the models
class _FirstOutput:
    """Wraps a model whose forward returns a dict (segmentation) or a list of dicts (detection)."""

    @staticmethod
    def wrap(model, key):
        torch = _torch()

        class Wrapped(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.model = model

            def forward(self, x):
                if isinstance(key, str):  # segmentation: a batch in, a dict out
                    return self.model(x)[key]
                first = self.model([x[0]])[0]  # detection: a list of images in, a list of dicts out
                return tuple(first[k] for k in key)
        return Wrapped()


def build(arch: str):
    """(model in eval mode, example input) for an architecture name; random weights, seeded."""
    torch = _torch()
    import torchvision  # noqa: PLC0415

    torch.manual_seed(SEED)
    tv = torchvision.models
    image = (1, 3, 224, 224)
    if arch == "resnet18":
        return tv.resnet18(weights=None).eval(), torch.randn(image)
    if arch == "resnet50":
        return tv.resnet50(weights=None).eval(), torch.randn(image)
    if arch == "efficientnet_b0":
        return tv.efficientnet_b0(weights=None).eval(), torch.randn(image)
    if arch == "mobilenet_v2":
        return tv.mobilenet_v2(weights=None).eval(), torch.randn(image)
    if arch == "mobilenet_v3_small":
        return tv.mobilenet_v3_small(weights=None).eval(), torch.randn(image)
    if arch == "vit_b_16":
        # Off: the fused fast path (aten::_native_multi_head_attention), which the TorchScript exporter cannot write;
        # the model then runs F.multi_head_attention_forward, as it does in training and as users export it.
        torch.backends.mha.set_fastpath_enabled(False)
        return tv.vit_b_16(weights=None).eval(), torch.randn(image)
    if arch == "timm_vit_tiny":
        import timm  # noqa: PLC0415
        from timm.layers import set_fused_attn  # noqa: PLC0415

        set_fused_attn(False)  # q @ k^T, softmax, @ v written out, as timm exports without fused attention
        return timm.create_model("vit_tiny_patch16_224", pretrained=False).eval(), torch.randn(image)
    if arch == "r3d_18":
        return tv.video.r3d_18(weights=None).eval(), torch.randn(1, 3, 8, 112, 112)
    if arch == "lraspp_mobilenet_v3_large":
        model = tv.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None).eval()
        return _FirstOutput.wrap(model, "out").eval(), torch.randn(1, 3, 320, 320)
    if arch == "deeplabv3_mobilenet_v3_large":
        model = tv.segmentation.deeplabv3_mobilenet_v3_large(weights=None, weights_backbone=None,
                                                              aux_loss=False).eval()
        return _FirstOutput.wrap(model, "out").eval(), torch.randn(1, 3, 320, 320)
    if arch == "ssdlite320_mobilenet_v3_large":
        model = tv.detection.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None).eval()
        return _FirstOutput.wrap(model, ("boxes", "scores", "labels")).eval(), torch.randn(1, 3, 320, 320)
    if arch == "fasterrcnn_mobilenet_v3_large_320_fpn":
        model = tv.detection.fasterrcnn_mobilenet_v3_large_320_fpn(weights=None, weights_backbone=None).eval()
        return _FirstOutput.wrap(model, ("boxes", "scores", "labels")).eval(), torch.randn(1, 3, 320, 320)
    raise ValueError(f"unknown architecture {arch!r}")


# name -> (architecture, task, quantization, exporter, opset, options)
SPECS: dict[str, tuple[str, str, str, str, int, dict]] = {}


def spec(name, arch, task, quant, exporter, opset, **options):
    SPECS[name] = (arch, task, quant, exporter, opset, options)


# The engine-layer set of issue 30 first: TensorRT's TREx ResNet example (four models, opset 13, input "input.1",
# dynamic batch "batch_size"; the engines were built at batch 32).
_TREX = {"input_names": ["input.1"], "dynamic_batch": "batch_size"}
spec("resnet18-fp32-ts-op13-dynbatch", "resnet18", "classification", "none", "torchscript", 13, **_TREX)
spec("resnet18-qat-pq-ts-op13-dynbatch", "resnet18", "classification", "pq", "torchscript", 13, **_TREX)
spec("resnet18-qat-pq-residual-ts-op13-dynbatch", "resnet18", "classification", "pq-residual", "torchscript", 13,
     **_TREX)
spec("resnet18-qat-pq-residual-gap-ts-op13-dynbatch", "resnet18", "classification", "pq-residual-gap", "torchscript",
     13, **_TREX)
# Issue 29's two QAT models, and their FP32 exports.
spec("resnet18-qat-pq-ts-op13", "resnet18", "classification", "pq", "torchscript", 13)
spec("efficientnet_b0-qat-pq-ts-op13", "efficientnet_b0", "classification", "pq", "torchscript", 13)
spec("resnet18-fp32-ts-op17", "resnet18", "classification", "none", "torchscript", 17)
spec("efficientnet_b0-fp32-ts-op13", "efficientnet_b0", "classification", "none", "torchscript", 13)
# Transformers: the Linear and horizon bugs of issue 28.
spec("vit_b_16-fp32-ts-op17", "vit_b_16", "transformer", "none", "torchscript", 17)
spec("vit_b_16-fp32-ts-op14", "vit_b_16", "transformer", "none", "torchscript", 14)  # SDPA needs 14
spec("timm_vit_tiny-fp32-ts-op17", "timm_vit_tiny", "transformer", "none", "torchscript", 17)
spec("timm_vit_tiny-qat-pq-ts-op17", "timm_vit_tiny", "transformer", "pq", "torchscript", 17)
spec("timm_vit_tiny-qat-pq-ts-op13", "timm_vit_tiny", "transformer", "pq", "torchscript", 13)
# ONNX Runtime's static quantization.
spec("resnet18-qat-ort-static-op13", "resnet18", "classification", "ort-static", "torchscript", 13)
spec("mobilenet_v2-qat-ort-static-op13", "mobilenet_v2", "classification", "ort-static", "torchscript", 13)
# Others: depthwise, hardswish, video, segmentation, detection.
spec("mobilenet_v2-qat-pq-ts-op13", "mobilenet_v2", "classification", "pq", "torchscript", 13)
spec("mobilenet_v3_small-fp32-ts-op13", "mobilenet_v3_small", "classification", "none", "torchscript", 13)
spec("r3d_18-fp32-ts-op17", "r3d_18", "video", "none", "torchscript", 17)
spec("r3d_18-qat-pq-ts-op13", "r3d_18", "video", "pq", "torchscript", 13)
spec("lraspp_mobilenet_v3_large-fp32-ts-op17", "lraspp_mobilenet_v3_large", "segmentation", "none", "torchscript", 17)
spec("deeplabv3_mobilenet_v3_large-qat-pq-ts-op13", "deeplabv3_mobilenet_v3_large", "segmentation", "pq",
     "torchscript", 13)
spec("ssdlite320_mobilenet_v3_large-fp32-ts-op17", "ssdlite320_mobilenet_v3_large", "detection", "none",
     "torchscript", 17)
spec("fasterrcnn_mobilenet_v3_large_320_fpn-fp32-ts-op17", "fasterrcnn_mobilenet_v3_large_320_fpn", "detection",
     "none", "torchscript", 17)
# The dynamo exporter.
spec("resnet18-fp32-dynamo-op18", "resnet18", "classification", "none", "dynamo", 18)
spec("efficientnet_b0-fp32-dynamo-op18", "efficientnet_b0", "classification", "none", "dynamo", 18)
spec("vit_b_16-fp32-dynamo-op18", "vit_b_16", "transformer", "none", "dynamo", 18)
spec("resnet18-qat-pq-dynamo-op18", "resnet18", "classification", "pq", "dynamo", 18)
spec("timm_vit_tiny-qat-pq-dynamo-op18", "timm_vit_tiny", "transformer", "pq", "dynamo", 18)
spec("r3d_18-fp32-dynamo-op20", "r3d_18", "video", "none", "dynamo", 20)


def export(name: str) -> tuple[onnx.ModelProto, dict]:
    """Export one model; returns the full-weight ModelProto and how it was exported."""
    torch = _torch()
    arch, task, quant, exporter, opset, options = SPECS[name]
    model, example = build(arch)
    if quant.startswith("pq"):
        quantize_pq(model, residual="residual" in quant, gap=quant.endswith("gap"))
        calibrate(model, example)
    input_names = options.get("input_names", ["input"])
    dynamic_axes = ({input_names[0]: {0: options["dynamic_batch"]}} if options.get("dynamic_batch") else None)
    how = {"exporter": exporter, "opset": opset, "input_names": input_names, "dynamic_axes": dynamic_axes,
           "input_shape": list(example.shape)}
    with torch.no_grad():
        if exporter == "dynamo":
            program = torch.onnx.export(model, (example,), dynamo=True, opset_version=opset,
                                        input_names=input_names)
            proto = program.model_proto
            how["call"] = (f"torch.onnx.export(model, (x,), dynamo=True, opset_version={opset}, "
                           f"input_names={input_names}).model_proto")
        else:
            buffer = io.BytesIO()
            torch.onnx.export(model, (example,), buffer, dynamo=False, opset_version=opset,
                              input_names=input_names, dynamic_axes=dynamic_axes)
            proto = onnx.load_from_string(buffer.getvalue())
            how["call"] = (f"torch.onnx.export(model, (x,), f, dynamo=False, opset_version={opset}, "
                           f"input_names={input_names}, dynamic_axes={dynamic_axes})")
    if quant == "ort-static":
        proto = _ort_static(proto, example.shape, input_names[0])
        how["call"] += ("; onnxruntime.quantization.quantize_static(fp32, out, reader of 4 seeded N(0,1) inputs, "
                        "quant_format=QuantFormat.QDQ, per_channel=False, activation_type=QInt8, weight_type=QInt8)")
    return proto, {"architecture": arch, "task": task, "quantization": quant, **how}


def _ort_static(proto: onnx.ModelProto, shape, input_name: str) -> onnx.ModelProto:
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static  # noqa

    class Reader(CalibrationDataReader):
        def __init__(self):
            rng = np.random.default_rng(SEED)
            self.items = iter([{input_name: rng.standard_normal(shape).astype(np.float32)} for _ in range(4)])

        def get_next(self):
            return next(self.items, None)

    with tempfile.TemporaryDirectory() as tmp:
        fp32, out = os.path.join(tmp, "fp32.onnx"), os.path.join(tmp, "int8.onnx")
        onnx.save(proto, fp32)
        quantize_static(fp32, out, Reader(), quant_format=QuantFormat.QDQ, per_channel=False,
                        activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
        return onnx.load(out)


def versions() -> dict[str, str]:
    found = {}
    for module in ("torch", "torchvision", "timm", "onnx", "onnxscript", "onnxruntime"):
        try:
            found[module] = __import__(module).__version__
        except Exception as error:  # noqa: BLE001 - a missing package is recorded, not fatal
            found[module] = f"absent ({type(error).__name__})"
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", help="directory for <name>.onnx and <name>.json")
    parser.add_argument("--only", nargs="*", help="export only these models (names from --list)")
    parser.add_argument("--list", action="store_true", help="print the model names and stop")
    args = parser.parse_args(argv)
    if args.list:
        print("\n".join(SPECS))
        return 0
    if not args.out:
        parser.error("--out is required")
    os.makedirs(args.out, exist_ok=True)
    names = args.only or list(SPECS)
    unknown = [n for n in names if n not in SPECS]
    if unknown:
        parser.error(f"unknown model(s) {unknown}; --list names them")
    found_versions = versions()
    print("versions:", found_versions, flush=True)
    torch = _torch()
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    started, summary = time.monotonic(), {}
    for name in names:
        if time.monotonic() - started > DEADLINE_S:
            summary[name] = "skipped: deadline"
            continue
        began = time.monotonic()
        try:
            proto, how = export(name)
            redrawn = shrink(proto)
            onnx.save(proto, os.path.join(args.out, f"{name}.onnx"))
            record = {"name": name, "kind": "fp32" if how["quantization"] == "none" else "qat", **how,
                      "versions": found_versions, "seed": SEED,
                      "command": "python3 scripts/export_torch_corpus.py --out DIR --only " + name,
                      "export_seconds": round(time.monotonic() - began, 1),
                      "nodes": len(proto.graph.node), "ops": op_histogram(proto),
                      "keep_elements": KEEP_ELEMENTS, "redrawn": redrawn}
            with open(os.path.join(args.out, f"{name}.json"), "w") as handle:
                json.dump(record, handle, indent=1)
            summary[name] = f"ok: {len(proto.graph.node)} nodes, {time.monotonic() - began:.1f} s"
        except Exception as error:  # noqa: BLE001 - one model's failure is recorded and the others go on
            traceback.print_exc()
            summary[name] = f"error: {type(error).__name__}: {str(error)[:400]}"
        print(f"{name}: {summary[name]}", flush=True)
    with open(os.path.join(args.out, "export-summary.json"), "w") as handle:
        json.dump({"versions": found_versions, "models": summary}, handle, indent=1)
    return 0 if all(v.startswith("ok") for v in summary.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
