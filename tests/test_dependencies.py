"""Every import of the project is declared in pyproject.toml, so `pip install -e .` (the code) and `pip install -e
".[test]"` (the tests, benchmarks and scripts) in a clean virtualenv satisfy it.

Every module the code imports (at the top, inside a function, or by name through ``lazy_import`` or
``importlib.import_module``) is mapped to the distribution installed here that provides it, and that distribution
must be declared, directly: one that only arrives as another's requirement can go away in that one's next release
(onnxruntime dropped sympy). ``ON_OUR_PATH`` adds what a dependency imports only on a path the code takes.
"""
from __future__ import annotations

import ast
import importlib.metadata
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

from tests.conftest import REPO

FIRST_PARTY = {"harness", "cases", "reports", "tests", "scripts", "benchmarks", "corpus"}
# What `pip install -e .` installs is what the code needs; the test extra adds what tests, benchmarks and scripts need.
CODE_ROOTS = ("harness", "cases", "reports")
TEST_ROOTS = ("tests", "benchmarks", "scripts")
DYNAMIC_IMPORTS = {"lazy_import", "import_module", "__import__"}
NOT_FROM_PYPI = {
    "tensorrt": "TensorRT's bindings come with TensorRT (the container image, JetPack, NVIDIA's pip index); the backend "
                "imports them lazily and names what is missing (harness/worker/backends/tensorrt/lazy.py)",
    "trt_matrix_lazy_probe": "a module tests/harness/worker/backends/tensorrt/test_lazy.py writes for itself",
    "trt_matrix_no_such_module": "a name test_lazy.py imports to see it fail",
    **{name: "scripts/export_torch_corpus.py runs only where torch is installed (a GPU host); what it wrote, corpus/, is "
             "in the repository and its tests need no torch" for name in ("torch", "torchvision", "timm")},
    **{name: "scripts/export_thirdparty_corpus.py runs only on the GPU host, with these carried as wheels; what it "
             "wrote, corpus/thirdparty/, is in the repository and its tests need none of them"
       for name in ("transformers", "ultralytics", "modelopt")},
}
# A module the code imports -> a distribution its import or use needs on the path the code takes, which the
# dependency does not require, and why.
ON_OUR_PATH = {
    "onnxruntime.quantization.shape_inference": (
        "sympy", "quant_pre_process (--to-explicit's BatchNormalization folding) runs "
                 "onnxruntime.tools.symbolic_shape_infer, which imports sympy; onnxruntime requires it only in its "
                 "`symbolic` extra"),
}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared(pyproject: str) -> tuple[set[str], set[str]]:
    """The distributions ``pyproject`` declares for the code, and those the test extra adds."""
    project = tomllib.loads(pyproject)["project"]

    def names(requirements: list[str]) -> set[str]:
        return {canonical(re.match(r"[A-Za-z0-9._-]+", requirement).group()) for requirement in requirements}

    return names(project.get("dependencies", [])), names(project.get("optional-dependencies", {}).get("test", []))


