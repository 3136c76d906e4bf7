"""`IPUConfig.from_options`: hand-written `poptorch.Options` (on the strict doubles) import into a config whose
options have the same state; what no config rebuilds is refused, every such option named at once."""

import os
import pickle
import tempfile
import types

import pytest
import torch
from hypothesis import given

from optimum_ipu_ext import (
    IncompatibleSettingsError,
    IPUConfig,
    PlainIPUConfig,
    UnknownSettingError,
    UnsupportedOptionsError,
)
from support import doubles
from support.builds import comparable
from support.doubles import installed
from support.expected_states import seed_state
from support.markers import NOT_UNDER_MUTMUT
from support.strategies import PROFILE, full_settings


def hand_written_build(poptorch, popart):
    """A builder as users write them: a 4-IPU pipeline replicated twice, sums, half partials, a PopART option."""
    opts = poptorch.Options()
    opts.replicationFactor(2)
    opts.deviceIterations(4)
    opts.Training.gradientAccumulation(16)
    opts.Training.accumulationAndReplicationReductionType(poptorch.ReductionType.Sum)
    opts.setExecutionStrategy(poptorch.PipelinedExecution(poptorch.AutoStage.SameAsIpu))
    opts.setAvailableMemoryProportion({"IPU0": 0.15, "IPU1": 0.25, "IPU2": 0.25, "IPU3": 0.25})
    opts.Precision.enableStochasticRounding(True)
    return _shared_calls(opts, poptorch, popart)


def _shared_calls(opts, poptorch, popart):
    """What the training and the inference builder both call."""
    opts.TensorLocations.setOptimizerLocation(
        poptorch.TensorLocationSettings().useOnChipStorage(False).useReplicatedTensorSharding(True)
    )
    opts.Precision.setPartialsType(torch.half)
    opts._Popart.set("autoRecomputation", int(popart.RecomputationType.Standard))
    opts._Popart.set("decomposeGradSum", True)
    return opts


# the settings the hand-written build imports as, written out
HAND_WRITTEN_SETTINGS = {
    "replication_factor": 2,
    "device_iterations": 4,
    "gradient_accumulation_steps": 16,
    "accumulation_and_replication_reduction_type": "sum",
    "execution_strategy": None,  # PipelinedExecution(AutoStage.SameAsIpu) is poptorch's default: no call rebuilds it
    "auto_stage": "auto_increment",
    "ipus_per_replica": 4,
    "matmul_proportion": [0.15, 0.25, 0.25, 0.25],
    "optimizer_state_offchip": True,
    "replicated_tensor_sharding": True,
    "stochastic_rounding": True,
    "enable_half_partials": True,
    "recomputation_mode": "standard",
    "popart_options": {"decomposeGradSum": True},
    "output_mode": "final",
    "seed": None,
    "executable_cache_dir": "",
    "save_initializers_to_file": False,
    "auto_round_num_ipus": False,
    "subgraph_copying_strategy": None,
    "engine_options": None,
    "popart_patterns": None,
    "outline_threshold": None,
    "disable_grad_accumulation_tensor_streams": None,
    "accumulate_outer_fragment_schedule": None,
    "accumulate_outer_fragment_excluded_virtual_graphs": None,
    "schedule_non_weight_update_gradient_consumers_early": None,
}


@pytest.fixture
def hand_written(sdk):
    return hand_written_build(doubles.poptorch, doubles.popart)


def test_a_hand_written_build_imports_as_its_settings(hand_written):
    config = IPUConfig.from_options(training=hand_written)
    assert {name: getattr(config, name) for name in HAND_WRITTEN_SETTINGS} == HAND_WRITTEN_SETTINGS


def test_a_hand_written_build_rebuilds_to_equal_state(hand_written):
    config = IPUConfig.from_options(training=hand_written)
    assert comparable(config.to_options()) == _resolved(hand_written, doubles.poptorch.OutputMode.Final)


def test_the_import_survives_save_and_load(hand_written, tmp_path):
    IPUConfig.from_options(training=hand_written).save_pretrained(tmp_path)
    loaded = IPUConfig.from_pretrained(tmp_path)
    assert comparable(loaded.to_options()) == _resolved(hand_written, doubles.poptorch.OutputMode.Final)


