"""Every setting of an IPU config, one row each: optimum-graphcore 0.7.1's own (`BASE_SETTINGS`) and the
ones this package adds (`EXTENSION_SETTINGS`).

Each row says what the setting is, what it may hold and what it does (the validation and documentation half of a
`Setting`), and which `poptorch.Options` call it drives (its `sdk=Call(...)`, the method dotted as
`OptionCall.method`). Rows whose `Call` is not `composite` are turned into calls by one generic loop in
`options/build.py`; `null`, or a value that encodes to `None`, makes no call, leaving poptorch's / PopART's default.
The same `Call` says which `toDict()` keys the call writes (`state`) and how the value reads back (`decode`):
`IPUConfig.from_options` imports options through it. The attribute and method tables of docs/ and the JSON Schema
(`documents.py`) are generated from these rows and the tables of methods held otherwise or refused.

Defaults reproduce the build optimum-graphcore 0.7.1 makes, so an existing config behaves the same
under our class. Nothing here imports transformers.

Adding a setting is one row here plus a test, unless its call takes other settings too (`Call(...,
composite=True)`). A composite row also needs, in `options/build.py`, the lines that make its call (an entry of
`build_plan`'s `composite` calls, or a link of the chain of one, as `tensors_liveness` in `_execution_strategy`) and
its reader beside them (`read_...`), which `options/readback.py`'s `_read_settings` calls; and, where it must agree
with other settings, its rule in `settings/rules.py`, worded in `documents.py`'s `RULES`. Nothing else: the config
classes, the CLI and the documents read the rows. (A setting of optimum-graphcore's own is also a parameter of
`config/bundled_base.py`'s constructor, as upstream's signature has it; `tests/config/test_base_signature.py` checks
both against the rows.)
"""

import math
from dataclasses import replace
from typing import Any, Callable, Dict, List, Optional, Union

from ..errors import as_json
from ..sdk.plan import NONE, Construct, Ref, TempFile, sdk_value
from .schema import Call, Setting, table

# poptorch reserves at most 64 IPUs per process ("Too many IPUs requested ... Experiments that need more than 64
# IPUs require distributed execution": graphcore/poptorch, popart_compiler/source/CompilerImpl.cpp,
# `assertSingleInstanceMaxNumIPUs`), and its sources state no job-wide maximum. Beyond 64, a job is one process
# per instance under poprun, over IPU-Fabric, whose largest design is 64Ki IPUs: a total above that is a typo.
MAX_IPUS_IN_A_JOB = 65536

TRAINING = ("training",)
INFERENCE = ("inference",)


UINT64_END = 1 << 64


