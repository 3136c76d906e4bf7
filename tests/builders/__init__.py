"""Hand-written option builders as users write them, re-written in our own words from public applications: the same
`poptorch` / `popart` calls with the same values, to be run on the test doubles and imported with
`IPUConfig.from_options` (tests/test_builders.py, benchmarks/import_builder.py). They import the SDK modules at
the top, as the originals do: import them inside `doubles.installed(...)`."""