def hand_written_inference_build(poptorch, popart):
    """Its inference twin: sharded, no training options, no stochastic rounding (as optimum-graphcore's)."""
    opts = poptorch.Options()
    opts.replicationFactor(4)
    opts.deviceIterations(32)
    opts.setExecutionStrategy(poptorch.ShardedExecution(poptorch.AutoStage.SameAsIpu))
    opts.setAvailableMemoryProportion({"IPU0": 0.3, "IPU1": 0.3})
    opts.Precision.enableStochasticRounding(False)
    return _shared_calls(opts, poptorch, popart)


def test_the_default_output_mode_is_resolved_as_training_and_inference_resolve_it(sdk):
    poptorch = doubles.poptorch
    training = hand_written_build(poptorch, doubles.popart)
    inference = hand_written_inference_build(poptorch, doubles.popart)
    config = IPUConfig.from_options(training=training, inference=inference)
    assert (config.output_mode, config.inference_replication_factor, config.inference_device_iterations) == (
        "final", 4, 32
    )
    assert (config.inference_execution_strategy, config.inference_ipus_per_replica) == ("sharded", 2)
    assert config.inference_matmul_proportion == 0.3
    assert comparable(config.to_options()) == _resolved(training, poptorch.OutputMode.Final)
    assert comparable(config.to_options(for_inference=True)) == _resolved(inference, poptorch.OutputMode.All)


def _resolved(opts, output_mode):
    """The state `trainingModel` / `inferenceModel` see: a clone with the default output mode resolved."""
    opts = opts.clone()
    if opts.defaultOutputMode():
        opts.outputMode(output_mode)
    return comparable(opts)


# --- the seed's build and optimum-graphcore's -----------------------------------------------------------------


@pytest.mark.parametrize("optimizer_state_offchip", [False, True])
@pytest.mark.parametrize("replication_factor", [1, 4])
def test_the_seed_build_imports_and_rebuilds_its_state(seed_build, replication_factor, optimizer_state_offchip):
    with installed(hardware_version=2):
        args = types.SimpleNamespace(
            replication_factor=replication_factor, optimizer_state_offchip=optimizer_state_offchip
        )
        built = seed_build.build_ipu_config(args)
        if replication_factor == 1:
            config = IPUConfig.from_options(training=built)
        else:  # the seed names IPU2 to IPU7, which no IPU of its 2-IPU pipeline is: dropped, and said so
            with pytest.warns(UserWarning, match="IPU2, IPU3, IPU4, IPU5, IPU6, IPU7, beyond the 2 IPUs per replica"):
                config = IPUConfig.from_options(training=built, ipus_per_replica=2)
        assert comparable(config.to_options()) == seed_state(replication_factor, optimizer_state_offchip)


def test_without_the_pipeline_length_the_seed_extra_proportions_are_kept(seed_build):
    with installed(hardware_version=2):
        built = seed_build.build_ipu_config(types.SimpleNamespace(replication_factor=4, optimizer_state_offchip=False))
        config = IPUConfig.from_options(training=built)
    assert (config.ipus_per_replica, config.matmul_proportion) == (8, 0.1)


def test_optimum_graphcore_build_imports_and_rebuilds_both_modes(upstream, sdk):
    theirs = upstream.IPUConfig(
        layers_per_ipu=[3, 3], matmul_proportion=[0.1, 0.2], replication_factor=2, gradient_accumulation_steps=16,
        device_iterations=4, replicated_tensor_sharding=True, executable_cache_dir="exec", auto_loss_scaling=True,
        seed=42, inference_replication_factor=4,
    )
    training, inference = theirs.to_options(), theirs.to_options(for_inference=True)
    config = IPUConfig.from_options(training=training, inference=inference, layers_per_ipu=[3, 3])
    assert comparable(config.to_options()) == comparable(training)
    assert comparable(config.to_options(for_inference=True)) == comparable(inference)
    assert config.non_default_settings() == {
        "layers_per_ipu": ([3, 3], [-1]),
        "ipus_per_replica": (2, 1),
        "inference_layers_per_ipu": ([3, 3], [-1]),
        "inference_ipus_per_replica": (2, 1),
        "matmul_proportion": ([0.1, 0.2], 0.2),
        "inference_matmul_proportion": ([0.1, 0.2], 0.2),
        "replication_factor": (2, 1),
        "inference_replication_factor": (4, 1),
        "gradient_accumulation_steps": (16, 1),
        "device_iterations": (4, 1),
        "replicated_tensor_sharding": (True, False),
        "executable_cache_dir": ("exec", ""),
        "auto_loss_scaling": (True, False),
        "seed": (42, None),
    }


