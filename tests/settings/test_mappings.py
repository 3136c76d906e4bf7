"""Every mapping from a setting to the SDK, pinned as written-out data: each choice to its SDK member and value,
each PopART key, each error class, each bound, and the preset's whole plan (as Python and as JSON)."""

import json
import os
import pickle
import tempfile

import pytest

import optimum_ipu_ext
from optimum_ipu_ext import IPUConfig
from support import PRESET
from support.builds import comparable
from support.expected_states import PRESET_INFERENCE_PLAN, PRESET_TRAINING_PLAN, preset_training_plan_data


def plan_lines(config, for_inference=False):
    return str(config.options_plan(for_inference=for_inference)).splitlines()


# --- choices: each value -> its SDK member (as the plan prints it) and the value the options hold ----------

POPART_CHOICES = {
    # setting: {choice: (printed member, value in the PopART option)}, the PopART key is in POPART_KEYS
    "recomputation_mode": {
        "none": ("popart.RecomputationType.NoRecompute", 0),
        "standard": ("popart.RecomputationType.Standard", 1),
        "norm_only": ("popart.RecomputationType.NormOnly", 2),
        "pipeline": ("popart.RecomputationType.Pipeline", 3),
        "recompute_all": ("popart.RecomputationType.RecomputeAll", 4),
    },
    "accumulate_outer_fragment_schedule": {
        "scheduler": ("popart.AccumulateOuterFragmentSchedule.Scheduler", 0),
        "serial": ("popart.AccumulateOuterFragmentSchedule.Serial", 1),
        "overlap_cycle_optimized": ("popart.AccumulateOuterFragmentSchedule.OverlapCycleOptimized", 2),
        "overlap_memory_optimized": ("popart.AccumulateOuterFragmentSchedule.OverlapMemoryOptimized", 3),
    },
    "subgraph_copying_strategy": {
        "on_enter_and_exit": ("popart.SubgraphCopyingStrategy.OnEnterAndExit", 0),
        "just_in_time": ("popart.SubgraphCopyingStrategy.JustInTime", 1),
    },
}

POPART_CHOICE_KEYS = {
    "recomputation_mode": "autoRecomputation",
    "accumulate_outer_fragment_schedule": "accumulateOuterFragmentSettings.schedule",
    "subgraph_copying_strategy": "subgraphCopyingStrategy",
}


@pytest.mark.parametrize(
    "setting, choice",
    [(setting, choice) for setting, choices in POPART_CHOICES.items() for choice in choices],
)
def test_popart_choice_sets_its_member_as_an_int(sdk, setting, choice):
    member, value = POPART_CHOICES[setting][choice]
    key = POPART_CHOICE_KEYS[setting]
    config = IPUConfig(**{setting: choice})
    assert f'opts._Popart.set("{key}", int({member}))' in plan_lines(config)
    built = comparable(config.to_options())
    assert type(built[key]) is int and built[key] == value


POPTORCH_CHOICES = {
    # setting: {choice: (printed member, member name, value)}
    "accumulation_and_replication_reduction_type": {
        "sum": ("poptorch.ReductionType.Sum", "Sum", 0),
        "mean": ("poptorch.ReductionType.Mean", "Mean", 1),
    },
    "output_mode": {
        "final": ("poptorch.OutputMode.Final", "Final", 0),
        "all": ("poptorch.OutputMode.All", "All", 2),
        "sum": ("poptorch.OutputMode.Sum", "Sum", 3),
        "default": ("poptorch.OutputMode.Default", "Default", 4),
    },
    "auto_stage": {
        "same_as_ipu": ("poptorch.AutoStage.SameAsIpu", "SameAsIpu", 0),
        "auto_increment": ("poptorch.AutoStage.AutoIncrement", "AutoIncrement", 1),
    },
    "inference_output_mode": {
        "final": ("poptorch.OutputMode.Final", "Final", 0),
        "all": ("poptorch.OutputMode.All", "All", 2),
        "sum": ("poptorch.OutputMode.Sum", "Sum", 3),
        "default": ("poptorch.OutputMode.Default", "Default", 4),
    },
    "connection_type": {
        "always": ("poptorch.ConnectionType.Always", "Always", 0),
        "on_demand": ("poptorch.ConnectionType.OnDemand", "OnDemand", 1),
        "never": ("poptorch.ConnectionType.Never", "Never", 2),
    },
    "sync_pattern": {
        "full": ("poptorch.SyncPattern.Full", "Full", 0),
        "single_pipeline": ("poptorch.SyncPattern.SinglePipeline", "SinglePipeline", 1),
        "replica_and_ladder": ("poptorch.SyncPattern.ReplicaAndLadder", "ReplicaAndLadder", 2),
    },
    "mean_reduction_strategy": {
        "running": ("poptorch.MeanReductionStrategy.Running", "Running", 0),
        "post": ("poptorch.MeanReductionStrategy.Post", "Post", 1),
        "post_and_loss": ("poptorch.MeanReductionStrategy.PostAndLoss", "PostAndLoss", 2),
    },
}


def _poptorch_choice_state(opts, setting):
    """The member the options hold for a poptorch choice setting, where poptorch keeps it."""
    if setting == "accumulation_and_replication_reduction_type":
        return opts.Training.accumulation_and_replication_reduction_type
    if setting in ("output_mode", "inference_output_mode", "connection_type", "sync_pattern"):
        return getattr(opts, setting.replace("inference_", ""))  # poptorch stores the member's value
    if setting == "mean_reduction_strategy":
        return opts.Training.meanAccumulationAndReplicationReductionStrategy
    return opts._execution_strategy._stages_manager._auto_stage


