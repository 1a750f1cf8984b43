"""Export the third-party corpus (corpus/thirdparty/): what users bring, made by the tools they use.

* FP32 exports: YOLOv8n / YOLO11n / YOLO26n (detect, seg, pose) by ultralytics' own exporter
  (``YOLO("<name>.yaml").export(format="onnx")``: the model is built from its yaml, random weights, nothing is
  downloaded); a dozen timm architectures and two transformers models by ``torch.onnx.export`` (``pretrained=False``).
* INT8/FP8 versions of them by NVIDIA ModelOpt's ONNX PTQ (``modelopt.onnx.quantization.quantize``, the function its
  ``python -m modelopt.onnx.quantization`` calls) and by ONNX Runtime's ``quantize_static`` (QDQ format), in the
  settings named in ``QUANTIZERS``, among them ultralytics' own: its ONNX INT8 step (``onnx_int8_quantize``) and its
  TensorRT-11 ModelOpt step (``modelopt_quantize_onnx``), called with ultralytics' own arguments.

Calibration data: seeded synthetic images, uniform in [0, 1) (what ultralytics feeds after dividing by 255), never real
images: the scales are those of random weights on random inputs, which is all a scan reads.

The stored file keeps every node and every small tensor (Q/DQ scales and zero points always); larger initializers are
emptied and re-drawn at load time (``corpus.thirdparty.load``), as ``scripts/export_torch_corpus.py`` does.

    python3 scripts/export_thirdparty_corpus.py --list
    python3 scripts/export_thirdparty_corpus.py --work /tmp/full --out /tmp/corpus            # everything
    python3 scripts/export_thirdparty_corpus.py --work /tmp/full --out /tmp/corpus --only yolo11n-detect-ul-fp32 ...

Needs torch, timm, transformers, ultralytics, nvidia-modelopt (its ONNX part), onnx and onnxruntime; it was run on the
GPU host with torch 2.11 (each model's JSON says which versions). Nothing here imports the project.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import importlib.util
import json
import multiprocessing
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np
import onnx


def _sibling(name: str):
    """A module of this folder, loaded from its file (the script runs alone, from any directory)."""
    spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parent / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_TORCH_CORPUS = _sibling("export_torch_corpus")  # its shrinking: the same stored form as corpus/models
KEEP_ELEMENTS, op_histogram, shrink = _TORCH_CORPUS.KEEP_ELEMENTS, _TORCH_CORPUS.op_histogram, _TORCH_CORPUS.shrink

SEED = 0
CALIBRATION_IMAGES = 4
DEADLINE_S = float(os.environ.get("CORPUS_DEADLINE_S", "470"))

# ------------------------------------------------------------------------------------------------------- FP32 exports
YOLO = {f"{family}-{task}": (family, task) for family in ("yolov8n", "yolo11n", "yolo26n")
        for task in ("detect", "seg", "pose")}
TIMM = ("resnet50", "mobilenetv3_large_100", "mobilenetv4_conv_small", "efficientnet_b0", "convnext_tiny",
        "regnety_008", "vit_tiny_patch16_224", "deit_tiny_patch16_224", "mobilevit_xs", "repvgg_a0", "ghostnet_100",
        "efficientvit_b0")
TRANSFORMERS = ("segformer_b0", "swin_tiny")
TORCH_OPSET = 17


def fp32_name(source: str) -> str:
    if source in YOLO:
        return f"{source}-ul-fp32"
    if source == "resnet50-dynamo":
        return "timm_resnet50-dynamo-fp32-op18"
    prefix = "hf" if source in TRANSFORMERS else "timm"
    return f"{prefix}_{source}-ts-fp32-op{TORCH_OPSET}"


def export_yolo(source: str, path: Path) -> dict:
    from ultralytics import YOLO as Ultralytics  # noqa: PLC0415

    family, task = YOLO[source]
    yaml = f"{family}.yaml" if task == "detect" else f"{family}-{task}.yaml"
    with tempfile.TemporaryDirectory() as tmp:
        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            model = Ultralytics(yaml)
            written = model.export(format="onnx", imgsz=640, device="cpu")
            proto = onnx.load(written)
        finally:
            os.chdir(cwd)
    onnx.save(proto, str(path))
    return {"exporter": "ultralytics", "architecture": family, "task": task, "input_shape": [1, 3, 640, 640],
            "call": f'YOLO("{yaml}").export(format="onnx", imgsz=640, device="cpu")  # ultralytics defaults otherwise'}


def _torch_export(model, example, path: Path, opset: int, dynamo: bool, input_name: str = "input") -> str:
    import torch  # noqa: PLC0415

    with torch.no_grad():
        if dynamo:
            program = torch.onnx.export(model, (example,), dynamo=True, opset_version=opset,
                                        input_names=[input_name])
            onnx.save(program.model_proto, str(path))
            return f"torch.onnx.export(model, (x,), dynamo=True, opset_version={opset}, input_names=['{input_name}'])"
        torch.onnx.export(model, (example,), str(path), dynamo=False, opset_version=opset,
                          input_names=[input_name], output_names=["output"])
    return (f"torch.onnx.export(model, (x,), f, dynamo=False, opset_version={opset}, input_names=['{input_name}'], "
            "output_names=['output'])")


def export_timm(source: str, path: Path) -> dict:
    import timm  # noqa: PLC0415
    import torch  # noqa: PLC0415

    torch.manual_seed(SEED)
    dynamo = source.endswith("-dynamo")
    arch = source.removesuffix("-dynamo")
    model = timm.create_model(arch, pretrained=False).eval()
    size = model.pretrained_cfg.get("input_size", (3, 224, 224))
    example = torch.randn(1, *size)
    opset = 18 if dynamo else TORCH_OPSET
    call = _torch_export(model, example, path, opset, dynamo)
    return {"exporter": "dynamo" if dynamo else "torchscript", "architecture": arch, "task": "classification",
            "input_shape": list(example.shape), "opset_asked": opset,
            "call": f'timm.create_model("{arch}", pretrained=False).eval(); ' + call}


def export_transformers(source: str, path: Path) -> dict:
    import torch  # noqa: PLC0415
    import transformers  # noqa: PLC0415

    torch.manual_seed(SEED)
    if source == "segformer_b0":
        config = transformers.SegformerConfig()  # the defaults are MiT-b0's
        net, size, task = transformers.SegformerForSemanticSegmentation(config), 512, "segmentation"
        made = "transformers.SegformerForSemanticSegmentation(transformers.SegformerConfig())"
    else:
        config = transformers.SwinConfig()  # the defaults are Swin-T's
        net, size, task = transformers.SwinForImageClassification(config), 224, "transformer"
        made = "transformers.SwinForImageClassification(transformers.SwinConfig())"

    class Logits(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net = net.eval()

        def forward(self, x):
            return self.net(pixel_values=x).logits

    example = torch.randn(1, 3, size, size)
    call = _torch_export(Logits().eval(), example, path, TORCH_OPSET, False, input_name="pixel_values")
    return {"exporter": "torchscript", "architecture": source, "task": task, "input_shape": list(example.shape),
            "opset_asked": TORCH_OPSET, "call": f"{made}, .logits; " + call}


def export_fp32(source: str, path: Path) -> dict:
    if source in YOLO:
        return export_yolo(source, path)
    if source in TRANSFORMERS:
        return export_transformers(source, path)
    return export_timm(source, path)


FP32_SOURCES = [*YOLO, *TIMM, "resnet50-dynamo", *TRANSFORMERS]


# ------------------------------------------------------------------------------------------------------ quantization
def calibration_images(shape) -> np.ndarray:
    """CALIBRATION_IMAGES seeded synthetic images, uniform in [0, 1)."""
    rng = np.random.default_rng(SEED)
    return rng.random((CALIBRATION_IMAGES, *shape[1:]), dtype=np.float32)


def _input(path: Path):
    graph = onnx.load(str(path), load_external_data=False).graph
    initializers = {t.name for t in graph.initializer}
    first = next(i for i in graph.input if i.name not in initializers)
    return first.name, [d.dim_value or 1 for d in first.type.tensor_type.shape.dim]


def modelopt(fp32: Path, out: Path, **settings) -> str:
    from modelopt.onnx.quantization import quantize  # noqa: PLC0415

    name, shape = _input(fp32)
    quantize(str(fp32), calibration_data={name: calibration_images(shape)}, calibration_eps=["cpu"],
             output_path=str(out), **settings)
    shown = ", ".join(f"{k}={v!r}" for k, v in settings.items())
    return (f"modelopt.onnx.quantization.quantize(fp32, calibration_data={{'{name}': {CALIBRATION_IMAGES} seeded "
            f"U[0,1) images}}, calibration_eps=['cpu'], {shown})")


def ort_static(fp32: Path, out: Path, **settings) -> str:
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static  # noqa

    name, shape = _input(fp32)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.items = iter([{name: image[None]} for image in calibration_images(shape)])

        def get_next(self):
            return next(self.items, None)

    kwargs = dict(settings)
    for key in ("activation_type", "weight_type"):
        if key in kwargs:
            kwargs[key] = getattr(QuantType, kwargs[key])
    quantize_static(str(fp32), str(out), Reader(), quant_format=QuantFormat.QDQ, **kwargs)
    shown = ", ".join(f"{k}={v!r}" for k, v in settings.items())
    return (f"onnxruntime.quantization.quantize_static(fp32, out, reader of {CALIBRATION_IMAGES} seeded U[0,1) images, "
            f"quant_format=QuantFormat.QDQ, {shown})")


def ultralytics_ort_int8(fp32: Path, out: Path) -> str:
    """ultralytics' own INT8 ONNX step (``export(format="onnx", quantize=8)``), fed uint8 images as its dataloader
    gives them and through the exporter's own transform (x / 255)."""
    import torch  # noqa: PLC0415
    from ultralytics.utils.export.onnx import onnx_int8_quantize  # noqa: PLC0415

    name, shape = _input(fp32)
    images = (calibration_images(shape) * 255).astype(np.uint8)
    dataset = [{"img": torch.from_numpy(image[None])} for image in images]
    onnx_int8_quantize(fp32, out, dataset, lambda item: item["img"].numpy().astype(np.float32) / 255.0,
                       input_name=name)
    return (f"ultralytics.utils.export.onnx.onnx_int8_quantize(fp32, out, {CALIBRATION_IMAGES} seeded uint8 images, "
            "x / 255, input_name) (ultralytics' export(format='onnx', quantize=8) step: ORT quantize_static, "
            "its defaults, nodes other than Conv/Gemm/MatMul excluded)")


