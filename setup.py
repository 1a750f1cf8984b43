"""setuptools' build step, plus one thing pyproject.toml cannot say: the run-time files that live outside the
packages (matrix.yaml, reference/trt-api, containers/: harness.shipped.SHIPPED) are copied into the built package,
under harness/shipped_data/, so an installed trt-matrix finds them. An editable install gets no copy: it reads the
repository's own files."""
import ast
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


def shipped() -> tuple[str, ...]:
    """harness.shipped.SHIPPED, read from its source (the build must not import the package)."""
    tree = ast.parse((ROOT / "harness" / "shipped.py").read_text())
    (value,) = [node.value for node in tree.body if isinstance(node, ast.Assign)
                and any(getattr(t, "id", None) == "SHIPPED" for t in node.targets)]
    return ast.literal_eval(value)


class BuildPyWithShippedFiles(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        into = Path(self.build_lib) / "harness" / "shipped_data"
        shutil.rmtree(into, ignore_errors=True)
        for relative in shipped():
            source, target = ROOT / relative, into / relative
            if not source.exists():
                raise FileNotFoundError(f"{source}: a shipped path (harness/shipped.py) is missing from the source")
            target.parent.mkdir(parents=True, exist_ok=True)
            if source.is_dir():
                shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                shutil.copy2(source, target)


setup(cmdclass={"build_py": BuildPyWithShippedFiles})