@pytest.mark.parametrize(
    "setting, choice",
    [(setting, choice) for setting, choices in POPTORCH_CHOICES.items() for choice in choices],
)
def test_poptorch_choice_passes_its_member(sdk, setting, choice):
    import poptorch

    printed, name, value = POPTORCH_CHOICES[setting][choice]
    config = IPUConfig(**{setting: choice})
    for_inference = setting.startswith("inference_")
    lines = plan_lines(config, for_inference)
    assert any(printed in line for line in lines), lines
    held = _poptorch_choice_state(config.to_options(for_inference=for_inference), setting)
    if setting in ("output_mode", "inference_output_mode", "connection_type", "sync_pattern"):
        assert held == value and type(held) is int
    else:
        assert held is getattr(getattr(poptorch, printed.split(".")[1]), name) and int(held) == value


STRATEGY_CHOICES = {
    # choice: (printed strategy of a build that gives no stages but phases [[{"blocks": ["0"]}]], toDict keys it
    # writes)
    "pipelined": ("poptorch.PipelinedExecution(poptorch.AutoStage.AutoIncrement)", {"execution_mode": 0}),
    "sharded": ("poptorch.ShardedExecution(poptorch.AutoStage.AutoIncrement)", {"execution_mode": 1}),
    "serial_phased": (
        'poptorch.SerialPhasedExecution(poptorch.Phase(poptorch.Stage("0")))',
        {
            "execution_mode": 2, "separate_backward_phase": False, "tensors_liveness": 0,
            "serial_phases_execution": True,
        },
    ),
    "parallel_phased": (
        'poptorch.ParallelPhasedExecution(poptorch.Phase(poptorch.Stage("0")))',
        {
            "execution_mode": 2, "separate_backward_phase": False, "tensors_liveness": 0,
            "serial_phases_execution": False,
        },
    ),
}
STRATEGY_STATE_KEYS = ("execution_mode", "separate_backward_phase", "tensors_liveness", "serial_phases_execution")


@pytest.mark.parametrize(
    "setting, choice",
    [
        (setting, choice)
        for setting in ("execution_strategy", "inference_execution_strategy")
        for choice in STRATEGY_CHOICES
    ],
)
def test_execution_strategy_choice(sdk, setting, choice):
    for_inference = setting.startswith("inference_")
    phases = [[{"blocks": ["0"]}]] if choice.endswith("_phased") else None
    config = IPUConfig(**{setting: choice, "execution_phases": phases})
    printed, written = STRATEGY_CHOICES[choice]
    assert f"opts.setExecutionStrategy({printed})" in plan_lines(config, for_inference)
    built = comparable(config.to_options(for_inference=for_inference))
    assert {key: built[key] for key in STRATEGY_STATE_KEYS if key in built} == written
    assert built["_execution_strategy"]["type"] == printed.split("(")[0].split(".")[1]


TENSORS_LIVENESS = {
    # (phased strategy, choice): (the strategy's call that sets it, as printed; `tensors_liveness` in toDict())
    ("serial_phased", "always_live"): (".setTensorsLiveness(poptorch.Liveness.AlwaysLive)", 0),
    ("serial_phased", "off_chip_after_fwd"): (".setTensorsLiveness(poptorch.Liveness.OffChipAfterFwd)", 1),
    ("serial_phased", "off_chip_after_fwd_no_overlap"): (
        ".setTensorsLiveness(poptorch.Liveness.OffChipAfterFwdNoOverlap)", 2
    ),
    ("serial_phased", "off_chip_after_each_phase"): (
        ".setTensorsLiveness(poptorch.Liveness.OffChipAfterEachPhase)", 3
    ),
    ("parallel_phased", "always_live"): (".sendTensorsOffChipAfterFwd(False)", 0),
    ("parallel_phased", "off_chip_after_fwd"): (".sendTensorsOffChipAfterFwd(True)", 1),
}


@pytest.mark.parametrize("strategy, choice", sorted(TENSORS_LIVENESS))
def test_tensors_liveness_choice(sdk, strategy, choice):
    config = IPUConfig(execution_strategy=strategy, execution_phases=[[{"blocks": ["0"]}]], tensors_liveness=choice)
    import poptorch

    printed, value = TENSORS_LIVENESS[strategy, choice]
    made = [line for line in plan_lines(config) if line.startswith("opts.setExecutionStrategy(")]
    assert made == [f'opts.setExecutionStrategy({STRATEGY_CHOICES[strategy][0]}{printed})']
    options = config.to_options()
    assert comparable(options)["tensors_liveness"] == value
    assert type(options._execution_strategy._tensors_liveness) is poptorch.Liveness


@pytest.mark.parametrize("choice", ["off_chip_after_fwd_no_overlap", "off_chip_after_each_phase"])
def test_parallel_phases_take_only_the_liveness_they_can_set(choice):
    with pytest.raises(optimum_ipu_ext.IncompatibleSettingsError) as raised:
        IPUConfig(
            execution_strategy="parallel_phased", execution_phases=[[{"blocks": ["0"]}]], tensors_liveness=choice
        )
    assert str(raised.value) == (
        f'`tensors_liveness={json.dumps(choice)}` is invalid: `execution_strategy="parallel_phased"` sets it with '
        '`sendTensorsOffChipAfterFwd`, which takes "always_live", "off_chip_after_fwd".'
    )


