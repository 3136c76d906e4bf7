"""The enumerations of `poptorch.enums` (Poplar SDK 3.4) and of `popart` that option builders pass, made from the
tables of `sdk_enums`.

poptorch's are `enum.IntEnum`s (a member equals its value). popart's are pybind11 enums: `int(member)` gives the
value, but a member never equals a plain int; `NativeEnum` behaves so.
"""

import enum
from typing import Dict, Type

from ..sdk import enums as sdk_enums


class NativeEnum(enum.Enum):
    """An enum that converts to `int` as a pybind11 enum does, and equals only its own members."""

    def __int__(self) -> int:
        return self.value

    def __index__(self) -> int:
        return self.value


def make_enums(table: Dict[str, str], base: Type[enum.Enum], module: str) -> Dict[str, Type[enum.Enum]]:
    """{name: enum class} of a table of members, each class reporting `module` as its own."""
    return {name: base(name, sdk_enums.members(entry), module=module) for name, entry in table.items()}


ENUMS = make_enums(sdk_enums.POPTORCH_ENUMS, enum.IntEnum, __name__)
ENUMS.update(
    {name: enum.Enum(name, values, module=__name__) for name, values in sdk_enums.POPTORCH_STRING_ENUMS.items()}
)
globals().update(ENUMS)
__all__ = sorted(ENUMS)
