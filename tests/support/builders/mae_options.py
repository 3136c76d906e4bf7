"""The options of Graphcore's public MAE application (graphcore/examples, vision/mae/pytorch, `options.py`):
pre-training, fine-tuning (training and evaluation) and the alignment check, each from keyword arguments.

Off poprun, `popdist` says so and the options are plain `poptorch.Options`.
"""

import popart
import popdist
import poptorch
import torch


def _memory_proportions(ipus, proportion):
    return {f"IPU{ipu}": proportion for ipu in range(ipus)}


def _sharded_optimizer_state(ipus_per_replica):
    return (
        poptorch.TensorLocationSettings()
        .useReplicatedTensorSharding(True)
        .minElementsForReplicatedTensorSharding(ipus_per_replica)
    )


def _half_precision(opts):
    opts.Precision.enableStochasticRounding(True)
    opts.Precision.setPartialsType(torch.half)


def _options_for(use_popdist, ipus_per_replica, replicas):
    if use_popdist:
        import popdist.poptorch

        return popdist.poptorch.Options(ipus_per_replica)
    opts = poptorch.Options()
    opts.replicationFactor(replicas)
    return opts


def alignment_options(ipus=8):
    opts = poptorch.Options()
    opts.autoRoundNumIPUs(True)
    opts.Training.gradientAccumulation(1)
    opts.deviceIterations(1)
    opts.replicationFactor(1)
    opts.randomSeed(2)
    opts.setExecutionStrategy(poptorch.ShardedExecution())
    opts.setAvailableMemoryProportion(_memory_proportions(ipus, 0.15))
    return opts


def train_options(
    use_popdist, gradient_accumulation_count=8, replica=1, iteration=1, half=False, als=False, ipu_per_replica=4,
    rts=False,
):
    opts = _options_for(use_popdist, ipu_per_replica, replica)
    opts.randomSeed(42)
    opts.enableExecutableCaching("./cachedir")
    opts.autoRoundNumIPUs(True)
    opts.Training.gradientAccumulation(gradient_accumulation_count)
    opts.Training.accumulationAndReplicationReductionType(poptorch.ReductionType.Mean)
    opts.Training.setMeanAccumulationAndReplicationReductionStrategy(poptorch.MeanReductionStrategy.Running)
    opts.deviceIterations(iteration)
    opts.setExecutionStrategy(poptorch.PipelinedExecution(poptorch.AutoStage.AutoIncrement))
    opts.setAvailableMemoryProportion(_memory_proportions(ipu_per_replica, 0.15))
    if half:
        _half_precision(opts)
        if als:
            opts.Training.setAutomaticLossScaling(True)
    opts._Popart.set(
        "accumulateOuterFragmentSettings.schedule", int(popart.AccumulateOuterFragmentSchedule.OverlapMemoryOptimized)
    )
    opts._Popart.set("replicatedCollectivesSettings.prepareScheduleForMergingCollectives", True)
    opts._Popart.set("replicatedCollectivesSettings.mergeAllReduceCollectives", True)
    if rts:
        opts.TensorLocations.setOptimizerLocation(_sharded_optimizer_state(ipu_per_replica))
    return opts


def finetune_options(
    gradient_accumulation_count=8, replica=1, device_iterations=1, half=False, ipu_per_replica=8, opt_type="train"
):
    opts = _options_for(popdist.isPopdistEnvSet(), ipu_per_replica, replica)
    opts.randomSeed(42)
    opts.enableExecutableCaching("./cachedir")
    opts.autoRoundNumIPUs(True)
    opts.deviceIterations(device_iterations)
    if opt_type == "train":
        opts.Training.gradientAccumulation(gradient_accumulation_count)
        opts.Training.accumulationAndReplicationReductionType(poptorch.ReductionType.Mean)
        opts.setExecutionStrategy(poptorch.PipelinedExecution(poptorch.AutoStage.SameAsIpu))
    else:
        opts.setExecutionStrategy(poptorch.ShardedExecution())
    opts.setAvailableMemoryProportion(_memory_proportions(ipu_per_replica, 0.12))
    if half:
        _half_precision(opts)
    opts.TensorLocations.setOptimizerLocation(_sharded_optimizer_state(ipu_per_replica))
    return opts