def test_every_choice_setting_is_pinned():
    pinned = set(POPART_CHOICES) | set(POPTORCH_CHOICES) | {"execution_strategy", "inference_execution_strategy"}
    with_choices = {name for name, setting in IPUConfig.SETTINGS.items() if setting.choices}
    assert with_choices == pinned | {"tensors_liveness"}
    for name in ("execution_strategy", "inference_execution_strategy"):
        assert IPUConfig.SETTINGS[name].choices == tuple(STRATEGY_CHOICES)
    assert set(IPUConfig.SETTINGS["tensors_liveness"].choices) == {choice for _, choice in TENSORS_LIVENESS}
    for name, choices in {**POPART_CHOICES, **POPTORCH_CHOICES}.items():
        assert set(IPUConfig.SETTINGS[name].choices) == set(choices), name


# --- PopART keys: each setting -> the session option it writes, and the value there -------------------

POPART_KEYS = [
    # (settings, key, value stored in the options)
    ({"recomputation_mode": "norm_only"}, "autoRecomputation", 2),
    ({"disable_grad_accumulation_tensor_streams": False}, "disableGradAccumulationTensorStreams", False),
    ({"accumulate_outer_fragment_schedule": "serial"}, "accumulateOuterFragmentSettings.schedule", 1),
    ({"layers_per_ipu": [-1, -1], "accumulate_outer_fragment_excluded_virtual_graphs": [1, 0]},
     "accumulateOuterFragmentSettings.excludedVirtualGraphs", ["1", "0"]),
    ({"outline_threshold": 2.5}, "outlineThreshold", 2.5),
    ({"subgraph_copying_strategy": "on_enter_and_exit"}, "subgraphCopyingStrategy", 0),
    ({"schedule_non_weight_update_gradient_consumers_early": False},
     "scheduleNonWeightUpdateGradientConsumersEarly", False),
    ({"engine_options": {"debug.instrument": "true"}}, "engineOptions", {"debug.instrument": "true"}),
    ({"popart_patterns": {"TiedGather": False}}, "patterns", {"TiedGather": False}),
    ({"stochastic_rounding": False}, "enableStochasticRounding", False),
    ({"executable_cache_dir": "./cache"}, "cachePath", "./cache"),
    ({"executable_cache_dir": "./cache"}, "enableEngineCaching", True),
    ({"enable_half_partials": True}, "partialsTypeMatMuls", "half"),
    ({"auto_loss_scaling": True}, "automaticLossScalingSettings.enabled", True),
    ({"popart_options": {"decomposeGradSum": True}}, "decomposeGradSum", True),
]


@pytest.mark.parametrize("settings, key, value", POPART_KEYS, ids=[key for _, key, _ in POPART_KEYS])
def test_setting_writes_its_popart_key(sdk, settings, key, value):
    built = comparable(IPUConfig(**settings).to_options())
    assert built[key] == value and type(built[key]) is type(value)


@pytest.mark.parametrize(
    "setting, key",
    [
        ("recomputation_mode", "autoRecomputation"),
        ("disable_grad_accumulation_tensor_streams", "disableGradAccumulationTensorStreams"),
        ("accumulate_outer_fragment_schedule", "accumulateOuterFragmentSettings.schedule"),
        ("accumulate_outer_fragment_excluded_virtual_graphs", "accumulateOuterFragmentSettings.excludedVirtualGraphs"),
        ("outline_threshold", "outlineThreshold"),
        ("subgraph_copying_strategy", "subgraphCopyingStrategy"),
        ("schedule_non_weight_update_gradient_consumers_early", "scheduleNonWeightUpdateGradientConsumersEarly"),
        ("engine_options", "engineOptions"),
        ("popart_patterns", "patterns"),
    ],
)
def test_null_leaves_popart_its_default(sdk, setting, key):
    assert key not in comparable(IPUConfig(**{setting: None}).to_options())


def test_explicit_ir_is_set_for_inference_only(sdk):
    config = IPUConfig(explicit_ir_inference=True)
    assert comparable(config.to_options(for_inference=True))["enableExplicitIR"] is True
    assert "enableExplicitIR" not in comparable(config.to_options())
    assert 'opts._Popart.set("enableExplicitIR", True)' in plan_lines(config, for_inference=True)


def test_initializers_go_to_a_fresh_temporary_file(sdk):
    first = IPUConfig().to_options().toDict()["saveInitializersToFile"]
    second = IPUConfig().to_options().toDict()["saveInitializersToFile"]
    assert isinstance(first, str) and first != second
    assert 'opts._Popart.set("saveInitializersToFile", tempfile.NamedTemporaryFile().name)' in plan_lines(IPUConfig())
    assert "saveInitializersToFile" not in IPUConfig(save_initializers_to_file=False).to_options().toDict()


