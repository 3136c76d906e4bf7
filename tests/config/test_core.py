"""The core without transformers: one validator on both bases, limits, warnings, the generated schema and
tables, and the `ipu-config` commands that run on it."""

import importlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import jsonschema
import pytest

from optimum_ipu_ext import (
    ConfigFileError,
    IncompatibleSettingsError,
    InvalidSettingError,
    IPUConfig,
    PlainIPUConfig,
    UnknownSettingError,
)
from optimum_ipu_ext.cli import main
from optimum_ipu_ext.config.bundled_base import transformers_defaults
from optimum_ipu_ext.options.build import shards_optimizer_state
from optimum_ipu_ext.placement.source import hub_model
from optimum_ipu_ext.sdk.plan import NONE, Construct, OptionCall, Ref, TempFile
from optimum_ipu_ext.settings.documents import attribute_table, json_schema, json_schema_string, method_table
from optimum_ipu_ext.settings.files import read_config_file
from optimum_ipu_ext.settings.sources import check_local_source, local_config_file
from optimum_ipu_ext.settings.table import BASE_SETTINGS, EXTENSION_SETTINGS, TRANSFORMERS_KEYS
from support import PRESET
from support.cli_helpers import run

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = str(Path(sys.executable).with_name("ipu-config"))


def accepted(make, kwargs) -> bool:
    try:
        make(**kwargs)
    except (TypeError, ValueError):
        return False
    return True


# One validator: the core accepts and rejects what optimum-graphcore 0.7.1's own class does

UPSTREAM_CASES = {
    "defaults": {},
    "pipeline": {"layers_per_ipu": [3, 5], "matmul_proportion": [0.15, 0.3], "replication_factor": 4},
    "inference pipeline": {"layers_per_ipu": [-1, -1, -1, -1], "inference_layers_per_ipu": [6, 6],
                           "inference_matmul_proportion": [0.1, 0.2]},
    "ipus given alone": {"ipus_per_replica": 4, "matmul_proportion": [0.1, 0.1, 0.1, 0.1]},
    "mismatched list falls back in inference": {"layers_per_ipu": [1, 2], "matmul_proportion": [0.1, 0.2],
                                                "inference_layers_per_ipu": [3]},
    "serialised embedding": {"layers_per_ipu": [1, 1], "serialized_embedding_splits_per_ipu": [1, 1]},
    "integer proportion": {"matmul_proportion": 1},
    "seed 0": {"seed": 0},
    "negative seed": {"seed": -5},
    "every output mode": {"output_mode": "default"},
    "string for int": {"replication_factor": "4"},
    "float for int": {"gradient_accumulation_steps": 2.0},
    "zero replicas": {"replication_factor": 0},
    "negative proportion": {"matmul_proportion": -0.1},
    "negative proportion in a list": {"layers_per_ipu": [1, 1], "matmul_proportion": [0.1, -0.1]},
    "unknown output mode": {"output_mode": "every"},
    "list too long": {"layers_per_ipu": [1, 2], "matmul_proportion": [0.1, 0.1, 0.1]},
    "layers and ipus disagree": {"layers_per_ipu": [1, 2], "ipus_per_replica": 3},
    "splits not consecutive": {"serialized_embedding_splits_per_ipu": [1, 0, 1]},
    "no split": {"serialized_projection_splits_per_ipu": [0, 0]},
    "splits and factor": {"layers_per_ipu": [1, 1], "serialized_embedding_splits_per_ipu": [1, 1],
                          "embedding_serialization_factor": 2},
    "splits of the wrong length": {"layers_per_ipu": [1, 1], "serialized_projection_splits_per_ipu": [1]},
    "layers below -1": {"layers_per_ipu": [-2]},
    "string for bool": {"enable_half_partials": "yes"},
    "list of strings": {"layers_per_ipu": ["1"]},
    "null for the layers": {"layers_per_ipu": None},
    "dict for kwargs": {"parallelize_kwargs": {"use_cache": True}},
    "zero factor": {"embedding_serialization_factor": 0},
    "unknown key": {"replicaton_factor": 2},
}


@pytest.mark.parametrize("name", sorted(UPSTREAM_CASES))
def test_core_accepts_and_rejects_what_upstream_does(upstream, name):
    kwargs = UPSTREAM_CASES[name]
    theirs = accepted(upstream.IPUConfig, kwargs)
    assert accepted(PlainIPUConfig, kwargs) == theirs
    assert accepted(IPUConfig, kwargs) == theirs
    if theirs:
        theirs_dict = upstream.IPUConfig(**kwargs).to_dict()
        expected = {key: value for key, value in theirs_dict.items() if key in BASE_SETTINGS}
        assert PlainIPUConfig(**kwargs).settings_dict() == expected


def test_upstream_cases_cover_acceptance_and_refusal(upstream):
    verdicts = {accepted(upstream.IPUConfig, kwargs) for kwargs in UPSTREAM_CASES.values()}
    assert verdicts == {True, False}


def test_booleans_are_not_numbers_unlike_upstream(upstream):
    """The one deliberate difference besides the limits: upstream's typeguard takes `true` for an int."""
    assert accepted(upstream.IPUConfig, {"replication_factor": True})
    assert not accepted(PlainIPUConfig, {"replication_factor": True})


@pytest.mark.parametrize("name", ["matmul_proportion", "optimizer_state_offchip", "enable_half_partials",
                                  "executable_cache_dir", "output_mode", "device_iterations"])
def test_null_for_a_setting_that_makes_a_call_is_ours_alone(upstream, name):
    """The other deliberate difference: null makes no call here; optimum-graphcore refuses such a file rather than
    misread it."""
    assert not accepted(upstream.IPUConfig, {name: None})
    assert accepted(PlainIPUConfig, {name: None}) and accepted(IPUConfig, {name: None})


def test_transformers_keys_cover_the_installed_release():
    assert set(transformers_defaults()) <= TRANSFORMERS_KEYS


# Limits


@pytest.mark.parametrize("name", ["replication_factor", "inference_replication_factor", "ipus_per_replica"])
def test_ipu_counts_beyond_the_largest_system_are_refused(name):
    with pytest.raises(InvalidSettingError) as raised:
        PlainIPUConfig(**{name: 10 ** 29})
    assert f"`{name}={10 ** 29}`" in str(raised.value) and "from 1 to 65536" in str(raised.value)
    PlainIPUConfig(**{name: 65536})