def ultralytics_modelopt_int8(fp32: Path, out: Path) -> str:
    """The arguments of ultralytics' ``modelopt_quantize_onnx(quantize=8)`` (its TensorRT-11 engine export step)."""
    call = modelopt(fp32, out, quantize_mode="int8", calibration_method="max",
                    nodes_to_exclude=[r".*\.2/Conv$", r".*/dfl/"])
    return call + "  (ultralytics' modelopt_quantize_onnx(quantize=8) arguments)"


# quantizer id -> (description, function(fp32, out) -> call)
QUANTIZERS = {
    "mo-int8": ("ModelOpt INT8, its defaults (entropy calibration, FP16 high precision)",
                lambda f, o: modelopt(f, o, quantize_mode="int8")),
    "mo-int8-fp32": ("ModelOpt INT8, high_precision_dtype fp32",
                     lambda f, o: modelopt(f, o, quantize_mode="int8", high_precision_dtype="fp32")),
    "mo-fp8": ("ModelOpt FP8, its defaults", lambda f, o: modelopt(f, o, quantize_mode="fp8")),
    "ul-mo-int8": ("ultralytics' TensorRT-11 ModelOpt INT8 step", ultralytics_modelopt_int8),
    "ort-u8s8": ("ORT quantize_static QDQ, UINT8 activations (asymmetric), INT8 weights per tensor",
                 lambda f, o: ort_static(f, o, activation_type="QUInt8", weight_type="QInt8", per_channel=False)),
    "ort-s8-asym-pc": ("ORT quantize_static QDQ, INT8 asymmetric activations, INT8 weights per channel",
                       lambda f, o: ort_static(f, o, activation_type="QInt8", weight_type="QInt8", per_channel=True)),
    "ort-s8-sym-pc": ("ORT quantize_static QDQ, INT8 symmetric activations and weights, per channel",
                      lambda f, o: ort_static(f, o, activation_type="QInt8", weight_type="QInt8", per_channel=True,
                                              extra_options={"ActivationSymmetric": True,
                                                             "WeightSymmetric": True})),
    "ort-s8-sym-pt": ("ORT quantize_static QDQ, INT8 symmetric activations and weights, per tensor",
                      lambda f, o: ort_static(f, o, activation_type="QInt8", weight_type="QInt8", per_channel=False,
                                              extra_options={"ActivationSymmetric": True,
                                                             "WeightSymmetric": True})),
    "ul-ort-int8": ("ultralytics' own ONNX INT8 step (ORT quantize_static, its defaults)", ultralytics_ort_int8),
}