@PROFILE
@given(full_settings())
def test_config_to_options_from_options_to_options_builds_equal_state(config_dict):
    with installed(hardware_version=2):
        config = IPUConfig.from_dict(config_dict)
        training, inference = config.to_options(), config.to_options(for_inference=True)
        # without memory proportions the options cannot tell the pipeline's length: given, as a user would
        lengths = {
            "ipus_per_replica": config.ipus_per_replica,
            "inference_ipus_per_replica": config.inference_ipus_per_replica,
        }
        again = IPUConfig.from_options(training=training, inference=inference,
                                       **(lengths if config.matmul_proportion is None else {}))
        final, every = doubles.poptorch.OutputMode.Final, doubles.poptorch.OutputMode.All
        assert _resolved(again.to_options(), final) == _resolved(training, final)
        assert _resolved(again.to_options(for_inference=True), every) == _resolved(inference, every)


# --- each method the settings hold: imported as its setting, rebuilt to equal state ----------------------------------

def _location(p, **calls):
    location = p.TensorLocationSettings()
    for method, argument in calls.items():
        getattr(location, method)(argument)
    return location


# name -> (the call, made on the hand-written build, and the settings it imports as)
SUPPORTED = {
    "broadcastBuffers": (lambda p, o: o.broadcastBuffers(False), {"broadcast_buffers": False}),
    "randomSeed(0)": (lambda p, o: o.randomSeed(0), {"zero_seed": True, "seed": None}),
    "randomSeed(7)": (lambda p, o: o.randomSeed(7), {"zero_seed": False, "seed": 7}),
    "float partials": (
        lambda p, o: o.Precision.setPartialsType(torch.float32),
        {"enable_half_partials": False, "popart_options": {
            "decomposeGradSum": True, "partialsTypeMatMuls": "float",
            "convolutionOptions": {"partialsType": "float"},
        }},
    ),
    "mean reduction strategy": (
        lambda p, o: o.Training.setMeanAccumulationAndReplicationReductionStrategy(p.MeanReductionStrategy.Running),
        {"mean_reduction_strategy": "running"},
    ),
    "mean reduction strategy, poptorch's default": (
        lambda p, o: o.Training.setMeanAccumulationAndReplicationReductionStrategy(p.MeanReductionStrategy.Post),
        {"mean_reduction_strategy": None},
    ),
    "caching off": (lambda p, o: o.enableExecutableCaching(None), {"executable_cache_dir": False}),
    "caching on": (lambda p, o: o.enableExecutableCaching("/cache"), {"executable_cache_dir": "/cache"}),
    "relaxed checks": (lambda p, o: o.relaxOptimizerAttributesChecks(), {"relax_optimizer_attributes_checks": True}),
    "namescope": (lambda p, o: o.disableModuleNamescope(), {"disable_module_namescope": True}),
    "connectionType": (lambda p, o: o.connectionType(p.ConnectionType.OnDemand), {"connection_type": "on_demand"}),
    "syncPattern": (lambda p, o: o.syncPattern(p.SyncPattern.SinglePipeline), {"sync_pattern": "single_pipeline"}),
    "inputReplicaGrouping": (
        lambda p, o: o.inputReplicaGrouping(2, p.CommGroupType.Orthogonal),
        {"input_replica_grouping": {"size": 2, "type": "orthogonal"}},
    ),
    "numIOTiles": (lambda p, o: o.TensorLocations.numIOTiles(64), {"num_io_tiles": 64}),
    "setWeightLocation": (
        lambda p, o: o.TensorLocations.setWeightLocation(
            _location(p, useOnChipStorage=False, minElementsForOffChip=64)),
        {"weight_location": {"useOnChipStorage": False, "minElementsForOffChip": 64}},
    ),
    "setActivationLocation": (
        lambda p, o: o.TensorLocations.setActivationLocation(
            _location(p, useIOTilesToLoad=True, useIOTilesToStore=False)),
        {"activation_location": {"useIOTilesToLoad": True, "useIOTilesToStore": False}},
    ),
    "setAccumulatorLocation": (
        lambda p, o: o.TensorLocations.setAccumulatorLocation(
            _location(p, useReplicatedTensorSharding=True, minElementsForReplicatedTensorSharding=1024)),
        {"accumulator_location": {
            "useReplicatedTensorSharding": True, "minElementsForReplicatedTensorSharding": 1024,
        }},
    ),
    "setOptimizerLocation, on chip alone": (
        lambda p, o: o.TensorLocations.setOptimizerLocation(_location(p, useOnChipStorage=False)),
        {"optimizer_location": {"useOnChipStorage": False}, "optimizer_state_offchip": None,
         "replicated_tensor_sharding": None},
    ),
    "setOptimizerLocation, no field": (
        lambda p, o: o.TensorLocations.setOptimizerLocation(p.TensorLocationSettings()),
        {"optimizer_location": {}, "optimizer_state_offchip": None},
    ),
    "stochastic rounding off": (
        lambda p, o: o.Precision.enableStochasticRounding(False), {"stochastic_rounding": False}
    ),
    "automatic loss scaling": (lambda p, o: o.Training.setAutomaticLossScaling(True), {"auto_loss_scaling": True}),
    "automatic loss scaling, off": (
        lambda p, o: o.Training.setAutomaticLossScaling(False),
        {"auto_loss_scaling": False,
         "popart_options": {"decomposeGradSum": True, "automaticLossScalingSettings.enabled": False}},
    ),
    "synthetic data": (
        lambda p, o: o.enableSyntheticData(True),
        {"popart_options": {"decomposeGradSum": True, "syntheticDataMode": 2}},
    ),
    "floating-point exceptions": (
        lambda p, o: o.Precision.enableFloatingPointExceptions(True),
        {"popart_options": {"decomposeGradSum": True, "enableFloatingPointChecks": True}},
    ),
    "stable norm, cycle count, buffers": (
        lambda p, o: o.enableStableNorm(True).logCycleCount(True).updatableNamedBuffers(["running_mean"]),
        {"popart_options": {"decomposeGradSum": True, "enableStableNorm": True,
                            "instrumentWithHardwareCycleCounter": True, "updatableNamedBuffers": ["running_mean"]}},
    ),
    "autoRoundNumIPUs": (lambda p, o: o.autoRoundNumIPUs(True), {"auto_round_num_ipus": True}),
    "outputMode": (lambda p, o: o.outputMode(p.OutputMode.Sum), {"output_mode": "sum"}),
    "saveInitializersToFile, one file": (
        lambda p, o: o._Popart.set("saveInitializersToFile", "weights.onnx"),
        {"save_initializers_to_file": "weights.onnx"},
    ),
    "Jit.traceModel(False)": (lambda p, o: o.Jit.traceModel(False), {}),
}


