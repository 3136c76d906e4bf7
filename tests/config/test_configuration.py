"""`IPUConfig` as a configuration: base class, defaults, JSON interop with optimum-graphcore, history, errors."""

import json
import math
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from optimum_ipu_ext import (
    ConfigFileError,
    IncompatibleSettingsError,
    InvalidSettingError,
    IPUConfig,
    PlainIPUConfig,
    SettingTypeError,
    UnknownSettingError,
)
from optimum_ipu_ext.config.base import BaseIPUConfig
from optimum_ipu_ext.config.bundled_base import ManagedAttribute
from optimum_ipu_ext.settings.legacy import LEGACY_KEYS, _when_on
from optimum_ipu_ext.settings.table import EXTENSION_SETTINGS
from support import PRESET
from support.builds import UPSTREAM_CONFIGS
from support.stack import TEST_BASE

VERSION_KEYS = ("transformers_version", "optimum_version")


def without_versions(config_dict):
    return {key: value for key, value in config_dict.items() if key not in VERSION_KEYS}


def test_base_is_the_one_the_stack_provides(upstream):
    if TEST_BASE == "upstream":
        assert BaseIPUConfig is upstream.IPUConfig
        assert isinstance(IPUConfig(), upstream.IPUConfig)
    else:
        assert BaseIPUConfig.__module__ == "optimum_ipu_ext.config.bundled_base"
        assert not isinstance(IPUConfig(), upstream.IPUConfig)
    assert IPUConfig.CONFIG_NAME == "ipu_config.json"


@pytest.mark.parametrize("name", sorted(UPSTREAM_CONFIGS))
def test_same_attributes_as_upstream(upstream, name):
    ours = IPUConfig(**UPSTREAM_CONFIGS[name])
    theirs = upstream.IPUConfig(**UPSTREAM_CONFIGS[name])
    assert ours.to_dict() == theirs.to_dict()
    for mode in ("train", "eval"):
        getattr(ours, mode)(), getattr(theirs, mode)()
        for attr in ("_layers_per_ipu", "_ipus_per_replica", "_matmul_proportion", "_parallelize_kwargs",
                     "_embedding_serialization_factor", "_serialized_projection_splits_per_ipu"):
            assert getattr(ours, attr) == getattr(theirs, attr), (mode, attr)
        assert ours.batch_size_factor(mode == "eval") == theirs.batch_size_factor(mode == "eval")


@pytest.mark.parametrize("name", sorted(UPSTREAM_CONFIGS))
def test_json_round_trips_with_upstream(upstream, name, tmp_path):
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    IPUConfig(**UPSTREAM_CONFIGS[name]).save_pretrained(ours)
    upstream.IPUConfig(**UPSTREAM_CONFIGS[name]).save_pretrained(theirs)
    assert (ours / "ipu_config.json").read_text() == (theirs / "ipu_config.json").read_text()
    assert upstream.IPUConfig.from_pretrained(ours).to_dict() == IPUConfig.from_pretrained(theirs).to_dict()


@pytest.mark.parametrize("source", ["preset", "defaults"])
def test_save_load_save_gives_identical_files(source, tmp_path):
    config = IPUConfig.from_pretrained(PRESET) if source == "preset" else IPUConfig()
    config.save_pretrained(tmp_path / "first")
    IPUConfig.from_pretrained(tmp_path / "first").save_pretrained(tmp_path / "second")
    first = (tmp_path / "first" / "ipu_config.json").read_bytes()
    assert first == (tmp_path / "second" / "ipu_config.json").read_bytes()
    assert sorted(os.listdir(tmp_path / "first")) == ["ipu_config.json"]


def test_extension_settings_are_saved_only_when_not_default(tmp_path):
    config = IPUConfig(recomputation_mode="pipeline", outline_threshold=10.0)
    saved = json.loads(config.to_json_string())
    assert saved["recomputation_mode"] == "pipeline"
    assert not set(saved) & (set(EXTENSION_SETTINGS) - {"recomputation_mode"})
    assert IPUConfig.from_dict(saved).outline_threshold == 10.0


def test_preset_reads_as_the_seed_build():
    config = IPUConfig.from_pretrained(PRESET, replication_factor=8, optimizer_state_offchip=True)
    assert (config.replication_factor, config.ipus_per_replica, config.optimizer_state_offchip) == (8, 2, True)
    assert config.recomputation_mode == "pipeline"
    assert config.accumulate_outer_fragment_schedule == "overlap_memory_optimized"
    assert config.batch_size_factor() == 8 * 128


