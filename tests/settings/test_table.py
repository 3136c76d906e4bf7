"""The helpers that build the settings table, called directly on values written out: a training setting and its
inference twin, a tensor location's row, a flag's call, and which setting owns each `toDict()` key.

The table is built when the package is imported, so these helpers' results are pinned through the rows too
(`test_mappings.py`, `test_setting_values.py`); calling them here checks the helpers themselves."""

from typing import Dict, List, Optional, Union

from optimum_ipu_ext.settings.schema import Call, Setting
from optimum_ipu_ext.settings.table import (
    POPART_KEYS_WITH_A_SETTING,
    POPTORCH_KEYS_WITH_A_SETTING,
    _keys_with_a_setting,
    _location,
    _location_calls,
    _location_setting,
    _pair,
    _read_location,
    _switch,
)


def _positive(value):
    return None if value > 0 else "positive"


def test_a_pair_is_the_training_setting_and_its_inference_twin_that_defaults_to_null():
    sdk = Call("setAvailableMemoryProportion", state=("available_memory_proportion",), composite=True)
    assert _pair("proportion", List[float], [0.2], "Proportion per IPU.", min_items=1, sdk=sdk, maximum=1,
                 constraint=_positive) == [
        Setting("proportion", List[float], [0.2], "Proportion per IPU.", maximum=1, constraint=_positive,
                min_items=1, sdk=Call("setAvailableMemoryProportion", state=("available_memory_proportion",),
                                      composite=True, modes=("training",))),
        Setting("inference_proportion", Optional[List[float]], None, "As `proportion`, for inference.", maximum=1,
                constraint=_positive, sdk=Call("setAvailableMemoryProportion",
                                               state=("available_memory_proportion",), composite=True,
                                               modes=("inference",))),
    ]


def test_a_pair_without_a_call_makes_its_twin_optional_unless_the_default_is_null():
    assert _pair("layers", List[int], [-1], "Layers per IPU.", min_items=1, minimum=-1) == [
        Setting("layers", List[int], [-1], "Layers per IPU.", minimum=-1, min_items=1),
        Setting("inference_layers", Optional[List[int]], None, "As `layers`, for inference.", minimum=-1),
    ]
    assert _pair("factor", int, None, "Parts.", minimum=1) == [  # and asks for no item by default
        Setting("factor", int, None, "Parts.", minimum=1),
        Setting("inference_factor", int, None, "As `factor`, for inference.", minimum=1),
    ]


LOCATION_ANNOTATION = Optional[Dict[str, Union[bool, int]]]
LOCATION_EXAMPLE = 'e.g. {"useOnChipStorage": false}.'


def test_a_tensor_locations_row_calls_its_set_location_method():
    assert _location_setting("weight", "weights") == Setting(
        "weight_location", LOCATION_ANNOTATION, None,
        f"Where weights are stored: {{TensorLocationSettings method: argument}}, {LOCATION_EXAMPLE}",
        constraint=_location_calls,
        sdk=Call("TensorLocations.setWeightLocation", state=("location_weight",), encode=_location,
                 decode=_read_location))


def test_the_optimizer_locations_row_says_it_replaces_optimizer_state_offchip():
    assert _location_setting("optimizer", "optimizer states") == Setting(
        "optimizer_location", LOCATION_ANNOTATION, None,
        f"Where optimizer states are stored: {{TensorLocationSettings method: argument}}, {LOCATION_EXAMPLE} "
        "Replaces the call `optimizer_state_offchip` makes, which must then be null.",
        constraint=_location_calls,
        sdk=Call("TensorLocations.setOptimizerLocation", state=("location_optimizer",), encode=_location,
                 decode=_read_location))


def test_a_switch_calls_with_its_argument_when_on_and_reads_back_on_from_it():
    switch = _switch(7)
    assert sorted(switch) == ["decode", "encode"]
    assert (switch["encode"](True), switch["encode"](False)) == (7, None)
    assert (switch["decode"](7), switch["decode"](8), switch["decode"](None)) == (True, False, False)


def test_a_switch_reads_back_through_the_check_given():
    def is_half(written):
        return written == "half"

    assert _switch("float16", is_half)["decode"] is is_half


# {toDict() key: the setting whose call writes it}, the first row writing a key naming it
POPTORCH_KEYS = {
    "replication_factor": "replication_factor", "gradient_accumulation": "gradient_accumulation_steps",
    "location_optimizer": "optimizer_state_offchip", "available_memory_proportion": "matmul_proportion",
    "device_iterations": "device_iterations", "output_mode": "output_mode", "random_seed": "seed",
    "auto_round_num_ipus": "auto_round_num_ipus",
    "accumulation_and_replication_reduction_type": "accumulation_and_replication_reduction_type",
    "execution_mode": "execution_strategy", "serial_phases_execution": "execution_strategy",
    "separate_backward_phase": "separate_backward_phase", "tensors_liveness": "tensors_liveness",
    "location_activation": "activation_location", "location_weight": "weight_location",
    "location_accumulator": "accumulator_location", "numIOTiles": "num_io_tiles",
    "broadcast_buffers": "broadcast_buffers", "input_group_size": "input_replica_grouping",
    "input_cgt": "input_replica_grouping", "connection_type": "connection_type", "sync_pattern": "sync_pattern",
    "meanAccumulationAndReplicationReductionStrategy": "mean_reduction_strategy",
}
POPART_KEYS = {
    "partialsTypeMatMuls": "enable_half_partials", "automaticLossScalingSettings.enabled": "auto_loss_scaling",
    "cachePath": "executable_cache_dir", "enableEngineCaching": "executable_cache_dir",
    "enableExplicitIR": "explicit_ir_inference", "enableStochasticRounding": "stochastic_rounding",
    "relaxOptimizerAttributesChecks": "relax_optimizer_attributes_checks",
    "disableModuleNamescope": "disable_module_namescope", "saveInitializersToFile": "save_initializers_to_file",
    "autoRecomputation": "recomputation_mode",
    "disableGradAccumulationTensorStreams": "disable_grad_accumulation_tensor_streams",
    "accumulateOuterFragmentSettings.schedule": "accumulate_outer_fragment_schedule",
    "accumulateOuterFragmentSettings.excludedVirtualGraphs": "accumulate_outer_fragment_excluded_virtual_graphs",
    "outlineThreshold": "outline_threshold", "subgraphCopyingStrategy": "subgraph_copying_strategy",
    "scheduleNonWeightUpdateGradientConsumersEarly": "schedule_non_weight_update_gradient_consumers_early",
    "patterns": "popart_patterns", "patterns_level": "popart_patterns", "engineOptions": "engine_options",
}


def test_each_key_a_setting_writes_is_owned_by_the_first_row_writing_it():
    assert _keys_with_a_setting(poptorch_own=True) == POPTORCH_KEYS == POPTORCH_KEYS_WITH_A_SETTING
    assert _keys_with_a_setting(poptorch_own=False) == POPART_KEYS == POPART_KEYS_WITH_A_SETTING