def test_a_job_beyond_the_largest_system_is_refused():
    PlainIPUConfig(replication_factor=16384, layers_per_ipu=[-1] * 4)
    too_many = r"`replication_factor=16385`.*ipus_per_replica=4.*65540 IPUs.*65536"
    with pytest.raises(IncompatibleSettingsError, match=too_many):
        IPUConfig(replication_factor=16385, layers_per_ipu=[-1] * 4)


def test_config_files_beyond_a_megabyte_are_refused_naming_the_file(tmp_path, capsys):
    path = tmp_path / "ipu_config.json"
    path.write_text(json.dumps({"parallelize_kwargs": {"padding": "x" * (1 << 20)}}))
    for load in (PlainIPUConfig.from_json_file, IPUConfig.from_pretrained):
        with pytest.raises(ConfigFileError, match="more than the 1048576 an IPU config may have") as raised:
            load(str(path))
        assert str(path) in str(raised.value)
    code, out, _ = run(capsys, "validate", path)
    assert code == 1 and out.count("\n") == 1 and "1048576" in out


def test_a_local_source_names_the_file_it_stands_for(tmp_path):
    (tmp_path / "ipu_config.json").write_text("{}")
    (tmp_path / "other.json").write_text("{}")
    assert local_config_file(tmp_path) == os.path.join(str(tmp_path), "ipu_config.json")
    assert local_config_file(tmp_path / "other.json") == str(tmp_path / "other.json")
    check_local_source(tmp_path)
    check_local_source("a-hub/repo-id")  # could be a Hub id: not for this check to refuse


@pytest.mark.parametrize("source, subfolder, problem", [
    ("empty", "", "a directory, but it holds no ipu_config.json"),
    ("empty", "sub", "a directory, but its subfolder 'sub' holds no ipu_config.json"),
    ("missing.json", "", "no such file or directory"),
    ("missing/", "", "no such file or directory"),
    ("./missing", "", "no such file or directory"),
    ("a/b/missing", "", "no such file or directory"),
])
def test_a_local_source_without_a_config_is_refused_naming_it(tmp_path, monkeypatch, source, subfolder, problem):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty" / "sub").mkdir(parents=True)
    with pytest.raises(ConfigFileError) as raised:
        check_local_source(source, subfolder=subfolder)
    assert str(raised.value) == f"Cannot load the IPU config file '{source}': {problem}."
    assert (raised.value.path, raised.value.problem) == (source, problem)


def test_a_subfolder_s_config_is_looked_for_in_the_subfolder(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "ipu_config.json").write_text("{}")
    check_local_source(tmp_path, subfolder="sub")
    (tmp_path / "other").mkdir()
    (tmp_path / "ipu_config.json").write_text("{}")
    with pytest.raises(ConfigFileError, match="its subfolder 'other' holds no ipu_config.json"):
        check_local_source(tmp_path, subfolder="other")


def test_a_config_name_of_the_callers_choice_is_looked_for(tmp_path):
    (tmp_path / "mine.json").write_text("{}")
    check_local_source(tmp_path, config_name="mine.json")
    with pytest.raises(ConfigFileError, match="holds no ipu_config.json"):
        check_local_source(tmp_path)


def test_a_missing_name_that_could_be_a_hub_id_is_no_local_config_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigFileError) as raised:
        local_config_file("abc")
    assert str(raised.value) == "Cannot load the IPU config file 'abc': no such file or directory."
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigFileError, match="'empty': a directory, but it holds no ipu_config.json"):
        local_config_file("empty")


# Settings after construction


@pytest.mark.parametrize("make", [IPUConfig, PlainIPUConfig])
def test_a_misspelt_setting_cannot_be_assigned(make):
    config = make()
    with pytest.raises(UnknownSettingError, match="`replication_facter`.*Did you mean `replication_factor`"):
        config.replication_facter = 8
    assert "replication_facter" not in vars(config)
    config.replication_factor = 8
    config.return_dict = False  # transformers' own attributes stay assignable
    config._scratch = 1  # and so do private ones


def test_what_can_be_saved_loads(tmp_path):
    config = IPUConfig()
    config.replication_factor, config.recomputation_mode = 8, "standard"
    config.save_pretrained(tmp_path)
    assert IPUConfig.from_pretrained(tmp_path).to_dict() == config.to_dict()
    assert PlainIPUConfig.from_json_file(tmp_path / "ipu_config.json").settings_dict() == config.settings_dict()


@pytest.mark.parametrize("make", [IPUConfig, PlainIPUConfig])
def test_update_from_string_takes_a_choice_before_the_null_keyword(make):
    config = make()
    config.update_from_string("recomputation_mode=none")
    assert config.recomputation_mode == "none"
    assert OptionCall("_Popart.set", ("autoRecomputation", Ref("popart.RecomputationType.NoRecompute", as_int=True))) \
        in config.options_plan().calls
    config.update_from_string("recomputation_mode=null")
    assert config.recomputation_mode is None
    assert all(call.args[:1] != ("autoRecomputation",) for call in config.options_plan().calls)
    config.update_from_string("outline_threshold=none")
    assert config.outline_threshold is None


# Warnings describe the final config, once per process


@pytest.mark.parametrize("replicas", [1, 16])
def test_the_preset_loads_and_builds_without_a_warning(recwarn, sdk, replicas):
    config = IPUConfig.from_pretrained(PRESET, replication_factor=replicas)
    config.options_plan()
    config.to_options()
    config.to_options(for_inference=True)
    PlainIPUConfig.from_json_file(PRESET, replication_factor=replicas).options_plan()
    assert [str(warning.message) for warning in recwarn] == []


# The options plan: data, JSON, one generic loop over the rows

