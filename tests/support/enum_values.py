"""The members and values of the poptorch and popart enums (Poplar SDK 3.4), written out."""

POPTORCH_ENUM_VALUES = {
    "MeanReductionStrategy": {"Running": 0, "Post": 1, "PostAndLoss": 2},
    "DataLoaderMode": {"Sync": 0, "Async": 1, "AsyncRebatched": 2},
    "SharingStrategy": {"SharedMemory": 0, "FileSystem": 1, "Fork": 2, "ForkServer": 3},
    "OutputMode": {"Final": 0, "EveryN": 1, "All": 2, "Sum": 3, "Default": 4},
    "ConnectionType": {"Always": 0, "OnDemand": 1, "Never": 2},
    "HalfFloatCastingBehavior": {"FloatDowncastToHalf": 0, "HalfUpcastToFloat": 1, "Default": 2},
    "ReductionType": {"Sum": 0, "Mean": 1, "NoReduction": 2},
    "SyncPattern": {"Full": 0, "SinglePipeline": 1, "ReplicaAndLadder": 2},
    "MatMulSerializationMode": {"InputChannels": "input_channels", "ReducingDim": "reducing_dim",
                                "OutputChannels": "output_channels", "Disabled": "none"},
    "Liveness": {"AlwaysLive": 0, "OffChipAfterFwd": 1, "OffChipAfterFwdNoOverlap": 2, "OffChipAfterEachPhase": 3},
    "OverlapMode": {"NoOverlap": "no_overlap", "OverlapAccumulationLoop": "overlap_accumulation_loop",
                    "OverlapDeviceIterationLoop": "overlap_device_iteration_loop"},
    "AutoStage": {"SameAsIpu": 0, "AutoIncrement": 1},
    "MultiConvPlanType": {"Parallel": 0, "Serial": 1},
    "CommGroupType": {"All": 0, "Consecutive": 1, "Orthogonal": 2, "NoGrouping": 3},
    "VariableRetrievalMode": {"OnePerGroup": 0, "AllReplicas": 2},
}

POPART_ENUM_VALUES = {
    "RecomputationType": {"NoRecompute": 0, "Standard": 1, "NormOnly": 2, "Pipeline": 3, "RecomputeAll": 4},
    "AccumulateOuterFragmentSchedule": {"Scheduler": 0, "Serial": 1, "OverlapCycleOptimized": 2,
                                        "OverlapMemoryOptimized": 3},
    "SubgraphCopyingStrategy": {"OnEnterAndExit": 0, "JustInTime": 1},
    "SyntheticDataMode": {"Off": 0, "Zeros": 1, "RandomNormal": 2, "RandomUniform": 3},
    "VirtualGraphMode": {"Off": 0, "Manual": 1, "Auto": 2, "ExecutionPhases": 3},
    "BatchSerializationBatchSchedule": {"Scheduler": 0, "Isomorphic": 1, "OverlapOnIo": 2, "OverlapOnCompute": 3},
    "MergeVarUpdateType": {"Off": 0, "All": 1, "AutoLoose": 2, "AutoTight": 3},
    "PatternsLevel": {"NoPatterns": 0, "Minimal": 1, "Default": 2, "All": 3},
}
