"""Paths of the configuration that no other test takes: wrong number types, boolean spellings, the splits rules,
inference pipelines, IPU hardware versions, defaults shared between configs, the PopDist warning's category."""

import json
import warnings

import pytest

from optimum_ipu_ext import InvalidSettingError, IPUConfig, IPUConfigWarning, UnknownSettingError
from support import doubles
from support.builds import comparable
from support.poprun import poprun_environment

# --- a number of the wrong type ---------------------------------------------------------------------


def test_a_float_replication_factor_is_refused():
    with pytest.raises(ValueError) as raised:
        IPUConfig(replication_factor=2.0)
    assert "replication_factor" in str(raised.value) and "2.0" in str(raised.value)
    with pytest.raises(ValueError, match="replication_factor"):
        IPUConfig.from_dict({"replication_factor": 2.0})


def test_a_float_replication_factor_is_refused_by_update_from_string():
    config = IPUConfig(replication_factor=2)
    with pytest.raises(InvalidSettingError) as raised:
        config.update_from_string("replication_factor=2.0")
    assert str(raised.value) == '`replication_factor="2.0"` is invalid: expected an integer.'
    assert config.replication_factor == 2


# --- booleans written as text -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, value",
    [("1", True), ("0", False), ("true", True), ("False", False), ("YES", True), ("no", False), ("y", True),
     ("n", False)],
)
def test_update_from_string_reads_booleans_as_upstream_does(upstream, text, value):
    ours = IPUConfig(stochastic_rounding=not value, enable_half_partials=not value)
    ours.update_from_string(f"stochastic_rounding={text},enable_half_partials={text}")
    assert (ours.stochastic_rounding, ours.enable_half_partials) == (value, value)
    theirs = upstream.IPUConfig(enable_half_partials=not value)
    theirs.update_from_string(f"enable_half_partials={text}")
    assert theirs.enable_half_partials is value


@pytest.mark.parametrize("text", ["2", "on", "", "truth"])
def test_update_from_string_refuses_other_boolean_text(text):
    config = IPUConfig()
    with pytest.raises(InvalidSettingError) as raised:
        config.update_from_string(f"stochastic_rounding={text}")
    assert str(raised.value) == f"`stochastic_rounding={json.dumps(text)}` is invalid: expected true or false."
    assert config.stochastic_rounding is True


# --- serialized splits: on consecutive IPUs, at least one ----------------------------------------------


@pytest.mark.parametrize("layer", ["embedding", "projection"])
@pytest.mark.parametrize("prefix", ["", "inference_"])
def test_splits_must_sit_on_consecutive_ipus(upstream, layer, prefix):
    name = f"{prefix}serialized_{layer}_splits_per_ipu"
    pipeline = {"layers_per_ipu": [1, 1, 1], "inference_layers_per_ipu": [1, 1, 1]}
    assert getattr(IPUConfig(**pipeline, **{name: [0, 2, 1]}), name) == [0, 2, 1]
    for splits, words in (([1, 0, 1], "consecutive IPUs"), ([0, 0, 0], "split")):
        with pytest.raises(ValueError) as ours:
            IPUConfig(**pipeline, **{name: splits})
        assert name in str(ours.value) and words in str(ours.value)
        with pytest.raises(ValueError):
            upstream.IPUConfig(**pipeline, **{name: splits})


SPLITS_ERRORS = (  # the core validates on both bases
    "`serialized_embedding_splits_per_ipu=[1, 0, 1]` is invalid: "
    "splits must sit on consecutive IPUs, e.g. [3, 1, 0, 0].",
    "`serialized_embedding_splits_per_ipu=[0, 0, 0]` is invalid: at least one split is needed.",
    "`serialized_embedding_splits_per_ipu=[]` is invalid: at least one split is needed.",
)


def test_splits_errors_say_what_is_allowed():
    messages = []
    for splits in ([1, 0, 1], [0, 0, 0], []):
        with pytest.raises(ValueError) as raised:
            IPUConfig(layers_per_ipu=[1, 1, 1], serialized_embedding_splits_per_ipu=splits)
        messages.append(str(raised.value))
    assert tuple(messages) == SPLITS_ERRORS


# --- the inference pipeline ----------------------------------------------------------------------------


