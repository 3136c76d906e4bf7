"""A hand-written builder as users write them, the fixture of `ipu-config import`: it imports the Poplar SDK's
modules and a helper module of its own folder (`pipeline_layout`), and takes an argparse namespace."""

import argparse

import popart
import popdist
import popdist.poptorch
import poptorch
from pipeline_layout import MEMORY_PROPORTIONS


def _common(opts, args):
    opts.autoRoundNumIPUs(True)
    opts.setAvailableMemoryProportion({f"IPU{ipu}": share for ipu, share in enumerate(MEMORY_PROPORTIONS)})
    opts.TensorLocations.setOptimizerLocation(
        poptorch.TensorLocationSettings().useOnChipStorage(not args.offchip).useReplicatedTensorSharding(True)
    )
    opts.enableExecutableCaching(args.cache)
    opts.randomSeed(args.seed)
    opts._Popart.set("autoRecomputation", int(popart.RecomputationType.Pipeline))
    opts._Popart.set("decomposeGradSum", True)
    return opts


def get_options(args, device_iterations=1):
    if popdist.isPopdistEnvSet():
        opts = popdist.poptorch.Options(ipus_per_replica=len(MEMORY_PROPORTIONS))
    else:
        opts = poptorch.Options()
        opts.replicationFactor(args.replicas)
    opts.deviceIterations(device_iterations)
    opts.Training.gradientAccumulation(args.accumulation)
    opts.Training.accumulationAndReplicationReductionType(poptorch.ReductionType.Sum)
    opts.setExecutionStrategy(poptorch.PipelinedExecution(poptorch.AutoStage.SameAsIpu))
    opts.Precision.enableStochasticRounding(True)
    return _common(opts, args)


def get_inference_options(args, device_iterations=4):
    opts = poptorch.Options()
    opts.replicationFactor(args.replicas)
    opts.deviceIterations(device_iterations)
    opts.setExecutionStrategy(poptorch.ShardedExecution(poptorch.AutoStage.SameAsIpu))
    opts.outputMode(poptorch.OutputMode.All)
    opts.Precision.enableStochasticRounding(False)
    return _common(opts, args)


def get_options_logging_to(args, log_dir="/logs"):
    """Options no config rebuilds: the log folder belongs to one run."""
    return get_options(args).logDir(log_dir)


def get_settings(args):
    """Not options: what some builders return instead."""
    return {"replicas": args.replicas}


def get_default_options():
    """A builder without parameters."""
    return get_options(argparse.Namespace(replicas=2, accumulation=1, offchip=False, cache="exec", seed=7))
