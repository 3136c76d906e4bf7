"""The hand-written build this package started from (`../shared/seed/ipu_config.py`, `build_ipu_config`): a 2-IPU
pipeline (encoder, decoder) replicated `args.replication_factor` times, with pipelined recomputation, stochastic
rounding and the overlap-memory-optimised weight update.

It names a memory proportion for 2 IPUs per replica (IPU0 to IPU<2R-1>), though proportions are per IPU of one
replica; and it sets the execution strategy twice, same-as-IPU first: the second, auto-increment, holds.
"""

import popart
import poptorch

POPART_OPTIONS = {
    "autoRecomputation": int(popart.RecomputationType.Pipeline),
    "disableGradAccumulationTensorStreams": True,
    "outlineThreshold": 10.0,
    "accumulateOuterFragmentSettings.schedule": int(popart.AccumulateOuterFragmentSchedule.OverlapMemoryOptimized),
    "accumulateOuterFragmentSettings.excludedVirtualGraphs": ["0"],
    "scheduleNonWeightUpdateGradientConsumersEarly": True,
}
PATTERNS = {"TiedGather": True, "TiedGatherAccumulate": True, "UpdateInplacePrioritiesForIpu": True}


def build_ipu_config(args, seed=1234, gradient_accumulation=128, memory_proportion=0.1):
    replicas = args.replication_factor
    opts = poptorch.Options()
    opts.replicationFactor(replicas).autoRoundNumIPUs(True).randomSeed(seed).outputMode(poptorch.OutputMode.All)
    opts.enableExecutableCaching("exec")
    opts.Training.gradientAccumulation(gradient_accumulation)
    opts.Training.accumulationAndReplicationReductionType(poptorch.ReductionType.Mean)
    opts.Precision.enableStochasticRounding(True)
    for auto_stage in (poptorch.AutoStage.SameAsIpu, poptorch.AutoStage.AutoIncrement):
        opts.setExecutionStrategy(poptorch.PipelinedExecution(auto_stage))
    opts.setAvailableMemoryProportion({f"IPU{ipu}": memory_proportion for ipu in range(2 * replicas)})
    opts.TensorLocations.setOptimizerLocation(
        poptorch.TensorLocationSettings()
        .useOnChipStorage(not args.optimizer_state_offchip)
        .useReplicatedTensorSharding(replicas > 1)
    )
    for key, value in POPART_OPTIONS.items():
        opts._Popart.set(key, value)
    opts._Popart.setPatterns(PATTERNS)
    return opts