# setting -> (value, the call the training build makes for it)
CALLS_OF_ROWS = {
    "replication_factor": (4, OptionCall("replicationFactor", (4,))),
    "gradient_accumulation_steps": (8, OptionCall("Training.gradientAccumulation", (8,))),
    "device_iterations": (3, OptionCall("deviceIterations", (3,))),
    "output_mode": ("sum", OptionCall("outputMode", (Ref("poptorch.OutputMode.Sum"),))),
    "seed": (7, OptionCall("randomSeed", (7,))),
    "auto_loss_scaling": (True, OptionCall("Training.setAutomaticLossScaling", (True,))),
    "executable_cache_dir": ("exec", OptionCall("enableExecutableCaching", ("exec",))),
    "enable_half_partials": (True, OptionCall("Precision.setPartialsType", (Ref("torch.float16"),))),
    "auto_round_num_ipus": (False, OptionCall("autoRoundNumIPUs", (False,))),
    "accumulation_and_replication_reduction_type": (
        "sum", OptionCall("Training.accumulationAndReplicationReductionType", (Ref("poptorch.ReductionType.Sum"),))
    ),
    "stochastic_rounding": (False, OptionCall("Precision.enableStochasticRounding", (False,))),
    "save_initializers_to_file": (True, OptionCall("_Popart.set", ("saveInitializersToFile", TempFile()))),
    "recomputation_mode": (
        "norm_only", OptionCall("_Popart.set", ("autoRecomputation", Ref("popart.RecomputationType.NormOnly", True)))
    ),
    "disable_grad_accumulation_tensor_streams": (
        False, OptionCall("_Popart.set", ("disableGradAccumulationTensorStreams", False))
    ),
    "accumulate_outer_fragment_schedule": ("serial", OptionCall("_Popart.set", (
        "accumulateOuterFragmentSettings.schedule", Ref("popart.AccumulateOuterFragmentSchedule.Serial", True)))),
    "accumulate_outer_fragment_excluded_virtual_graphs": (
        [], OptionCall("_Popart.set", ("accumulateOuterFragmentSettings.excludedVirtualGraphs", []))
    ),
    "outline_threshold": (2.5, OptionCall("_Popart.set", ("outlineThreshold", 2.5))),
    "subgraph_copying_strategy": ("on_enter_and_exit", OptionCall("_Popart.set", (
        "subgraphCopyingStrategy", Ref("popart.SubgraphCopyingStrategy.OnEnterAndExit", True)))),
    "schedule_non_weight_update_gradient_consumers_early": (
        False, OptionCall("_Popart.set", ("scheduleNonWeightUpdateGradientConsumersEarly", False))
    ),
    "popart_patterns": ({"TiedGather": False}, OptionCall("_Popart.setPatterns", ({"TiedGather": False},))),
    "engine_options": ({"a": "b"}, OptionCall("_Popart.set", ("engineOptions", {"a": "b"}))),
    "zero_seed": (True, OptionCall("randomSeed", (0,))),
    "weight_location": ({"useOnChipStorage": False, "minElementsForOffChip": 8}, OptionCall(
        "TensorLocations.setWeightLocation", (Construct("poptorch.TensorLocationSettings", chain=(
            ("useOnChipStorage", (False,)), ("minElementsForOffChip", (8,)))),))),
    "activation_location": ({"useIOTilesToLoad": True}, OptionCall(
        "TensorLocations.setActivationLocation",
        (Construct("poptorch.TensorLocationSettings", chain=(("useIOTilesToLoad", (True,)),)),))),
    "accumulator_location": ({"useIOTilesToStore": True}, OptionCall(
        "TensorLocations.setAccumulatorLocation",
        (Construct("poptorch.TensorLocationSettings", chain=(("useIOTilesToStore", (True,)),)),))),
    "num_io_tiles": (64, OptionCall("TensorLocations.numIOTiles", (64,))),
    "broadcast_buffers": (False, OptionCall("broadcastBuffers", (False,))),
    "input_replica_grouping": ({"size": 1, "type": "orthogonal"},
                               OptionCall("inputReplicaGrouping", (1, Ref("poptorch.CommGroupType.Orthogonal")))),
    "connection_type": ("on_demand", OptionCall("connectionType", (Ref("poptorch.ConnectionType.OnDemand"),))),
    "sync_pattern": ("replica_and_ladder", OptionCall("syncPattern", (Ref("poptorch.SyncPattern.ReplicaAndLadder"),))),
    "mean_reduction_strategy": ("post_and_loss", OptionCall(
        "Training.setMeanAccumulationAndReplicationReductionStrategy",
        (Ref("poptorch.MeanReductionStrategy.PostAndLoss"),),
    )),
    "relax_optimizer_attributes_checks": (True, OptionCall("relaxOptimizerAttributesChecks", (True,))),
    "disable_module_namescope": (True, OptionCall("disableModuleNamescope", ())),
}

# Rows whose call needs other settings too, or values a row encodes specially: (settings, the call)
SPECIAL_VALUES = [
    ({"executable_cache_dir": False}, OptionCall("enableExecutableCaching", (NONE,))),
    ({"save_initializers_to_file": "weights.onnx"},
     OptionCall("_Popart.set", ("saveInitializersToFile", "weights.onnx"))),
    ({"optimizer_location": {"minElementsForReplicatedTensorSharding": 4}, "optimizer_state_offchip": None},
     OptionCall(
         "TensorLocations.setOptimizerLocation",
         (Construct("poptorch.TensorLocationSettings", chain=(("minElementsForReplicatedTensorSharding", (4,)),)),),
     )),
]


@pytest.mark.parametrize("values, expected", SPECIAL_VALUES)
def test_special_values_make_their_call(values, expected):
    assert expected in PlainIPUConfig(**values).options_plan(popdist=False).calls


@pytest.mark.parametrize("name", sorted(CALLS_OF_ROWS))
def test_each_simple_row_makes_its_call(name):
    value, expected = CALLS_OF_ROWS[name]
    assert expected in PlainIPUConfig(**{name: value}).options_plan(popdist=False).calls


def test_every_simple_training_row_is_pinned():
    simple = {name for name, setting in {**BASE_SETTINGS, **EXTENSION_SETTINGS}.items()
              if setting.sdk and not setting.sdk.composite and "training" in setting.sdk.modes}
    assert simple == set(CALLS_OF_ROWS) | {"optimizer_location"}


@pytest.mark.parametrize("name, off", [("seed", 0), ("executable_cache_dir", "disabled"), ("outline_threshold", None),
                                       ("enable_half_partials", False), ("recomputation_mode", None)])