POPART_KEYS_OF_SETTINGS = {
    # a PopART key that a setting drives: `popart_options` may not set it
    "autoRecomputation": "recomputation_mode",
    "disableGradAccumulationTensorStreams": "disable_grad_accumulation_tensor_streams",
    "accumulateOuterFragmentSettings.schedule": "accumulate_outer_fragment_schedule",
    "accumulateOuterFragmentSettings.excludedVirtualGraphs": "accumulate_outer_fragment_excluded_virtual_graphs",
    "outlineThreshold": "outline_threshold",
    "subgraphCopyingStrategy": "subgraph_copying_strategy",
    "scheduleNonWeightUpdateGradientConsumersEarly": "schedule_non_weight_update_gradient_consumers_early",
    "engineOptions": "engine_options",
    "saveInitializersToFile": "save_initializers_to_file",
    "cachePath": "executable_cache_dir",
    "enableEngineCaching": "executable_cache_dir",
    "enableStochasticRounding": "stochastic_rounding",
    "enableExplicitIR": "explicit_ir_inference",
    "partialsTypeMatMuls": "enable_half_partials",
    "automaticLossScalingSettings.enabled": "auto_loss_scaling",
    "patterns": "popart_patterns",
    "patterns_level": "popart_patterns",
}
# what each of those settings is set to, so that it makes its call
MAKING_A_CALL = {"executable_cache_dir": "/cache", "auto_loss_scaling": True, "explicit_ir_inference": True,
                 "recomputation_mode": "standard"}


@pytest.mark.parametrize("key", sorted(POPART_KEYS_OF_SETTINGS))
def test_popart_options_refuse_a_key_that_a_setting_drives(key):
    owner = POPART_KEYS_OF_SETTINGS[key]
    with pytest.raises(optimum_ipu_ext.IncompatibleSettingsError) as raised:
        IPUConfig(popart_options={key: "x"}, **{owner: MAKING_A_CALL.get(owner, IPUConfig.SETTINGS[owner].default)})
    assert f"set `{POPART_KEYS_OF_SETTINGS[key]}` instead" in str(raised.value)
    assert raised.value.field == "popart_options"


# what each row reads back from `toDict()`: (setting, the state, the value read)
READ_BACK = [
    ("replication_factor", {"replication_factor": 4}, 4),
    ("inference_replication_factor", {"replication_factor": 2}, 2),
    ("gradient_accumulation_steps", {"gradient_accumulation": 128}, 128),
    ("device_iterations", {"device_iterations": 8}, 8),
    ("inference_device_iterations", {"device_iterations": 3}, 3),
    ("output_mode", {"output_mode": 2}, "all"),
    ("output_mode", {"output_mode": 0}, "final"),
    ("output_mode", {"output_mode": 3}, "sum"),
    ("output_mode", {"output_mode": 1}, 1),  # EveryN has no choice: kept, so the value is refused
    ("seed", {"random_seed": 1234}, 1234),
    ("seed", {}, None),
    ("enable_half_partials", {"partialsTypeMatMuls": "half"}, True),
    ("enable_half_partials", {"partialsTypeMatMuls": "float"}, False),
    ("enable_half_partials", {}, False),
    ("auto_loss_scaling", {"automaticLossScalingSettings.enabled": True}, True),
    ("auto_loss_scaling", {}, False),
    ("executable_cache_dir", {"cachePath": "exec", "enableEngineCaching": True}, "exec"),
    ("executable_cache_dir", {}, ""),
    ("explicit_ir_inference", {"enableExplicitIR": True}, True),
    ("explicit_ir_inference", {}, False),
    ("auto_round_num_ipus", {"auto_round_num_ipus": False}, False),
    ("accumulation_and_replication_reduction_type", {"accumulation_and_replication_reduction_type": 0}, "sum"),
    ("accumulation_and_replication_reduction_type", {"accumulation_and_replication_reduction_type": 1}, "mean"),
    ("stochastic_rounding", {"enableStochasticRounding": False}, False),
    ("stochastic_rounding", {}, None),
    ("save_initializers_to_file", {"saveInitializersToFile": os.path.join(tempfile.gettempdir(), "tmpab12cd")}, True),
    ("save_initializers_to_file", {"saveInitializersToFile": "/data/weights.onnx"}, "/data/weights.onnx"),
    ("executable_cache_dir", {"enableEngineCaching": False}, False),
    ("seed", {"random_seed": 0}, None),
    ("zero_seed", {"random_seed": 0}, True),
    ("zero_seed", {"random_seed": 3}, False),
    ("zero_seed", {}, False),
    ("inference_output_mode", {"output_mode": 0}, "final"),
    ("inference_stochastic_rounding", {"enableStochasticRounding": True}, True),
    ("weight_location", {"location_weight": {"onChip": 0, "minElementsForOffChip": 8}},
     {"useOnChipStorage": False, "minElementsForOffChip": 8}),
    ("activation_location", {"location_activation": {"useIOTilesToLoad": 1, "useIOTilesToStore": 0}},
     {"useIOTilesToLoad": True, "useIOTilesToStore": False}),
    ("accumulator_location", {"location_accumulator": {"useReplicatedTensorSharding": 1,
                                                       "minElementsForReplicatedTensorSharding": 2}},
     {"useReplicatedTensorSharding": True, "minElementsForReplicatedTensorSharding": 2}),
    ("optimizer_location", {"location_optimizer": {}}, {}),
    ("optimizer_location", {}, None),
    ("num_io_tiles", {"numIOTiles": 64}, 64),
    ("num_io_tiles", {}, None),
    ("broadcast_buffers", {"broadcast_buffers": False}, False),
    ("broadcast_buffers", {"broadcast_buffers": True}, None),
    ("input_replica_grouping", {"input_group_size": 2, "input_cgt": 2}, {"size": 2, "type": "orthogonal"}),
    ("input_replica_grouping", {"input_group_size": 1, "input_cgt": 2}, {"size": 1, "type": "orthogonal"}),
    ("input_replica_grouping", {"input_group_size": 4, "input_cgt": 1}, {"size": 4, "type": "consecutive"}),
    ("input_replica_grouping", {"input_group_size": 1, "input_cgt": 1}, None),
    ("input_replica_grouping", {"input_group_size": 2}, {"size": 2, "type": "consecutive"}),
    ("connection_type", {"connection_type": 1}, "on_demand"),
    ("connection_type", {"connection_type": 2}, "never"),
    ("connection_type", {"connection_type": 0}, None),
    ("sync_pattern", {"sync_pattern": 2}, "replica_and_ladder"),
    ("sync_pattern", {"sync_pattern": 0}, None),
    ("mean_reduction_strategy", {"meanAccumulationAndReplicationReductionStrategy": 0}, "running"),
    ("mean_reduction_strategy", {"meanAccumulationAndReplicationReductionStrategy": 2}, "post_and_loss"),
    ("mean_reduction_strategy", {"meanAccumulationAndReplicationReductionStrategy": 1}, None),
    ("relax_optimizer_attributes_checks", {"relaxOptimizerAttributesChecks": True}, True),
    ("relax_optimizer_attributes_checks", {"relaxOptimizerAttributesChecks": False}, None),
    ("disable_module_namescope", {"disableModuleNamescope": True}, True),
    ("disable_module_namescope", {"disableModuleNamescope": False}, False),
    ("save_initializers_to_file", {}, False),
    ("recomputation_mode", {"autoRecomputation": 0}, "none"),
    ("recomputation_mode", {"autoRecomputation": 2}, "norm_only"),
    ("recomputation_mode", {"autoRecomputation": 3}, "pipeline"),
    ("recomputation_mode", {}, None),
    ("disable_grad_accumulation_tensor_streams", {"disableGradAccumulationTensorStreams": False}, False),
    ("accumulate_outer_fragment_schedule", {"accumulateOuterFragmentSettings.schedule": 1}, "serial"),
    ("accumulate_outer_fragment_schedule", {"accumulateOuterFragmentSettings.schedule": 3},
     "overlap_memory_optimized"),
    ("accumulate_outer_fragment_excluded_virtual_graphs",
     {"accumulateOuterFragmentSettings.excludedVirtualGraphs": ["0", "2"]}, [0, 2]),
    ("accumulate_outer_fragment_excluded_virtual_graphs", {}, None),
    ("outline_threshold", {"outlineThreshold": 5.0}, 5.0),
    ("subgraph_copying_strategy", {"subgraphCopyingStrategy": 0}, "on_enter_and_exit"),
    ("subgraph_copying_strategy", {"subgraphCopyingStrategy": 1}, "just_in_time"),
    ("schedule_non_weight_update_gradient_consumers_early", {}, None),
    ("popart_patterns", {"patterns": {"TiedGather": False}, "patterns_level": 2}, {"TiedGather": False}),
    ("engine_options", {"engineOptions": {"opt.useAutoloader": "false"}}, {"opt.useAutoloader": "false"}),
]