_DETECT = ["yolov8n-detect", "yolo11n-detect", "yolo26n-detect"]
_CNN3 = ["resnet50", "mobilenetv3_large_100", "convnext_tiny"]
# quantizer id -> the FP32 sources it is applied to
PLAN = {
    "mo-int8": [*YOLO, *TIMM, *TRANSFORMERS],
    "ul-mo-int8": [*YOLO],
    "mo-int8-fp32": ["yolo11n-detect", "resnet50"],
    "mo-fp8": ["yolov8n-detect", "yolo11n-detect", "resnet50", "vit_tiny_patch16_224", "segformer_b0"],
    "ort-u8s8": [*_DETECT, *_CNN3],
    "ort-s8-sym-pc": [*_DETECT, *_CNN3, "vit_tiny_patch16_224"],
    "ort-s8-asym-pc": ["yolo11n-detect", "resnet50"],
    "ort-s8-sym-pt": ["yolo11n-detect", "efficientnet_b0"],
    "ul-ort-int8": [*_DETECT, "yolov8n-seg"],
}


def quantized_name(source: str, quantizer: str) -> str:
    return fp32_name(source).replace("-fp32", f"-{quantizer}")


def jobs() -> dict[str, tuple[str, str | None]]:
    """Every corpus model: name -> (FP32 source, quantizer id or None)."""
    found = {fp32_name(s): (s, None) for s in FP32_SOURCES}
    for quantizer, sources in PLAN.items():
        found.update({quantized_name(s, quantizer): (s, quantizer) for s in sources})
    return found