def test_a_value_that_encodes_to_none_makes_no_call(name, off):
    sdk = {**BASE_SETTINGS, **EXTENSION_SETTINGS}[name].sdk
    calls = PlainIPUConfig(**{name: off}).options_plan().calls
    assert not [call for call in calls if call.method == sdk.method and (sdk.key is None or call.args[0] == sdk.key)]


def test_inference_builds_keep_what_the_inference_settings_say():
    calls = PlainIPUConfig(inference_output_mode="final", inference_stochastic_rounding=True).options_plan(
        for_inference=True).calls
    assert OptionCall("outputMode", (Ref("poptorch.OutputMode.Final"),)) in calls
    assert OptionCall("Precision.enableStochasticRounding", (True,)) in calls


def test_inference_builds_make_upstreams_fixed_inference_calls():
    calls = PlainIPUConfig(output_mode="sum", stochastic_rounding=True).options_plan(for_inference=True).calls
    assert OptionCall("outputMode", (Ref("poptorch.OutputMode.All"),)) in calls
    assert OptionCall("Precision.enableStochasticRounding", (False,)) in calls
    assert OptionCall("_Popart.set", ("enableExplicitIR", True)) in \
        PlainIPUConfig(explicit_ir_inference=True).options_plan(for_inference=True).calls


def test_plans_follow_transformers_naming():
    plan = PlainIPUConfig.from_json_file(PRESET).options_plan()
    assert json.loads(plan.to_json_string()) == plan.to_dict()
    assert plan.to_dict()["options"] == {"new": "poptorch.Options", "args": [], "kwargs": {}, "chain": []}
    for value in (plan, plan.calls[0], plan.options, Ref("a.b"), TempFile(), Construct("a.B")):
        assert hasattr(value, "to_dict") and not hasattr(value, "to_json")


# The generated schema and tables


def test_schema_is_shipped_and_printed_as_generated(capsys):
    shipped = (ROOT / "optimum_ipu_ext" / "ipu_config.schema.json").read_text()
    assert shipped == json_schema_string()
    code, out, err = run(capsys, "schema")
    assert (code, out, err) == (0, shipped, "")
    jsonschema.Draft202012Validator.check_schema(json.loads(shipped))


def test_the_documented_tables_are_the_generated_ones():
    settings, methods = ((ROOT / "docs" / page).read_text() for page in ("settings.md", "methods.md"))
    assert attribute_table(BASE_SETTINGS) in settings and attribute_table(EXTENSION_SETTINGS) in settings
    assert method_table() in methods


# poptorch 3.4's option classes (as the doubles follow them), by the accessor a builder reaches them through
OPTION_CLASSES = {"": "Options", "Training.": "_TrainingOptions", "Precision.": "_PrecisionOptions",
                  "TensorLocations.": "_TensorLocationOptions", "Distributed.": "_DistributedOptions",
                  "Jit.": "_JitOptions", "_Popart.": "_PopartOptions",
                  "TensorLocationSettings.": "TensorLocationSettings"}
# methods that read or copy options rather than set them
READERS = {"clone", "toDict", "defaultOutputMode", "from_json", "checkIsFrozen"}


@pytest.mark.parametrize(
    "stand_in, count", [("support.doubles.poptorch.options", 55), ("optimum_ipu_ext.recorder.options", 58)]
)
def test_the_method_table_names_every_method_that_sets_an_option(stand_in, count):
    options = importlib.import_module(stand_in)
    methods = {
        prefix + name
        for prefix, class_name in OPTION_CLASSES.items()
        for name, member in vars(getattr(options, class_name)).items()
        if callable(member) and not name.startswith("_") and name not in READERS
    }
    named = {line.split("`")[1].split("(")[0] for line in method_table().splitlines()[2:]}
    assert methods - named == set()
    assert len(methods) == count


def schema_accepts(config_dict) -> bool:
    return jsonschema.Draft202012Validator(json_schema()).is_valid(config_dict)


def test_schema_accepts_every_preset_and_saved_file(tmp_path):
    for preset in (ROOT / "configs").glob("*.json"):
        assert schema_accepts(json.loads(preset.read_text())), preset
    IPUConfig(layers_per_ipu=[1, 2], recomputation_mode="pipeline").save_pretrained(tmp_path)
    assert schema_accepts(json.loads((tmp_path / "ipu_config.json").read_text()))
    assert schema_accepts({"random_seed": 3})  # a legacy key loads, with a warning


# Files the class refuses for one setting alone: the schema refuses them too.
BAD_SETTINGS = [
    {"replication_factor": 0}, {"replication_factor": "4"}, {"replication_factor": True},
    {"replication_factor": 65537}, {"matmul_proportion": -0.1}, {"matmul_proportion": [0.1, "x"]},
    {"output_mode": "every"}, {"layers_per_ipu": [-2]}, {"layers_per_ipu": 3}, {"seed": 1.5},
    {"recomputation_mode": "sometimes"}, {"recomputation_mode": 3}, {"auto_stage": "auto"},
    {"stochastic_rounding": "yes"}, {"outline_threshold": True}, {"popart_patterns": {"TiedGather": 1}},
    {"engine_options": {"a": 1}}, {"accumulate_outer_fragment_excluded_virtual_graphs": [-1]},
    {"execution_strategy": "phased"}, {"replicaton_factor": 2}, {"popart_options": []},
    {"execution_stages": [{"blocks": "a"}]}, {"execution_phases": [{"blocks": ["a"]}]}, {"tensors_liveness": "never"},
]
# Files the class refuses for a rule between settings (or a check JSON Schema cannot express): listed in the
# schema's description, accepted by the schema itself.
BAD_RULES = [
    {"layers_per_ipu": [1, 2], "matmul_proportion": [0.1, 0.1, 0.1]},
    {"layers_per_ipu": [1, 2], "ipus_per_replica": 3},
    {"layers_per_ipu": [1, 1], "serialized_embedding_splits_per_ipu": [1, 1], "embedding_serialization_factor": 2},
    {"accumulate_outer_fragment_excluded_virtual_graphs": [1]},
    {"popart_options": {"outlineThreshold": 5.0}},
    {"replication_factor": 65536, "ipus_per_replica": 2},
    {"serialized_embedding_splits_per_ipu": [1, 0, 1]},
    {"execution_stages": [{"blocks": ["a"]}, {"blocks": ["a"]}]},
    {"execution_stages": [{"blocks": ["a"], "ipu": -1}]},
    {"execution_stages": [{"blocks": []}]},
    {"execution_phases": [[{"blocks": ["a"]}]]},
    {"execution_strategy": "serial_phased"},
    {"inference_execution_strategy": "parallel_phased", "execution_phases": [[{"blocks": ["a"]}]],
     "tensors_liveness": "off_chip_after_each_phase"},
]


