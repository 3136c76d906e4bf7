"""How the values of the package's settings are checked and read from text: each setting's type as the errors name
it, `update_from_string`'s spellings and its errors, word for word. (Which values each kind of type takes, on rows
made by the tests: test_schema.py.)"""

import json

import pytest

from optimum_ipu_ext import (
    IncompatibleSettingsError,
    InvalidSettingError,
    IPUConfig,
    SettingTypeError,
    UnknownSettingError,
)
from optimum_ipu_ext.settings.schema import Setting

TYPES = {
    "replication_factor": "int, or null",
    "inference_replication_factor": "int, or null",
    "gradient_accumulation_steps": "int, or null",
    "layers_per_ipu": "list of int",
    "inference_layers_per_ipu": "list of int, or null",
    "ipus_per_replica": "int, or null",
    "inference_ipus_per_replica": "int, or null",
    "optimizer_state_offchip": "bool, or null",
    "replicated_tensor_sharding": "bool, or null",
    "matmul_proportion": "number or list of number, or null",
    "inference_matmul_proportion": "number or list of number, or null",
    "enable_half_partials": "bool, or null",
    "embedding_serialization_factor": "int, or null",
    "inference_embedding_serialization_factor": "int, or null",
    "serialized_embedding_splits_per_ipu": "list of int, or null",
    "inference_serialized_embedding_splits_per_ipu": "list of int, or null",
    "projection_serialization_factor": "int, or null",
    "inference_projection_serialization_factor": "int, or null",
    "serialized_projection_splits_per_ipu": "list of int, or null",
    "inference_serialized_projection_splits_per_ipu": "list of int, or null",
    "recompute_checkpoint_every_layer": "bool",
    "device_iterations": "int, or null",
    "inference_device_iterations": "int, or null",
    "output_mode": "string, or null",
    "seed": "int, or null",
    "auto_loss_scaling": "bool, or null",
    "executable_cache_dir": "bool or string, or null",
    "explicit_ir_inference": "bool, or null",
    "parallelize_kwargs": "object of string to any, or null",
    "inference_parallelize_kwargs": "object of string to any, or null",
    "execute_encoder_on_cpu_for_generation": "bool",
    "auto_round_num_ipus": "bool, or null",
    "accumulation_and_replication_reduction_type": "string, or null",
    "execution_strategy": "string, or null",
    "inference_execution_strategy": "string, or null",
    "auto_stage": "string, or null",
    "execution_stages": "list of object of string to int or list of string, or null",
    "execution_phases": "list of list of object of string to int or list of string, or null",
    "separate_backward_phase": "bool, or null",
    "tensors_liveness": "string, or null",
    "inference_output_mode": "string, or null",
    "stochastic_rounding": "bool, or null",
    "inference_stochastic_rounding": "bool, or null",
    "zero_seed": "bool, or null",
    "activation_location": "object of string to bool or int, or null",
    "weight_location": "object of string to bool or int, or null",
    "optimizer_location": "object of string to bool or int, or null",
    "accumulator_location": "object of string to bool or int, or null",
    "num_io_tiles": "int, or null",
    "broadcast_buffers": "bool, or null",
    "input_replica_grouping": "object of string to int or string, or null",
    "connection_type": "string, or null",
    "sync_pattern": "string, or null",
    "mean_reduction_strategy": "string, or null",
    "relax_optimizer_attributes_checks": "bool, or null",
    "disable_module_namescope": "bool, or null",
    "save_initializers_to_file": "bool or string, or null",
    "recomputation_mode": "string, or null",
    "disable_grad_accumulation_tensor_streams": "bool, or null",
    "accumulate_outer_fragment_schedule": "string, or null",
    "accumulate_outer_fragment_excluded_virtual_graphs": "list of int, or null",
    "outline_threshold": "number, or null",
    "subgraph_copying_strategy": "string, or null",
    "schedule_non_weight_update_gradient_consumers_early": "bool, or null",
    "popart_patterns": "object of string to bool, or null",
    "engine_options": "object of string to string, or null",
    "popart_options": "object of string to any, or null",
}


def test_every_setting_has_a_pinned_type():
    assert list(IPUConfig.SETTINGS) == list(TYPES)


@pytest.mark.parametrize("name", sorted(TYPES))
def test_a_value_of_the_wrong_type_names_the_settings_type(name):
    value = 1j  # a type no setting takes
    with pytest.raises(SettingTypeError) as raised:
        IPUConfig.SETTINGS[name].check(value)
    assert str(raised.value) == f"`{name}=1j` is a Python `complex`, expected {TYPES[name]}."
    assert (raised.value.field, raised.value.value, raised.value.allowed) == (name, value, TYPES[name])


