"""The package layout holds: no import circle, and imports point down the layers.

Every module under staffstore/ is parsed with ast (imports inside functions and under
TYPE_CHECKING count too), so a new module that imports upward or closes a circle fails here.
Importing `staffstore.a.b` also runs `staffstore/a/__init__.py`, so that counts as an import
of `staffstore.a`. The CLI loads its command modules by name (cli.app.EXTENSIONS), which ast
does not see; they import cli.app, not the other way round.
"""

from __future__ import annotations

import ast
import graphlib
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "staffstore"

#: What each layer may import of ours besides itself (a layer is a subpackage or a top-level
#: module). Layers not named here may import anything but the CLI.
ALLOWED: dict[str, frozenset[str]] = {
    "text": frozenset(),
    "identity": frozenset(),
    "errors": frozenset({"models"}),
    "models": frozenset({"errors"}),
    "upstream": frozenset({"errors", "models"}),
    "store": frozenset({"text", "models", "errors", "identity"}),
    "gate": frozenset({"text", "store", "models", "errors", "identity"}),
    # The working set carries the agent's working state, which state renders from the store.
    "working_set": frozenset({"store", "state", "models", "errors", "identity"}),
    "state": frozenset({"store", "models", "errors", "identity"}),
    # Workflow memory scrubs with state's scrubber and names namespaces as scoped state does.
    "memory": frozenset({"store", "state", "models", "errors", "identity"}),
    "jobs": frozenset({"store", "text", "models", "errors", "identity"}),
}
#: Layers each layer must never import, on top of ALLOWED.
FORBIDDEN: dict[str, frozenset[str]] = {
    "mouth": frozenset({"proxy", "replays"}),
    "proxy": frozenset({"replays"}),
    "replays": frozenset({"proxy"}),
}
#: Only these may import the CLI (besides the CLI itself).
CLI_IMPORTERS = frozenset({"__main__"})


def module_name(root: Path, path: Path) -> str:
    """`staffstore/gate/query_first.py` -> `staffstore.gate.query_first`; a package's own name."""
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(root: Path) -> dict[str, Path]:
    """Every module under `root` (a package directory), by its dotted name."""
    return {module_name(root, path): path for path in sorted(root.rglob("*.py"))}


def _resolve(name: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for _ in range(node.level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{node.module}" if node.module else package


def _targets(node: ast.AST, name: str, path: Path, known: dict[str, Path]) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        base = _resolve(name, path, node)
        yield base
        # `from staffstore.proxy import config` imports the module staffstore.proxy.config.
        yield from (
            f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in known
        )


def import_graph(root: Path) -> dict[str, set[str]]:
    """Each module's imports of modules under `root`, with the packages that importing runs."""
    known = modules(root)
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            for target in _targets(node, name, path, known):
                parts = target.split(".")
                for end in range(1, len(parts) + 1):
                    step = ".".join(parts[:end])
                    # The importer's own packages are already running when it imports.
                    if step in known and step != name and not name.startswith(step + "."):
                        edges.add(step)
        graph[name] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle, as the list of modules around it, or None."""
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as error:
        return list(error.args[1])
    return None


def layer(module: str) -> str:
    """The layer a module belongs to: its subpackage, or its own name for a top-level module."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def wrong_way(graph: dict[str, set[str]]) -> list[str]:
    """Every import that breaks ALLOWED, FORBIDDEN or the CLI rule, as `a -> b` lines."""
    found = []
    for module, targets in sorted(graph.items()):
        here = layer(module)
        for target in sorted(targets):
            there = layer(target)
            if there in (here, "__init__"):
                continue
            if there == "cli" and here not in CLI_IMPORTERS:
                found.append(f"{module} -> {target} (only __main__ imports the CLI)")
            elif there in FORBIDDEN.get(here, frozenset()) or there not in ALLOWED.get(
                here, {there}
            ):
                found.append(f"{module} -> {target} ({here} may not import {there})")
    return found


def test_the_tree_has_the_layers_the_rules_name() -> None:
    graph = import_graph(PACKAGE)
    layers = {layer(module) for module in graph}
    assert set(ALLOWED) | set(FORBIDDEN) | {"cli"} <= layers
    assert len(graph) > 40 and any(graph.values())


def test_no_module_imports_itself_back_through_others() -> None:
    assert find_cycle(import_graph(PACKAGE)) is None


def test_imports_point_down_the_layers() -> None:
    assert wrong_way(import_graph(PACKAGE)) == []


def test_every_package_says_what_it_owns_and_may_import() -> None:
    for init in sorted(PACKAGE.glob("*/__init__.py")):
        docstring = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert docstring and "import" in docstring, f"{init} needs a docstring naming its imports"


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / "staffstore" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root / "staffstore"


@pytest.fixture
def bad_tree(tmp_path: Path) -> Path:
    return _tree(
        tmp_path,
        {
            "__init__.py": "",
            "models.py": "",
            "store/__init__.py": "from .async_store import StaffStore\n",
            "store/async_store.py": "def f():\n    from ..gate.query_first import query_first\n",
            "gate/__init__.py": "",
            "gate/query_first.py": "from ..store import StaffStore\n",
            "proxy/__init__.py": "",
            "proxy/app.py": "from staffstore.cli import app\n",
            "cli/__init__.py": "",
        },
    )


def test_the_checks_catch_a_circle_made_by_a_lazy_import(bad_tree: Path) -> None:
    cycle = find_cycle(import_graph(bad_tree))
    assert cycle is not None and "staffstore.store.async_store" in cycle


def test_the_checks_catch_imports_that_point_up(bad_tree: Path) -> None:
    assert wrong_way(import_graph(bad_tree)) == [
        "staffstore.proxy.app -> staffstore.cli (only __main__ imports the CLI)",
        "staffstore.store.async_store -> staffstore.gate (store may not import gate)",
        "staffstore.store.async_store -> staffstore.gate.query_first (store may not import gate)",
    ]