@pytest.mark.parametrize("config_dict", BAD_SETTINGS, ids=[next(iter(bad)) for bad in BAD_SETTINGS])
def test_schema_refuses_what_the_class_refuses_for_one_setting(config_dict):
    assert not accepted(PlainIPUConfig.from_dict, {"config_dict": config_dict})
    assert not schema_accepts(config_dict)


@pytest.mark.parametrize("config_dict", BAD_RULES, ids=[", ".join(bad) for bad in BAD_RULES])
def test_rules_the_schema_cannot_express_are_left_to_the_class(config_dict):
    assert not accepted(PlainIPUConfig.from_dict, {"config_dict": config_dict})
    assert schema_accepts(config_dict)


def test_schema_describes_each_setting():
    properties = json_schema()["properties"]
    assert properties["recomputation_mode"]["anyOf"] == [
        {"type": "string", "enum": ["none", "standard", "norm_only", "pipeline", "recompute_all"]}, {"type": "null"}
    ]
    assert properties["outline_threshold"]["default"] == 10.0
    assert "`opts._Popart.set(\"outlineThreshold\", ...)`" in properties["outline_threshold"]["description"]
    assert properties["layers_per_ipu"]["items"] == {"type": "integer", "minimum": -1}
    assert "one entry per IPU of the pipeline" in json_schema()["description"]


# ipu-config on the core


