"""`popart` as option builders use it: the session-option enums they pass to `Options._Popart.set` (as ints)."""

from ..sdk.enums import POPART_ENUMS
from .enums import NativeEnum, make_enums

ENUMS = make_enums(POPART_ENUMS, NativeEnum, __name__)
globals().update(ENUMS)
__all__ = sorted(ENUMS)
