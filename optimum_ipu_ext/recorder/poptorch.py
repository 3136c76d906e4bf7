"""`poptorch` as option builders use it: its enums, options, execution strategies and hardware queries, on a
machine without IPUs."""

from . import enums, options
from .enums import *  # noqa: F401,F403 (poptorch exports its enums at the top level)
from .options import (  # noqa: F401
    Options,
    ParallelPhasedExecution,
    Phase,
    PipelinedExecution,
    SerialPhasedExecution,
    ShardedExecution,
    Stage,
    TensorLocationSettings,
)

__version__ = "3.4.0"


def ipuHardwareIsAvailable(num_ipus: int = 1) -> bool:
    """Whether IPUs are present: never, where the recorder stands in."""
    return False


def ipuHardwareVersion() -> int:
    """Fails as poptorch's does on a machine without IPUs."""
    raise AssertionError("No IPU hardware available on this system")