# {legacy key: (a value, the settings that hold it)}; the other legacy keys have no setting
CARRIED = {
    "random_seed": (3, {"seed": 3}),
    "decompose_grad_sum": (True, {"popart_options": {"decomposeGradSum": True}}),
    "synthetic_data": (True, {"popart_options": {"syntheticDataMode": 2}}),
    "sharded_execution_for_inference": (True, {"inference_execution_strategy": "sharded"}),
}
# the values of those keys that are what the current build does anyway
CARRYING_NOTHING = {"random_seed": 0, "decompose_grad_sum": False, "synthetic_data": False,
                    "sharded_execution_for_inference": False}


def test_the_carried_keys_are_the_legacy_keys_with_a_setting():
    assert sorted(key for key, legacy in LEGACY_KEYS.items() if legacy.carry) == sorted(CARRIED)


def test_a_flag_carries_what_it_meant_when_on_and_nothing_when_off():
    carry = _when_on({"popart_options": {"decomposeGradSum": True}})
    assert (carry(True), carry(False)) == ({"popart_options": {"decomposeGradSum": True}}, {})


@pytest.mark.parametrize("key", sorted(LEGACY_KEYS))
def test_legacy_keys_without_a_setting_load_with_a_warning_and_change_nothing(key):
    value = CARRYING_NOTHING.get(key, True)
    with pytest.warns(FutureWarning) as caught:
        config = IPUConfig.from_dict({"replication_factor": 2, key: value})
    assert [str(warning.message) for warning in caught] == [
        f"`{key}` is no longer an IPUConfig setting and is ignored: {LEGACY_KEYS[key].note}"
    ]
    assert config.to_dict() == IPUConfig(replication_factor=2).to_dict()


@pytest.mark.parametrize("load", ["from_pretrained", "plain"])
@pytest.mark.parametrize("key", sorted(CARRIED))
def test_a_legacy_key_with_a_setting_carries_its_value_naming_the_file_and_the_new_key(tmp_path, key, load):
    value, carried = CARRIED[key]
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"replication_factor": 2, key: value}))
    with pytest.warns(FutureWarning) as caught:
        if load == "from_pretrained":
            config = IPUConfig.from_pretrained(str(path))
        else:
            config = PlainIPUConfig.from_json_file(path)
    ((name, setting_value),) = carried.items()
    where = repr(str(path)) if load == "from_pretrained" else str(path)
    assert [str(warning.message) for warning in caught] == [
        f"`{key}` in {where} is no longer an IPUConfig setting; its value is carried over as "
        f"`{name}={json.dumps(setting_value)}`: {LEGACY_KEYS[key].note} Write the new key instead."
    ]
    assert config.to_dict() == type(config)(replication_factor=2, **carried).to_dict()


def test_every_legacy_key_of_a_file_is_read_after_one_that_is_dropped():
    with pytest.warns(FutureWarning) as caught:
        config = PlainIPUConfig.from_dict({"compile_only": True, "random_seed": 3, "profile_dir": "p"})
    assert config.seed == 3 and len(caught) == 3


def test_a_legacy_popart_option_joins_the_popart_options_given():
    with pytest.warns(FutureWarning, match="carried over as `popart_options="):
        config = IPUConfig(decompose_grad_sum=True, popart_options={"enableStableNorm": True})
    assert config.popart_options == {"enableStableNorm": True, "decomposeGradSum": True}
    with pytest.warns(FutureWarning, match="carried over"):
        config = IPUConfig(decompose_grad_sum=True, popart_options={"decomposeGradSum": True})
    assert config.popart_options == {"decomposeGradSum": True}


@pytest.mark.parametrize("given, message", [
    ({"random_seed": 3, "seed": 4},
     "`random_seed=3` is invalid: it is carried over to `seed`, which is given too, as 4: give `seed` only."),
    ({"decompose_grad_sum": True, "popart_options": {"decomposeGradSum": False}},
     '`decompose_grad_sum=true` is invalid: it is carried over to `popart_options`, which is given too, as '
     '{"decomposeGradSum": false}: give `popart_options` only.'),
    ({"sharded_execution_for_inference": True, "inference_execution_strategy": "pipelined"},
     '`sharded_execution_for_inference=true` is invalid: it is carried over to `inference_execution_strategy`, which '
     'is given too, as "pipelined": give `inference_execution_strategy` only.'),
])
def test_a_legacy_key_and_its_setting_with_different_values_are_refused(given, message):
    with pytest.raises(IncompatibleSettingsError) as raised:
        PlainIPUConfig(**given)
    assert str(raised.value) == message


def test_a_legacy_key_and_its_setting_with_the_same_value_load():
    with pytest.warns(FutureWarning, match="carried over as `seed=3`"):
        assert PlainIPUConfig(random_seed=3, seed=3).seed == 3