def test_inference_pipeline_length_from_inference_layers_alone(upstream):
    config = IPUConfig(inference_layers_per_ipu=[2, 2])
    assert (config.ipus_per_replica, config.inference_ipus_per_replica) == (1, 2)
    assert (config.inference_matmul_proportion, config.inference_layers_per_ipu) == (0.2, [2, 2])
    theirs = upstream.IPUConfig(inference_layers_per_ipu=[2, 2])
    assert (theirs.ipus_per_replica, theirs.inference_ipus_per_replica) == (1, 2)
    training = config.options_plan().calls
    inference = config.options_plan(for_inference=True).calls
    memory = "setAvailableMemoryProportion"
    assert [call.args for call in training if call.method == memory] == [({"IPU0": 0.2},)]
    assert [call.args for call in inference if call.method == memory] == [({"IPU0": 0.2, "IPU1": 0.2},)]


def test_per_ipu_proportions_that_do_not_fit_the_inference_pipeline_fall_back(upstream):
    kwargs = {"layers_per_ipu": [1, 1], "matmul_proportion": [0.1, 0.3], "inference_layers_per_ipu": [2]}
    config = IPUConfig(**kwargs)
    assert (config.inference_ipus_per_replica, config.inference_matmul_proportion) == (1, 0.2)
    assert upstream.IPUConfig(**kwargs).inference_matmul_proportion == 0.2


# --- IPU hardware versions -----------------------------------------------------------------------------


@pytest.mark.parametrize("version", [2, 21], ids=["mk2", "mk2-fp8"])
def test_to_options_builds_on_every_mk2(version):
    with doubles.installed(hardware_version=version):
        built = comparable(IPUConfig(replication_factor=2).to_options())
    assert built["replication_factor"] == 2 and built["connection_type"] == 0 and "ipu_version" not in built


@pytest.mark.parametrize("version", [1, -1], ids=["mk1", "unknown"])
def test_to_options_refuses_other_ipus_as_upstream_does(upstream, version):
    with doubles.installed(hardware_version=version):
        with pytest.raises(RuntimeError) as ours:
            IPUConfig().to_options()
        with pytest.raises(RuntimeError) as theirs:
            upstream.IPUConfig().to_options()
        built = comparable(IPUConfig().to_options(compile_only=True))  # an offline target needs no IPU
    assert str(ours.value) == str(theirs.value) == "This requires an IPU Mk2 system to run."
    assert (built["connection_type"], built["ipu_version"]) == (2, 2)


# --- defaults are never shared ---------------------------------------------------------------------------


def test_editing_a_configs_lists_and_dicts_leaves_every_new_config_alone():
    edited = IPUConfig()
    edited.layers_per_ipu.append(4)
    edited.inference_layers_per_ipu.append(5)
    edited.popart_patterns["TiedGather"] = False
    edited.engine_options["debug.instrument"] = "true"
    edited.popart_options["decomposeGradSum"] = True
    edited.accumulate_outer_fragment_excluded_virtual_graphs.append(0)
    edited.parallelize_kwargs["a"] = 1
    fresh = IPUConfig()
    assert (fresh.layers_per_ipu, fresh.inference_layers_per_ipu) == ([-1], [-1])
    assert fresh.popart_patterns == {"TiedGather": True, "TiedGatherAccumulate": True,
                                     "UpdateInplacePrioritiesForIpu": True}
    assert fresh.engine_options == {"opt.useAutoloader": "true", "target.syncReplicasIndependently": "true"}
    assert (fresh.popart_options, fresh.accumulate_outer_fragment_excluded_virtual_graphs) == ({}, [0])
    assert fresh.parallelize_kwargs == {}


def test_a_list_given_is_the_configs_own():
    layers = [2, 2]
    config = IPUConfig(layers_per_ipu=layers)
    assert config.inference_layers_per_ipu == [2, 2] and config.inference_layers_per_ipu is not config.layers_per_ipu


# --- PopDist --------------------------------------------------------------------------------------------