@pytest.mark.parametrize("name, state, expected", READ_BACK)
def test_each_row_reads_its_value_back_from_options_state(sdk, name, state, expected):
    assert IPUConfig.SETTINGS[name].read(state) == expected


# poptorch's own options (poptorch 3.4's `Options.toDict()` holds them beside PopART's): the setting to use, or None
POPTORCH_OPTIONS = {
    "replication_factor": "replication_factor",
    "device_iterations": "device_iterations",
    "auto_round_num_ipus": "auto_round_num_ipus",
    "output_mode": "output_mode",
    "random_seed": "seed",
    "available_memory_proportion": "matmul_proportion",
    "gradient_accumulation": "gradient_accumulation_steps",
    "accumulation_and_replication_reduction_type": "accumulation_and_replication_reduction_type",
    "location_optimizer": "optimizer_state_offchip",
    "execution_mode": "execution_strategy",
    "input_group_size": "input_replica_grouping",
    "input_cgt": "input_replica_grouping",
    "broadcast_buffers": "broadcast_buffers",
    "log_dir": None,
    "max_repeat_logs": None,
    "anchored_tensors": None,
    "output_return_period": None,
    "connection_type": "connection_type",
    "sync_pattern": "sync_pattern",
    "model_name": None,
    "use_model": None,
    "ipu_id": None,
    "ipu_version": None,
    "compilation_progress_bar_fn": None,
    "meanAccumulationAndReplicationReductionStrategy": "mean_reduction_strategy",
    "num_distributed_processes": None,
    "distributed_process_id": None,
    "ipuof_configs": None,
    "numIOTiles": "num_io_tiles",
    "location_activation": "activation_location",
    "location_weight": "weight_location",
    "location_accumulator": "accumulator_location",
    "separate_backward_phase": "separate_backward_phase",
    "tensors_liveness": "tensors_liveness",
    "serial_phases_execution": "execution_strategy",
}