# -------------------------------------------------------------------------------------------------------- running
def versions() -> dict[str, str]:
    found = {}
    for module in ("torch", "timm", "transformers", "ultralytics", "modelopt", "onnx", "onnxruntime", "onnxslim"):
        try:
            found[module] = __import__(module).__version__
        except Exception as error:  # noqa: BLE001 - a missing package is recorded, not fatal
            found[module] = f"absent ({type(error).__name__})"
    return found


def make(name: str, work: str, out: str) -> str:
    """Make one model (in a worker process): its full-weight file in ``work``, its stored form in ``out``."""
    import shutil  # noqa: PLC0415

    began = time.monotonic()
    source, quantizer = jobs()[name]
    work_dir, out_dir = Path(work), Path(out)
    full = work_dir / f"{name}.onnx"
    if quantizer is None:
        how = export_fp32(source, full)
        how.update({"quantizer": None, "settings": None})
    else:
        fp32_info = json.loads((out_dir / f"{fp32_name(source)}.json").read_text())
        with tempfile.TemporaryDirectory() as private:  # the quantizers write files beside their input
            fp32 = Path(private) / f"{fp32_name(source)}.onnx"
            shutil.copyfile(work_dir / fp32.name, fp32)
            call = QUANTIZERS[quantizer][1](fp32, full)
        how = {k: fp32_info[k] for k in ("exporter", "architecture", "task", "input_shape")}
        how.update({"quantizer": quantizer, "settings": QUANTIZERS[quantizer][0], "fp32": fp32_name(source),
                    "call": fp32_info["call"] + "; then " + call})
    proto = onnx.load(str(full))
    redrawn = shrink(proto)
    onnx.save(proto, str(out_dir / f"{name}.onnx"))
    record = {"name": name, "kind": "fp32" if quantizer is None else "quantized", **how,
              "opset": next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), None),
              "seed": SEED, "calibration": None if quantizer is None else
              f"{CALIBRATION_IMAGES} synthetic images, uniform in [0, 1), numpy default_rng({SEED})",
              "command": f"python3 scripts/export_thirdparty_corpus.py --work DIR --out DIR --only {name}",
              "seconds": round(time.monotonic() - began, 1), "nodes": len(proto.graph.node),
              "ops": op_histogram(proto), "keep_elements": KEEP_ELEMENTS, "redrawn": redrawn}
    (out_dir / f"{name}.json").write_text(json.dumps(record, indent=1))
    return f"ok: {len(proto.graph.node)} nodes, {time.monotonic() - began:.1f} s"


