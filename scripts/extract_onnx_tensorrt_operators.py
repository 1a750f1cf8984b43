"""Write harness/tensorrt/onnx_operators.py, onnx-tensorrt's operator support table per release branch, from copies
of its ``docs/operators.md`` (one file per branch, named ``operators-<branch>.md``).

    python scripts/extract_onnx_tensorrt_operators.py DIR [DIR ...]

Only the facts are kept: each operator's Supported column (Y, N) and its Supported Types; the Restrictions the
parser checker relies on are written by hand in harness/tensorrt/parser_facts.py with their source.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "harness" / "tensorrt" / "onnx_operators.py"
ROW = re.compile(r"^\|\s*([A-Za-z0-9]+)\s*\|\s*([YN])\s*\|?\s*([^|]*)")
TYPE = re.compile(r"\b(FP32|FP16|BF16|FP8|FP4|INT4|INT8|UINT8|INT32|INT64|BOOL|DOUBLE)\b")


def table(text: str) -> dict[str, tuple[str, ...] | None]:
    rows = {}
    for line in text.splitlines():
        match = ROW.match(line)
        if match and match.group(1) != "Operator":
            name, supported, types = match.groups()
            rows[name] = tuple(dict.fromkeys(TYPE.findall(types))) if supported == "Y" else None
    return rows


def main(folders: list[str]) -> None:
    files = sorted((p for folder in folders for p in Path(folder).glob("operators-*.md")),
                   key=lambda p: [int(n) for n in re.findall(r"\d+", p.stem)])
    lines = ['"""onnx-tensorrt\'s operator support table (``docs/operators.md``) per release branch, as data: branch ->',
             "operator -> the types its Supported Types column lists, or None where its Supported column says N. An",
             "operator a branch's table does not list is absent. Written by scripts/extract_onnx_tensorrt_operators.py",
             '(sources: harness/tensorrt/parser_facts.py, DOCUMENTS); not edited by hand."""', "",
             "TABLES: dict[str, dict[str, tuple[str, ...] | None]] = {"]
    for path in files:
        branch = path.stem.removeprefix("operators-")
        lines.append(f"    {branch!r}: {{")
        for name, types in sorted(table(path.read_text()).items()):
            lines.append(f"        {name!r}: {types!r}," if types is None else
                         f"        {name!r}: ({', '.join(repr(t) for t in types)}{',' if len(types) == 1 else ''}),")
        lines.append("    },")
    lines.append("}")
    OUT.write_text("\n".join(lines) + "\n")
    print(f"{OUT}: {len(files)} branch(es)")


if __name__ == "__main__":
    main(sys.argv[1:] or ["."])
