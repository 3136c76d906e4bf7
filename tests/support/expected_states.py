"""Expected option states, written as data from design.md ("The seed's build, as option state").

A state is what ``doubles.state(opts)`` returns: ``poptorch.Options.toDict()`` with enums
as ints, the progress-bar callback as ``"<ProgressBar>"`` and the execution strategy
under ``"_execution_strategy"``. Keys the seed never touches hold poptorch 3.4's defaults.
"""
from typing import Any, Dict, Tuple

SEED_MEMORY_PROPORTION = 0.1
MISSING = "<missing>"


def _check_seed_arguments(replication_factor: int, optimizer_state_offchip: bool) -> None:
    if not isinstance(replication_factor, int) or isinstance(replication_factor, bool) or replication_factor < 1:
        raise ValueError(f"replication_factor={replication_factor!r} must be an int >= 1")
    if not isinstance(optimizer_state_offchip, bool):
        raise TypeError(f"optimizer_state_offchip={optimizer_state_offchip!r} must be a bool")


def seed_state(replication_factor: int, optimizer_state_offchip: bool) -> Dict[str, Any]:
    """The state a faithful rebuild of the seed's build gives for ``R`` replicas and the offchip flag.

    Memory proportions cover IPU0 and IPU1 only: the keys are per IPU within a replica
    of the 2-IPU pipeline (the seed writes 2R keys; see ``seed_memory_proportion_as_written``).
    """
    _check_seed_arguments(replication_factor, optimizer_state_offchip)
    return {
        # execution strategy: PipelinedExecution(AutoStage.AutoIncrement), the second call wins
        "execution_mode": 0,
        "_execution_strategy": {"type": "PipelinedExecution", "auto_stage": 1, "blocks": {}},
        # PopART session options (poptorch's two defaults first)
        "instrumentWithHardwareCycleCounter": False,
        "rearrangeAnchorsOnHost": False,
        "enableStochasticRounding": True,
        "autoRecomputation": 3,  # popart.RecomputationType.Pipeline
        "disableGradAccumulationTensorStreams": True,
        "outlineThreshold": 10.0,
        "accumulateOuterFragmentSettings.schedule": 3,  # OverlapMemoryOptimized
        "accumulateOuterFragmentSettings.excludedVirtualGraphs": ["0"],
        "scheduleNonWeightUpdateGradientConsumersEarly": True,
        "patterns_level": 2,
        "patterns": {"TiedGather": True, "TiedGatherAccumulate": True, "UpdateInplacePrioritiesForIpu": True},
        "cachePath": "exec",
        "enableEngineCaching": True,
        # poptorch.Options
        "replication_factor": replication_factor,
        "input_group_size": 1,
        "input_cgt": 1,  # CommGroupType.Consecutive
        "broadcast_buffers": True,
        "device_iterations": 1,
        "log_dir": ".",
        "max_repeat_logs": 4,
        "auto_round_num_ipus": True,
        "anchored_tensors": {},
        "output_mode": 2,  # OutputMode.All
        "output_return_period": 1,
        "connection_type": 0,  # ConnectionType.Always
        "sync_pattern": 0,  # SyncPattern.Full
        "available_memory_proportion": {0: SEED_MEMORY_PROPORTION, 1: SEED_MEMORY_PROPORTION},
        "random_seed": 1234,
        # Options.Training
        "gradient_accumulation": 128,
        "accumulation_and_replication_reduction_type": 1,  # ReductionType.Mean
        "meanAccumulationAndReplicationReductionStrategy": 1,  # MeanReductionStrategy.Post
        # Options.Distributed (no OMPI_COMM_WORLD_* variables set)
        "num_distributed_processes": 1,
        "distributed_process_id": 0,
        "ipuof_configs": {},
        # Options.TensorLocations
        "location_optimizer": {
            "onChip": int(not optimizer_state_offchip),
            "useReplicatedTensorSharding": int(replication_factor > 1),
        },
        "compilation_progress_bar_fn": "<ProgressBar>",
    }