@pytest.mark.parametrize("name", sorted(SUPPORTED))
def test_each_method_imports_as_its_setting_and_rebuilds(hand_written, name):
    call, expected = SUPPORTED[name]
    call(doubles.poptorch, hand_written)
    config = IPUConfig.from_options(training=hand_written)
    assert {setting: getattr(config, setting) for setting in expected} == expected
    assert comparable(config.to_options()) == _resolved(hand_written, doubles.poptorch.OutputMode.Final)


def test_a_build_that_leaves_poptorchs_defaults_imports_as_nulls(sdk):
    opts = doubles.poptorch.Options()  # no memory proportion, no optimizer location, no stochastic rounding...
    config = IPUConfig.from_options(training=opts)
    nulls = ("matmul_proportion", "optimizer_state_offchip", "stochastic_rounding", "recomputation_mode",
             "popart_patterns", "engine_options", "connection_type", "broadcast_buffers")
    assert {name: getattr(config, name) for name in nulls} == dict.fromkeys(nulls)
    assert comparable(config.to_options()) == _resolved(opts, doubles.poptorch.OutputMode.Final)
    plan = str(config.options_plan())
    for method in ("setAvailableMemoryProportion", "setOptimizerLocation", "enableStochasticRounding", "setPatterns"):
        assert method not in plan


# --- refusals: each names the method ------------------------------------------------------------------------------

