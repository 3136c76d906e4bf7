"""The members and values of the Poplar SDK 3.4 enums the package names (`poptorch.enums`, `popart`), as tables.

The recorder makes its enums from them; an option file writes a PopART member as its value, which only `poptorch`
being in scope there calls for. C++ `None` members are spelled `NoRecompute` and `Off`, as popart's binding spells
them.
"""

from typing import Dict, List, Tuple

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

_INTEGER_ENUMS = {"poptorch": POPTORCH_ENUMS, "popart": POPART_ENUMS}


def members(text: str) -> List[Tuple[str, int]]:
    """The (member, value) pairs of a table's entry: `"Final EveryN"` -> `[("Final", 0), ("EveryN", 1)]`."""
    found = []
    for index, token in enumerate(text.split()):
        name, equals, value = token.partition("=")
        found.append((name, int(value) if equals else index))
    return found


def enum_value(path: str) -> int:
    """The value of the integer enum member `path`: `"popart.RecomputationType.Pipeline"` -> `3`."""
    module, enum_name, member = path.split(".")
    table: Dict[str, str] = _INTEGER_ENUMS[module]
    return dict(members(table[enum_name]))[member]
