"""A hand-written PopTorch build of the kind `ipu-config import` turns into a config: a 2-IPU pipeline, replicated.

    ipu-config import examples/builder.py:get_options imported/ --kwarg replicas=4 --set 'layers_per_ipu=[5 7]'

Without the Poplar SDK, the command runs it on the package's recorder, a stand-in for poptorch's option API.
"""

import popart
import poptorch


def get_options(replicas=1, accumulation=16, offload_optimizer=False):
    opts = poptorch.Options()
    opts.replicationFactor(replicas)
    opts.autoRoundNumIPUs(True)
    opts.Training.gradientAccumulation(accumulation)
    opts.Training.accumulationAndReplicationReductionType(poptorch.ReductionType.Mean)
    opts.setExecutionStrategy(poptorch.PipelinedExecution(poptorch.AutoStage.AutoIncrement))
    opts.setAvailableMemoryProportion({"IPU0": 0.15, "IPU1": 0.25})
    opts.TensorLocations.setOptimizerLocation(
        poptorch.TensorLocationSettings()
        .useOnChipStorage(not offload_optimizer)
        .useReplicatedTensorSharding(replicas > 1)
    )
    opts.Precision.enableStochasticRounding(True)
    opts._Popart.set("autoRecomputation", int(popart.RecomputationType.Pipeline))
    opts._Popart.set("decomposeGradSum", True)
    return opts