def run_all(names: list[str], work: Path, out: Path, workers: int, started: float, summary: dict) -> None:
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
        pending = {}
        for name in names:
            pending[pool.submit(_guarded, name, str(work), str(out), started)] = name
        for future in concurrent.futures.as_completed(pending):
            summary[pending[future]] = future.result()
            print(f"{pending[future]}: {summary[pending[future]]}", flush=True)


def _guarded(name: str, work: str, out: str, started: float) -> str:
    if time.time() - started > DEADLINE_S:
        return "skipped: deadline"
    try:
        return make(name, work, out)
    except BaseException as error:  # noqa: BLE001 - one model's failure is recorded and the others go on
        traceback.print_exc()
        return f"error: {type(error).__name__}: {str(error)[:400]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", help="directory for the full-weight models")
    parser.add_argument("--out", help="directory for the stored <name>.onnx and <name>.json")
    parser.add_argument("--only", nargs="*", help="make only these models (an FP32 model a quantized one needs must "
                                                  "be in --work already, or named too)")
    parser.add_argument("--quantizers", nargs="*", choices=sorted(QUANTIZERS),
                        help="make the FP32 exports and only these quantizers' models")
    parser.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) // 3))
    parser.add_argument("--list", action="store_true", help="print the model names and stop")
    args = parser.parse_args(argv)
    every = jobs()
    if args.list:
        for name, (source, quantizer) in every.items():
            print(f"{name:<48} {QUANTIZERS[quantizer][0] if quantizer else 'FP32 export'}")
        return 0
    if not args.work or not args.out:
        parser.error("--work and --out are required")
    names = args.only or [n for n, (_, q) in every.items() if q is None or args.quantizers is None
                          or q in args.quantizers]
    unknown = [n for n in names if n not in every]
    if unknown:
        parser.error(f"unknown model(s) {unknown}; --list names them")
    work, out = Path(args.work), Path(args.out)
    work.mkdir(parents=True, exist_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    started, summary = time.time(), {}
    run_all([n for n in names if every[n][1] is None], work, out, args.workers, started, summary)
    run_all([n for n in names if every[n][1] is not None and summary.get(fp32_name(every[n][0]), "ok").startswith(
        "ok")], work, out, args.workers, started, summary)
    found_versions = versions()
    for name in names:
        summary.setdefault(name, "skipped: its FP32 export failed")
        record = out / f"{name}.json"
        if summary[name].startswith("ok") and record.is_file():
            record.write_text(json.dumps({**json.loads(record.read_text()), "versions": found_versions}, indent=1))
    (out / "export-summary.json").write_text(json.dumps({"versions": found_versions, "models": summary}, indent=1))
    print(json.dumps(summary, indent=1))
    return 0 if all(v.startswith("ok") for v in summary.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
