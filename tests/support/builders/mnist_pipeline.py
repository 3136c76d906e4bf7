"""The options of Graphcore's PopTorch pipelining tutorial (graphcore/examples,
tutorials/tutorials/pytorch/pipelining, `mnist_pipeline.py`): a 4-block MNIST network, one block per IPU,
pipelined with gradient accumulation or sharded, the optimizer state optionally off the chip.

`args` carries the tutorial's command-line arguments; its inference reuses the training options with every
micro-batch of a step run as device iterations.
"""

import poptorch

BLOCKS = ("B1", "B2", "B3", "B4")


def training_options(args):
    opts = poptorch.Options()
    opts._Popart.set("defaultPrefetchBufferingDepth", 3)
    opts.deviceIterations(args.device_iterations)
    stages = [poptorch.Stage(block).ipu(ipu) for ipu, block in enumerate(BLOCKS)]
    if args.strategy == "pipelined":
        opts.setExecutionStrategy(poptorch.PipelinedExecution(*stages))
        opts.Training.gradientAccumulation(args.gradient_accumulation)
    else:
        opts.setExecutionStrategy(poptorch.ShardedExecution(*stages))
    if args.offload_optimiser:
        on_chip = poptorch.TensorLocationSettings().useOnChipStorage(True)
        opts.TensorLocations.setActivationLocation(on_chip)
        opts.TensorLocations.setWeightLocation(on_chip)
        opts.TensorLocations.setAccumulatorLocation(on_chip)
        opts.TensorLocations.setOptimizerLocation(poptorch.TensorLocationSettings().useOnChipStorage(False))
    return opts


def inference_options(args):
    opts = training_options(args).clone()
    opts.Training.gradientAccumulation(1)
    opts.deviceIterations(args.device_iterations * args.gradient_accumulation)
    return opts