def test_check_names_the_field_it_is_given():
    refusal = r'^`popart_options\[\'x\'\]="1"` is a string, expected int, or null\.$'
    with pytest.raises(SettingTypeError, match=refusal):
        IPUConfig.SETTINGS["seed"].check("1", field="popart_options['x']")


def test_a_pipeline_has_an_ipu_but_an_empty_inference_pipeline_is_the_training_one():
    from optimum_ipu_ext.settings.documents import json_schema

    with pytest.raises(InvalidSettingError, match=r"^`layers_per_ipu=\[\]` is invalid: at least 1 item needed\.$"):
        IPUConfig(layers_per_ipu=[])
    assert IPUConfig(layers_per_ipu=[2, 2], inference_layers_per_ipu=[]).inference_layers_per_ipu == [2, 2]
    properties = json_schema()["properties"]
    assert properties["layers_per_ipu"]["minItems"] == 1
    assert "minItems" not in str(properties["inference_layers_per_ipu"])


# --- update_from_string: each kind of value, and its errors ---------------------------------------------------

READ = [
    ("replication_factor=4", "replication_factor", 4),
    ("matmul_proportion=0.25", "matmul_proportion", 0.25),
    ("matmul_proportion=[0.25 0.5]", "matmul_proportion", [0.25, 0.5]),
    ("matmul_proportion=[0.25,0.5]", "matmul_proportion", [0.25, 0.5]),
    ("layers_per_ipu=[3 -1]", "layers_per_ipu", [3, -1]),
    ("seed=null", "seed", None),
    ("seed=None", "seed", None),
    ("seed= 7 ", "seed", 7),
    ("recomputation_mode=NULL", "recomputation_mode", None),
    ("recomputation_mode=norm_only", "recomputation_mode", "norm_only"),
    ("executable_cache_dir=./a=b", "executable_cache_dir", "./a=b"),
    ("executable_cache_dir=false", "executable_cache_dir", False),
    ("save_initializers_to_file=true", "save_initializers_to_file", True),
    ('execution_stages=[{"blocks": ["a", "b"], "ipu": 0}, {"blocks": ["c"]}]', "execution_stages",
     [{"blocks": ["a", "b"], "ipu": 0}, {"blocks": ["c"]}]),
    ("layers_per_ipu=[1, 2]", "layers_per_ipu", [1, 2]),
    ("save_initializers_to_file=weights.onnx", "save_initializers_to_file", "weights.onnx"),
    ("device_iterations=null", "device_iterations", 1),
    ("outline_threshold=3", "outline_threshold", 3.0),
    ("accumulate_outer_fragment_excluded_virtual_graphs=[0]", "accumulate_outer_fragment_excluded_virtual_graphs",
     [0]),
    ('engine_options={"a": "1", "b": "x=y"}', "engine_options", {"a": "1", "b": "x=y"}),
    ('popart_options={"k": [1, 2]}', "popart_options", {"k": [1, 2]}),
    ('parallelize_kwargs={"a": {"b": [1, 2]}}', "parallelize_kwargs", {"a": {"b": [1, 2]}}),
]


@pytest.mark.parametrize("text, name, value", READ, ids=[text for text, _, _ in READ])
def test_update_from_string_reads_each_kind_of_value(text, name, value):
    config = IPUConfig(layers_per_ipu=[-1, -1])
    config.update_from_string(text)
    assert getattr(config, name) == value and type(getattr(config, name)) is type(value)


def test_commas_inside_brackets_and_braces_do_not_split():
    config = IPUConfig(layers_per_ipu=[-1, -1])
    config.update_from_string('matmul_proportion=[0.1,0.2],engine_options={"a": "1", "b": "2"},seed=3,')
    assert (config.matmul_proportion, config.engine_options, config.seed) == ([0.1, 0.2], {"a": "1", "b": "2"}, 3)


UNREADABLE = [
    ("replication_factor=4.5", '`replication_factor="4.5"` is invalid: expected an integer.'),
    ("outline_threshold=fast", '`outline_threshold="fast"` is invalid: expected a number.'),
    ("stochastic_rounding=maybe", '`stochastic_rounding="maybe"` is invalid: expected true or false.'),
    ("layers_per_ipu=3", '`layers_per_ipu="3"` is invalid: expected list of int, written as [a b c].'),
    ("layers_per_ipu=[1 x]", '`layers_per_ipu="[1 x]"` is invalid: expected list of int, written as [a b c].'),
    ('engine_options=["a"]', '`engine_options="[\\"a\\"]"` is invalid: expected object of string to string.'),
    ("engine_options={a}", '`engine_options="{a}"` is invalid: expected object of string to string.'),
    ("seed", '`seed="seed"` is invalid: expected key=value.'),
    ("matmul_proportion=lots", '`matmul_proportion="lots"` is invalid: expected a number.'),
    ("matmul_proportion=[0.1 x]",
     '`matmul_proportion="[0.1 x]"` is invalid: expected list of number, written as [a b c].'),
]