@pytest.mark.parametrize("key, value, expected", [
    ("random_seed", "3", 'int, or null'), ("random_seed", True, "int, or null"),
    ("sharded_execution_for_inference", 1, "bool, or null"),
])
def test_a_legacy_value_of_the_wrong_type_is_refused_naming_the_legacy_key(key, value, expected):
    with pytest.raises(SettingTypeError) as raised:
        PlainIPUConfig(**{key: value})
    assert (raised.value.field, raised.value.value, raised.value.allowed) == (key, value, expected)


def test_metadata_keys_of_saved_files_are_accepted_silently():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        IPUConfig.from_dict({"transformers_version": "4.29.2", "optimum_version": "1.6.1"})


def test_unknown_key_names_the_closest_known_one():
    with pytest.raises(UnknownSettingError, match="`replicaton_factor`.*`replication_factor`"):
        IPUConfig(replicaton_factor=2)


def test_unknown_key_in_a_file_names_the_file(tmp_path):
    path = tmp_path / "ipu_config.json"
    path.write_text(json.dumps({"recomputation_mod": "pipeline"}))
    with pytest.raises(UnknownSettingError, match="recomputation_mode") as raised:
        IPUConfig.from_pretrained(str(path))
    assert str(path) in str(raised.value)


def test_unknown_override_is_an_error_too():
    with pytest.raises(UnknownSettingError, match="replication_factors"):
        IPUConfig.from_pretrained(PRESET, replication_factors=2)


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        ({"recomputation_mode": 3}, SettingTypeError, ["recomputation_mode", "3", "string"]),
        ({"stochastic_rounding": "yes"}, SettingTypeError, ["stochastic_rounding", '"yes"', "bool"]),
        ({"outline_threshold": True}, SettingTypeError, ["outline_threshold", "true", "number"]),
        ({"popart_patterns": {"TiedGather": 1}}, SettingTypeError, ["popart_patterns", "object of string to bool"]),
        ({"outline_threshold": math.inf}, InvalidSettingError, ["outline_threshold", "inf", "finite"]),
        ({"outline_threshold": math.nan}, InvalidSettingError, ["outline_threshold", "nan", "finite"]),
        ({"accumulate_outer_fragment_excluded_virtual_graphs": [-1]}, InvalidSettingError, [">= 0"]),
        ({"recomputation_mode": "sometimes"}, InvalidSettingError,
         ['"sometimes"', '"none", "standard", "norm_only", "pipeline", "recompute_all"']),
        ({"auto_stage": "auto"}, InvalidSettingError, ["auto_stage", '"same_as_ipu", "auto_increment"']),
        ({"popart_options": {"x": float("nan")}}, InvalidSettingError, ["popart_options", "finite numbers"]),
    ],
)
def test_bad_extension_values_are_named(kwargs, error, words):
    with pytest.raises(error) as raised:
        IPUConfig(**kwargs)
    for word in words:
        assert word in str(raised.value)


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"replication_factor": "4"}, ["replication_factor", "4"]),
        ({"replication_factor": 0}, ["replication_factor", "1"]),
        ({"matmul_proportion": -0.1}, ["matmul_proportion", "0"]),
        ({"output_mode": "every"}, ["output_mode", "final"]),
        ({"layers_per_ipu": [1, 2], "matmul_proportion": [0.1, 0.1, 0.1]}, ["matmul_proportion", "ipus_per_replica"]),
        ({"layers_per_ipu": [1, 2], "ipus_per_replica": 3}, ["layers_per_ipu", "ipus_per_replica"]),
        ({"serialized_embedding_splits_per_ipu": [1, 0, 1]}, ["serialized_embedding_splits_per_ipu"]),
    ],
)
def test_bad_base_values_fail_as_upstream_does(upstream, kwargs, words):
    with pytest.raises((TypeError, ValueError)) as ours:
        IPUConfig(**kwargs)
    with pytest.raises((TypeError, ValueError)) as theirs:
        upstream.IPUConfig(**kwargs)
    for builtin in (TypeError, ValueError):
        assert isinstance(ours.value, builtin) or not isinstance(theirs.value, builtin)
    for word in words:
        assert word in str(ours.value)


def test_excluded_virtual_graphs_must_lie_in_the_pipeline():
    IPUConfig(layers_per_ipu=[-1, -1], accumulate_outer_fragment_excluded_virtual_graphs=[1])
    with pytest.raises(IncompatibleSettingsError, match="0 to 1 as `ipus_per_replica=2`"):
        IPUConfig(layers_per_ipu=[-1, -1], accumulate_outer_fragment_excluded_virtual_graphs=[2])


