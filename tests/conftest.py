"""Test set-up shared by every test module.

`OPTIMUM_IPU_EXT_TEST_BASE` says which base class `optimum_ipu_ext.IPUConfig` must build on:
- `bundled` (default): the package's own base, as on any machine without the Poplar SDK;
- `upstream`: optimum-graphcore 0.7.1's real `IPUConfig`, as on an IPU host. `optimum.graphcore`'s
  `__init__` imports the whole SDK, so the package is stood in by one that holds its real
  `ipu_configuration` module (loaded against the poptorch/popart doubles) and searches the real
  package folder for the others: `optimum.graphcore.modeling_utils`, `optimum.graphcore.models.bert`, ...
  import as they are, against the doubles, without the real `optimum/graphcore/__init__.py` running.
  The test files that need that stack are collected only there (`collect_ignore_glob`).
"""

import importlib.util
import os
import sys
import types
from pathlib import Path

import pytest

from support.doubles import installed, load_upstream_ipu_configuration
from support.hub_fixtures import *  # noqa: F403 (the Hub fixtures, for every test)
from support.stack import TEST_BASE

SEED_PATH = Path(__file__).resolve().parents[2] / "shared/seed/ipu_config.py"

# in any folder of tests/: fnmatch's `*` matches `/` too
UPSTREAM_ONLY_TESTS = ["*/test_upstream_*.py"]

if TEST_BASE == "upstream":
    _upstream = load_upstream_ipu_configuration()
    _package = types.ModuleType("optimum.graphcore")
    _package.__path__ = [str(Path(_upstream.__file__).parent)]
    _package.IPUConfig = _upstream.IPUConfig
    _package.ipu_configuration = _upstream
    sys.modules["optimum.graphcore"] = _package
    sys.modules["optimum.graphcore.ipu_configuration"] = _upstream
else:
    collect_ignore_glob = UPSTREAM_ONLY_TESTS


@pytest.fixture(autouse=True)
def no_poptorch_environment(monkeypatch):
    """`poptorch.Options()` and PopDist read these variables; tests start outside any launch."""
    variables = ["OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "POPTORCH_CACHE_DIR", "POPTORCH_DEFAULT_OPTIONS"]
    for variable in variables + [name for name in os.environ if name.startswith("POPDIST_")]:
        monkeypatch.delenv(variable, raising=False)


@pytest.fixture
def sdk():
    """The poptorch/popart doubles, importable, on a machine with an IPU Mk2."""
    with installed(hardware_version=2):
        yield


@pytest.fixture
def sdk_without_ipu():
    """The poptorch/popart doubles, importable, on a machine with no IPU."""
    with installed():
        yield


@pytest.fixture
def poprun():
    """`with poprun(environment):` the doubles, on an IPU Mk2, in the poprun instance whose variables are
    `environment`."""
    return lambda environment: installed(hardware_version=2, popdist_environment=environment)


@pytest.fixture
def upstream():
    """optimum-graphcore 0.7.1's `ipu_configuration` module (its real `IPUConfig`), over the doubles."""
    return load_upstream_ipu_configuration()


@pytest.fixture(scope="module")
def seed_module():
    """The original hand-written build (`../shared/seed/ipu_config.py`), for the one test that shows the project's
    own equivalent (`seed_build`) builds what it builds. A fresh clone without `../shared` skips that test only."""
    if not SEED_PATH.is_file():
        if os.environ.get("CI") == "true":  # CI clones the project with ../shared beside it: the seed must be there
            pytest.fail(f"seed build not found at {SEED_PATH}, where CI has it")
        pytest.skip(f"compares tests/support/builders/seed_build.py with the hand-written build it reproduces, which "
                    f"the project keeps beside its own clone, not in the repository ({SEED_PATH} is not here)")
    return _load(SEED_PATH, "seed_ipu_config")


@pytest.fixture(scope="module")
def seed_build():
    """tests/support/builders/seed_build.py: the project's own builder equivalent to the original seed build, loaded as
    a builder file is (it imports poptorch and popart at the top)."""
    return _load(Path(__file__).resolve().parent / "support" / "builders" / "seed_build.py", "seed_build")


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    with installed():
        spec.loader.exec_module(module)
    return module


def pytest_sessionstart(session):
    """Each session starts from empty caches, as a new process does. A mutation run forks every session from one
    that already ran the tests: a function cached there (the package's `lru_cache`s, a test module's fitted
    calibration) would answer from the unmutated code and let its mutants survive."""
    tests = str(Path(__file__).resolve().parent)
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None) or ""
        if name.startswith("optimum_ipu_ext") or path.startswith(tests):
            for value in list(vars(module).values()):
                if callable(getattr(value, "cache_clear", None)):
                    value.cache_clear()
