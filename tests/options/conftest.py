"""The fixture of the tests that run the hand-written builders of `support/builders`."""

import importlib

import pytest

from support.builder_cases import BUILDERS
from support.doubles import installed


@pytest.fixture(scope="module")
def builders():
    """The builder modules by name, imported against the doubles (they import poptorch, popart, popdist at the top)."""
    with installed(popdist_environment={}):
        return {name: importlib.import_module(f"support.builders.{name}") for name in BUILDERS}
