"""The house rules of ``src/`` (issue 31), checked on the source text with ``ast``: no import
cycle (imports inside functions count), no private name taken from another module, no function
body over 50 lines, few percentages (measurements live in ``docs/decisions/``), one ``save``."""

import ast
import re

import pytest

import kernelstream.estimators as estimators
from support import SRC

MODULES = {}
for _path in sorted(SRC.rglob("*.py")):
    _parts = list(_path.relative_to(SRC.parent).with_suffix("").parts)
    if _parts[-1] == "__init__":
        _parts = _parts[:-1]
    MODULES[".".join(_parts)] = _path
TREES = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in MODULES.items()}


def _imported(module: str, node: ast.ImportFrom) -> str:
    """The absolute module an ``ImportFrom`` reads from."""
    if node.level == 0:
        return node.module or ""
    package = module.split(".") if MODULES[module].name == "__init__.py" else module.split(".")[:-1]
    package = package[:len(package) - node.level + 1]
    return ".".join(package + ([node.module] if node.module else []))


def _edges() -> dict[str, set[str]]:
    """Module -> the kernelstream modules it imports, anywhere in its body."""
    graph = {name: set() for name in MODULES}
    for name, tree in TREES.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                source = _imported(name, node)
                for alias in node.names:
                    target = f"{source}.{alias.name}"
                    graph[name].add(target if target in MODULES else source)
            elif isinstance(node, ast.Import):
                graph[name].update(a.name for a in node.names if a.name in MODULES)
        graph[name] &= set(MODULES)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_counting_imports_inside_functions():
    assert _cycles(_edges()) == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_private_name_is_imported_from_another_module():
    private = [(name, node.lineno, alias.name) for name, tree in TREES.items()
               for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
               for alias in node.names
               if alias.name.startswith("_") and not alias.name.startswith("__")]
    assert private == []


def _body_lines(node) -> int:
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]  # the docstring
    return body[-1].end_lineno - body[0].lineno + 1 if body else 0


def test_no_function_body_is_longer_than_50_lines():
    long = [(name, node.name, _body_lines(node)) for name, tree in TREES.items()
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _body_lines(node) > 50]
    assert long == []


def test_at_most_ten_percentages_are_left_in_the_source():
    percentages = [(name, line) for name, path in MODULES.items()
                   for line in path.read_text(encoding="utf-8").splitlines()
                   if re.search(r"\d\s?%", line)]
    assert len(percentages) <= 10, percentages


def test_only_the_planner_reads_the_default_table():
    """Outside :mod:`kernelstream.planning` no module imports ``LIMITS`` or reads one of its
    fields: a fit runs on the table it was given (``fit(limits=...)``), carried by its plan."""
    readers = [(name, node.lineno) for name, tree in TREES.items()
               if not name.startswith("kernelstream.planning")
               for node in ast.walk(tree)
               if (isinstance(node, ast.Name) and node.id == "LIMITS")
               or (isinstance(node, ast.ImportFrom) and any(a.name == "LIMITS" for a in node.names))]
    assert readers == []


def test_save_is_written_once_for_every_estimator():
    defined = [name for name, tree in TREES.items() for node in ast.walk(tree)
               if isinstance(node, ast.ClassDef)
               for item in node.body if isinstance(item, ast.FunctionDef) and item.name == "save"]
    assert defined == ["kernelstream.estimators._estimator"]
    from kernelstream.estimators._estimator import KernelEstimator
    for name in estimators.__all__:
        assert issubclass(getattr(estimators, name), KernelEstimator), name


@pytest.mark.parametrize("name", estimators.__all__)
def test_every_public_method_runs_in_the_thread_limits(name, monkeypatch):
    import kernelstream._threads as threads

    cls = getattr(estimators, name)
    for method in ("fit", "partial_fit", "predict", "decision_function", "transform"):
        function = getattr(cls, method, None)
        if callable(function) and hasattr(function, "__wrapped__"):
            assert function.__qualname__.endswith(method)
    assert hasattr(cls.fit, "__wrapped__"), f"{name}.fit is not wrapped in the thread limits"
