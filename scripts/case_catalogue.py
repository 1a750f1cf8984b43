"""The case catalogue of docs/cases.md, written from the case library (``cases.all_cases()``): a table with one row
per case, and one section per case (its pattern, mode, remedy, variants with their roles and upstream claims, upstream
links and the log signatures the classifier reads from it).

    python scripts/case_catalogue.py            # check: a diff when docs/cases.md differs from the library, exit 1
    python scripts/case_catalogue.py --write    # write the catalogue into docs/cases.md

The catalogue sits between marker comments (:data:`TABLE` and :data:`SECTIONS`); the rest of the page is prose and
stays as written. A link's label comes from its URL: an NVIDIA/TensorRT issue or pull request is ``#N``, another
GitHub issue or pull request ``owner/repo#N``; any other URL takes its label from :data:`LABELS`, or, when it has
none there, from its last path segment. ``tests/cases/test_catalogue.py`` runs the check.
"""
from __future__ import annotations

import argparse
import difflib
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from cases import all_cases  # noqa: E402  (after the repository is importable)
from cases.model import Case, Variant  # noqa: E402
from harness.tensorrt.signatures import KnownFailure  # noqa: E402

PAGE = REPO / "docs" / "cases.md"
COMMAND = "python scripts/case_catalogue.py --write"
TABLE = re.compile(r"(<!-- case table: [^\n]*-->\n)(.*?)(<!-- /case table -->)", re.S)
SECTIONS = re.compile(r"(<!-- case sections: [^\n]*-->\n)(.*?)(<!-- /case sections -->)", re.S)
MODES = {
    "implicit-int8": "implicit INT8 (a calibrator)",
    "explicit-qdq": "explicit quantization (Q/DQ in the graph)",
    "float": "float (precision asked only through builder flags or the graph's own FP16 types)",
}
ROLES = ("failing", "workaround", "sweep", "control")  # the order variants are listed in, by role
# URL -> its label, for the links that are not a GitHub issue or pull request (whose labels are derived).
LABELS = {
    "https://docs.nvidia.com/deeplearning/tensorrt/developer-guide/index.html": "TensorRT developer guide",
    "https://docs.nvidia.com/deeplearning/tensorrt/developer-guide/index.html#int8-calib-dynamic-shapes":
        "developer guide: INT8 calibration with dynamic shapes",
    "https://github.com/NVIDIA/TensorRT/blob/main/python/src/infer/pyCore.cpp": "TensorRT pyCore.cpp",
    "https://github.com/NVIDIA/TensorRT/blob/release/8.6/include/NvInfer.h": "TensorRT 8.6 NvInfer.h",
    "https://github.com/NVIDIA/TensorRT/blob/release/8.6/tools/pytorch-quantization/examples/torchvision/models/"
    "classification/resnet.py": "TensorRT 8.6 resnet.py",
    "https://github.com/onnx/onnx-tensorrt/blob/release/8.5-GA/docs/operators.md": "onnx-tensorrt 8.5-GA operators.md",
    "https://github.com/onnx/onnx-tensorrt/blob/release/8.6-GA/docs/operators.md": "onnx-tensorrt 8.6-GA operators.md",
    "https://docs.nvidia.com/deeplearning/tensorrt/11.4.0/api/migration/tensorrt-10x-to-11x.html":
        "TRT 11 migration guide",
    "https://docs.nvidia.com/deeplearning/tensorrt/11.3.0/api/migration/tensorrt-10x-to-11x-jetson.html":
        "TRT 11.3 Jetson migration guide",
    "https://docs.nvidia.com/deeplearning/tensorrt/latest/getting-started/release-notes-11/11.4.1.html":
        "TRT 11.4.1 release notes",
    "https://docs.nvidia.com/deeplearning/tensorrt/11.4.1/inference-library/dla-runtime-configuration.html":
        "DLA runtime configuration (11.4.1)",
    "https://docs.nvidia.com/deeplearning/tensorrt/latest/inference-library/dla-layer-restrictions.html":
        "DLA supported layers",
}
GITHUB_THREAD = re.compile(r"https://github\.com/([\w.-]+)/([\w.-]+)/(?:issues|pull)/(\d+)/?(?:#[\w-]*)?$")


def label(url: str) -> str:
    """The link text of ``url``: ``#N`` (NVIDIA/TensorRT), ``owner/repo#N`` (another GitHub thread), the label
    :data:`LABELS` declares, or the URL's last path segment."""
    thread = GITHUB_THREAD.match(url)
    if thread:
        owner, repo, number = thread.groups()
        return f"#{number}" if (owner, repo) == ("NVIDIA", "TensorRT") else f"{owner}/{repo}#{number}"
    if url in LABELS:
        return LABELS[url]
    return url.split("#")[0].rstrip("/").rsplit("/", 1)[-1] or url


def link(url: str) -> str:
    return f"[{label(url)}]({url})"


