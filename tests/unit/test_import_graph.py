"""The package's modules import one way: no cycle, not even through an import inside a
function or a ``TYPE_CHECKING`` block (the usual ways to hide one).

The graph is read from the source with ``ast``, so nothing is imported to build it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import bitemporal

PACKAGE = Path(bitemporal.__file__).parent


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(name: str, source: str, modules: set[str], *, is_package: bool = False) -> set[str]:
    """The package modules that module ``name`` (of ``source``) imports, wherever the
    import statement stands."""
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            stem = node.module or ""
            if node.level:
                stem = f"{base}.{stem}" if stem else base
            # `from . import x` and `from .m import f` name a module or a member of one.
            targets = [f"{stem}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            # The module itself, or the nearest enclosing package module that exists.
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    paths = sorted(PACKAGE.rglob("*.py"))
    modules = {module_name(p) for p in paths}
    return {
        module_name(p): imported(
            module_name(p), p.read_text(), modules, is_package=p.name == "__init__.py"
        )
        for p in paths
    }


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle as a path of modules (first == last), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for child in sorted(graph.get(node, ())):
            if state.get(child) == 1:
                return path[path.index(child) :] + [child]
            if child not in state and (cycle := visit(child)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_package_imports_have_no_cycle() -> None:
    graph = import_graph()
    # Every package module is read except the package itself, which imports everything:
    # a module importing `bitemporal` would be an upward import, reported as a cycle.
    assert len(graph) > 20
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or ())


def test_the_checker_sees_imports_inside_functions_and_type_checking_blocks() -> None:
    """The walker is not fooled by the two usual hiding places of a cycle."""
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from .b import B\n"
        "def f():\n"
        "    from . import c\n"
    )
    modules = {"bitemporal", "bitemporal.a", "bitemporal.b", "bitemporal.c"}
    assert imported("bitemporal.a", source, modules) == {"bitemporal.b", "bitemporal.c"}
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None
