"""The options of Graphcore's public BERT application (graphcore/examples, nlp/bert/pytorch, `get_options`).

Pre-training uses them as they come; SQuAD builds them for training, then again for validation with 1 replica,
16 device iterations and no accumulation, and asks for every output of both. `config` carries the application's
command-line arguments. The application's custom-op loading changes no option and is left out.
"""

import numpy as np
import popart
import poptorch
import torch

POPART_OPTIONS = {
    "disableGradAccumulationTensorStreams": True,
    "accumulateOuterFragmentSettings.schedule": int(popart.AccumulateOuterFragmentSchedule.OverlapMemoryOptimized),
    "accumulateOuterFragmentSettings.excludedVirtualGraphs": ["0"],
    "subgraphCopyingStrategy": int(popart.SubgraphCopyingStrategy.JustInTime),
    "scheduleNonWeightUpdateGradientConsumersEarly": True,
}
PATTERNS = {"TiedGather": True, "TiedGatherAccumulate": True, "UpdateInplacePrioritiesForIpu": True}
# Poplar engine options set always, and those added to write a profile
ENGINE_OPTIONS = {"opt.useAutoloader": "true", "target.syncReplicasIndependently": "true"}
PROFILING_ENGINE_OPTIONS = {"debug.allowOutOfMemory": "true", "profiler.format": "v3", "autoReport.all": "true"}


def get_options(config):
    if config.use_popdist:
        import popdist.poptorch

        opts = popdist.poptorch.Options(ipus_per_replica=config.ipus_per_replica)
    else:
        opts = poptorch.Options().replicationFactor(config.replication_factor)
    np.random.seed(config.random_seed)
    opts.randomSeed(config.random_seed).autoRoundNumIPUs(True).deviceIterations(config.device_iterations)
    opts.outputMode(poptorch.OutputMode.Sum)
    if config.executable_cache_dir:
        opts.enableExecutableCaching(config.executable_cache_dir)
    if config.synthetic_data:
        opts.enableSyntheticData(int(popart.SyntheticDataMode.RandomNormal))
    if config.compile_only:
        opts.useOfflineIpuTarget()

    opts.Training.gradientAccumulation(config.gradient_accumulation)
    opts.Training.accumulationAndReplicationReductionType(poptorch.ReductionType.Mean)
    if config.auto_loss_scaling:
        opts.Training.setAutomaticLossScaling(True)
    opts.Precision.enableStochasticRounding(True)
    if config.enable_half_partials:
        opts.Precision.setPartialsType(torch.float16)

    opts.setExecutionStrategy(poptorch.PipelinedExecution(poptorch.AutoStage.AutoIncrement))
    proportions = config.matmul_proportion[: config.ipus_per_replica]
    opts.setAvailableMemoryProportion({f"IPU{ipu}": proportion for ipu, proportion in enumerate(proportions)})
    opts.TensorLocations.setOptimizerLocation(
        poptorch.TensorLocationSettings()
        .useOnChipStorage(not config.optimizer_state_offchip)
        .useReplicatedTensorSharding(config.replicated_tensor_sharding)
    )

    for key, value in POPART_OPTIONS.items():
        opts._Popart.set(key, value)
    opts._Popart.setPatterns(PATTERNS)
    engine_options = dict(ENGINE_OPTIONS)
    if config.profile_dir:
        engine_options.update(PROFILING_ENGINE_OPTIONS, **{"autoReport.directory": config.profile_dir})
    opts._Popart.set("engineOptions", engine_options)
    return opts


def squad_options(config):
    """SQuAD's training options: these, returning every output."""
    return get_options(config).outputMode(poptorch.OutputMode.All)


def squad_validation_options(config):
    """SQuAD's validation options: rebuilt for 1 replica, 16 device iterations, no accumulation."""
    validation = dict(vars(config), replication_factor=1, device_iterations=16, gradient_accumulation=1)
    return squad_options(type(config)(**validation))