@pytest.mark.parametrize("key", sorted(POPTORCH_OPTIONS))
def test_popart_options_refuse_poptorch_own_options(key):
    with pytest.raises(optimum_ipu_ext.IncompatibleSettingsError) as raised:
        IPUConfig(popart_options={key: 1})
    setting = POPTORCH_OPTIONS[key]
    if setting is None:
        expected = f"`{key}` is poptorch's own option, not PopART's, and no setting drives it yet"
    else:
        expected = f"`{key}` is poptorch's own option, not PopART's: set `{setting}` instead"
    assert str(raised.value) == f'`popart_options={{"{key}": 1}}` is invalid: {expected}.'
    assert raised.value.field == "popart_options"


def test_popart_options_take_a_popart_key_that_only_looks_like_poptorch():
    assert IPUConfig(popart_options={"randomSeed": 1}).popart_options == {"randomSeed": 1}


# --- the preset's whole plan, written out ----------------------------------------------------------

def test_preset_plan_as_python():
    config = IPUConfig.from_pretrained(PRESET)
    assert str(config.options_plan()) == PRESET_TRAINING_PLAN
    assert str(config.options_plan(for_inference=True)) == PRESET_INFERENCE_PLAN


def test_preset_plan_as_json():
    plan = IPUConfig.from_pretrained(PRESET, replication_factor=2).options_plan()
    assert json.loads(json.dumps(plan.to_dict())) == preset_training_plan_data(replicas=2, sharded=True)


def test_default_plan_as_python_offline():
    assert str(IPUConfig().options_plan(compile_only=True)) == """\
import popart
import poptorch
import tempfile
import torch

opts = poptorch.Options()
opts.replicationFactor(1)
opts.Training.gradientAccumulation(1)
opts.Precision.setPartialsType(torch.float16)
opts.deviceIterations(1)
opts.outputMode(poptorch.OutputMode.Final)
opts.autoRoundNumIPUs(True)
opts.Training.accumulationAndReplicationReductionType(poptorch.ReductionType.Mean)
opts.Precision.enableStochasticRounding(True)
opts.TensorLocations.setOptimizerLocation(poptorch.TensorLocationSettings().useOnChipStorage(True).useReplicatedTensorSharding(False))
opts.setExecutionStrategy(poptorch.PipelinedExecution(poptorch.AutoStage.AutoIncrement))
opts.setAvailableMemoryProportion({"IPU0": 0.2})
opts.useOfflineIpuTarget()
opts._Popart.set("saveInitializersToFile", tempfile.NamedTemporaryFile().name)
opts._Popart.set("disableGradAccumulationTensorStreams", True)
opts._Popart.set("accumulateOuterFragmentSettings.schedule", \
int(popart.AccumulateOuterFragmentSchedule.OverlapMemoryOptimized))
opts._Popart.set("accumulateOuterFragmentSettings.excludedVirtualGraphs", ["0"])
opts._Popart.set("outlineThreshold", 10.0)
opts._Popart.set("subgraphCopyingStrategy", int(popart.SubgraphCopyingStrategy.JustInTime))
opts._Popart.set("scheduleNonWeightUpdateGradientConsumersEarly", True)
opts._Popart.setPatterns({"TiedGather": True, "TiedGatherAccumulate": True, "UpdateInplacePrioritiesForIpu": True})
opts._Popart.set("engineOptions", {"opt.useAutoloader": "true", "target.syncReplicasIndependently": "true"})"""


# --- errors: each class and the built-in classes it is, as upstream raises them --------------------

ERROR_BASES = {
    "IPUConfigError": ("Exception",),
    "InvalidSettingError": ("IPUConfigError", "ValueError"),
    "SettingTypeError": ("IPUConfigError", "TypeError", "ValueError"),
    "IncompatibleSettingsError": ("InvalidSettingError",),
    "UnknownSettingError": ("IPUConfigError", "ValueError"),
    "UnsupportedOptionsError": ("IPUConfigError", "ValueError"),
    "ConfigFileError": ("IPUConfigError", "OSError"),
    "ModelFileError": ("IPUConfigError", "OSError"),
    "PlacementError": ("IPUConfigError", "ValueError"),
    "ArchitectureError": ("PlacementError",),
    "CalibrationFileError": ("IPUConfigError", "ValueError"),
    "MeasuredRunError": ("IPUConfigError", "ValueError"),
    "HubError": ("IPUConfigError", "OSError"),
    "HubRepositoryNotFoundError": ("HubError",),
    "HubRevisionNotFoundError": ("HubError",),
    "HubFileNotFoundError": ("HubError",),
    "HubAccessDeniedError": ("HubError",),
    "HubUnavailableError": ("HubError",),
    "HubVisibilityError": ("HubError",),
    "HubConfigFileError": ("HubError", "ConfigFileError"),
    "OptionsFileError": ("ConfigFileError",),
    "OutputExistsError": ("IPUConfigError", "FileExistsError"),
    "PoplarSDKNotFoundError": ("IPUConfigError", "ImportError"),
    "BuilderError": ("IPUConfigError", "RuntimeError"),
}
BUILTIN_ERRORS = (ValueError, TypeError, OSError, ImportError, KeyError, AttributeError, RuntimeError)


@pytest.mark.parametrize("name", sorted(ERROR_BASES))
def test_error_class_hierarchy(name):
    error_class = getattr(optimum_ipu_ext, name)
    assert tuple(base.__name__ for base in error_class.__bases__) == ERROR_BASES[name]