def _unsigned(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < UINT64_END


def _session_option_values(options: Dict[str, Any]) -> Optional[str]:
    """Allows what poptorch's backend parses as a PopART option value when it compiles (`SessionOptionsParser.cpp`):
    a boolean, a finite number, a string, a list of strings or unsigned integers, an object of those; integers
    unsigned. Anything else validates here but fails on an IPU host."""
    for value in options.values():
        if isinstance(value, (bool, str)) or _unsigned(value):
            continue
        if isinstance(value, float) and math.isfinite(value):
            continue
        items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else None
        if items is not None and all(isinstance(item, str) or _unsigned(item) for item in items):
            continue
        return ("values must be what PopART options take: booleans, finite numbers, strings, unsigned integers, "
                "and lists or objects of strings and unsigned integers")
    return None


def _not_true(value: Any) -> Optional[str]:
    return "give a folder, or false to turn caching off" if value is True else None


def _cache_argument(folder: Union[str, bool]) -> Any:
    if folder is False:
        return NONE
    return folder if folder not in ("", "disabled") else None


def _even(number: int) -> Optional[str]:
    return "the number must be even" if number % 2 else None


# `TensorLocationSettings` methods a location setting calls: {method: (the field its call writes, its argument's type)}
TENSOR_LOCATION_CALLS = {
    "useOnChipStorage": ("onChip", bool),
    "useReplicatedTensorSharding": ("useReplicatedTensorSharding", bool),
    "useIOTilesToLoad": ("useIOTilesToLoad", bool),
    "useIOTilesToStore": ("useIOTilesToStore", bool),
    "minElementsForOffChip": ("minElementsForOffChip", int),
    "minElementsForReplicatedTensorSharding": ("minElementsForReplicatedTensorSharding", int),
}
TENSOR_LOCATIONS = {"activation": "activations", "weight": "weights", "optimizer": "optimizer states",
                    "accumulator": "gradient accumulators"}


def _location_calls(calls: Dict[str, Any]) -> Optional[str]:
    for method, argument in calls.items():
        if method not in TENSOR_LOCATION_CALLS:
            return f"keys are TensorLocationSettings methods: {', '.join(TENSOR_LOCATION_CALLS)}"
        kind = TENSOR_LOCATION_CALLS[method][1]
        if (kind is bool) != isinstance(argument, bool) or (kind is int and not _unsigned(argument)):
            return f"`{method}` takes {'true or false' if kind is bool else 'an unsigned integer'}"
    return None


def _location_setting(kind: str, tensors: str) -> Setting:
    method = f"set{kind.capitalize()}Location"
    doc = (
        f"Where {tensors} are stored: {{TensorLocationSettings method: argument}}, "
        'e.g. {"useOnChipStorage": false}.'
    )
    if kind == "optimizer":
        doc += " Replaces the call `optimizer_state_offchip` makes, which must then be null."
    return Setting(
        f"{kind}_location", Optional[Dict[str, Union[bool, int]]], None, doc, constraint=_location_calls,
        sdk=Call(f"TensorLocations.{method}", state=(f"location_{kind}",), encode=_location, decode=_read_location),
    )


def _location(calls: Dict[str, Any]) -> Construct:
    chain = tuple((name, (argument,)) for name, argument in calls.items())
    return Construct("poptorch.TensorLocationSettings", chain=chain)


def _read_location(written: Optional[Dict[str, int]]) -> Optional[Dict[str, Any]]:
    if written is None:
        return None
    return {name: to(written[field]) for name, (field, to) in TENSOR_LOCATION_CALLS.items() if field in written}


REPLICA_GROUPINGS = {"consecutive": "Consecutive", "orthogonal": "Orthogonal"}


def _replica_grouping(grouping: Dict[str, Any]) -> Optional[str]:
    size, kind = grouping.get("size"), grouping.get("type")
    if set(grouping) != {"size", "type"} or not (_unsigned(size) and size >= 1) or kind not in REPLICA_GROUPINGS:
        return f"give {{\"size\": a positive integer, \"type\": one of {', '.join(map(as_json, REPLICA_GROUPINGS))}}}"
    return None


def _grouping_arguments(grouping: Dict[str, Any]) -> tuple:
    return grouping["size"], Ref(f"poptorch.CommGroupType.{REPLICA_GROUPINGS[grouping['type']]}")


def _read_grouping(size: Optional[int], kind: Any) -> Optional[Dict[str, Any]]:
    names = {
        int(sdk_value(f"poptorch.CommGroupType.{member}")): choice for choice, member in REPLICA_GROUPINGS.items()
    }
    choice = names[int(kind)] if kind is not None else "consecutive"
    return None if size in (None, 1) and choice == "consecutive" else {"size": size, "type": choice}


def _consecutive_splits(splits: List[int]) -> Optional[str]:
    if sum(splits) < 1:
        return "at least one split is needed"
    used = [index for index, count in enumerate(splits) if count]
    if used[-1] - used[0] + 1 != len(used):
        return "splits must sit on consecutive IPUs, e.g. [3, 1, 0, 0]"
    return None


def _switch(argument: Any, is_written: Optional[Callable[[Any], bool]] = None) -> Dict[str, Callable[[Any], Any]]:
    """The `Call`'s `encode` and `decode` of a flag whose call is made only when it is on, with `argument`; the flag
    reads back as on where the state holds what `is_written` accepts (default: `argument` itself)."""
    return {
        "encode": lambda on: argument if on else None,
        "decode": is_written or (lambda written: written == argument),
    }


def _pair(name: str, annotation: Any, default: Any, doc: str, min_items: int = 0, sdk: Optional[Call] = None,
          **validation: Any) -> List[Setting]:
    """A training setting and its `inference_` twin (which defaults to `None`: fall back to training), each with its
    build's call, if any. An empty list is "as training" for the twin, as in optimum-graphcore, so `min_items`
    applies to the training setting only."""
    inference_annotation = annotation if default is None else Optional[annotation]
    return [
        Setting(name, annotation, default, doc, **validation, min_items=min_items,
                sdk=None if sdk is None else replace(sdk, modes=TRAINING)),
        Setting(f"inference_{name}", inference_annotation, None, f"As `{name}`, for inference.", **validation,
                sdk=None if sdk is None else replace(sdk, modes=INFERENCE)),
    ]


OUTPUT_MODES = {"all": "All", "sum": "Sum", "final": "Final", "default": "Default"}

BASE_SETTINGS = table(
    Setting("replication_factor", int, 1, "Replicas for data parallelism in training (of the whole job).",
            minimum=1, maximum=MAX_IPUS_IN_A_JOB, null_as=1,
            sdk=Call("replicationFactor", state=("replication_factor",), modes=TRAINING)),
    Setting("inference_replication_factor", int, 1, "Replicas for data parallelism in inference.",
            minimum=1, maximum=MAX_IPUS_IN_A_JOB, null_as=1,
            sdk=Call("replicationFactor", state=("replication_factor",), modes=INFERENCE)),
    Setting("gradient_accumulation_steps", int, 1, "Micro-batches accumulated per weight update.",
            minimum=1, null_as=1,
            sdk=Call("Training.gradientAccumulation", state=("gradient_accumulation",), modes=TRAINING)),
    *_pair("layers_per_ipu", List[int], [-1],
           "Layers on each IPU of the pipeline; -1 spreads the remaining layers evenly.", minimum=-1, min_items=1),
    *_pair("ipus_per_replica", Optional[int], None, "IPUs per replica (default: `len(layers_per_ipu)`).",
           minimum=1, maximum=MAX_IPUS_IN_A_JOB),
    Setting("optimizer_state_offchip", bool, False, "Keep the optimizer state in off-chip (streaming) memory.",
            sdk=Call("TensorLocations.setOptimizerLocation", state=("location_optimizer",), composite=True)),
    Setting("replicated_tensor_sharding", bool, False,
            "Shard the optimizer state across replicas (when there are several).",
            sdk=Call("TensorLocations.setOptimizerLocation", state=("location_optimizer",), composite=True)),
    *_pair("matmul_proportion", Union[float, List[float]], 0.2,
           "Available memory proportion for matmuls and convolutions, for every IPU or per IPU.",
           minimum=0, maximum=1,
           sdk=Call("setAvailableMemoryProportion", state=("available_memory_proportion",), composite=True)),
    Setting("enable_half_partials", bool, True, "float16 partials for matmuls and convolutions.",
            sdk=Call("Precision.setPartialsType", state=("partialsTypeMatMuls",),
                     **_switch(Ref("torch.float16"), lambda written: written == "half"))),
    *_pair("embedding_serialization_factor", Optional[int], None,
           "Serialise the embedding into this many parts on one IPU.", minimum=1),
    *_pair("serialized_embedding_splits_per_ipu", Optional[List[int]], None,
           "Embedding splits on each IPU of the pipeline.", minimum=0, constraint=_consecutive_splits),
    *_pair("projection_serialization_factor", Optional[int], None,
           "Serialise the output projection into this many parts.", minimum=1),
    *_pair("serialized_projection_splits_per_ipu", Optional[List[int]], None,
           "Projection splits on each IPU of the pipeline.", minimum=0, constraint=_consecutive_splits),
    Setting("recompute_checkpoint_every_layer", bool, False, "Checkpoint activations at the end of every layer."),
    Setting("device_iterations", int, 1, "Batches the device runs per call in training.",
            minimum=1, null_as=1,
            sdk=Call("deviceIterations", state=("device_iterations",), modes=TRAINING)),
    Setting("inference_device_iterations", int, 1, "Batches the device runs per call in inference.",
            minimum=1, null_as=1,
            sdk=Call("deviceIterations", state=("device_iterations",), modes=INFERENCE)),
    Setting("output_mode", str, "final", "Which results return to the host in training (inference: all).",
            choices=OUTPUT_MODES,
            sdk=Call("outputMode", state=("output_mode",), modes=TRAINING, sdk_enum="poptorch.OutputMode")),
    # optimum-graphcore reads 0 as "no seed", so 0 makes no call either
    Setting("seed", Optional[int], None, "Seed of the IPU random number generator (0 or null: none).",
            sdk=Call("randomSeed", state=("random_seed",), encode=lambda seed: seed or None,
                     decode=lambda seed: seed or None)),
    Setting("auto_loss_scaling", bool, False, "Automatic loss scaling in training (experimental).",
            sdk=Call("Training.setAutomaticLossScaling", state=("automaticLossScalingSettings.enabled",),
                     modes=TRAINING, **_switch(True))),
    Setting("executable_cache_dir", Union[str, bool], "",
            "Cache compiled executables here (`\"\"` or `\"disabled\"`: no call; `false`: off, even where "
            "`POPTORCH_CACHE_DIR` is set).",
            constraint=_not_true,
            sdk=Call("enableExecutableCaching", state=("cachePath", "enableEngineCaching"), encode=_cache_argument,
                     decode=lambda folder, enabled: folder or (False if enabled is False else ""))),
    Setting("explicit_ir_inference", bool, False, "PopART's explicit IR for inference (experimental).",
            sdk=Call("_Popart.set", key="enableExplicitIR", modes=INFERENCE, **_switch(True))),
    *_pair("parallelize_kwargs", Optional[Dict[str, Any]], None, "Keyword arguments for the model's `parallelize`."),
    Setting("execute_encoder_on_cpu_for_generation", bool, False, "Run the encoder on the CPU (not supported)."),
)

EXECUTION_STRATEGIES = {
    "pipelined": "poptorch.PipelinedExecution",
    "sharded": "poptorch.ShardedExecution",
    "serial_phased": "poptorch.SerialPhasedExecution",
    "parallel_phased": "poptorch.ParallelPhasedExecution",
}
PHASED_STRATEGIES = ("serial_phased", "parallel_phased")

# The settings each strategy reads, besides `auto_stage` (read by pipelined and sharded builds without stages)
PHASED_SETTINGS = ("execution_phases", "separate_backward_phase", "tensors_liveness")
STRATEGY_SETTINGS = {
    "pipelined": ("execution_stages",),
    "sharded": ("execution_stages",),
    "serial_phased": PHASED_SETTINGS,
    "parallel_phased": PHASED_SETTINGS,
}

# One stage of an execution strategy, as a config writes it: {"blocks": ["0", "1"], "ipu": 1}, "ipu" optional
StageSetting = Dict[str, Union[List[str], int]]


def _stage_problem(stage: StageSetting) -> Optional[str]:
    unknown = sorted(set(stage) - {"blocks", "ipu"})
    if unknown:
        return f"keys {as_json(unknown)}: a stage has `blocks` and, optionally, `ipu`"
    blocks = stage.get("blocks")
    if not isinstance(blocks, list) or not blocks or not all(isinstance(block, str) for block in blocks):
        return "`blocks` must be a non-empty list of block ids (strings, as `poptorch.Block` names them)"
    ipu = stage.get("ipu", 0)
    if isinstance(ipu, bool) or not isinstance(ipu, int) or ipu < 0:
        return "`ipu` must be an integer >= 0"
    return None


def _stages_problem(stages: List[StageSetting], where: str = "") -> Optional[str]:
    if not stages:
        return f"{where}at least one stage is needed"
    for index, stage in enumerate(stages):
        problem = _stage_problem(stage)
        if problem:
            return f"{where}stage {index}: {problem}"
    return None


def _blocks_once(stages: List[StageSetting]) -> Optional[str]:
    blocks = [block for stage in stages for block in stage["blocks"]]
    repeated = sorted({block for block in blocks if blocks.count(block) > 1})
    return f"blocks {as_json(repeated)} are in more than one stage" if repeated else None


def _execution_stages(stages: List[StageSetting]) -> Optional[str]:
    return _stages_problem(stages) or _blocks_once(stages)


def _execution_phases(phases: List[List[StageSetting]]) -> Optional[str]:
    if not phases:
        return "at least one phase is needed"
    for index, phase in enumerate(phases):
        problem = _stages_problem(phase, f"phase {index}, ")
        if problem:
            return problem
    return _blocks_once([stage for phase in phases for stage in phase])


OPTIMUM_GRAPHCORE_PATTERNS = {"TiedGather": True, "TiedGatherAccumulate": True, "UpdateInplacePrioritiesForIpu": True}

OPTIMUM_GRAPHCORE_ENGINE_OPTIONS = {"opt.useAutoloader": "true", "target.syncReplicasIndependently": "true"}

EXTENSION_SETTINGS = table(
    Setting("auto_round_num_ipus", bool, True,
            "Round the number of IPUs requested up to what the system can allocate.",
            sdk=Call("autoRoundNumIPUs", state=("auto_round_num_ipus",))),
    Setting("accumulation_and_replication_reduction_type", str, "mean",
            "How gradients are reduced over accumulation steps and replicas (training).",
            choices={"sum": "Sum", "mean": "Mean"},
            sdk=Call("Training.accumulationAndReplicationReductionType",
                     state=("accumulation_and_replication_reduction_type",), modes=TRAINING,
                     sdk_enum="poptorch.ReductionType")),
    Setting("execution_strategy", Optional[str], "pipelined",
            "How a replica runs over its IPUs in training (null: poptorch's default, pipelined by IPU).",
            choices=tuple(EXECUTION_STRATEGIES),
            sdk=Call("setExecutionStrategy", state=("execution_mode", "serial_phases_execution"), modes=TRAINING,
                     composite=True)),
    Setting("inference_execution_strategy", Optional[str], "sharded",
            "How a replica runs over its IPUs in inference (null: poptorch's default, pipelined by IPU).",
            choices=tuple(EXECUTION_STRATEGIES),
            sdk=Call("setExecutionStrategy", state=("execution_mode", "serial_phases_execution"), modes=INFERENCE,
                     composite=True)),
    Setting("auto_stage", Optional[str], "auto_increment",
            "How the pipelined and sharded strategies stage blocks when `execution_stages` is null (null: "
            "poptorch's default, same_as_ipu).",
            choices={"same_as_ipu": "SameAsIpu", "auto_increment": "AutoIncrement"},
            sdk=Call("setExecutionStrategy", state=("execution_mode",), composite=True,
                     sdk_enum="poptorch.AutoStage")),
    Setting("execution_stages", Optional[List[StageSetting]], None,
            'Stages of the pipelined and sharded strategies, in order: {"blocks": [block ids], "ipu": n}, "ipu" '
            "optional (null: `auto_stage`).",
            constraint=_execution_stages,
            sdk=Call("setExecutionStrategy", state=("execution_mode",), composite=True)),
    Setting("execution_phases", Optional[List[List[StageSetting]]], None,
            "Phases of the phased strategies, in order: each a list of stages as in `execution_stages`.",
            constraint=_execution_phases,
            sdk=Call("setExecutionStrategy", state=("execution_mode",), composite=True)),
    Setting("separate_backward_phase", Optional[bool], None,
            "Phased strategies: the backward pass shares no phase with the forward pass.",
            sdk=Call("setExecutionStrategy", state=("separate_backward_phase",), composite=True)),
    Setting("tensors_liveness", Optional[str], None,
            "Phased strategies: where tensors stay between phases (parallel_phased: always_live or "
            "off_chip_after_fwd).",
            choices={"always_live": "AlwaysLive", "off_chip_after_fwd": "OffChipAfterFwd",
                     "off_chip_after_fwd_no_overlap": "OffChipAfterFwdNoOverlap",
                     "off_chip_after_each_phase": "OffChipAfterEachPhase"},
            sdk=Call("setExecutionStrategy", state=("tensors_liveness",), composite=True,
                     sdk_enum="poptorch.Liveness")),
    Setting("inference_output_mode", str, "all", "Which results return to the host in inference.",
            choices=OUTPUT_MODES,
            sdk=Call("outputMode", state=("output_mode",), modes=INFERENCE, sdk_enum="poptorch.OutputMode")),
    Setting("stochastic_rounding", bool, True, "Stochastic rounding in training.",
            sdk=Call("Precision.enableStochasticRounding", state=("enableStochasticRounding",), modes=TRAINING)),
    Setting("inference_stochastic_rounding", bool, False, "Stochastic rounding in inference.",
            sdk=Call("Precision.enableStochasticRounding", state=("enableStochasticRounding",), modes=INFERENCE)),
    Setting("zero_seed", bool, False,
            "Seed the IPU random number generator with 0 (`seed` 0 sets no seed, as in optimum-graphcore).",
            sdk=Call("randomSeed", state=("random_seed",), **_switch(0))),
    *[_location_setting(kind, tensors) for kind, tensors in TENSOR_LOCATIONS.items()],
    Setting("num_io_tiles", Optional[int], None, "Tiles of each IPU kept for input and output (IO tiles).",
            minimum=32, maximum=192, constraint=_even,
            sdk=Call("TensorLocations.numIOTiles", state=("numIOTiles",))),
    Setting("broadcast_buffers", Optional[bool], None,
            "Broadcast the model's buffers from the first replica to the others before each run.",
            sdk=Call("broadcastBuffers", state=("broadcast_buffers",), sdk_default=True)),
    Setting("input_replica_grouping", Optional[Dict[str, Union[int, str]]], None,
            "Replicas that take the same inputs in training: "
            "`{\"size\": n, \"type\": \"consecutive\" or \"orthogonal\"}`.",
            constraint=_replica_grouping,
            sdk=Call("inputReplicaGrouping", state=("input_group_size", "input_cgt"), modes=TRAINING,
                     encode=_grouping_arguments, decode=_read_grouping)),
    Setting("connection_type", Optional[str], None, "When to attach to the IPUs.",
            choices={"always": "Always", "on_demand": "OnDemand", "never": "Never"},
            sdk=Call("connectionType", state=("connection_type",), sdk_enum="poptorch.ConnectionType",
                     sdk_default="always")),
    Setting("sync_pattern", Optional[str], None, "How IPUs synchronise with each other and the host.",
            choices={"full": "Full", "single_pipeline": "SinglePipeline", "replica_and_ladder": "ReplicaAndLadder"},
            sdk=Call("syncPattern", state=("sync_pattern",), sdk_enum="poptorch.SyncPattern", sdk_default="full")),
    Setting("mean_reduction_strategy", Optional[str], None,
            "When a mean reduction over accumulation and replicas divides (training).",
            choices={"running": "Running", "post": "Post", "post_and_loss": "PostAndLoss"},
            sdk=Call("Training.setMeanAccumulationAndReplicationReductionStrategy",
                     state=("meanAccumulationAndReplicationReductionStrategy",),
                     sdk_enum="poptorch.MeanReductionStrategy", sdk_default="post")),
    Setting("relax_optimizer_attributes_checks", Optional[bool], None,
            "Let the optimizer's attributes change between runs without checking them.",
            sdk=Call("relaxOptimizerAttributesChecks", state=("relaxOptimizerAttributesChecks",), sdk_default=False)),
    Setting("disable_module_namescope", bool, False, "Leave module names out of the names of the graph's operations.",
            sdk=Call("disableModuleNamescope", state=("disableModuleNamescope",),
                     **_switch((), lambda disabled: disabled is True))),
    Setting("save_initializers_to_file", Union[bool, str], True,
            "Save initializers to a file instead of the executable: `true`, a fresh temporary file; or this file.",
            sdk=Call("_Popart.set", key="saveInitializersToFile",
                     encode=lambda file: TempFile() if file is True else file or None,
                     decode=lambda written: True if written and TempFile.drew(written) else written or False)),
    Setting("recomputation_mode", Optional[str], None,
            "PopART's automatic recomputation of activations.",
            choices={"none": "NoRecompute", "standard": "Standard", "norm_only": "NormOnly", "pipeline": "Pipeline",
                     "recompute_all": "RecomputeAll"},
            sdk=Call("_Popart.set", key="autoRecomputation", sdk_enum="popart.RecomputationType")),
    Setting("disable_grad_accumulation_tensor_streams", Optional[bool], True,
            "Do not stream gradient accumulation tensors back to the host.",
            sdk=Call("_Popart.set", key="disableGradAccumulationTensorStreams")),
    Setting("accumulate_outer_fragment_schedule", Optional[str], "overlap_memory_optimized",
            "Schedule of the weight update that follows gradient accumulation.",
            choices={"scheduler": "Scheduler", "serial": "Serial", "overlap_cycle_optimized": "OverlapCycleOptimized",
                     "overlap_memory_optimized": "OverlapMemoryOptimized"},
            sdk=Call("_Popart.set", key="accumulateOuterFragmentSettings.schedule",
                     sdk_enum="popart.AccumulateOuterFragmentSchedule")),
    Setting("accumulate_outer_fragment_excluded_virtual_graphs", Optional[List[int]], [0],
            "Pipeline stages (IPU indices within a replica) left out of that schedule.",
            minimum=0,
            sdk=Call("_Popart.set", key="accumulateOuterFragmentSettings.excludedVirtualGraphs",
                     encode=lambda graphs: [str(graph) for graph in graphs],
                     decode=lambda graphs: None if graphs is None else [int(graph) for graph in graphs])),
    Setting("outline_threshold", Optional[float], 10.0,
            "Minimum estimated benefit for PopART to outline a repeated sub-graph.",
            sdk=Call("_Popart.set", key="outlineThreshold")),
    Setting("subgraph_copying_strategy", Optional[str], "just_in_time",
            "When inputs and outputs of called sub-graphs are copied.",
            choices={"on_enter_and_exit": "OnEnterAndExit", "just_in_time": "JustInTime"},
            sdk=Call("_Popart.set", key="subgraphCopyingStrategy", sdk_enum="popart.SubgraphCopyingStrategy")),
    Setting("schedule_non_weight_update_gradient_consumers_early", Optional[bool], True,
            "Schedule consumers of gradients that are not weight updates as early as possible.",
            sdk=Call("_Popart.set", key="scheduleNonWeightUpdateGradientConsumersEarly")),
    Setting("popart_patterns", Optional[Dict[str, bool]], OPTIMUM_GRAPHCORE_PATTERNS,
            "PopART patterns switched on (true) or off (false).",
            sdk=Call("_Popart.setPatterns", state=("patterns", "patterns_level"), encode=dict)),
    Setting("engine_options", Optional[Dict[str, str]], OPTIMUM_GRAPHCORE_ENGINE_OPTIONS,
            "Poplar engine options.",
            sdk=Call("_Popart.set", key="engineOptions")),
    Setting("popart_options", Dict[str, Any], {},
            "Further PopART session options, set last: {name: value}, values as PopART takes them.",
            constraint=_session_option_values,
            sdk=Call("_Popart.set", composite=True)),
)

SETTINGS = {**BASE_SETTINGS, **EXTENSION_SETTINGS}

# The options poptorch keeps in its own state, which `Options.toDict()` flattens in beside PopART's session options
# (poptorch 3.4, python/options.py: `Options`, `Training`, `Distributed`, `TensorLocations` and the execution
# strategies' `backendOptions`). Set through `_Popart.set`, one of them looks right in `toDict()`, but poptorch reads
# its own state (DataLoader seeding, replicas, the pipeline): a different build.
POPTORCH_OPTION_KEYS = frozenset("""
    replication_factor input_group_size input_cgt broadcast_buffers device_iterations log_dir max_repeat_logs
    auto_round_num_ipus anchored_tensors output_mode output_return_period connection_type sync_pattern
    available_memory_proportion model_name use_model ipu_id ipu_version random_seed compilation_progress_bar_fn
    gradient_accumulation accumulation_and_replication_reduction_type meanAccumulationAndReplicationReductionStrategy
    num_distributed_processes distributed_process_id ipuof_configs
    numIOTiles location_activation location_weight location_optimizer location_accumulator
    execution_mode separate_backward_phase tensors_liveness serial_phases_execution
""".split())


# What a config does not hold, by the state key (of `toDict()` or `importer.python_state`) the method writes: each
# belongs to one machine, one launch or one run, not to the build. {state key: (method, why)}
UNSUPPORTED_CALLS = {
    "ipu_id": ("useIpuId", "picks a device of one machine"),
    "use_model": ("useIpuModel", "picks the IPU Model simulator of one machine"),
    "ipu_version": (
        "useOfflineIpuTarget", "an offline target is asked for when building: `to_options(compile_only=True)`"
    ),
    "log_dir": ("logDir", "where one run writes its logs"),
    "max_repeat_logs": ("maxRepeatLogs", "how one run logs"),
    "model_name": ("modelName", "names the reports of one run"),
    "compilation_progress_bar_fn": ("showCompilationProgressBar", "what one run displays"),
    "num_distributed_processes": ("Distributed.configureProcessId", "the processes of one launch, which poprun sets"),
    "distributed_process_id": ("Distributed.configureProcessId", "the processes of one launch, which poprun sets"),
    "sourceLocationExcludes": ("sourceLocationExcludes", "the debug information of one run"),
    "anchored_tensors": ("anchorTensor", "names tensors of one model's graph"),
    "output_return_period": ("outputMode", "OutputMode.EveryN: the settings give all, sum, final or default"),
}


# Methods no row names as its call, and how a config holds what they do: {method: how}
METHODS_HELD_OTHERWISE = {
    **{f"TensorLocationSettings.{method}": "a key of `activation_location`, `weight_location`, `optimizer_location` "
       "or `accumulator_location`" for method in TENSOR_LOCATION_CALLS},
    "_Popart.setEngineOptions": "`engine_options`",
    "enableStableNorm": '`popart_options`: `{"enableStableNorm": true}`',
    "enableSyntheticData": '`popart_options`: `{"syntheticDataMode": 2}` (true), `0` (false)',
    "logCycleCount": '`popart_options`: `{"instrumentWithHardwareCycleCounter": true}`',
    "updatableNamedBuffers": '`popart_options`: `{"updatableNamedBuffers": [...]}`',
    "Precision.enableFloatingPointExceptions": '`popart_options`: `{"enableFloatingPointChecks": true}`',
    "Training.setConvolutionDithering": '`popart_options`: `{"convolutionOptions": {"enableConvDithering": ...}}`',
    "Precision.setPartialsType(torch.float32)": '`enable_half_partials: false` and `popart_options`: '
    '`{"partialsTypeMatMuls": "float", "convolutionOptions": {"partialsType": "float"}}`',
    "Training.setAutomaticLossScaling(False)": '`auto_loss_scaling: false` and `popart_options`: '
    '`{"automaticLossScalingSettings.enabled": false}`',
    "_Popart.set": 'the setting of that option (the `_Popart.set("...", ...)` rows), else `popart_options`',
    "Jit.traceModel(False)": "nothing: it writes no option (poptorch 3.4 allows only false)",
    "Precision.halfFloatCasting": "nothing: deprecated, it writes no option",
    "Precision.runningStatisticsAlwaysFloat": "nothing: deprecated, it writes no option",
    "enableProfiling": "`engine_options`: the `autoReport.*` and `debug.allowOutOfMemory` options it writes",
    "loadFromFile": "the settings of the calls the file makes: import the file with `from_options_file`",
    "appendToLocationExcludes": f"not held: {UNSUPPORTED_CALLS['sourceLocationExcludes'][1]}",
    "Distributed.disable": f"not held: {UNSUPPORTED_CALLS['distributed_process_id'][1]}",
    "Distributed.setEnvVarNames": f"not held: {UNSUPPORTED_CALLS['distributed_process_id'][1]}",
}


def _keys_with_a_setting(poptorch_own: bool) -> Dict[str, str]:
    """`{state key: setting}` for the `toDict()` keys that settings write (the first row writing a key names it):
    poptorch's own options, or PopART's session options. `popart_options` must not set them."""
    keys: Dict[str, str] = {}
    for name, setting in SETTINGS.items():
        for key in setting.sdk.state if setting.sdk else ():
            if (key in POPTORCH_OPTION_KEYS) == poptorch_own:
                keys.setdefault(key, name)
    return keys


POPTORCH_KEYS_WITH_A_SETTING = _keys_with_a_setting(poptorch_own=True)
POPART_KEYS_WITH_A_SETTING = _keys_with_a_setting(poptorch_own=False)


def setting_writing(key: str, values: Dict[str, Any]) -> Optional[str]:
    """The setting whose call, with these setting `values`, writes the PopART option `key`; `None` where none does
    (its setting makes no call): `popart_options` may set it then."""
    owner = POPART_KEYS_WITH_A_SETTING.get(key)
    return owner if owner is not None and SETTINGS[owner].argument(values[owner]) is not None else None

# transformers' own configuration attributes (the union over the releases this package supports, 4.29.2 to 5.x).
# A saved config may carry them (its versions, say): they are not IPU settings and are accepted as upstream
# accepts them. A test checks that this list holds every key of the installed release.
TRANSFORMERS_KEYS = frozenset("""
    _name_or_path add_cross_attention architectures bad_words_ids begin_suppress_tokens bos_token_id
    chunk_size_feed_forward cross_attention_hidden_size decoder_start_token_id diversity_penalty do_sample dtype
    early_stopping encoder_no_repeat_ngram_size eos_token_id exponential_decay_length_penalty finetuning_task
    forced_bos_token_id forced_eos_token_id id2label is_decoder is_encoder_decoder label2id length_penalty max_length
    min_length model_type no_repeat_ngram_size num_beam_groups num_beams num_return_sequences optimum_version
    output_attentions output_hidden_states output_scores pad_token_id prefix problem_type pruned_heads
    remove_invalid_values repetition_penalty return_dict return_dict_in_generate sep_token_id suppress_tokens
    task_specific_params temperature tf_legacy_loss tie_encoder_decoder tie_word_embeddings tokenizer_class top_k
    top_p torch_dtype torchscript transformers_version typical_p use_bfloat16
    _attn_implementation_internal _experts_implementation_internal _output_attentions _post_init_done
""".split())

VERSION_KEYS = ("transformers_version", "optimum_version")


# How each phased strategy sets where tensors stay between phases: (method, {tensors_liveness choice: argument})
TENSORS_LIVENESS_CALLS = {
    "serial_phased": ("setTensorsLiveness", {
        choice: SETTINGS["tensors_liveness"].argument(choice) for choice in SETTINGS["tensors_liveness"].choices
    }),
    "parallel_phased": ("sendTensorsOffChipAfterFwd", {"always_live": False, "off_chip_after_fwd": True}),
}
