"""The package's modules import each other without a circle.

Every ``import`` statement inside ``tiered_agent/`` counts: at module level, inside functions
(the lazy imports that keep ``--help`` fast) and under ``if TYPE_CHECKING:``. A lazy or
type-only import still makes one module depend on the other, so a circle through one is a
circle in the design (issue 15 named ``_cli`` <-> ``_run_command``, closed by a lazy import, and
``_telemetry`` <-> ``_otel_spans``, closed by a type-only one). Not counted: imports by name
string (``importlib.import_module``, the CLI's lazy subcommands) and the implicit import of a
module's parent packages (Python's mechanism, not a dependency the module chose).
"""

from __future__ import annotations

import ast
import importlib
import tomllib
from collections.abc import Iterator
from pathlib import Path

import tiered_agent
import tiered_agent.cli

PACKAGE = Path(tiered_agent.__file__).parent


def _modules(root: Path) -> dict[str, tuple[Path, bool]]:
    """Module name -> (file, is a package) for every ``.py`` file under ``root``."""
    found = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _imported(node: ast.AST, module: str, modules: dict[str, tuple[Path, bool]]) -> Iterator[str]:
    """The dotted names an import statement depends on: ``from X import y`` is ``X.y`` when that is a
    module (``X`` itself then runs only as its parent package), else ``X``."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        base = module.split(".") if modules[module][1] else module.split(".")[:-1]
        if node.level:
            base = base[: len(base) - (node.level - 1)]
            source = ".".join([*base, *([node.module] if node.module else [])])
        else:
            source = node.module or ""
        for alias in node.names:
            submodule = f"{source}.{alias.name}"
            yield submodule if submodule in modules else source


def _resolve(name: str, modules: dict[str, tuple[Path, bool]]) -> str | None:
    """The longest known module prefix of ``name`` (``pkg.mod.attr`` -> ``pkg.mod``)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports anywhere in its source."""
    modules = _modules(root)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, (path, _) in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for target in _imported(node, name, modules):
                if target.split(".")[0] != root.name:
                    continue
                resolved = _resolve(target, modules)
                if resolved is not None and resolved != name:
                    graph[name].add(resolved)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of the graph (its modules in import order, the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (cycle := visit(target)) is not None:
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)) is not None:
            return cycle
    return None


def test_the_package_has_no_import_circle() -> None:
    graph = import_graph(PACKAGE)
    assert len(graph) > 100  # the walk found the package's modules
    cycle = find_cycle(graph)
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


def test_lazy_and_type_only_imports_count(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("from ._b import B\n")
    (package / "_a.py").write_text("def f():\n    from .sub import _b\n")
    (package / "sub" / "_b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .._a import f\nB = 1\n"
    )
    graph = import_graph(package)
    assert graph == {
        "pkg": set(),
        "pkg.sub": {"pkg.sub._b"},
        "pkg._a": {"pkg.sub._b"},
        "pkg.sub._b": {"pkg._a"},
    }
    assert find_cycle(graph) == ["pkg._a", "pkg.sub._b", "pkg._a"]
    (package / "sub" / "_b.py").write_text("B = 1\n")
    assert find_cycle(import_graph(package)) is None


def test_the_console_script_points_at_the_cli() -> None:
    pyproject = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8"))
    module_name, _, attr = pyproject["project"]["scripts"]["tiered-agent"].partition(":")
    main = getattr(importlib.import_module(module_name), attr)
    assert main is tiered_agent.cli.main and callable(main)
