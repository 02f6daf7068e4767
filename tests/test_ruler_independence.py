"""The bench's rulers share no code with the context policies: no import either way (issue 18).

A policy that kept exactly what a ruler checks would look faithful by construction; the rulers
(bench/_terms.py, _evidence.py, _rulers.py, _metrics.py, _turns.py, _losses.py, _report_faithful.py)
must therefore never import ``tiered_agent.context`` (directly or through another module), and no
module of ``tiered_agent.context`` may import the bench.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "tiered_agent"
RULERS = tuple(
    f"tiered_agent.bench.{name}"
    for name in ("_terms", "_evidence", "_rulers", "_metrics", "_turns", "_losses", "_report_faithful")
)


def _file(module: str) -> Path | None:
    path = PACKAGE.parent.joinpath(*module.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _type_checking(node: ast.AST) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _statements(tree: ast.AST) -> list[ast.AST]:
    """Every node of ``tree`` but what sits under ``if TYPE_CHECKING:`` (never run)."""
    out: list[ast.AST] = []
    todo = [tree]
    while todo:
        node = todo.pop()
        out.append(node)
        if _type_checking(node):
            assert isinstance(node, ast.If)
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))
    return out


def imports_of(module: str) -> set[str]:
    """The ``tiered_agent`` modules ``module`` imports when it runs (any import statement, function-
    level ones included, ``if TYPE_CHECKING:`` blocks left out; relative imports resolved)."""
    path = _file(module)
    assert path is not None, module
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in _statements(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names if _file(f"{base}.{alias.name}"))
    return {m for m in found if m.split(".")[0] == "tiered_agent" and _file(m)}


def closure(start: str) -> set[str]:
    """Every ``tiered_agent`` module importing ``start`` runs, its parent packages included."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        todo.extend(imports_of(module))
        todo.extend(_parents(module))
    return seen


@pytest.mark.parametrize("ruler", RULERS)
def test_a_ruler_imports_nothing_from_the_context_policies(ruler: str) -> None:
    reached = closure(ruler)
    assert ruler in reached
    assert sorted(m for m in reached if m.startswith("tiered_agent.context")) == []


def test_the_context_policies_import_nothing_from_the_bench() -> None:
    modules = [
        ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        for path in sorted((PACKAGE / "context").rglob("*.py"))
    ]
    assert len(modules) > 10
    offending = {m: sorted(i for i in imports_of(m) if i.startswith("tiered_agent.bench")) for m in modules}
    assert {m: found for m, found in offending.items() if found} == {}


def test_the_checker_sees_an_import_of_the_context(tmp_path: Path) -> None:
    """The graph walk itself: the replay does import the context (so a ruler that imported the replay
    would be caught)."""
    assert "tiered_agent.context._manager" in closure("tiered_agent.bench._replay")
    assert "tiered_agent.bench._caching" in imports_of("tiered_agent.bench._metrics")


def test_importing_the_rulers_loads_no_context_module() -> None:
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in RULERS)
        + "print(sorted(m for m in sys.modules if m.startswith('tiered_agent.context')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=PACKAGE.parent
    )
    assert done.stdout.strip() == "[]"
