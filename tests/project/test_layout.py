"""The package's layout: the modules import each other without a cycle, lazy imports included, and each
subpackage imports only the layers below it, so the tree draws the architecture (docs/internals.md)."""

import ast
import re
from pathlib import Path
from typing import Dict, List, Set

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "optimum_ipu_ext"

# The layers, lowest first: a module may import its own layer and those below. The top-level modules `errors` and
# `_version` are below every layer; the package itself (`__init__`, the public names) is above every one.
LAYERS = ("sdk", "recorder", "settings", "options", "hub", "placement", "config", "cli")
LEAVES = {"optimum_ipu_ext.errors", "optimum_ipu_ext._version"}
DATA = {"optimum_ipu_ext.presets"}  # the preset configs, imported by nothing

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


def layer(name: str) -> int:
    """The index of a module's layer: -1 below every layer, len(LAYERS) above."""
    if name in LEAVES:
        return -1
    if name == "optimum_ipu_ext":
        return len(LAYERS)
    return LAYERS.index(name.split(".")[1])


def test_every_module_is_in_a_layer():
    top = {name for name in MODULES if name.count(".") == 1}
    assert sorted(top - LEAVES - DATA - {f"optimum_ipu_ext.{name}" for name in LAYERS}) == []
    assert len({name for name in top if not MODULES[name].name == "__init__.py"}) <= 6


def test_each_subpackage_says_what_it_owns():
    for name in LAYERS:
        docstring = ast.get_docstring(ast.parse((PACKAGE / name / "__init__.py").read_text(encoding="utf-8")))
        assert docstring and "May import" in docstring, name


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


@pytest.mark.parametrize("name", sorted(set(MODULES) - LEAVES - DATA - {"optimum_ipu_ext"}))
def test_a_module_imports_only_its_layer_and_those_below(name):
    assert sorted(target for target in GRAPH[name] if layer(target) > layer(name)) == []


def test_the_layer_rule_refuses_an_import_upwards():
    ordered = [
        ("optimum_ipu_ext.settings.rules", "optimum_ipu_ext.sdk.plan", "optimum_ipu_ext.errors"),
        ("optimum_ipu_ext.cli.commands", "optimum_ipu_ext.config.plain", "optimum_ipu_ext.placement"),
    ]
    for upper, middle, lower in ordered:
        assert layer(upper) > layer(middle) > layer(lower)
    assert layer("optimum_ipu_ext") > layer("optimum_ipu_ext.cli")


# The placement's parts, lowest first: a module of one may import its own part and those before it.
PLACEMENT_PARTS = ("hardware", "source", "models", "estimate", "report", "placement", "placer", "calibration",
                   "planning", "generation_planning")


def placement_part(name: str) -> int:
    """The index of a placement module's part (the package itself: above every part)."""
    parts = name.split(".")
    return PLACEMENT_PARTS.index(parts[2]) if len(parts) > 2 else len(PLACEMENT_PARTS)


@pytest.mark.parametrize("name", sorted(name for name in MODULES if name.startswith("optimum_ipu_ext.placement.")))
def test_a_placement_module_imports_only_its_part_and_those_below(name):
    inside = [target for target in GRAPH[name] if target.startswith("optimum_ipu_ext.placement")]
    assert sorted(target for target in inside if placement_part(target) > placement_part(name)) == []


def test_each_part_of_the_placement_says_what_it_owns():
    folders = sorted(path for path in (PACKAGE / "placement").iterdir() if (path / "__init__.py").is_file())
    assert [folder.name for folder in folders] == ["estimate", "models", "report", "source"]
    for folder in folders:
        docstring = ast.get_docstring(ast.parse((folder / "__init__.py").read_text(encoding="utf-8")))
        assert docstring and "May import" in docstring, folder.name
    flat = sorted(path.stem for path in (PACKAGE / "placement").glob("*.py"))
    assert len(flat) <= 8 and set(flat) - {"__init__"} <= set(PLACEMENT_PARTS), flat
    assert placement_part("optimum_ipu_ext.placement.models.bert") < placement_part(
        "optimum_ipu_ext.placement.estimate.layout")


def test_the_walk_sees_lazy_and_relative_imports():
    assert "optimum_ipu_ext.options.readback" in GRAPH["optimum_ipu_ext.config.mixin"]  # inside `from_options`
    # under TYPE_CHECKING and lazily
    assert "optimum_ipu_ext.config.configuration" in GRAPH["optimum_ipu_ext.config.plain"]
    assert "optimum_ipu_ext._version" in GRAPH["optimum_ipu_ext.cli"]  # `from .._version import __version__`
    assert "optimum_ipu_ext.recorder.enums" in GRAPH["optimum_ipu_ext.recorder.poptorch"]  # `from . import enums`


# each model family and the module of the placement that describes it
FAMILIES = {
    "bert": "bert", "roberta": "bert", "groupbert": "bert", "mpnet": "mpnet", "distilbert": "distilbert",
    "deberta": "deberta", "lxmert": "lxmert", "gpt2": "gpt2", "gpt-2": "gpt2", "t5": "t5", "mt5": "t5",
    "bart": "bart", "whisper": "whisper", "wav2vec2": "speech", "hubert": "speech", "vit": "vit",
    "convnext": "convnext",
}
REGISTRY = "optimum_ipu_ext.placement.models"


def names(text: str, family: str) -> bool:
    """Whether `text` names `family`, in any case, where a word starts, not followed by a lowercase letter (so
    `BertLayer`, `bert-base-uncased` and `GPT2` name one; `GroupBert` names GroupBERT, not BERT)."""
    found = re.finditer(rf"(?<![A-Za-z0-9]){re.escape(family)}", text, re.IGNORECASE)
    return any(not text[match.end():match.end() + 1].islower() for match in found)


def naming(family: str) -> List[str]:
    """The package's modules outside cli/ and config/ that name `family`."""
    return sorted(name for name, path in MODULES.items() if name.split(".")[1:2] not in (["cli"], ["config"])
                  and names(path.read_text(encoding="utf-8"), family))


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_family_is_named_by_its_own_module_and_the_registry_alone(family):
    own = f"{REGISTRY}.{FAMILIES[family]}"
    assert set(naming(family)) <= {own, REGISTRY}, naming(family)
    assert own in naming(family)


def test_the_family_check_sees_a_family_wherever_it_is_named():
    assert [names(text, "bert") for text in ("BertLayer", "bert-base-uncased", "(BERT)", "GroupBert", "bertha",
                                              "Bert's")] == [True, True, True, False, False, True]
    assert "optimum_ipu_ext.placement.models.bert" in naming("roberta") and naming("no-such-family") == []
