"""The package's warnings point at the user's line, whichever way the user reached the code that warns."""

import ast
import inspect
import json
import warnings
from pathlib import Path

import pytest

import optimum_ipu_ext
from optimum_ipu_ext import ConfigMigrationWarning, IPUConfig, IPUConfigWarning, PlainIPUConfig
from optimum_ipu_ext.errors import warn
from support.markers import NOT_UNDER_MUTMUT

PACKAGE = Path(optimum_ipu_ext.__file__).parent


def warn_calls():
    """(module, line) of each `warnings.warn(...)` call in the package, and whether it passes a stacklevel."""
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "warn" \
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "warnings":
                yield f"{path.relative_to(PACKAGE)}:{node.lineno}", any(k.arg == "stacklevel" for k in node.keywords)


def test_every_warning_of_the_package_has_a_stacklevel():
    calls = dict(warn_calls())
    assert calls and all(calls.values()), calls


def test_the_walk_finds_a_warn_call():
    assert "errors.py" in {location.partition(":")[0] for location in dict(warn_calls())}


def test_the_package_warns_through_its_warn_helper_only():
    assert [location.partition(":")[0] for location in dict(warn_calls())] == ["errors.py"]


def test_the_warning_classes():
    assert issubclass(ConfigMigrationWarning, FutureWarning) and issubclass(ConfigMigrationWarning, IPUConfigWarning)
    assert issubclass(IPUConfigWarning, UserWarning)


def caught_at(make):
    """The warnings `make()` raises, as (category, file, line)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        make()
    return [(warning.category, warning.filename, warning.lineno) for warning in caught]


def this_line() -> int:
    return inspect.currentframe().f_back.f_lineno


@NOT_UNDER_MUTMUT
def test_a_warning_called_from_outside_the_package_is_at_that_line():
    assert caught_at(lambda: warn("hello")) == [(IPUConfigWarning, __file__, this_line())]


@NOT_UNDER_MUTMUT
@pytest.mark.parametrize("config_class", [IPUConfig, PlainIPUConfig])
def test_a_legacy_key_warns_at_the_line_that_made_the_config(config_class):
    assert caught_at(lambda: config_class(random_seed=3)) == [(ConfigMigrationWarning, __file__, this_line())]


@NOT_UNDER_MUTMUT
@pytest.mark.parametrize("load", [IPUConfig.from_pretrained,
                                  PlainIPUConfig.from_json_file])
def test_a_legacy_key_of_a_file_warns_at_the_line_that_loaded_it(load, tmp_path):
    (tmp_path / "ipu_config.json").write_text(json.dumps({"random_seed": 3}))
    source = tmp_path / "ipu_config.json" if load == PlainIPUConfig.from_json_file else tmp_path
    assert caught_at(lambda: load(source)) == [(ConfigMigrationWarning, __file__, this_line())]