REFUSED = {
    "logDir": (lambda p, o: o.logDir("/logs"), {"logDir (log_dir)": "'/logs' given: where one run writes its logs"}),
    "useIpuId": (lambda p, o: o.useIpuId(3), {"useIpuId (ipu_id)": "3 given: picks a device of one machine"}),
    "useIpuModel": (
        lambda p, o: o.useIpuModel(True),
        {"useIpuModel (use_model)": "True given: picks the IPU Model simulator of one machine"},
    ),
    "modelName": (
        lambda p, o: o.modelName("bert"), {"modelName (model_name)": "'bert' given: names the reports of one run"}
    ),
    "maxRepeatLogs": (
        lambda p, o: o.maxRepeatLogs(2), {"maxRepeatLogs (max_repeat_logs)": "2 given: how one run logs"}
    ),
    "showCompilationProgressBar": (
        lambda p, o: o.showCompilationProgressBar(False),
        {"showCompilationProgressBar (compilation_progress_bar_fn)": "'not set' given: what one run displays"},
    ),
    "Distributed.configureProcessId": (
        lambda p, o: o.Distributed.configureProcessId(1, 2),
        {"Distributed.configureProcessId (distributed_process_id)":
            "1 given: the processes of one launch, which poprun sets",
         "Distributed.configureProcessId (num_distributed_processes)":
            "2 given: the processes of one launch, which poprun sets"},
    ),
    "anchorTensor": (
        lambda p, o: o.anchorTensor("grad", "Gradient___x"),
        {"anchorTensor (anchored_tensors)":
            "{'grad': ['Gradient___x', True, None, 1]} given: names tensors of one model's graph"},
    ),
    "source-location excludes": (
        lambda p, o: o.appendToLocationExcludes("my_framework"),
        {"sourceLocationExcludes": "['install/poptorch', 'site-packages/torch', 'site-packages/poptorch', "
                                   "'my_framework'] given: the debug information of one run"},
    ),
    "output every N": (
        lambda p, o: o.outputMode(p.OutputMode.EveryN, 5),
        {"outputMode (output_mode)": "1: `output_mode=1` is an integer, expected string, or null.",
         "outputMode (output_return_period)":
            "5 given: OutputMode.EveryN: the settings give all, sum, final or default"},
    ),
    "a stage on a negative IPU": (
        lambda p, o: o.setExecutionStrategy(p.PipelinedExecution(p.Stage("embeddings"), p.Stage("encoder").ipu(-1))),
        {"setExecutionStrategy": "PipelinedExecution: stage 1: `ipu` must be an integer >= 0"},
    ),
    "a null for PopART": (
        lambda p, o: o._Popart.set("customCodelets", None),
        {"customCodelets": "None: values must be what PopART options take: booleans, finite numbers, strings, "
                           "unsigned integers, and lists or objects of strings and unsigned integers"},
    ),
    "a set for PopART": (
        lambda p, o: o._Popart.set("customCodelets", {"a.gp"}),
        {"customCodelets": "{'a.gp'}: values must be what PopART options take: booleans, finite numbers, strings, "
                           "unsigned integers, and lists or objects of strings and unsigned integers"},
    ),
    "a gap in memory proportions": (
        lambda p, o: o.setAvailableMemoryProportion({"IPU0": 0.1, "IPU2": 0.1}),
        {"setAvailableMemoryProportion (available_memory_proportion)":
         "{IPU0: 0.1, IPU2: 0.1}: the settings give IPU0 to IPU<n-1>, n >= 1"},
    ),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_what_no_config_rebuilds_is_refused_naming_the_method(hand_written, name):
    change, expected = REFUSED[name]
    change(doubles.poptorch, hand_written)
    with pytest.raises(UnsupportedOptionsError) as raised:
        IPUConfig.from_options(training=hand_written)
    assert raised.value.options == expected
    for option in expected:
        assert f"`{option}`" in str(raised.value)


def test_every_refused_option_is_named_at_once(hand_written):
    hand_written.logDir("/logs").useIpuId(1)
    with pytest.raises(UnsupportedOptionsError) as raised:
        IPUConfig.from_options(training=hand_written)
    assert str(raised.value) == (
        "No IPU config rebuilds these options: `logDir (log_dir)` ('/logs' given: where one run writes its logs); "
        "`useIpuId (ipu_id)` (1 given: picks a device of one machine)."
    )
    assert isinstance(raised.value, ValueError)
    assert pickle.loads(pickle.dumps(raised.value)).options == raised.value.options


def test_refusals_say_which_build_when_both_are_given(sdk):
    training = hand_written_build(doubles.poptorch, doubles.popart)
    inference = doubles.poptorch.Options().logDir("/inference-logs")
    with pytest.raises(UnsupportedOptionsError) as raised:
        IPUConfig.from_options(training=training, inference=inference)
    refusal = raised.value.options["logDir (log_dir) (inference)"]
    assert refusal == "'/inference-logs' given: where one run writes its logs"


def test_overrides_replace_what_the_options_say(hand_written):
    config = IPUConfig.from_options(training=hand_written, layers_per_ipu=[1, 2, 3, 4], inference_replication_factor=8)
    assert (config.layers_per_ipu, config.inference_replication_factor) == ([1, 2, 3, 4], 8)


def test_settings_read_from_the_options_that_disagree_are_refused(hand_written):
    hand_written._Popart.set("accumulateOuterFragmentSettings.excludedVirtualGraphs", ["7"])
    with pytest.raises(UnsupportedOptionsError) as raised:
        IPUConfig.from_options(training=hand_written)
    assert list(raised.value.options) == ["setting `accumulate_outer_fragment_excluded_virtual_graphs`"]
    assert "0 to 3 as `ipus_per_replica=4`" in str(raised.value)


def test_a_bad_override_is_the_callers_error(hand_written):
    with pytest.raises(UnknownSettingError, match="replicaton_factor"):
        IPUConfig.from_options(training=hand_written, replicaton_factor=2)
    with pytest.raises(IncompatibleSettingsError, match="layers_per_ipu"):
        IPUConfig.from_options(training=hand_written, layers_per_ipu=[1, 2])


def test_the_core_imports_too(hand_written):
    config = PlainIPUConfig.from_options(training=hand_written)
    assert {name: getattr(config, name) for name in HAND_WRITTEN_SETTINGS} == HAND_WRITTEN_SETTINGS
    assert comparable(config.options_plan().build()) == _resolved(hand_written, doubles.poptorch.OutputMode.Final)


# --- what the import says, word for word --------------------------------------------------------------------------

def test_options_are_named_when_missing(sdk):
    with pytest.raises(TypeError) as raised:
        IPUConfig.from_options()
    assert str(raised.value) == "from_options() needs `training` or `inference` options (poptorch.Options), or both"


def test_a_popart_options_override_replaces_what_the_options_hold(hand_written):
    config = IPUConfig.from_options(training=hand_written, popart_options={"decomposeGradSum": True})
    assert config.popart_options == {"decomposeGradSum": True}
    with pytest.raises(UnsupportedOptionsError) as raised:
        IPUConfig.from_options(training=hand_written, popart_options={})
    assert raised.value.options == {"decomposeGradSum": "True given, 'not set' rebuilt"}


def _import_dropping_in_both_builds():
    poptorch = doubles.poptorch
    training = poptorch.Options().setAvailableMemoryProportion({"IPU0": 0.1, "IPU1": 0.2, "IPU2": 0.3})
    inference = poptorch.Options().setAvailableMemoryProportion({"IPU0": 0.4, "IPU1": 0.5})
    with pytest.warns(UserWarning) as warned:
        config = IPUConfig.from_options(training=training, inference=inference, ipus_per_replica=2,
                                        inference_ipus_per_replica=1)
    return config, warned


def test_what_is_dropped_is_said_once_for_both_builds(sdk):
    config, warned = _import_dropping_in_both_builds()
    assert [str(warning.message) for warning in warned] == [
        "from_options() could not read, and dropped: the inference memory proportions of IPU1, beyond the 1 IPUs per "
        "replica given; the training memory proportions of IPU2, beyond the 2 IPUs per replica given"
    ]
    assert (config.matmul_proportion, config.inference_matmul_proportion) == ([0.1, 0.2], 0.4)


@NOT_UNDER_MUTMUT
def test_what_is_dropped_is_said_at_the_callers_line(sdk):
    _, warned = _import_dropping_in_both_builds()
    assert warned[0].filename == __file__


def test_a_reader_refusal_says_which_build(sdk):
    training = doubles.poptorch.Options()
    inference = doubles.poptorch.Options().setAvailableMemoryProportion({"IPU0": 0.1, "IPU2": 0.1})
    with pytest.raises(UnsupportedOptionsError) as raised:
        IPUConfig.from_options(training=training, inference=inference)
    assert raised.value.options["setAvailableMemoryProportion (available_memory_proportion) (inference)"] == (
        "{IPU0: 0.1, IPU2: 0.1}: the settings give IPU0 to IPU<n-1>, n >= 1"
    )


def test_sharding_read_from_the_build_with_replicas(sdk):
    poptorch = doubles.poptorch

    def build(replicas, sharded):
        opts = poptorch.Options().replicationFactor(replicas)
        opts.TensorLocations.setOptimizerLocation(
            poptorch.TensorLocationSettings().useOnChipStorage(True).useReplicatedTensorSharding(sharded))
        return opts

    training, inference = build(1, False), build(2, True)
    config = IPUConfig.from_options(training=training, inference=inference)
    assert (config.replicated_tensor_sharding, config.optimizer_location) == (True, None)
    config = IPUConfig.from_options(training=inference, inference=training)
    assert (config.replicated_tensor_sharding, config.optimizer_location) == (True, None)


def test_an_inference_build_without_memory_proportions_imports_alone(sdk):
    config = IPUConfig.from_options(inference=doubles.poptorch.Options())
    assert (config.matmul_proportion, config.inference_matmul_proportion) == (None, None)


def test_the_import_rebuilds_for_one_host_inside_a_poprun_launch(poprun):
    environment = {"POPDIST_NUM_TOTAL_REPLICAS": "4", "POPDIST_NUM_IPUS_PER_REPLICA": "1",
                   "POPDIST_NUM_LOCAL_REPLICAS": "2", "POPDIST_UNIFORM_REPLICAS_PER_INSTANCE": "1",
                   "POPDIST_REPLICA_INDEX_OFFSET": "2", "POPDIST_LOCAL_INSTANCE_INDEX": "0",
                   "OMPI_COMM_WORLD_SIZE": "2", "OMPI_COMM_WORLD_RANK": "1"}
    with poprun(environment):
        built = hand_written_build(doubles.poptorch, doubles.popart)
        config = IPUConfig.from_options(training=built)
        rebuilt = config.options_plan(popdist=False).build()
        assert comparable(rebuilt) == _resolved(built, doubles.poptorch.OutputMode.Final)


def test_each_build_is_compared_with_its_own_rebuild(sdk):
    training = doubles.poptorch.Options()  # no stochastic rounding call
    inference = doubles.poptorch.Options()
    inference.Precision.enableStochasticRounding(True)
    config = IPUConfig.from_options(training=training, inference=inference)
    rounding = (config.stochastic_rounding, config.inference_stochastic_rounding)
    assert (*rounding, config.popart_options) == (None, True, {})


def test_a_difference_with_no_reason_says_what_was_given_and_rebuilt(sdk):
    inference = doubles.poptorch.Options()
    inference.Training.gradientAccumulation(4)  # an inference build never makes this call
    with pytest.raises(UnsupportedOptionsError) as raised:
        IPUConfig.from_options(inference=inference)
    assert raised.value.options == {"Training.gradientAccumulation (gradient_accumulation)": "4 given, 1 rebuilt"}


def test_a_fresh_initializer_file_does_not_hide_what_follows_it(sdk):
    opts = doubles.poptorch.Options().useIpuModel(True)
    opts._Popart.set("saveInitializersToFile", os.path.join(tempfile.gettempdir(), "tmp_initializers"))
    with pytest.raises(UnsupportedOptionsError) as raised:
        IPUConfig.from_options(training=opts)
    assert list(raised.value.options) == ["useIpuModel (use_model)"]


def test_a_refused_popart_value_of_one_of_two_builds_names_that_build(sdk):
    inference = doubles.poptorch.Options()
    inference._Popart.set("customCodelets", None)
    with pytest.raises(UnsupportedOptionsError) as raised:
        IPUConfig.from_options(training=doubles.poptorch.Options(), inference=inference)
    assert list(raised.value.options) == ["customCodelets (inference)"]


def test_an_initializer_file_that_is_not_a_name_is_refused(sdk):
    opts = doubles.poptorch.Options()
    opts._Popart.set("saveInitializersToFile", 5)
    with pytest.raises(UnsupportedOptionsError) as raised:
        IPUConfig.from_options(training=opts)
    assert list(raised.value.options) == ["saveInitializersToFile"]


def test_a_strategy_no_setting_names_is_refused(sdk):
    class MyPipeline(doubles.poptorch.PipelinedExecution):
        """A strategy of the builder's own."""

    opts = doubles.poptorch.Options().setExecutionStrategy(MyPipeline())
    with pytest.raises(UnsupportedOptionsError) as raised:
        IPUConfig.from_options(training=opts)
    assert raised.value.options == {"setExecutionStrategy": "MyPipeline: the settings express PipelinedExecution, "
                                    "ShardedExecution, SerialPhasedExecution, ParallelPhasedExecution"}