ERROR_EXAMPLES = {  # one instance of each exported error, as the package raises it
    "IPUConfigError": lambda: optimum_ipu_ext.IPUConfigError("something failed"),
    "InvalidSettingError":
        lambda: optimum_ipu_ext.InvalidSettingError("replication_factor", 0, "numbers must be >= 1"),
    "SettingTypeError": lambda: optimum_ipu_ext.SettingTypeError("seed", "7", "int, or null"),
    "IncompatibleSettingsError":
        lambda: optimum_ipu_ext.IncompatibleSettingsError("layers_per_ipu", [1], "one per IPU"),
    "UnknownSettingError": lambda: optimum_ipu_ext.UnknownSettingError("replicaton_factor", ["replication_factor"]),
    "ConfigFileError": lambda: optimum_ipu_ext.ConfigFileError("a.json", "not valid JSON"),
    "ModelFileError": lambda: optimum_ipu_ext.ModelFileError("bert/model.safetensors", "truncated"),
    "PlacementError": lambda: optimum_ipu_ext.PlacementError("bert-base", "[6, 5] places 11 layers", "layers_per_ipu"),
    "ArchitectureError":
        lambda: optimum_ipu_ext.ArchitectureError("albert", "AlbertForMaskedLM has no pipelined version"),
    "CalibrationFileError": lambda: optimum_ipu_ext.CalibrationFileError(
        "mine.json", "is missing", "constants.call_seconds", "OPTIMUM_IPU_EXT_CALIBRATION"),
    "MeasuredRunError": lambda: optimum_ipu_ext.MeasuredRunError("runs.csv, line 3", "`ipu=\"mk1\"` is invalid"),
    "HubError": lambda: optimum_ipu_ext.HubError("org/cfg", "it failed", "load 'ipu_config.json' from", "main"),
    "HubRepositoryNotFoundError": lambda: optimum_ipu_ext.HubRepositoryNotFoundError("org/cfg", "missing", "load"),
    "HubRevisionNotFoundError": lambda: optimum_ipu_ext.HubRevisionNotFoundError("org/cfg", "no such", "load", "v9"),
    "HubFileNotFoundError": lambda: optimum_ipu_ext.HubFileNotFoundError("org/cfg", "no file", "load"),
    "HubAccessDeniedError": lambda: optimum_ipu_ext.HubAccessDeniedError("org/cfg", "gated", "load"),
    "HubUnavailableError": lambda: optimum_ipu_ext.HubUnavailableError("org/cfg", "500", "load"),
    "HubVisibilityError": lambda: optimum_ipu_ext.HubVisibilityError("org/cfg", "push to", "https://hub.example"),
    "HubConfigFileError": lambda: optimum_ipu_ext.HubConfigFileError("org/cfg", "not JSON", "load", "main", "x.json"),
    "PoplarSDKNotFoundError": lambda: optimum_ipu_ext.PoplarSDKNotFoundError("poptorch"),
    "UnsupportedOptionsError": lambda: optimum_ipu_ext.UnsupportedOptionsError({"log_dir": "'/logs' given"}),
    "OptionsFileError": lambda: optimum_ipu_ext.OptionsFileError("run.cfg", "AttributeError: x", 3, "x(1)"),
    "OutputExistsError": lambda: optimum_ipu_ext.OutputExistsError("run.cfg", "pass overwrite=True"),
    "BuilderError": lambda: optimum_ipu_ext.BuilderError("b.py:get_options", "raised KeyError: 'replicas'"),
}


@pytest.mark.parametrize("name", sorted(ERROR_EXAMPLES))
def test_errors_survive_pickling_with_their_message_and_attributes(name):
    error = ERROR_EXAMPLES[name]()
    copy = pickle.loads(pickle.dumps(error))
    assert (type(copy), str(copy), vars(copy)) == (type(error), str(error), vars(error))
    assert getattr(copy, "name", None) == getattr(error, "name", None)  # ImportError's module name


def test_every_exported_error_has_a_pickling_example():
    assert set(ERROR_EXAMPLES) == {name for name in optimum_ipu_ext.__all__ if name.endswith("Error")}


def test_every_exported_error_is_pinned():
    exported = {name for name in optimum_ipu_ext.__all__ if name.endswith("Error")}
    assert exported == set(ERROR_BASES)


@pytest.mark.parametrize(
    "name, builtins",
    [
        ("InvalidSettingError", {ValueError}),
        ("SettingTypeError", {TypeError, ValueError}),
        ("IncompatibleSettingsError", {ValueError}),
        ("UnknownSettingError", {ValueError}),
        ("UnsupportedOptionsError", {ValueError}),
        ("ConfigFileError", {OSError}),
        ("ModelFileError", {OSError}),
        ("PlacementError", {ValueError}),
        ("ArchitectureError", {ValueError}),
        ("CalibrationFileError", {ValueError}),
        ("MeasuredRunError", {ValueError}),
        ("HubConfigFileError", {OSError}),
        ("OptionsFileError", {OSError}),
        ("OutputExistsError", {OSError}),
        ("HubUnavailableError", {OSError}),
        ("HubVisibilityError", {OSError}),
        ("PoplarSDKNotFoundError", {ImportError}),
    ],
)
def test_errors_are_the_builtins_upstream_raises(name, builtins):
    error_class = getattr(optimum_ipu_ext, name)
    assert {builtin for builtin in BUILTIN_ERRORS if issubclass(error_class, builtin)} == builtins