def test_local_commands_import_no_transformers_torch_or_optimum(tmp_path):
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"replication_factor": 2}))
    code = f"""
import sys
from optimum_ipu_ext.cli import main
for argv in (["show", {PRESET!r}], ["show", {PRESET!r}, "--json", "--popdist", "1:0"], ["validate", {PRESET!r}],
             ["diff", {PRESET!r}, {str(other)!r}], ["new", "--list"],
             ["new", "pipelined-2ipu", {str(tmp_path / "new")!r}, "--set", "replication_factor=2"], ["schema"]):
    main(argv)
print(sorted({{name.split(".")[0] for name in sys.modules}} & {{"transformers", "torch", "optimum", "huggingface_hub",
                                                                "argcomplete"}}))
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "[]"


def test_new_writes_the_file_ipu_config_writes(tmp_path, capsys):
    code, _, _ = run(capsys, "new", "pipelined-2ipu", tmp_path / "cli", "--set", "replication_factor=16")
    assert code == 0
    IPUConfig.from_pretrained(PRESET, replication_factor=16).save_pretrained(tmp_path / "class")
    assert (tmp_path / "cli" / "ipu_config.json").read_bytes() == (tmp_path / "class" / "ipu_config.json").read_bytes()


def test_diff_exit_code_says_whether_settings_differ(capsys, tmp_path):
    (tmp_path / "b.json").write_text(json.dumps({**json.loads(Path(PRESET).read_text()), "seed": 5}))
    assert run(capsys, "diff", PRESET, PRESET, "--exit-code")[0] == 0
    assert run(capsys, "diff", PRESET, tmp_path / "b.json", "--exit-code")[0] == 1
    assert run(capsys, "diff", PRESET, tmp_path / "b.json")[0] == 0
    result = subprocess.run([SCRIPT, "diff", PRESET, str(tmp_path / "b.json"), "--exit-code"], capture_output=True)
    assert result.returncode == 1 and b"seed  1234 -> 5" in result.stdout


def test_show_previews_one_poprun_instance(capsys):
    code, out, err = run(capsys, "show", PRESET, "--set", "replication_factor=8", "--popdist", "4:1")
    assert (code, err) == (0, "")
    assert "  poprun instance             1 of 4\n" in out
    assert "  replicas of this instance   2  (replicas 2 to 3 of the job)\n" in out
    assert "opts = popdist.poptorch.Options(ipus_per_replica=2)\n" in out
    assert "# instance 1 of `poprun --num-replicas 8 --num-instances 4`" in out
    assert "opts.replicationFactor(" not in out
    code, out, _ = run(capsys, "show", PRESET, "--set", "replication_factor=8", "--popdist", "4:1", "--json")
    assert json.loads(out)["poprun_instance"] == {
        "num_instances": 4, "instance_index": 1, "local_replicas": 2, "replica_index_offset": 2
    }


@pytest.mark.parametrize("popdist, words", [("3:0", ["num_instances", "3", "divide", "8"]),
                                            ("4:4", ["instance_index", "4", "0 to 3"])])
def test_show_refuses_an_instance_poprun_would_not_launch(capsys, popdist, words):
    code, out, err = run(capsys, "show", PRESET, "--set", "replication_factor=8", "--popdist", popdist)
    assert code == 1 and out == "" and err.count("\n") == 1
    for word in words:
        assert word in err


def test_show_popdist_takes_count_and_index(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["show", PRESET, "--popdist", "4"])
    assert exited.value.code == 2
    assert "expected NUM_INSTANCES:INDEX" in capsys.readouterr().err


def test_validate_of_many_files_checks_each(tmp_path, capsys):
    for index in range(20):
        (tmp_path / f"{index:02}.json").write_text(json.dumps({"replication_factor": index}))
    code, out, err = run(capsys, "validate", tmp_path)
    assert code == 1 and out.splitlines() == [
        f"{tmp_path / '00.json'}: `replication_factor=0` is invalid: numbers must be from 1 to 65536."]
    assert err == "1 of 20 IPU config(s) invalid\n"


def test_the_core_imports_no_transformers_torch_optimum_or_hub():
    code = (
        "import sys; import optimum_ipu_ext.settings.files, optimum_ipu_ext.settings.rules, "
        "optimum_ipu_ext.settings.documents, optimum_ipu_ext.cli.commands, optimum_ipu_ext.cli.sources, "
        "optimum_ipu_ext.cli.reports, optimum_ipu_ext.options.option_file_import, "
        "optimum_ipu_ext.placement.placement, optimum_ipu_ext.placement.report.text, "
        "optimum_ipu_ext.placement.models, optimum_ipu_ext.recorder; "
        "print(sorted({name.split('.')[0] for name in sys.modules} & "
        "{'transformers', 'torch', 'optimum', 'huggingface_hub', 'poptorch', 'popart', 'popdist'}))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout == "[]\n"


def test_shell_completion_answers_through_argcomplete(tmp_path):
    answer = tmp_path / "completions"
    for line, expected in (("ipu-config s", {"show", "schema"}), ("ipu-config diff a b --ex", {"--exit-code"}),
                           ("ipu-config show x --pop", {"--popdist"})):
        env = dict(os.environ, _ARGCOMPLETE="1", COMP_LINE=line, COMP_POINT=str(len(line)),
                   _ARGCOMPLETE_STDOUT_FILENAME=str(answer))
        result = subprocess.run([SCRIPT], env=env, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        assert {word.strip() for word in answer.read_text().split("\013")} == expected


# Each detail of the core's reading, writing, rules and warnings, pinned

def test_a_file_of_the_largest_size_loads_and_one_byte_more_does_not(tmp_path):
    path = tmp_path / "ipu_config.json"
    text = json.dumps({"seed": 7})
    path.write_text(text + " " * ((1 << 20) - len(text)))
    assert PlainIPUConfig.from_json_file(path).seed == 7
    path.write_text(text + " " * ((1 << 20) + 1 - len(text)))
    with pytest.raises(ConfigFileError) as raised:
        PlainIPUConfig.from_json_file(path)
    assert str(raised.value) == (
        f"Cannot load the IPU config file '{path}': 1048577 bytes, more than the 1048576 an IPU config may have."
    )


def test_a_job_beyond_the_largest_ipu_system_is_refused_naming_both_settings():
    with pytest.raises(IncompatibleSettingsError) as raised:
        PlainIPUConfig(replication_factor=32769, ipus_per_replica=2)
    assert (raised.value.field, raised.value.value) == ("replication_factor", 32769)
    assert str(raised.value) == (
        "`replication_factor=32769` is invalid: with `ipus_per_replica=2` the job needs 65538 IPUs, more than the "
        "65536 of the largest IPU system."
    )


def test_extension_rule_errors_name_their_setting_and_value():
    with pytest.raises(IncompatibleSettingsError) as raised:
        PlainIPUConfig(accumulate_outer_fragment_excluded_virtual_graphs=[0, 1])
    assert (raised.value.field, raised.value.value) == ("accumulate_outer_fragment_excluded_virtual_graphs", [0, 1])
    with pytest.raises(IncompatibleSettingsError) as raised:
        PlainIPUConfig(popart_options={"outlineThreshold": 5})
    assert (raised.value.field, raised.value.value) == ("popart_options", {"outlineThreshold": 5})


# settings that make a call another setting makes, with what the error says
REPLACEMENT_RULES = [
    ({"optimizer_location": {"useOnChipStorage": False}}, "optimizer_location",
     "it makes the call `optimizer_state_offchip` makes, so `optimizer_state_offchip` must make none (null)"),
    ({"zero_seed": True, "seed": 5}, "zero_seed", "it makes the call `seed` makes, so `seed` must make none (null)"),
    ({"replicated_tensor_sharding": True, "optimizer_state_offchip": None}, "replicated_tensor_sharding",
     "it is part of the call `optimizer_state_offchip` makes: give that too"),
    ({"input_replica_grouping": {"size": 3, "type": "consecutive"}, "replication_factor": 4}, "input_replica_grouping",
     "its size must divide `replication_factor=4`"),
]


@pytest.mark.parametrize("values, field, problem", REPLACEMENT_RULES)
def test_settings_that_share_a_call_need_the_other_to_make_none(values, field, problem):
    with pytest.raises(IncompatibleSettingsError) as raised:
        PlainIPUConfig(**values)
    assert (raised.value.field, raised.value.value) == (field, values[field])
    assert str(raised.value).endswith(f": {problem}.")


def test_each_replacement_holds_once_the_other_makes_no_call():
    assert PlainIPUConfig(optimizer_location={"useOnChipStorage": False}, optimizer_state_offchip=None)
    assert PlainIPUConfig(zero_seed=True, seed=0) and PlainIPUConfig(zero_seed=True, seed=None)
    assert PlainIPUConfig(input_replica_grouping={"size": 2, "type": "orthogonal"}, replication_factor=4)


@pytest.mark.parametrize("key, owner, no_call, call", [
    ("automaticLossScalingSettings.enabled", "auto_loss_scaling", False, True),
    ("partialsTypeMatMuls", "enable_half_partials", None, True),
    ("enableEngineCaching", "executable_cache_dir", "", "/cache"),
    ("outlineThreshold", "outline_threshold", None, 10.0),
])
def test_popart_options_may_set_what_a_setting_making_no_call_leaves(key, owner, no_call, call):
    PlainIPUConfig(**{owner: no_call, "popart_options": {key: False}})
    with pytest.raises(IncompatibleSettingsError, match=f"set `{owner}` instead"):
        PlainIPUConfig(**{owner: call, "popart_options": {key: False}})


def test_loading_a_file_takes_overrides_and_names_the_file_in_errors(tmp_path):
    path = tmp_path / "ipu_config.json"
    path.write_text(json.dumps({"seed": 7}))
    assert PlainIPUConfig.from_json_file(path, replication_factor=4).replication_factor == 4
    path.write_text(json.dumps({"replication_factor": 0}))
    with pytest.raises(InvalidSettingError) as raised:
        PlainIPUConfig.from_json_file(path)
    assert str(raised.value) == (f"`replication_factor=0` is invalid: numbers must be from 1 to 65536. "
                                 f"(loading {str(path)!r})")


def test_saving_into_an_existing_folder_replaces_only_the_config(tmp_path):
    (tmp_path / "weights.bin").write_bytes(b"\0")
    path = PlainIPUConfig(seed=7).save_pretrained(tmp_path)
    assert path == str(tmp_path / "ipu_config.json")
    assert json.loads((tmp_path / "ipu_config.json").read_text())["seed"] == 7
    assert sorted(os.listdir(tmp_path)) == ["ipu_config.json", "weights.bin"]


def test_a_plan_as_json_text_is_indented_by_two():
    plan = PlainIPUConfig().options_plan()
    text = plan.to_json_string()
    assert text.endswith("}\n") and text.startswith('{\n  "options": {\n    "new": "poptorch.Options",\n')


def test_build_plan_plans_a_training_build_for_an_ipu_by_default():
    from optimum_ipu_ext.options.build import build_plan
    methods = [call.method for call in build_plan(vars(PlainIPUConfig())).calls]
    assert "Training.gradientAccumulation" in methods and "useOfflineIpuTarget" not in methods


def test_non_default_settings_are_those_that_differ():
    assert PlainIPUConfig(replication_factor=4, seed=7).non_default_settings() == {
        "replication_factor": (4, 1), "seed": (7, None)
    }


@pytest.mark.parametrize(
    "source, path_only",
    [
        ("x.json", True), ("dir/", True), ("./x", True), ("../x", True), ("/abs/x", True), ("/x", True), ("~/x", True),
        ("a/b/c", True), ("a\\b", True), (f"dir{os.sep}", True),
        ("org/name", False), ("name", False), ("org/name.v2", False),
    ],
)
def test_what_can_only_be_a_local_path(source, path_only):
    from optimum_ipu_ext.settings.sources import looks_like_path
    assert looks_like_path(source) is path_only


def test_a_plain_config_becomes_an_ipu_config_with_the_same_settings():
    plain = PlainIPUConfig(replication_factor=4, recomputation_mode="pipeline")
    config = plain.to_ipu_config()
    assert isinstance(config, IPUConfig)
    assert (config.replication_factor, config.recomputation_mode) == (4, "pipeline")
    assert config.options_plan() == plain.options_plan()


def test_a_null_count_does_not_stop_the_check_of_the_keys_after_it():
    carried = "`random_seed` is no longer an IPUConfig setting; its value is carried over"
    with pytest.warns(FutureWarning, match=carried):
        config = PlainIPUConfig(**{"device_iterations": None, "random_seed": 3})
    assert config.device_iterations == 1
    with pytest.raises(UnknownSettingError):
        PlainIPUConfig(**{"device_iterations": None, "replicaton_factor": 2})
    with pytest.warns(FutureWarning, match=carried):
        PlainIPUConfig(**{"transformers_version": "4.29.2", "random_seed": 3})


@pytest.mark.parametrize("options", [
    {"partialsTypeMatMuls": "float", "outlineThreshold": 5},  # free (no partials call), then a setting's
    {"decomposeGradSum": True, "random_seed": 1},  # PopART's own, then poptorch's
])
def test_popart_options_check_every_key_not_only_the_first(options):
    with pytest.raises(IncompatibleSettingsError):
        PlainIPUConfig(enable_half_partials=False, popart_options=options)


@pytest.mark.parametrize("name, drawn", [
    (os.path.join(tempfile.gettempdir(), "tmpab12cd"), True),
    (os.path.join(tempfile.gettempdir(), "weights.onnx"), False),
    (os.path.join("/data", "tmpab12cd"), False),
])
def test_a_temporary_file_name_is_told_from_a_chosen_one(name, drawn):
    assert TempFile.drew(name) is drawn


def test_none_as_an_argument_prints_as_none():
    plan = PlainIPUConfig(executable_cache_dir=False).options_plan()
    assert "\nopts.enableExecutableCaching(None)\n" in str(plan)
    assert [call for call in plan.to_dict()["calls"] if call["method"] == "enableExecutableCaching"] == [
        {"method": "enableExecutableCaching", "args": [None]}]


def test_an_optimizer_location_without_sharding_shards_nothing():
    config = PlainIPUConfig(optimizer_state_offchip=None, optimizer_location={"useOnChipStorage": False},
                            replication_factor=4)
    assert not shards_optimizer_state(config.options_plan())
    sharded = PlainIPUConfig(optimizer_state_offchip=None, replication_factor=4,
                             optimizer_location={"useReplicatedTensorSharding": True})
    assert shards_optimizer_state(sharded.options_plan())


# The IPUs poptorch reserves: one rule for construction, `options_plan()`, `to_options()` and the CLI

def refusal(asked, requested, rounded, value="false", mode="training"):
    null = " (null makes no call: poptorch's default, false)" if value == "null" else ""
    return (f"`auto_round_num_ipus={value}` is invalid: the {mode} build asks for {asked} = {requested} IPUs in one "
            f"process, and poptorch reserves only a power of two unless `auto_round_num_ipus` is true{null}: make it "
            f"true (it reserves {rounded}, {rounded - requested} idle), or use a number of IPUs that is a power of "
            "two.")


@pytest.mark.parametrize("auto_round, value", [(False, "false"), (None, "null")])
def test_a_number_of_ipus_poptorch_refuses_is_refused_when_the_config_is_made(auto_round, value):
    with pytest.raises(IncompatibleSettingsError) as raised:
        PlainIPUConfig(layers_per_ipu=[-1, -1], replication_factor=3, auto_round_num_ipus=auto_round)
    assert str(raised.value) == refusal("`replication_factor=3` x `ipus_per_replica=2`", 6, 8, value)
    assert (raised.value.field, raised.value.value) == ("auto_round_num_ipus", auto_round)


def test_the_inference_build_is_checked_with_its_own_replicas_and_pipeline():
    with pytest.raises(IncompatibleSettingsError) as raised:
        PlainIPUConfig(inference_replication_factor=3, auto_round_num_ipus=False)
    assert str(raised.value) == refusal(
        "`inference_replication_factor=3` x `inference_ipus_per_replica=1`", 3, 4, mode="inference")


@pytest.mark.parametrize("settings", [
    {"replication_factor": 3, "auto_round_num_ipus": True},  # poptorch rounds up
    {"replication_factor": 4, "layers_per_ipu": [-1, -1], "auto_round_num_ipus": False},  # 8: a power of two
    {"replication_factor": 3, "auto_round_num_ipus": False, "connection_type": "never"},  # an offline target
    {"replication_factor": 96, "auto_round_num_ipus": False},  # beyond one process: each poprun instance is checked
    {"replication_factor": 48, "layers_per_ipu": [-1, -1], "auto_round_num_ipus": False},  # 96 IPUs: the same
])
def test_what_poptorch_reserves_as_asked_is_accepted(settings):
    assert PlainIPUConfig(**settings).options_plan(popdist=False).calls


def test_a_poprun_instance_is_checked_with_its_own_replicas(monkeypatch):
    from optimum_ipu_ext.sdk.popdist import PopDistLaunch

    config = PlainIPUConfig(replication_factor=96, auto_round_num_ipus=False)
    with pytest.raises(IncompatibleSettingsError) as raised:
        config.options_plan(popdist=PopDistLaunch(num_replicas=96, num_instances=2))
    assert str(raised.value) == refusal("this poprun instance's 48 replicas (of 96) x `ipus_per_replica=1`", 48, 64)
    assert config.options_plan(popdist=PopDistLaunch(num_replicas=96, num_instances=2), compile_only=True).calls
    assert config.options_plan(popdist=PopDistLaunch(num_replicas=96, num_instances=3)).calls  # 32 each
    # made inside a launch, a config is checked for that launch: 2 of 6 replicas x 2 IPUs is 4
    monkeypatch.setenv("POPDIST_NUM_TOTAL_REPLICAS", "6")
    monkeypatch.setenv("POPDIST_NUM_LOCAL_REPLICAS", "2")
    config = PlainIPUConfig(layers_per_ipu=[-1, -1], replication_factor=6, auto_round_num_ipus=False)
    assert config.ipus_per_replica == 2
    monkeypatch.setenv("POPDIST_NUM_LOCAL_REPLICAS", "3")
    with pytest.raises(IncompatibleSettingsError, match="this poprun instance's 3 replicas"):
        PlainIPUConfig(layers_per_ipu=[-1, -1], replication_factor=6, auto_round_num_ipus=False)


def test_a_poprun_instance_is_checked_with_the_ipus_of_the_build_planned():
    from optimum_ipu_ext.sdk.popdist import PopDistLaunch

    # each instance has 2 of the 32 replicas: 2 x 2 IPUs to train, 2 x 3 IPUs for inference
    config = PlainIPUConfig(replication_factor=32, layers_per_ipu=[-1, -1], inference_replication_factor=32,
                            inference_layers_per_ipu=[-1, -1, -1], auto_round_num_ipus=False)
    launch = PopDistLaunch(num_replicas=32, num_instances=16)
    assert config.options_plan(popdist=launch).calls
    with pytest.raises(IncompatibleSettingsError, match=r"of 32\) x `inference_ipus_per_replica=3` = 6 IPUs"):
        config.options_plan(for_inference=True, popdist=launch)


def test_to_options_and_update_from_string_refuse_it_too(sdk):
    config = IPUConfig(replication_factor=3, layers_per_ipu=[-1])
    with pytest.raises(IncompatibleSettingsError, match="3 IPUs in one process"):
        config.update_from_string("auto_round_num_ipus=false")
    assert config.auto_round_num_ipus is True  # the update is undone
    config.__dict__["auto_round_num_ipus"] = False  # as a config changed behind the class's back
    with pytest.raises(IncompatibleSettingsError, match="3 IPUs in one process"):
        config.to_options()


# Values in messages, as the config file writes them

@pytest.mark.parametrize("value, text", [
    (True, "true"), (False, "false"), (None, "null"), ("everything", '"everything"'), (3, "3"), (0.5, "0.5"),
    ([0.1, None], "[0.1, null]"), ({"a": [True]}, '{"a": [true]}'), ((1, 2), "[1, 2]"), ("é", '"é"'),
    (float("nan"), "nan"), (float("inf"), "inf"), (1j, "1j"),
])
def test_values_in_messages_are_written_as_json(value, text):
    from optimum_ipu_ext.errors import as_json

    assert as_json(value) == text


@pytest.mark.parametrize("value, kind", [
    (None, "null"), (True, "a boolean"), (3, "an integer"), (0.5, "a number"), ("x", "a string"), ([1], "an array"),
    ((1,), "an array"), ({}, "an object"), (1j, "a Python `complex`"),
])
def test_a_value_of_the_wrong_type_is_named_in_the_words_of_json(value, kind):
    from optimum_ipu_ext.errors import SettingTypeError

    assert str(SettingTypeError("probe", value, "bytes")).endswith(f" is {kind}, expected bytes.")


# A key given twice in a file

@pytest.mark.parametrize("text, key", [
    ('{"replication_factor": 4, "replication_factor": 8}', "replication_factor"),
    ('{"popart_options": {"a": 1, "a": 2}}', "a"),
])
def test_a_key_given_twice_is_refused_naming_the_key_and_the_file(tmp_path, text, key):
    path = tmp_path / "ipu_config.json"
    path.write_text(text)
    message = (
        f"Cannot load the IPU config file '{path}': the key \"{key}\" is given twice in one object; "
        "give each key once."
    )
    for load in (read_config_file, PlainIPUConfig.from_json_file, lambda path: IPUConfig.from_pretrained(str(path))):
        with pytest.raises(ConfigFileError) as raised:
            load(path)
        assert str(raised.value) == message


def test_a_key_given_once_in_each_of_two_objects_is_not_repeated(tmp_path):
    path = tmp_path / "ipu_config.json"
    path.write_text('{"popart_options": {"a": 1}, "engine_options": {"a": "1"}}')
    assert read_config_file(path) == {"popart_options": {"a": 1}, "engine_options": {"a": "1"}}


# placement(): the model it asks the Hub for (the Hub itself: tests/placement/test_placement_hub.py, a local server)


class AskedTheHub(Exception):
    """Stops a placement where it asks the Hub for its model."""


@pytest.mark.parametrize("config_class", [IPUConfig, PlainIPUConfig])
def test_placement_asks_the_hub_with_the_revision_and_token_given(monkeypatch, tmp_path, config_class):
    monkeypatch.chdir(tmp_path)
    asked = []

    def ask(repo_id, revision=None, token=None):
        asked.append((repo_id, revision, token))
        raise AskedTheHub

    monkeypatch.setattr(hub_model, "hub_model", ask)
    with pytest.raises(AskedTheHub):
        config_class().placement("org/model", revision="v1", token="hf_reader")
    assert asked == [("org/model", "v1", "hf_reader")]