@pytest.mark.parametrize("text, message", UNREADABLE, ids=[text for text, _ in UNREADABLE])
def test_update_from_string_names_what_it_cannot_read(text, message):
    config = IPUConfig(layers_per_ipu=[-1, -1])
    before = config.to_dict()
    with pytest.raises(InvalidSettingError) as raised:
        config.update_from_string(f"seed=5,{text}")
    assert str(raised.value) == message
    assert raised.value.field == text.partition("=")[0]
    assert config.to_dict() == before


def test_update_from_string_names_an_unknown_key():
    with pytest.raises(UnknownSettingError) as raised:
        IPUConfig().update_from_string("seed=1,replication_factr=2")
    assert str(raised.value) == "Unknown IPU config key `replication_factr`. Did you mean `replication_factor`?"
    assert (raised.value.field, raised.value.suggestion) == ("replication_factr", "replication_factor")


def test_update_from_string_of_an_inference_list_keeps_the_lists_apart():
    config = IPUConfig(layers_per_ipu=[-1, -1])
    config.update_from_string("inference_layers_per_ipu=[2 2]")
    assert (config.layers_per_ipu, config.inference_layers_per_ipu) == ([-1, -1], [2, 2])


# --- popart_options takes what poptorch's backend parses (SessionOptionsParser.cpp) ------------------------------

OPTION_VALUES_ONLY = (
    "values must be what PopART options take: booleans, finite numbers, strings, unsigned integers, "
    "and lists or objects of strings and unsigned integers"
)
REFUSED_OPTION_VALUES = {
    "nan": float("nan"), "inf": float("inf"), "set": {1, 2}, "bytes": b"x", "null": None, "negative": -1,
    "too large": 1 << 64, "float in a list": [0.5], "negative in a list": ["a", -1], "list in a list": [["a"]],
    "bool in a list": [True], "float in an object": {"a": 1.5}, "object in an object": {"a": {"b": "c"}},
    "null in an object": {"a": None},
}


@pytest.mark.parametrize("name", sorted(REFUSED_OPTION_VALUES))
def test_popart_options_refuse_what_poptorch_cannot_parse(name):
    value = REFUSED_OPTION_VALUES[name]
    with pytest.raises(InvalidSettingError) as raised:
        IPUConfig(popart_options={"k": value})
    written = {"nan": "nan", "inf": "inf", "set": "{1, 2}", "bytes": "b'x'"}.get(name) or json.dumps(value)
    assert str(raised.value) == f'`popart_options={{"k": {written}}}` is invalid: {OPTION_VALUES_ONLY}.'


@pytest.mark.parametrize("first", [True, 0.5, ["a"]], ids=["a boolean", "a number", "a list"])
def test_popart_options_check_every_value_not_only_the_first(first):
    with pytest.raises(InvalidSettingError, match="values must be what PopART options take"):
        IPUConfig(popart_options={"a": first, "k": -1})


def test_popart_options_take_what_poptorch_parses():
    values = {"flag": True, "ratio": 0.5, "name": "x", "count": 7, "largest": (1 << 64) - 1, "zero": 0,
              "names": ["a", "b"], "mixed": ["a", 3], "empty": [], "table": {"a": "b", "c": 2}}
    assert IPUConfig(popart_options=values).popart_options == values


# --- validation between settings (the core's rules, on both bases) -----------------------------------------------


PIPELINE_LENGTH_ERROR = (  # the core validates on both bases
    "`matmul_proportion=[0.1, 0.1, 0.1]` is invalid: it needs one entry per IPU, as `ipus_per_replica=2`."
)


def test_a_per_ipu_list_of_the_wrong_length_names_both_settings():
    with pytest.raises(ValueError) as raised:
        IPUConfig(layers_per_ipu=[1, 2], matmul_proportion=[0.1, 0.1, 0.1])
    assert str(raised.value) == PIPELINE_LENGTH_ERROR
    assert isinstance(raised.value, IncompatibleSettingsError)
    assert (raised.value.field, raised.value.value) == ("matmul_proportion", [0.1, 0.1, 0.1])


@pytest.mark.parametrize("layer", ["embedding", "projection"])
def test_a_serialization_factor_and_splits_exclude_each_other(layer):
    factor, splits = f"{layer}_serialization_factor", f"serialized_{layer}_splits_per_ipu"
    with pytest.raises(ValueError) as raised:
        IPUConfig(layers_per_ipu=[1, 1], **{factor: 2, splits: [1, 1]})
    assert str(raised.value) == (
        f"`{factor}=2` is invalid: give `{factor}` (serialise on one IPU) or `{splits}` (split across IPUs), not both."
    )
    assert (raised.value.field, raised.value.value) == (factor, 2)


