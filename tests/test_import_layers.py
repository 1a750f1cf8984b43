"""The layers hold: every import of harness/, reports/ and cases/ (lazy ones inside functions included), read from
the source, forms no cycle between files or between the layers, and each layer imports only what it may.

Layers (docs/architecture.md, "Layout"): harness.commands -> harness.orchestration -> harness.store -> harness.worker; reports reads
the store; harness.scan (the scan of a user's model) never imports reports: the command renders its page;
harness.reduction (`reduce`) is a room of its own that only the command enters, and prints through the progress it is
handed; cases is the case library, graphs built from onnx and onnx-graphsurgeon that import none of the harness's
rooms nor reports; harness.diagnosis (`diagnose`) reads files, the library and records for the commands.
harness.worker runs inside containers: the standard library, numpy, onnx and the backend libraries only, with
harness.tensorrt (TensorRT's facts and readers) and harness.judgement (the words of a verdict), standard library only.

A layer's rule covers what it reaches, not only what it imports: an import of a module that imports a forbidden one
is a breach, reported with the chain of imports that makes it.

harness.evidence (every piece of evidence, gathered once for the scan, diagnose, --fix and the planning view) sits
above harness.store, harness.targets and harness.judgement and below the scan, diagnosis and reports; it reads forms
as index.json declares them, never the case library's code.
"""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
ROOTS = ("harness", "reports", "cases")
LAYERS = ("harness.commands", "harness.orchestration", "harness.store", "harness.worker", "harness.scan", "reports",
          "cases", "harness.diagnosis", "harness.reduction", "harness.evidence", "harness.tensorrt")
WORKER_THIRD_PARTY = {"numpy", "onnx", "onnxruntime", "tensorrt", "polygraphy"}
JUDGEMENT = "harness.judgement"  # goes into worker containers too: the standard library and itself only
FORBIDDEN = {  # layer -> layers it must never import
    "reports": {"cases", "harness.commands", "harness.diagnosis", "harness.reduction"},  # a diagnosis is data to it
    "harness.store": {"harness.commands", "harness.orchestration", "harness.reduction", "harness.evidence"},
    # evidence is gathered below every page and command that judges it; the scan names the forms it asks about
    "harness.evidence": {"harness.commands", "harness.orchestration", "harness.scan", "harness.diagnosis",
                         "harness.reduction", "reports", "cases"},
    "harness.orchestration": {"harness.commands", "harness.scan", "harness.diagnosis", "harness.reduction"},
    # `diagnose` is called by the commands and runs nothing itself: it reads files, the library and records
    "harness.diagnosis": {"harness.commands", "harness.orchestration", "harness.reduction"},
    "harness.scan": {"reports", "harness.commands", "harness.reduction"},  # the command renders the scan's page
    # `reduce`: the command parses and prints, the reduction decides; it runs checks through orchestration
    "harness.reduction": {"harness.commands", "reports", "harness.diagnosis"},
    # the case library: graphs, variants, matchers and rewrites, usable without any of the harness
    "cases": {"harness.commands", "harness.orchestration", "harness.store", "harness.worker", "harness.scan",
              "harness.diagnosis", "harness.reduction", "harness.matrix", "reports", "harness.evidence"},
    # TensorRT's facts and readers: the floor everyone reads, shipped into worker containers
    "harness.tensorrt": {"harness.commands", "harness.orchestration", "harness.store", "harness.worker",
                         "harness.scan", "harness.diagnosis", "harness.reduction", "harness.matrix",
                         "harness.targets", "reports", "cases", "harness.evidence"},
}
CONTAINER_LAYERS = ("harness.worker", JUDGEMENT, "harness.tensorrt")  # harness.worker.CONTAINER_PACKAGES
# Edges that exist today and are being removed by another change; each names that change. Keep this short.
KNOWN_EXCEPTIONS: set[tuple[str, str]] = set()


def module_files() -> dict[str, Path]:
    """Module name -> file, for every module of the project's packages."""
    found = {}
    for root in ROOTS:
        for path in sorted((REPO / root).rglob("*.py")):
            parts = path.relative_to(REPO).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


MODULES = module_files()