def seed_memory_proportion_as_written(replication_factor: int) -> Dict[int, float]:
    """The seed's own ``available_memory_proportion``: IPU0 … IPU(2R-1), keys past IPU1 address no IPU."""
    _check_seed_arguments(replication_factor, False)
    return {ipu: SEED_MEMORY_PROPORTION for ipu in range(2 * replication_factor)}


def _identical(actual: Any, expected: Any) -> bool:
    """Equal values of the same types all the way down (``True`` is not ``1``, ``10`` is not ``10.0``)."""
    if type(actual) is not type(expected):
        return False
    if isinstance(actual, dict):
        if {(type(key), key) for key in actual} != {(type(key), key) for key in expected}:
            return False
        return all(_identical(actual[key], expected[key]) for key in actual)
    if isinstance(actual, list):
        return len(actual) == len(expected) and all(map(_identical, actual, expected))
    return actual == expected


def differences(actual: Dict[str, Any], expected: Dict[str, Any]) -> Dict[str, Tuple[Any, Any]]:
    """``{key: (actual value, expected value)}`` for every key whose values or types differ (``MISSING`` if absent)."""
    return {
        key: (actual.get(key, MISSING), expected.get(key, MISSING))
        for key in sorted(set(actual) | set(expected))
        if key not in actual or key not in expected or not _identical(actual[key], expected[key])
    }


def differences_in(actual: Dict[str, Any], expected: Dict[str, Any]) -> Dict[str, Tuple[Any, Any]]:
    """``differences`` restricted to the keys of ``expected``: checks part of a state."""
    return differences({key: actual[key] for key in expected if key in actual}, expected)


# The preset's options plan as `print(config.options_plan())` shows it, written out (training, then inference); a
# line that ends in a backslash goes on in the next one.
PRESET_TRAINING_PLAN = """\
import popart
import poptorch

opts = poptorch.Options()
opts.replicationFactor(1)
opts.Training.gradientAccumulation(128)
opts.deviceIterations(1)
opts.outputMode(poptorch.OutputMode.All)
opts.randomSeed(1234)
opts.enableExecutableCaching("exec")
opts.autoRoundNumIPUs(True)
opts.Training.accumulationAndReplicationReductionType(poptorch.ReductionType.Mean)
opts.Precision.enableStochasticRounding(True)
opts.TensorLocations.setOptimizerLocation(poptorch.TensorLocationSettings().useOnChipStorage(True).useReplicatedTensorSharding(False))
opts.setExecutionStrategy(poptorch.PipelinedExecution(poptorch.AutoStage.AutoIncrement))
opts.setAvailableMemoryProportion({"IPU0": 0.1, "IPU1": 0.1})
opts._Popart.set("autoRecomputation", int(popart.RecomputationType.Pipeline))
opts._Popart.set("disableGradAccumulationTensorStreams", True)
opts._Popart.set("accumulateOuterFragmentSettings.schedule", \
int(popart.AccumulateOuterFragmentSchedule.OverlapMemoryOptimized))
opts._Popart.set("accumulateOuterFragmentSettings.excludedVirtualGraphs", ["0"])
opts._Popart.set("outlineThreshold", 10.0)
opts._Popart.set("scheduleNonWeightUpdateGradientConsumersEarly", True)
opts._Popart.setPatterns({"TiedGather": True, "TiedGatherAccumulate": True, "UpdateInplacePrioritiesForIpu": True})"""