def test_error_messages_name_field_value_and_what_is_allowed():
    with pytest.raises(optimum_ipu_ext.InvalidSettingError) as invalid:
        IPUConfig(recomputation_mode="sometimes")
    assert (invalid.value.field, invalid.value.value) == ("recomputation_mode", "sometimes")
    assert str(invalid.value) == (
        '`recomputation_mode="sometimes"` is invalid: allowed values are "none", "standard", "norm_only", '
        '"pipeline", "recompute_all".'
    )
    with pytest.raises(optimum_ipu_ext.SettingTypeError) as wrong_type:
        IPUConfig(outline_threshold="10")
    assert str(wrong_type.value) == '`outline_threshold="10"` is a string, expected number, or null.'
    assert (wrong_type.value.field, wrong_type.value.value, wrong_type.value.allowed) == (
        "outline_threshold", "10", "number, or null"
    )
    with pytest.raises(optimum_ipu_ext.InvalidSettingError) as negative:
        IPUConfig(accumulate_outer_fragment_excluded_virtual_graphs=[-1])
    assert str(negative.value) == (
        "`accumulate_outer_fragment_excluded_virtual_graphs=[-1]` is invalid: numbers must be >= 0."
    )


def test_sdk_missing_error_names_the_module():
    error = optimum_ipu_ext.PoplarSDKNotFoundError("popart")
    assert error.name == "popart" and str(error).startswith("`to_options()` needs `popart`, which ships only")


# --- bounds: each number's minimum (no setting has a maximum) ---------------------------------------

BOUNDS = {
    # setting: (smallest allowed value, a value below it)
    "replication_factor": (1, 0),
    "inference_replication_factor": (1, 0),
    "gradient_accumulation_steps": (1, 0),
    "layers_per_ipu": ([-1], [-2]),
    "inference_layers_per_ipu": ([-1], [-2]),
    "ipus_per_replica": (1, 0),
    "inference_ipus_per_replica": (1, 0),
    "matmul_proportion": (0, -0.01),
    "inference_matmul_proportion": ([0.0], [-0.01]),
    "embedding_serialization_factor": (1, 0),
    "inference_embedding_serialization_factor": (1, 0),
    "serialized_embedding_splits_per_ipu": ([0, 1], [-1, 1]),
    "inference_serialized_embedding_splits_per_ipu": ([0, 1], [-1, 1]),
    "projection_serialization_factor": (1, 0),
    "inference_projection_serialization_factor": (1, 0),
    "serialized_projection_splits_per_ipu": ([0, 1], [-1, 1]),
    "inference_serialized_projection_splits_per_ipu": ([0, 1], [-1, 1]),
    "device_iterations": (1, 0),
    "inference_device_iterations": (1, 0),
    "accumulate_outer_fragment_excluded_virtual_graphs": ([0], [-1]),
    "num_io_tiles": (32, 30),
}
# One job addresses at most 65536 IPUs: replicas and IPUs per replica are each bounded by it.
MAXIMUMS = {"replication_factor": 65536, "inference_replication_factor": 65536, "ipus_per_replica": 65536,
            "inference_ipus_per_replica": 65536, "num_io_tiles": 192, "matmul_proportion": 1,
            "inference_matmul_proportion": 1}
MINIMUMS = {"layers_per_ipu": -1, "inference_layers_per_ipu": -1, "matmul_proportion": 0,
            "inference_matmul_proportion": 0, "serialized_embedding_splits_per_ipu": 0,
            "inference_serialized_embedding_splits_per_ipu": 0, "serialized_projection_splits_per_ipu": 0,
            "inference_serialized_projection_splits_per_ipu": 0,
            "accumulate_outer_fragment_excluded_virtual_graphs": 0, "num_io_tiles": 32}


def test_bounds_are_the_pinned_ones():
    bounded = {
        name: (setting.minimum, setting.maximum)
        for name, setting in IPUConfig.SETTINGS.items()
        if setting.minimum is not None or setting.maximum is not None
    }
    assert bounded == {name: (MINIMUMS.get(name, 1), MAXIMUMS.get(name)) for name in BOUNDS}


@pytest.mark.parametrize("name", sorted(BOUNDS))
def test_bound_allows_its_minimum_and_refuses_below(name):
    setting = IPUConfig.SETTINGS[name]
    allowed, below = BOUNDS[name]
    assert setting.check(allowed) == allowed
    with pytest.raises(optimum_ipu_ext.InvalidSettingError) as raised:
        setting.check(below)
    assert str(raised.value) == f"`{name}={json.dumps(below)}` is invalid: numbers must be {allowed_range(name)}."


@pytest.mark.parametrize("name", sorted(MAXIMUMS))
def test_bound_allows_its_maximum_and_refuses_above(name):
    setting, maximum = IPUConfig.SETTINGS[name], MAXIMUMS[name]
    assert setting.check(maximum) == maximum
    with pytest.raises(optimum_ipu_ext.InvalidSettingError) as raised:
        setting.check(maximum + 2)
    assert str(raised.value) == f"`{name}={maximum + 2}` is invalid: numbers must be {allowed_range(name)}."


def allowed_range(name):
    """What the refusal of a number out of the bounds of `name` says it must be."""
    minimum = MINIMUMS.get(name, 1)
    return f"from {minimum} to {MAXIMUMS[name]}" if name in MAXIMUMS else f">= {minimum}"


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")])
def test_numbers_must_be_finite(value):
    with pytest.raises(optimum_ipu_ext.InvalidSettingError, match="numbers must be finite"):
        IPUConfig.SETTINGS["matmul_proportion"].check(value)