def test_popart_options_cannot_bypass_a_dedicated_setting():
    with pytest.raises(IncompatibleSettingsError, match="set `outline_threshold` instead"):
        IPUConfig(popart_options={"outlineThreshold": 5.0})


@pytest.mark.parametrize(
    "content, problem",
    [("{not json", "not valid JSON"), ("[1, 2]", "expected a JSON object, found list"), ('"x"', "found str")],
)
def test_malformed_file_names_the_file(tmp_path, content, problem):
    path = tmp_path / "broken.json"
    path.write_text(content)
    with pytest.raises(ConfigFileError, match=problem) as raised:
        IPUConfig.from_pretrained(str(path))
    assert str(path) in str(raised.value) and isinstance(raised.value, OSError)


def test_failed_save_leaves_the_previous_file_and_no_partial_file(tmp_path):
    config = IPUConfig(layers_per_ipu=[-1, -1])
    config.save_pretrained(tmp_path)
    before = (tmp_path / "ipu_config.json").read_bytes()
    config.matmul_proportion = [0.1, 0.1, 0.1]
    with pytest.raises(ValueError, match="matmul_proportion"):
        config.save_pretrained(tmp_path)
    config.matmul_proportion = 0.3
    config.parallelize_kwargs = {"not_json": object()}
    with pytest.raises(TypeError):
        config.save_pretrained(tmp_path)
    assert (tmp_path / "ipu_config.json").read_bytes() == before
    assert os.listdir(tmp_path) == ["ipu_config.json"]


def test_interrupted_write_leaves_no_partial_file(tmp_path, monkeypatch):
    def fail(*args):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        IPUConfig().save_pretrained(tmp_path)
    assert os.listdir(tmp_path) == []


def test_update_from_string_parses_by_type_and_is_all_or_nothing():
    config = IPUConfig(layers_per_ipu=[-1, -1])
    config.update_from_string("replication_factor=4,matmul_proportion=[0.1 0.2],recomputation_mode=pipeline,seed=7")
    assert (config.replication_factor, config.matmul_proportion, config.recomputation_mode, config.seed) == (
        4, [0.1, 0.2], "pipeline", 7
    )
    config.update_from_string('engine_options={"a": "1", "b": "2"},outline_threshold=null')
    assert config.engine_options == {"a": "1", "b": "2"} and config.outline_threshold is None
    with pytest.raises(ValueError, match="matmul_proportion"):
        config.update_from_string("replication_factor=8,matmul_proportion=[0.1 0.2 0.3]")
    assert (config.replication_factor, config.matmul_proportion) == (4, [0.1, 0.2])
    with pytest.raises(InvalidSettingError, match="stochastic_rounding.*true or false"):
        config.update_from_string("stochastic_rounding=maybe")
    with pytest.raises(UnknownSettingError, match="replication_factor"):
        config.update_from_string("replication_factr=2")


def test_a_managed_attribute_reads_and_writes_the_setting_of_the_mode():
    proportion = ManagedAttribute("matmul_proportion")
    config = IPUConfig(layers_per_ipu=[2, 2], matmul_proportion=[0.1, 0.2], inference_matmul_proportion=0.3)
    assert (proportion.attr, proportion.__get__(config)) == ("matmul_proportion", [0.1, 0.2])
    proportion.__set__(config.eval(), 0.4)
    assert (config.matmul_proportion, config.inference_matmul_proportion) == ([0.1, 0.2], 0.4)


def test_mode_switches_managed_attributes():
    config = IPUConfig(layers_per_ipu=[2, 2], inference_layers_per_ipu=[4], matmul_proportion=[0.1, 0.2])
    assert (config.mode, config._ipus_per_replica, config._matmul_proportion) == ("training", 2, [0.1, 0.2])
    config.eval()
    assert (config.mode, config._ipus_per_replica, config._matmul_proportion) == ("inference", 1, 0.2)
    config._matmul_proportion = 0.5
    assert config.inference_matmul_proportion == 0.5 and config.train()._matmul_proportion == [0.1, 0.2]
    with pytest.raises(ValueError, match="mode"):
        config.mode = "testing"


def test_the_documentation_lists_every_new_setting():
    settings = (Path(__file__).resolve().parents[2] / "docs" / "settings.md").read_text()
    for name in EXTENSION_SETTINGS:
        assert f"| `{name}` |" in settings, name


def test_importing_the_package_imports_no_sdk_module():
    code = "import sys, optimum_ipu_ext; print(sorted({'poptorch', 'popart', 'popdist'} & set(sys.modules)))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "[]\n"


def test_saved_file_gets_the_usual_permissions(tmp_path):
    IPUConfig().save_pretrained(tmp_path)
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "ipu_config.json").stat().st_mode & 0o777 == 0o666 & ~umask
