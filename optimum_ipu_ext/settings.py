"""The settings this package adds to optimum-graphcore's `IPUConfig`: one row each.

Each row says what the setting does and which PopTorch/PopART option it drives. Defaults reproduce
the build optimum-graphcore 0.7.1 makes, so an existing config behaves the same under our class.
Rows with a `popart_key` are applied generically (`opts._Popart.set(key, value)` unless the value is
`None`, which leaves PopART's own default); the others are applied in `build.py`.

Adding a setting is one row here (and, for a non-PopART option, its call in `build.py`) plus a test.
"""

import json
from typing import Any, Dict, List, Optional

from .schema import Setting, table


def _json_values(options: Dict[str, Any]) -> Optional[str]:
    try:
        json.dumps(options, allow_nan=False)
    except (TypeError, ValueError):
        return "values must be JSON: booleans, finite numbers, strings, lists and objects of those"
    return None


EXECUTION_STRATEGIES = {"pipelined": "poptorch.PipelinedExecution", "sharded": "poptorch.ShardedExecution"}

OPTIMUM_GRAPHCORE_PATTERNS = {"TiedGather": True, "TiedGatherAccumulate": True, "UpdateInplacePrioritiesForIpu": True}

OPTIMUM_GRAPHCORE_ENGINE_OPTIONS = {"opt.useAutoloader": "true", "target.syncReplicasIndependently": "true"}

EXTENSION_SETTINGS = table(
    Setting("auto_round_num_ipus", bool, True,
            "Round the number of IPUs requested up to what the system can allocate.",
            option="opts.autoRoundNumIPUs"),
    Setting("accumulation_and_replication_reduction_type", str, "mean",
            "How gradients are reduced over accumulation steps and replicas (training).",
            option="opts.Training.accumulationAndReplicationReductionType",
            choices={"sum": "Sum", "mean": "Mean"}, sdk_enum="poptorch.ReductionType"),
    Setting("execution_strategy", str, "pipelined",
            "How a replica runs over its IPUs in training.",
            option="opts.setExecutionStrategy", choices=tuple(EXECUTION_STRATEGIES)),
    Setting("inference_execution_strategy", str, "sharded",
            "How a replica runs over its IPUs in inference.",
            option="opts.setExecutionStrategy", choices=tuple(EXECUTION_STRATEGIES)),
    Setting("auto_stage", str, "auto_increment",
            "How blocks without an explicit stage are staged in the execution strategy.",
            option="poptorch.AutoStage", choices={"same_as_ipu": "SameAsIpu", "auto_increment": "AutoIncrement"},
            sdk_enum="poptorch.AutoStage"),
    Setting("stochastic_rounding", bool, True,
            "Stochastic rounding in training (always off in inference).",
            option="opts.Precision.enableStochasticRounding"),
    Setting("save_initializers_to_file", bool, True,
            "Save initializers to a fresh temporary file instead of the executable.",
            option='opts._Popart.set("saveInitializersToFile", <temporary file>)'),
    Setting("recomputation_mode", Optional[str], None,
            "PopART's automatic recomputation of activations.",
            choices={"none": "NoRecompute", "standard": "Standard", "norm_only": "NormOnly", "pipeline": "Pipeline",
                     "recompute_all": "RecomputeAll"},
            sdk_enum="popart.RecomputationType", popart_key="autoRecomputation"),
    Setting("disable_grad_accumulation_tensor_streams", Optional[bool], True,
            "Do not stream gradient accumulation tensors back to the host.",
            popart_key="disableGradAccumulationTensorStreams"),
    Setting("accumulate_outer_fragment_schedule", Optional[str], "overlap_memory_optimized",
            "Schedule of the weight update that follows gradient accumulation.",
            choices={"scheduler": "Scheduler", "serial": "Serial", "overlap_cycle_optimized": "OverlapCycleOptimized",
                     "overlap_memory_optimized": "OverlapMemoryOptimized"},
            sdk_enum="popart.AccumulateOuterFragmentSchedule",
            popart_key="accumulateOuterFragmentSettings.schedule"),
    Setting("accumulate_outer_fragment_excluded_virtual_graphs", Optional[List[int]], [0],
            "Pipeline stages (IPU indices within a replica) left out of that schedule.",
            minimum=0, popart_key="accumulateOuterFragmentSettings.excludedVirtualGraphs",
            encode=lambda graphs: [str(graph) for graph in graphs]),
    Setting("outline_threshold", Optional[float], 10.0,
            "Minimum estimated benefit for PopART to outline a repeated sub-graph.",
            popart_key="outlineThreshold"),
    Setting("subgraph_copying_strategy", Optional[str], "just_in_time",
            "When inputs and outputs of called sub-graphs are copied.",
            choices={"on_enter_and_exit": "OnEnterAndExit", "just_in_time": "JustInTime"},
            sdk_enum="popart.SubgraphCopyingStrategy",
            popart_key="subgraphCopyingStrategy"),
    Setting("schedule_non_weight_update_gradient_consumers_early", Optional[bool], True,
            "Schedule consumers of gradients that are not weight updates as early as possible.",
            popart_key="scheduleNonWeightUpdateGradientConsumersEarly"),
    Setting("popart_patterns", Optional[Dict[str, bool]], OPTIMUM_GRAPHCORE_PATTERNS,
            "PopART patterns switched on (true) or off (false).",
            option="opts._Popart.setPatterns"),
    Setting("engine_options", Optional[Dict[str, str]], OPTIMUM_GRAPHCORE_ENGINE_OPTIONS,
            "Poplar engine options.", popart_key="engineOptions"),
    Setting("popart_options", Dict[str, Any], {},
            "Further PopART session options, set last: {name: value}.",
            option="opts._Popart.set(name, value)", constraint=_json_values),
)

POPART_KEYS_WITH_A_SETTING = {
    **{setting.popart_key: name for name, setting in EXTENSION_SETTINGS.items() if setting.popart_key},
    "saveInitializersToFile": "save_initializers_to_file",
    "cachePath": "executable_cache_dir",
    "enableEngineCaching": "executable_cache_dir",
    "enableStochasticRounding": "stochastic_rounding",
    "enableExplicitIR": "explicit_ir_inference",
    "partialsTypeMatMuls": "enable_half_partials",
}
