"""The enumerations of `poptorch.enums` (Poplar SDK 3.4) and of `popart` that option builders pass, made from tables.

poptorch's are `enum.IntEnum`s (a member equals its value). popart's are pybind11 enums: `int(member)` gives the
value, but a member never equals a plain int; `NativeEnum` behaves so. C++ `None` members are spelled `NoRecompute`
and `Off` in Python, as popart's binding spells them.
"""

import enum
from typing import Dict, Type

# name: members in value order from 0, or `Name=value` where values skip
POPTORCH_ENUMS = {
    "MeanReductionStrategy": "Running Post PostAndLoss",
    "DataLoaderMode": "Sync Async AsyncRebatched",
    "SharingStrategy": "SharedMemory FileSystem Fork ForkServer",
    "OutputMode": "Final EveryN All Sum Default",
    "ConnectionType": "Always OnDemand Never",
    "HalfFloatCastingBehavior": "FloatDowncastToHalf HalfUpcastToFloat Default",
    "ReductionType": "Sum Mean NoReduction",
    "SyncPattern": "Full SinglePipeline ReplicaAndLadder",
    "Liveness": "AlwaysLive OffChipAfterFwd OffChipAfterFwdNoOverlap OffChipAfterEachPhase",
    "AutoStage": "SameAsIpu AutoIncrement",
    "MultiConvPlanType": "Parallel Serial",
    "CommGroupType": "All Consecutive Orthogonal NoGrouping",
    "VariableRetrievalMode": "OnePerGroup=0 AllReplicas=2",
}

# poptorch's enums whose values are strings: name: {member: value}
POPTORCH_STRING_ENUMS = {
    "MatMulSerializationMode": {
        "InputChannels": "input_channels", "ReducingDim": "reducing_dim", "OutputChannels": "output_channels",
        "Disabled": "none",
    },
    "OverlapMode": {
        "NoOverlap": "no_overlap", "OverlapAccumulationLoop": "overlap_accumulation_loop",
        "OverlapDeviceIterationLoop": "overlap_device_iteration_loop",
    },
}

POPART_ENUMS = {
    "RecomputationType": "NoRecompute Standard NormOnly Pipeline RecomputeAll",
    "AccumulateOuterFragmentSchedule": "Scheduler Serial OverlapCycleOptimized OverlapMemoryOptimized",
    "SubgraphCopyingStrategy": "OnEnterAndExit JustInTime",
    "SyntheticDataMode": "Off Zeros RandomNormal RandomUniform",
    "VirtualGraphMode": "Off Manual Auto ExecutionPhases",
    "BatchSerializationBatchSchedule": "Scheduler Isomorphic OverlapOnIo OverlapOnCompute",
    "MergeVarUpdateType": "Off All AutoLoose AutoTight",
    "PatternsLevel": "NoPatterns Minimal Default All",
}


class NativeEnum(enum.Enum):
    """An enum that converts to `int` as a pybind11 enum does, and equals only its own members."""

    def __int__(self) -> int:
        return self.value

    def __index__(self) -> int:
        return self.value


def _members(text: str):
    members = []
    for index, token in enumerate(text.split()):
        name, equals, value = token.partition("=")
        members.append((name, int(value) if equals else index))
    return members


def make_enums(table: Dict[str, str], base: Type[enum.Enum], module: str) -> Dict[str, Type[enum.Enum]]:
    """{name: enum class} of a table of members, each class reporting `module` as its own."""
    return {name: base(name, _members(members), module=module) for name, members in table.items()}


ENUMS = make_enums(POPTORCH_ENUMS, enum.IntEnum, __name__)
ENUMS.update({name: enum.Enum(name, members, module=__name__) for name, members in POPTORCH_STRING_ENUMS.items()})
globals().update(ENUMS)
__all__ = sorted(ENUMS)
