"""What the tests share, imported as a package (`from support.doubles import installed`): the strict doubles of the
Poplar SDK (`doubles`), the hand-written builders (`builders`), the local Hub (`hub_server`, `hub_fixtures`), the tiny
and meta-device models of the placement tests, expected states and configs written as data, and the reference harness
that runs optimum-graphcore's own `parallelize()` (`upstream_placement`, `upstream_costs`).

pytest puts `tests/` on `sys.path` (pyproject.toml: `pythonpath`); the benchmarks put it there themselves."""

from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
# the preset most tests start from, by its path in the repository
PRESET = str(REPOSITORY / "configs" / "pipelined-2ipu.json")
