"""Strict test double of Graphcore's ``poptorch`` (Poplar SDK 3.4): options, enums, hardware queries,
pipeline blocks and the tensor ops optimum-graphcore's models call on CPU, model wrappers that stop where
compiling starts, the data loader and optimizers.

Only what option builders and those models use is here; anything else raises ``AttributeError``.
Install it with ``doubles.installed()`` rather than importing it directly.
"""
import torch  # noqa: F401 (poptorch imports torch at the top: `poptorch.torch` is torch, as option files use it)

from . import blocks, enums, models, ops, optim, options, poptorch_core
from ._impl import isRunningOnIpu
from .blocks import BeginBlock, Block, removeBlocks
from .enums import (
    AutoStage,
    CommGroupType,
    ConnectionType,
    DataLoaderMode,
    HalfFloatCastingBehavior,
    Liveness,
    MatMulSerializationMode,
    MeanReductionStrategy,
    MultiConvPlanType,
    OutputMode,
    OverlapMode,
    ReductionType,
    SharingStrategy,
    SyncPattern,
    VariableRetrievalMode,
)
from .models import DataLoader, PoplarExecutor, inferenceModel, trainingModel
from .ops import cond, dynamic_slice, dynamic_update, identity_loss, recomputationCheckpoint, serializedMatMul
from .options import (
    Attribute,
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
from .poptorch_core import Error

# what the double exports, as poptorch does: its public modules, the names it lifts from its modules, its queries
# (`poptorch._impl` is there too: importing a name from a submodule binds the submodule on the package)
__all__ = [
    "blocks", "enums", "models", "ops", "optim", "options", "poptorch_core",
    "isRunningOnIpu", "BeginBlock", "Block", "removeBlocks",
    "AutoStage", "CommGroupType", "ConnectionType", "DataLoaderMode", "HalfFloatCastingBehavior", "Liveness",
    "MatMulSerializationMode", "MeanReductionStrategy", "MultiConvPlanType", "OutputMode", "OverlapMode",
    "ReductionType", "SharingStrategy", "SyncPattern", "VariableRetrievalMode",
    "DataLoader", "PoplarExecutor", "inferenceModel", "trainingModel", "Error",
    "cond", "dynamic_slice", "dynamic_update", "identity_loss", "recomputationCheckpoint", "serializedMatMul",
    "Attribute", "ConfigFileError", "Options", "ParallelPhasedExecution", "Phase", "PipelinedExecution",
    "SerialPhasedExecution", "ShardedExecution", "Stage", "TensorLocationSettings",
    "ipuHardwareIsAvailable", "ipuHardwareVersion",
]
__version__ = "3.4.0"


def ipuHardwareIsAvailable(num_ipus: int = 1) -> bool:
    """Whether IPU hardware is present."""
    return poptorch_core.ipuHardwareVersion(num_ipus) != 0


def ipuHardwareVersion() -> int:
    """The IPU hardware version; like the real one, fails with ``AssertionError`` when there is no IPU."""
    version = poptorch_core.ipuHardwareVersion()
    if version == 0:
        raise AssertionError("No IPU hardware available on this system")
    return version