PRESET_INFERENCE_PLAN = """\
import popart
import poptorch

opts = poptorch.Options()
opts.replicationFactor(1)
opts.deviceIterations(1)
opts.randomSeed(1234)
opts.enableExecutableCaching("exec")
opts.autoRoundNumIPUs(True)
opts.outputMode(poptorch.OutputMode.All)
opts.Precision.enableStochasticRounding(False)
opts.TensorLocations.setOptimizerLocation(poptorch.TensorLocationSettings().useOnChipStorage(True).useReplicatedTensorSharding(False))
opts.setExecutionStrategy(poptorch.ShardedExecution(poptorch.AutoStage.AutoIncrement))
opts.setAvailableMemoryProportion({"IPU0": 0.1, "IPU1": 0.1})
opts._Popart.set("autoRecomputation", int(popart.RecomputationType.Pipeline))
opts._Popart.set("disableGradAccumulationTensorStreams", True)
opts._Popart.set("accumulateOuterFragmentSettings.schedule", \
int(popart.AccumulateOuterFragmentSchedule.OverlapMemoryOptimized))
opts._Popart.set("accumulateOuterFragmentSettings.excludedVirtualGraphs", ["0"])
opts._Popart.set("outlineThreshold", 10.0)
opts._Popart.set("scheduleNonWeightUpdateGradientConsumersEarly", True)
opts._Popart.setPatterns({"TiedGather": True, "TiedGatherAccumulate": True, "UpdateInplacePrioritiesForIpu": True})"""


def preset_training_plan_data(replicas: int, sharded: bool) -> Dict[str, Any]:
    """The preset's training plan as JSON data, with `replicas` replicas (`sharded`: the optimizer state is)."""

    def member(path, as_int=False):
        return {"sdk": path, "int": True} if as_int else {"sdk": path}

    return {
        "options": {"new": "poptorch.Options", "args": [], "kwargs": {}, "chain": []},
        "calls": [
            {"method": "replicationFactor", "args": [replicas]},
            {"method": "Training.gradientAccumulation", "args": [128]},
            {"method": "deviceIterations", "args": [1]},
            {"method": "outputMode", "args": [member("poptorch.OutputMode.All")]},
            {"method": "randomSeed", "args": [1234]},
            {"method": "enableExecutableCaching", "args": ["exec"]},
            {"method": "autoRoundNumIPUs", "args": [True]},
            {
                "method": "Training.accumulationAndReplicationReductionType",
                "args": [member("poptorch.ReductionType.Mean")],
            },
            {"method": "Precision.enableStochasticRounding", "args": [True]},
            {"method": "TensorLocations.setOptimizerLocation", "args": [{
                "new": "poptorch.TensorLocationSettings", "args": [], "kwargs": {},
                "chain": [["useOnChipStorage", [True]], ["useReplicatedTensorSharding", [sharded]]],
            }]},
            {"method": "setExecutionStrategy", "args": [{
                "new": "poptorch.PipelinedExecution", "args": [member("poptorch.AutoStage.AutoIncrement")],
                "kwargs": {}, "chain": [],
            }]},
            {"method": "setAvailableMemoryProportion", "args": [{"IPU0": 0.1, "IPU1": 0.1}]},
            {
                "method": "_Popart.set",
                "args": ["autoRecomputation", member("popart.RecomputationType.Pipeline", True)],
            },
            {"method": "_Popart.set", "args": ["disableGradAccumulationTensorStreams", True]},
            {"method": "_Popart.set", "args": [
                "accumulateOuterFragmentSettings.schedule",
                member("popart.AccumulateOuterFragmentSchedule.OverlapMemoryOptimized", True),
            ]},
            {"method": "_Popart.set", "args": ["accumulateOuterFragmentSettings.excludedVirtualGraphs", ["0"]]},
            {"method": "_Popart.set", "args": ["outlineThreshold", 10.0]},
            {"method": "_Popart.set", "args": ["scheduleNonWeightUpdateGradientConsumersEarly", True]},
            {"method": "_Popart.setPatterns", "args": [
                {"TiedGather": True, "TiedGatherAccumulate": True, "UpdateInplacePrioritiesForIpu": True}
            ]},
        ],
        "compile_only": False,
        "notes": [],
    }
