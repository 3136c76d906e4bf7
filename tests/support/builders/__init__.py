"""Hand-written option builders as users write them, re-written in our own words from public applications: the same
`poptorch` / `popart` calls with the same values, to be run on the test doubles and imported with
`IPUConfig.from_options` (tests/options/test_builders.py, benchmarks/import_builder.py). They import the SDK modules at
the top, as the originals do: import them inside `doubles.installed(...)`.

`recorded/` holds the builders `ipu-config import` runs in the CLI tests; `BUILDER` is the one most of them run."""

from pathlib import Path

RECORDED = Path(__file__).resolve().parent / "recorded"
BUILDER = str(RECORDED / "options_builder.py")
