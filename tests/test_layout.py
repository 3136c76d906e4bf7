"""The package's layout: the modules import each other without a cycle, lazy imports included, and the core
(settings, checks, plans, documents) imports nothing of the shell (the classes on top of it, the Hub, the import
of builders, the CLI)."""

import ast
from pathlib import Path
from typing import Dict, List, Set

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "optimum_ipu_ext"

CORE = {
    "optimum_ipu_ext.errors", "optimum_ipu_ext.legacy", "optimum_ipu_ext.plan", "optimum_ipu_ext.schema",
    "optimum_ipu_ext.settings", "optimum_ipu_ext.popdist", "optimum_ipu_ext.build", "optimum_ipu_ext.core",
    "optimum_ipu_ext.documents", "optimum_ipu_ext.placement", "optimum_ipu_ext.placement.checkpoint",
    "optimum_ipu_ext.sdk_enums", "optimum_ipu_ext._version", "optimum_ipu_ext.option_files",
    "optimum_ipu_ext.placement.rules", "optimum_ipu_ext.placement.architectures", "optimum_ipu_ext.placement.layout",
    "optimum_ipu_ext.placement.parameters", "optimum_ipu_ext.placement.memory", "optimum_ipu_ext.placement.balance",
    "optimum_ipu_ext.placement.placement", "optimum_ipu_ext.placement.report", "optimum_ipu_ext.placement.pipeline",
    "optimum_ipu_ext.placement.cost_ops", "optimum_ipu_ext.placement.cost_rows", "optimum_ipu_ext.placement.costs",
}
SHELL_PACKAGES = ("optimum_ipu_ext.recorder", "optimum_ipu_ext.cli")
SHELL = {
    "optimum_ipu_ext", "optimum_ipu_ext.mixin", "optimum_ipu_ext.plain", "optimum_ipu_ext.configuration",
    "optimum_ipu_ext.base", "optimum_ipu_ext.bundled_base", "optimum_ipu_ext.hub", "optimum_ipu_ext.importer",
    "optimum_ipu_ext.presets",  # data: the preset configs the CLI writes
    "optimum_ipu_ext.placement.hub_model", "optimum_ipu_ext.option_file_import",
    # the model a placement is for, on the Hub or built by transformers
    "optimum_ipu_ext.placement.sources", "optimum_ipu_ext.placement.meta", "optimum_ipu_ext.placement.hub_model",
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imported(name: str) -> Set[str]:
    """The package's modules that module `name` imports anywhere in its code: at the top, inside functions, under
    `TYPE_CHECKING`."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            # `from package import submodule` imports the submodule
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
        else:
            continue
        found.update(target for target in targets if target in MODULES and target != name)
    return found


GRAPH: Dict[str, Set[str]] = {name: imported(name) for name in MODULES}


def test_every_module_is_core_or_shell():
    unplaced = [name for name in MODULES if name not in CORE | SHELL and not name.startswith(SHELL_PACKAGES)]
    assert unplaced == []


def cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """Each import cycle, as the modules on it, found by a depth-first walk."""
    found, done, path = [], set(), []

    def visit(name: str) -> None:
        if name in path:
            found.append(path[path.index(name):] + [name])
            return
        if name in done:
            return
        path.append(name)
        for target in sorted(graph[name]):
            visit(target)
        path.pop()
        done.add(name)

    for name in sorted(graph):
        visit(name)
    return found


def test_no_module_imports_itself_back():
    assert cycles(GRAPH) == []


def test_the_walk_finds_a_cycle_where_there_is_one():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.parametrize("name", sorted(CORE))
def test_the_core_imports_nothing_of_the_shell(name):
    reached, todo = set(), [name]
    while todo:
        for target in GRAPH[todo.pop()] - reached:
            reached.add(target)
            todo.append(target)
    assert sorted(reached - CORE) == []


def test_the_walk_sees_lazy_and_relative_imports():
    assert "optimum_ipu_ext.importer" in GRAPH["optimum_ipu_ext.mixin"]  # inside `from_options`
    assert "optimum_ipu_ext.configuration" in GRAPH["optimum_ipu_ext.plain"]  # under TYPE_CHECKING and lazily
    assert "optimum_ipu_ext" in GRAPH["optimum_ipu_ext.cli"]  # `from .. import __version__`
    assert "optimum_ipu_ext.recorder.enums" in GRAPH["optimum_ipu_ext.recorder.poptorch"]  # `from . import enums`
