"""The `ipu-config` commands, one module each.

A command module has `register(subparsers)`, which adds its parser (its options from `cli.arguments`) and sets
`func=run`, and `run(args, out, err) -> int`, which does the work, writes to the two `cli.output.Stream`s and
returns the exit code. A module imports only the standard library and the CLI's light helpers (`arguments`,
`output`) at its top, so that `--help` and usage errors answer at once; `run` imports the rest of the package.
"""

from . import calibrate, diff, export, import_, new, place, plan, pull, push, schema, show, upgrade, validate

# in the order `ipu-config --help` lists them
COMMANDS = (show, place, plan, calibrate, validate, diff, new, import_, export, schema, push, pull, upgrade)