def imported_names(module: str, path: Path) -> list[tuple[str, int]]:
    """(absolute module name, line) of every import in ``path``, at any depth; ``from P import n`` gives P.n when
    that is a module of the project, else P."""
    is_package = path.name == "__init__.py"
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".") if is_package else module.split(".")[:-1]
                package = package[:len(package) - (node.level - 1)]
                base = ".".join(package + ([base] if base else []))
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                found.append((candidate if candidate in MODULES else base, node.lineno))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "lazy_import"
              and node.args and isinstance(node.args[0], ast.Constant)):  # the TensorRT package's declared imports
            found.append((node.args[0].value, node.lineno))
    return found


def project_module(name: str) -> str | None:
    """The project module ``name`` refers to (its nearest enclosing one), or None outside the project."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def layer_of(module: str) -> str:
    """The layer a module belongs to; a module outside the layers (e.g. harness.matrix) is a node of its own."""
    return next((layer for layer in LAYERS if module == layer or module.startswith(layer + ".")), module)


def edges() -> dict[str, dict[str, int]]:
    """module -> {imported project module: line of the first such import}."""
    graph: dict[str, dict[str, int]] = {module: {} for module in MODULES}
    for module, path in MODULES.items():
        for name, line in imported_names(module, path):
            target = project_module(name)
            if target is not None and target != module:
                graph[module].setdefault(target, line)
    return graph


GRAPH = edges()


def reach(graph: dict[str, dict[str, int]], start: str) -> dict[str, str]:
    """Every module ``start`` reaches through imports -> the module that imports it on the shortest chain."""
    reached: dict[str, str] = {}
    queue = [start]
    for module in queue:
        for target in graph.get(module, ()):
            if target != start and target not in reached:
                reached[target] = module
                queue.append(target)
    return reached


def chain(reached: dict[str, str], start: str, end: str) -> list[str]:
    """The modules from ``start`` to ``end`` along ``reached``."""
    found = [end]
    while found[-1] != start:
        found.append(reached[found[-1]])
    return found[::-1]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of ``graph`` with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def where(module: str, target: str) -> str:
    return f"{MODULES[module].relative_to(REPO)}:{GRAPH[module][target]} imports {target}"


def layer_edges() -> dict[tuple[str, str], list[str]]:
    """(layer, layer) -> the file imports that make that edge, known exceptions left out."""
    found: dict[tuple[str, str], list[str]] = {}
    for module, targets in GRAPH.items():
        for target in targets:
            pair = (layer_of(module), layer_of(target))
            if pair[0] != pair[1] and (module, target) not in KNOWN_EXCEPTIONS:
                found.setdefault(pair, []).append(where(module, target))
    return found


def test_the_walk_sees_lazy_imports_and_every_layer():
    assert "harness.worker.record" in MODULES and "reports.html" in MODULES and "cases.model" in MODULES
    lazy = [(m, t) for m, targets in GRAPH.items() for t in targets
            if m.startswith("harness.commands") and t.startswith("harness.orchestration")]
    assert lazy, "the commands import orchestration inside functions; the walk must see those imports"
    backend = "harness.worker.backends.tensorrt.backend"
    declared = {name for name, _ in imported_names(backend, MODULES[backend])}
    assert "tensorrt" in declared, "lazy_import(\"tensorrt\") at the top of a module is an import the walk must see"


def test_cycles_finds_every_loop_and_only_loops():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_no_import_cycle_between_files():
    graph = {module: set(targets) - {t for m, t in KNOWN_EXCEPTIONS if m == module}
             for module, targets in GRAPH.items()}
    found = cycles(graph)
    assert not found, "import cycles between files:\n" + "\n".join(
        " <-> ".join(component) + ":\n  " + "\n  ".join(where(m, t) for m in component for t in GRAPH[m]
                                                       if t in component)
        for component in found)


def test_no_import_cycle_between_layers():
    pairs = layer_edges()
    graph: dict[str, set[str]] = {}
    for source, target in pairs:
        graph.setdefault(source, set()).add(target)
    found = cycles(graph)
    assert not found, "import cycles between layers:\n" + "\n".join(
        " <-> ".join(component) + ":\n  " + "\n  ".join(line for (s, t), lines in pairs.items()
                                                       if s in component and t in component for line in lines)
        for component in found)


def breaches(graph: dict[str, dict[str, int]], layer: str, forbidden: set[str]) -> list[list[str]]:
    """For each module of ``layer`` and each forbidden module it reaches through a module outside the layer, the
    shortest chain of imports (a chain through another module of the layer is that module's own), known exceptions
    left out."""
    graph = {module: {t: line for t, line in targets.items() if (module, t) not in KNOWN_EXCEPTIONS}
             for module, targets in graph.items()}
    found = []
    for module in sorted(graph):
        if layer_of(module) != layer:
            continue
        reached = reach(graph, module)
        for target in sorted(reached):
            path = chain(reached, module, target)
            if (layer_of(target) in forbidden and layer_of(path[1]) != layer
                    and not any(layer_of(m) in forbidden for m in path[1:-1])):
                found.append(path)
    return found


def describe(path: list[str]) -> str:
    return " -> ".join(path) + "\n    " + "\n    ".join(where(m, t) for m, t in zip(path, path[1:]))


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_a_layer_never_reaches_what_it_must_not(layer):
    found = breaches(GRAPH, layer, FORBIDDEN[layer])
    assert not found, f"{layer} must not reach {sorted(FORBIDDEN[layer])}:\n  " + "\n  ".join(map(describe, found))


def test_reach_follows_imports_through_modules_of_other_layers():
    graph = {"cases.model": {"harness.targets.facts": 17}, "harness.targets.facts": {"harness.worker.compat": 38},
             "harness.worker.compat": {}, "cases.other": {"cases.model": 3}}
    assert breaches(graph, "cases", {"harness.worker"}) == [
        ["cases.model", "harness.targets.facts", "harness.worker.compat"]]
    assert breaches(graph, "cases", {"harness.store"}) == []


def in_container(module: str) -> bool:
    return any(module == layer or module.startswith(layer + ".") for layer in CONTAINER_LAYERS)


def test_the_container_layers_are_the_packages_a_worker_container_holds():
    from harness.worker import CONTAINER_PACKAGES

    assert tuple(f"harness.{name}" for name in CONTAINER_PACKAGES) == CONTAINER_LAYERS


def test_what_runs_in_containers_reaches_only_itself_the_standard_library_numpy_onnx_and_backends():
    """The worker, TensorRT's floor and the judgement's words, and every module they reach, import only what a worker
    container has; the floor and the judgement only the standard library."""
    offending = []
    for start in sorted(m for m in MODULES if in_container(m)):
        reached = reach(GRAPH, start)
        for module in [start, *reached]:
            if module != start and in_container(module):
                continue  # checked as a start of its own
            for name, line in imported_names(module, MODULES[module]):
                top = name.split(".")[0]
                allowed = WORKER_THIRD_PARTY if layer_of(start) == "harness.worker" else set()
                inside = in_container(project_module(name) or "")
                if not (inside or top in sys.stdlib_module_names or top in allowed or top == "__future__"):
                    via = " -> ".join(chain(reached, start, module)) if module != start else start
                    offending.append(f"{MODULES[module].relative_to(REPO)}:{line} imports {name} (reached: {via})")
    assert not offending, "this code goes into worker containers:\n" + "\n".join(offending)


def test_known_exceptions_still_exist():
    """An exception whose import is gone must leave the list, so it cannot hide a new edge."""
    stale = [pair for pair in KNOWN_EXCEPTIONS if pair[1] not in GRAPH.get(pair[0], {})]
    assert not stale, f"remove from KNOWN_EXCEPTIONS, the import is gone: {stale}"


def test_the_readme_layout_draws_every_layer_and_names_only_paths_that_exist():
    from tests.docs import section

    layout = section("Layout")  # docs/architecture.md
    for layer in LAYERS:
        folder = layer.replace(".", "/") + "/"
        assert folder in layout and (REPO / folder).is_dir(), folder
    named = [token for token in re.findall(r"`([^`\n]+)`", layout)
             if token.split("/")[0] in (*ROOTS, "containers", "benchmarks", "tests", "scripts", ".github")]
    assert named and all(list(REPO.glob(token.rstrip("/"))) for token in named), [
        token for token in named if not list(REPO.glob(token.rstrip("/")))]


# Command modules that import another command's module (not options, which every command shares), and why.
COMMAND_SIBLINGS = {("harness.commands.nightly", "harness.commands.run")}  # the nightly runs targets as `run` does


def test_a_command_takes_shared_helpers_from_below_not_from_another_command():
    """What two commands share (scan.json and scan.html: reports/scan_results.py) lives below them; a command module
    imports only options among the commands' modules (main wires them all)."""
    offending = [where(module, target) for module, targets in GRAPH.items() for target in targets
                 if module.startswith("harness.commands.") and target.startswith("harness.commands.")
                 and module != "harness.commands.main" and target != "harness.commands.options"
                 and (module, target) not in COMMAND_SIBLINGS]
    assert not offending, "\n".join(offending)
