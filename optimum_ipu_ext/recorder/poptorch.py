"""`poptorch` as option builders use it: its enums, options, execution strategies and hardware queries, on a
machine without IPUs."""

from . import enums, options
from .enums import *  # noqa: F403 (poptorch exports its enums at the top level)
from .options import (
    ConfigFileError,
    Options,
    ParallelPhasedExecution,
    Phase,
    PipelinedExecution,
    SerialPhasedExecution,
    ShardedExecution,
    Stage,
    TensorLocationSettings,
)

__all__ = [
    "enums", "options", *enums.__all__,
    "ConfigFileError", "Options", "ParallelPhasedExecution", "Phase", "PipelinedExecution", "SerialPhasedExecution",
    "ShardedExecution", "Stage", "TensorLocationSettings",
    "ipuHardwareIsAvailable", "ipuHardwareVersion",
]
__version__ = "3.4.0"


def ipuHardwareIsAvailable(num_ipus: int = 1) -> bool:
    """Whether IPUs are present: never, where the recorder stands in."""
    return False


def ipuHardwareVersion() -> int:
    """Fails as poptorch's does on a machine without IPUs."""
    raise AssertionError("No IPU hardware available on this system")


def __getattr__(name: str):
    """`poptorch.torch`, which poptorch's module has (it imports torch), and an option file names dtypes through
    (`Precision.setPartialsType(poptorch.torch.float16)`): imported when asked for, so that builders which never
    ask import no torch."""
    if name == "torch":
        import torch

        return torch
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
