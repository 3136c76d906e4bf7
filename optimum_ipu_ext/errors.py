"""The errors this package raises.

Every error about a configuration names the field, the value and what is allowed. They subclass
the built-in type that optimum-graphcore raises in the same situation (`ValueError`, `TypeError`,
`OSError`, `ImportError`), so code written against optimum-graphcore keeps catching them.
"""

import difflib
from typing import Any, Iterable, Optional


class IPUConfigError(Exception):
    """Base class of every error raised by `optimum_ipu_ext`."""


class InvalidSettingError(IPUConfigError, ValueError):
    """A setting has a value outside what it allows."""

    def __init__(self, field: str, value: Any, allowed: str):
        self.field = field
        self.value = value
        self.allowed = allowed
        super().__init__(f"`{field}={value!r}` is invalid: {allowed}.")


class SettingTypeError(IPUConfigError, TypeError, ValueError):
    """A setting has a value of the wrong type.

    Also a `ValueError`, as optimum-graphcore raises either depending on the field.
    """

    def __init__(self, field: str, value: Any, expected: str):
        self.field = field
        self.value = value
        self.allowed = expected
        super().__init__(f"`{field}={value!r}` has type `{type(value).__name__}`, expected {expected}.")


class IncompatibleSettingsError(InvalidSettingError):
    """Two settings that must agree do not (for example a per-IPU list and `ipus_per_replica`)."""


class UnknownSettingError(IPUConfigError, ValueError):
    """A key that no release of the IPU configuration ever had."""

    def __init__(self, key: str, known: Iterable[str], source: Optional[str] = None):
        self.field = key
        self.suggestion = next(iter(difflib.get_close_matches(key, list(known), n=1)), None)
        hint = f" Did you mean `{self.suggestion}`?" if self.suggestion else ""
        where = f" in {source}" if source else ""
        super().__init__(f"Unknown IPU config key `{key}`{where}.{hint}")


class ConfigFileError(IPUConfigError, OSError):
    """A configuration file that cannot be read as a JSON object."""

    def __init__(self, path: str, problem: str):
        self.path = path
        super().__init__(f"Cannot load the IPU config file '{path}': {problem}.")


class PoplarSDKNotFoundError(IPUConfigError, ImportError):
    """`to_options()` needs poptorch, which ships only with Graphcore's Poplar SDK."""

    def __init__(self, missing: str):
        super().__init__(
            f"`to_options()` needs `{missing}`, which ships only with Graphcore's Poplar SDK and is not installed "
            "here. Enable the SDK (source its `enable.sh` and install its poptorch wheel) to build the options, or "
            "call `options_plan()` to review the option calls `to_options()` would make, on any machine.",
            name=missing,
        )