def test_one_wildcard_spreads_the_layers_and_a_list_of_another_length_is_refused(upstream):
    """Upstream's constructor takes `[-1, 3]` on 4 IPUs, which its `parallelize()` then refuses (its wildcard
    expansion wants `[-1]` or one entry per IPU): the class refuses it at once, as it refuses `[2, 3]`."""
    spread = {"layers_per_ipu": [-1], "ipus_per_replica": 4}
    assert IPUConfig(**spread).ipus_per_replica == upstream.IPUConfig(**spread).ipus_per_replica == 4
    assert upstream.IPUConfig(layers_per_ipu=[-1, 3], ipus_per_replica=4).ipus_per_replica == 4
    for layers, ipus in (([-1, 3], 4), ([2, 3], 4), ([-1, 3, 3], 2)):
        with pytest.raises(ValueError) as raised:
            IPUConfig(layers_per_ipu=layers, ipus_per_replica=ipus)
        assert str(raised.value) == (f"`layers_per_ipu={json.dumps(layers)}` is invalid: it needs one entry per IPU, "
                                     f"as `ipus_per_replica={ipus}`.")


def test_on_one_ipu_a_list_with_a_wildcard_is_taken_as_upstream_takes_it(upstream):
    one_ipu = {"layers_per_ipu": [-1, 3], "ipus_per_replica": 1}
    assert IPUConfig(**one_ipu).layers_per_ipu == upstream.IPUConfig(**one_ipu).layers_per_ipu == [-1, 3]


def test_only_brackets_and_braces_nest_in_update_from_string():
    config = IPUConfig()
    config.update_from_string(
        'executable_cache_dir=/tmp/X,seed=3,engine_options={"X": "1", "Y": "2"},outline_threshold=1'
    )
    assert (config.executable_cache_dir, config.seed) == ("/tmp/X", 3)
    assert (config.engine_options, config.outline_threshold) == ({"X": "1", "Y": "2"}, 1.0)


def test_a_setting_of_any_class_names_it():
    setting = Setting("probe", bytes, b"", "")
    with pytest.raises(SettingTypeError, match=r'^`probe="s"` is a string, expected bytes\.$'):
        setting.check("s")


# values a setting's own check refuses, with what the error says is allowed
LOCATION_KEYS = ("useOnChipStorage, useReplicatedTensorSharding, useIOTilesToLoad, useIOTilesToStore, "
                 "minElementsForOffChip, minElementsForReplicatedTensorSharding")
GROUPING = 'give {"size": a positive integer, "type": one of "consecutive", "orthogonal"}'
CONSTRAINED = [
    ("executable_cache_dir", True, "give a folder, or false to turn caching off"),
    ("num_io_tiles", 33, "the number must be even"),
    ("weight_location", {"useOnChip": True}, f"keys are TensorLocationSettings methods: {LOCATION_KEYS}"),
    ("weight_location", {"useOnChipStorage": 1}, "`useOnChipStorage` takes true or false"),
    ("activation_location", {"useIOTilesToLoad": True, "minElementsForOffChip": True},
     "`minElementsForOffChip` takes an unsigned integer"),
    ("accumulator_location", {"minElementsForReplicatedTensorSharding": -1},
     "`minElementsForReplicatedTensorSharding` takes an unsigned integer"),
    ("input_replica_grouping", {"size": 2}, GROUPING),
    ("input_replica_grouping", {"size": 0, "type": "consecutive"}, GROUPING),
    ("input_replica_grouping", {"size": 2, "type": "all"}, GROUPING),
    ("input_replica_grouping", {"size": "2", "type": "orthogonal"}, GROUPING),
    ("input_replica_grouping", {"size": 2, "type": "orthogonal", "extra": 1}, GROUPING),
]


@pytest.mark.parametrize("name, value, allowed", CONSTRAINED, ids=[f"{n}={v!r}" for n, v, _ in CONSTRAINED])
def test_a_settings_own_check_names_what_is_allowed(name, value, allowed):
    with pytest.raises(InvalidSettingError) as raised:
        IPUConfig.SETTINGS[name].check(value)
    assert str(raised.value) == f"`{name}={json.dumps(value)}` is invalid: {allowed}."


@pytest.mark.parametrize("name, value", [
    ("executable_cache_dir", False), ("num_io_tiles", 32), ("weight_location", {}),
    ("weight_location", {"useOnChipStorage": False, "minElementsForOffChip": 0}),
    ("input_replica_grouping", {"size": 1, "type": "orthogonal"}),
])
def test_a_settings_own_check_takes_what_poptorch_takes(name, value):
    assert IPUConfig.SETTINGS[name].check(value) == value
