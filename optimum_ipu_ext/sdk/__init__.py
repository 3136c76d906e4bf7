"""What the Poplar SDK takes, as plain data: the enums of poptorch and popart (`enums`), the options plan, the
ordered `poptorch.Options` calls a build makes and their application to the SDK in use (`plan`), poprun's sharing
of replicas between instances (`popdist`), and the lines of poptorch's option files (`option_lines`).

Knows nothing of configs. May import: `errors`, `_version`.
"""