def imports(path: Path) -> list[tuple[str, int]]:
    """Every absolute module name ``path`` imports, with its line: statements anywhere in the file, and constant
    names handed to lazy_import / importlib.import_module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            found += [(f"{node.module}.{alias.name}", node.lineno) for alias in node.names]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            function = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if function in DYNAMIC_IMPORTS and isinstance(node.args[0].value, str):
                found.append((node.args[0].value, node.lineno))
    return found


def distribution_of(module: str, providers: dict[str, list[str]]) -> str | None:
    """The installed distribution that provides ``module`` (for a namespace such as ``google``, the one holding its
    next part), or None."""
    parts = module.split(".")
    candidates = providers.get(parts[0], [])
    if len(candidates) > 1 and len(parts) > 1:
        inner = "/".join(parts[:2])
        candidates = [name for name in candidates if any(
            str(file).startswith(inner) for file in importlib.metadata.distribution(name).files or ())]
    return canonical(candidates[0]) if candidates else None


def undeclared(pyproject: str, repo: Path = REPO) -> list[str]:
    """One line per import that no declared distribution satisfies: the file and line, the module, what is missing."""
    code, test_extra = declared(pyproject)
    providers = importlib.metadata.packages_distributions()
    problems = []
    for roots, allowed, install in ((CODE_ROOTS, code, "pip install -e ."),
                                    (TEST_ROOTS, code | test_extra, 'pip install -e ".[test]"')):
        for root in roots:
            for path in sorted((repo / root).rglob("*.py")):
                for module, line in imports(path):
                    top = module.split(".")[0]
                    if top in sys.stdlib_module_names or top in FIRST_PARTY or top in NOT_FROM_PYPI:
                        continue
                    where = f"{path.relative_to(repo)}:{line}"
                    distribution = distribution_of(module, providers)
                    if distribution is None:
                        problems.append(f"{where}: imports {module}, which no installed distribution provides")
                    elif distribution not in allowed:
                        problems.append(f"{where}: imports {module} from {distribution}, which `{install}` does not "
                                        "install: declare it in pyproject.toml")
                    need = next((value for key, value in ON_OUR_PATH.items()
                                 if module == key or module.startswith(key + ".")), None)
                    if need and canonical(need[0]) not in allowed:
                        problems.append(f"{where}: imports {module}, whose path here needs {need[0]} ({need[1]}): "
                                        "declare it in pyproject.toml")
    return problems


PYPROJECT = (REPO / "pyproject.toml").read_text(encoding="utf-8")


def test_every_import_of_the_code_tests_benchmarks_and_scripts_is_declared():
    assert undeclared(PYPROJECT) == []


def test_a_dependency_left_out_of_pyproject_is_named_with_the_file_that_imports_it():
    without_yaml = re.sub(r'^\s*"pyyaml[^\n]*\n', "", PYPROJECT, flags=re.M)
    problems = undeclared(without_yaml)
    assert any(line.startswith("harness/matrix.py:") and "imports yaml from pyyaml" in line for line in problems)
    assert any(line.startswith("tests/") and "pyyaml" in line and '".[test]"' in line for line in problems)


def test_a_need_on_our_path_left_out_of_pyproject_is_named():
    without_sympy = re.sub(r'^\s*"sympy[^\n]*\n', "", PYPROJECT, flags=re.M)
    (problem,) = undeclared(without_sympy)
    assert problem.startswith("harness/scan/explicit.py:") and "needs sympy" in problem


def test_a_test_only_distribution_in_the_code_is_named():
    moved = PYPROJECT.replace('"pytest>=8", ', "")  # pytest gone from the test extra: the tests' imports fail
    assert any("imports pytest" in line for line in undeclared(moved))


def test_the_need_on_our_path_is_real_to_pre_process_a_model_onnxruntime_imports_sympy(tmp_path):
    """--to-explicit's pre-processing (onnxruntime's quant_pre_process) with sympy made unimportable fails for want
    of sympy: the need is on our path, and onnxruntime itself does not bring it."""
    unconditional = [r for r in importlib.metadata.distribution("onnxruntime").requires or () if "extra ==" not in r]
    assert "sympy" not in {canonical(re.match(r"[A-Za-z0-9._-]+", r).group()) for r in unconditional}
    script = textwrap.dedent(f"""
        import sys, importlib.abc
        class NoSympy(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name == "sympy" or name.startswith("sympy."):
                    raise ModuleNotFoundError("No module named 'sympy'", name="sympy")
        sys.meta_path.insert(0, NoSympy())
        import onnx
        from onnx import helper, TensorProto
        graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), {str(tmp_path / "m.onnx")!r})
        from onnxruntime.quantization.shape_inference import quant_pre_process
        quant_pre_process({str(tmp_path / "m.onnx")!r}, {str(tmp_path / "p.onnx")!r})
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert result.returncode != 0 and "sympy" in result.stderr.strip().splitlines()[-1], result.stderr