def cell(text: str) -> str:
    """``text`` as one Markdown table cell: on one line, its pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def pattern_order(case: type[Case]) -> tuple:
    """Controls first, then S1..S5, then P1..: the order of ../shared/reference/failure-patterns.md."""
    found = re.fullmatch(r"([A-Z]+)(\d+)", case.pattern)
    if case.pattern == "control":
        return (0, 0, case.id)
    if found:
        return ({"S": 1, "P": 2}.get(found[1], 3), int(found[2]), case.id)
    return (4, 0, case.id)


def ordered_cases() -> list[type[Case]]:
    return sorted(all_cases(), key=pattern_order)


def table(library: list[type[Case]]) -> str:
    """One row per case: its pattern, id (a link to its section), title, variant count and upstream links."""
    rows = [f"| {case.pattern} | [`{case.id}`](#{case.id}) | {cell(case.title)} | {len(case.variants)} | "
            f"{', '.join(map(link, case.links)) or 'none yet'} |\n" for case in library]
    return "| pattern | case | what it is | variants | upstream |\n|---|---|---|---|---|\n" + "".join(rows)


def code(text: str) -> str:
    """``text`` as an inline code span on one line, fenced with more backticks than it holds."""
    text = " ".join(str(text).split())
    fence = "`" * (max(map(len, re.findall(r"`+", text)), default=0) + 1)
    return f"{fence} {text} {fence}" if fence != "`" else f"`{text}`"


def _variant_row(variant: Variant) -> str:
    if variant.varies is None:
        form = "a form of its own"
    else:
        form = f"varies `{variant.varies}`" + (" and inherits its evidence" if variant.inherits else "")
    return f"| `{variant.name}` | {variant.role} | {form} | {cell(variant.description)} | {_claims(variant)} |\n"


def _claims(variant: Variant) -> str:
    """What upstream reported for ``variant``: per target (with the GPU where the outcome depends on it), one entry
    per outcome and source, then over a range (its scope and basis), each with its source."""
    targets: dict[tuple[str, str], list[str]] = {}  # (outcome, source) -> the targets it is claimed for
    for claim in variant.claims:
        gpu = f" (SM {claim.architecture})" if claim.architecture else ""
        targets.setdefault((claim.outcome, claim.source), []).append(f"`{claim.target}`{gpu}")
    said = [f"`{outcome}` on {', '.join(names)}, {link(source)}" for (outcome, source), names in targets.items()]
    for claim in variant.range_claims:
        said.append(f"`{claim.outcome}` for {claim.scope.describe()} ({claim.basis}), {link(claim.source)}")
    return cell("; ".join(said)) if said else "none"


def _signature_line(signature) -> str:
    if isinstance(signature, KnownFailure):
        what = f"a known failure, classified `{signature.category}`"
    else:
        what = f"a known form of `{signature.kind}` ({' '.join(signature.note.split())})"
    return f"- `{signature.id}`: {what}; {link(signature.source)}. Example: {code(signature.example)}\n"


def section(case: type[Case]) -> str:
    """Everything the library says about ``case``, in reading order."""
    variants = sorted(case.variants, key=lambda v: ROLES.index(v.role) if v.role in ROLES else len(ROLES))
    lines = [f"### `{case.id}`\n\n", f"**{case.pattern}**: {case.title.rstrip('.')}.\n\n",
             f"- mode: `{case.mode}`, {MODES.get(case.mode, case.mode)}; opset {case.opset}\n",
             f"- upstream: {', '.join(map(link, case.links)) or 'none yet'}\n"]
    if case.observed is not None:
        seen = case.observed
        lines.append(f"- observed here before any upstream report: `{seen.outcome}` on `{seen.target}`"
                     f"{f' ({seen.message})' if seen.message else ''}, made by {seen.made_by}\n")
    lines.append(f"- remedy: {case.remedy or 'none stated'}\n")
    for backend, why in case.not_applicable.items():
        lines.append(f"- not applicable on {backend}: {why}\n")
    for backend, note in case.backend_notes.items():
        lines.append(f"- on {backend}: {note}\n")
    if case.evidence_files:
        lines.append(f"- files that are evidence on their own: {', '.join(f'`{k}`' for k in case.evidence_files)}\n")
    lines.append("\n| variant | role | form | what it is | upstream says |\n|---|---|---|---|---|\n")
    lines += [_variant_row(v) for v in variants]
    if case.log_signatures:
        lines.append("\nLog signatures (read by `diagnose` and the log classifier):\n\n")
        lines += [_signature_line(s) for s in case.log_signatures]
    return "".join(lines)


def sections(library: list[type[Case]]) -> str:
    return "\n".join(section(case) for case in library)


def written(text: str, library: list[type[Case]] | None = None) -> str:
    """The page ``text`` with its catalogue as the library writes it now."""
    library = ordered_cases() if library is None else library
    for name, markers, body in (("case table", TABLE, table(library)),
                                ("case sections", SECTIONS, sections(library))):
        if not markers.search(text):
            raise ValueError(f"the page has no '<!-- {name}: ... -->' ... '<!-- /{name} -->' marker pair: the "
                             f"catalogue's {name} is written between them")
        text = markers.sub(lambda m: m.group(1) + body + m.group(3), text)
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="write the catalogue into the page")
    parser.add_argument("--page", type=Path, default=PAGE, help="the page to check or write (default: %(default)s)")
    args = parser.parse_args(argv)
    text = args.page.read_text(encoding="utf-8")
    shown = PAGE.relative_to(REPO) if args.page.resolve() == PAGE else args.page  # the page, as the user knows it
    try:
        new = written(text)
    except ValueError as error:
        print(f"{shown}: {error}", file=sys.stderr)
        return 2
    if args.write:
        if new != text:
            args.page.write_text(new, encoding="utf-8")
        print(f"{shown}: {'written' if new != text else 'already up to date'}")
        return 0
    if new == text:
        print(f"{shown}: up to date with the case library")
        return 0
    sys.stdout.writelines(difflib.unified_diff(text.splitlines(True), new.splitlines(True), str(shown),
                                               "from the case library"))
    command = COMMAND if args.page.resolve() == PAGE else f"{COMMAND} --page {args.page}"
    print(f"\nstale: {shown} differs from the case library; run `{command}`")
    return 1


if __name__ == "__main__":
    sys.exit(main())