def test_a_total_that_disagrees_with_poprun_is_a_user_warning(poprun):
    config = IPUConfig(replication_factor=2)
    with poprun(poprun_environment(8, 2, 0, ipus_per_replica=1)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            config.to_options()
    assert [warning.category for warning in caught] == [IPUConfigWarning]
    assert str(caught[0].message).startswith("`replication_factor=2` is the total number of replicas of the job")
    assert issubclass(IPUConfigWarning, UserWarning)


# --- the base class's contract (the bundled base here, optimum-graphcore's on an IPU host) ----------------------

INFERENCE_PIPELINES = [
    # (settings, (ipus_per_replica, inference_ipus_per_replica, inference_matmul_proportion))
    ({}, (1, 1, 0.2)),
    ({"layers_per_ipu": [2, 2]}, (2, 2, 0.2)),
    ({"layers_per_ipu": [2, 2], "inference_layers_per_ipu": [-1]}, (2, 1, 0.2)),
    ({"layers_per_ipu": [-1], "ipus_per_replica": 4}, (4, 4, 0.2)),
    ({"layers_per_ipu": [-1], "ipus_per_replica": 4, "inference_layers_per_ipu": [3, 3]}, (4, 2, 0.2)),
    ({"layers_per_ipu": [-1], "ipus_per_replica": 4, "inference_ipus_per_replica": 2}, (4, 2, 0.2)),
    ({"layers_per_ipu": [-1], "ipus_per_replica": 2, "matmul_proportion": [0.1, 0.2]}, (2, 2, [0.1, 0.2])),
]


@pytest.mark.parametrize("settings, expected", INFERENCE_PIPELINES, ids=[str(s) for s, _ in INFERENCE_PIPELINES])
def test_inference_pipeline_falls_back_as_upstreams_does(upstream, settings, expected):
    for config in (IPUConfig(**settings), upstream.IPUConfig(**settings)):
        inference = (config.inference_ipus_per_replica, config.inference_matmul_proportion)
        assert (config.ipus_per_replica, *inference) == expected


@pytest.mark.parametrize("mode, attribute, used", [
    ("train", "layers_per_ipu", "layers_per_ipu"),
    ("eval", "layers_per_ipu", "inference_layers_per_ipu"),
    ("eval", "matmul_proportion", "inference_matmul_proportion"),
    ("eval", "parallelize_kwargs", "inference_parallelize_kwargs"),
    ("eval", "seed", "seed"),
    ("train", "replication_factor", "replication_factor"),
    ("eval", "replication_factor", "inference_replication_factor"),
    ("eval", "device_iterations", "inference_device_iterations"),
    ("eval", "no_such_setting", "no_such_setting"),
])
def test_managed_attribute_names_follow_the_mode(upstream, mode, attribute, used):
    for config in (IPUConfig(), upstream.IPUConfig()):
        assert getattr(config, mode)()._get_managed_attr_mode_name(attribute) == used


def test_managed_attributes_are_on_the_class():
    for attribute in ("_layers_per_ipu", "_ipus_per_replica", "_matmul_proportion", "_parallelize_kwargs"):
        assert hasattr(IPUConfig, attribute)


@pytest.mark.parametrize(
    "settings, sharded",
    [
        ({"replicated_tensor_sharding": True}, 0),
        ({"replicated_tensor_sharding": True, "replication_factor": 2}, 1),
        ({"replicated_tensor_sharding": False, "replication_factor": 2}, 0),
    ],
)
def test_sharding_shards_only_with_replicas_and_warns_about_none(caplog, recwarn, sdk, settings, sharded):
    """`replicated_tensor_sharding: true` reads "shard when there are replicas" (the preset's sharding, as its
    build's): one replica shards nothing, and neither constructing nor building warns or logs about it."""
    with caplog.at_level("WARNING"):
        built = IPUConfig(**settings).to_options().toDict()
    assert [record.getMessage() for record in caplog.records] == [] and list(recwarn) == []
    assert built["location_optimizer"] == {"onChip": 1, "useReplicatedTensorSharding": sharded}


def test_bundled_base_batch_size_factor_is_upstreams(upstream):
    from optimum_ipu_ext.config.bundled_base import IPUConfig as BundledIPUConfig

    settings = {"replication_factor": 4, "gradient_accumulation_steps": 8, "device_iterations": 2,
                "inference_replication_factor": 3, "inference_device_iterations": 5}
    for config in (BundledIPUConfig(**settings), upstream.IPUConfig(**settings)):
        assert (config.batch_size_factor(), config.batch_size_factor(for_inference=True)) == (64, 15)
    assert BundledIPUConfig(**settings).batch_size_factor(True) == 15


def test_saved_config_holds_no_mode():
    config = IPUConfig().eval()
    assert "_mode" not in config.to_dict() and config.mode == "inference"


def test_bundled_base_names_an_unknown_key():
    from optimum_ipu_ext.config.bundled_base import IPUConfig as BundledIPUConfig

    with pytest.raises(UnknownSettingError) as raised:
        BundledIPUConfig(replicaton_factor=2)
    assert str(raised.value) == "Unknown IPU config key `replicaton_factor`. Did you mean `replication_factor`?"
    assert raised.value.field == "replicaton_factor"
