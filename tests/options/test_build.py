"""`options/build.py`: a config's settings to its options plan, call by call and in order (the rows' calls, the
calls that take several settings, the offline target, PopART's session options last), and the read-back of the
settings those composite calls write, on states written out.

The plans of whole configs against the option states they build: test_to_options.py, test_mappings.py."""

import pytest

from optimum_ipu_ext import PlainIPUConfig, UnsupportedOptionsError
from optimum_ipu_ext.options.build import (
    build_plan,
    read_memory_proportions,
    read_optimizer_location,
    shards_optimizer_state,
)
from optimum_ipu_ext.sdk.plan import Construct, OptionCall, Ref, TempFile
from optimum_ipu_ext.settings.mode import Mode

TRAINING, INFERENCE = Mode.of(False), Mode.of(True)

# optimum-graphcore 0.7.1's build of a 2-IPU pipeline, as the defaults make it: first the calls of the rows, then
# those of several settings each, then PopART's session options
POPART_DEFAULTS = [
    OptionCall("_Popart.set", ("saveInitializersToFile", TempFile())),
    OptionCall("_Popart.set", ("disableGradAccumulationTensorStreams", True)),
    OptionCall("_Popart.set", ("accumulateOuterFragmentSettings.schedule",
                               Ref("popart.AccumulateOuterFragmentSchedule.OverlapMemoryOptimized", as_int=True))),
    OptionCall("_Popart.set", ("accumulateOuterFragmentSettings.excludedVirtualGraphs", ["0"])),
    OptionCall("_Popart.set", ("outlineThreshold", 10.0)),
    OptionCall("_Popart.set", ("subgraphCopyingStrategy",
                               Ref("popart.SubgraphCopyingStrategy.JustInTime", as_int=True))),
    OptionCall("_Popart.set", ("scheduleNonWeightUpdateGradientConsumersEarly", True)),
    OptionCall("_Popart.setPatterns", ({"TiedGather": True, "TiedGatherAccumulate": True,
                                        "UpdateInplacePrioritiesForIpu": True},)),
    OptionCall("_Popart.set", ("engineOptions", {"opt.useAutoloader": "true",
                                                 "target.syncReplicasIndependently": "true"})),
]
ON_CHIP_UNSHARDED = Construct("poptorch.TensorLocationSettings",
                              chain=(("useOnChipStorage", (True,)), ("useReplicatedTensorSharding", (False,))))
AUTO_INCREMENT = Ref("poptorch.AutoStage.AutoIncrement")
DEFAULT_TRAINING = [
    OptionCall("replicationFactor", (1,)),
    OptionCall("Training.gradientAccumulation", (1,)),
    OptionCall("Precision.setPartialsType", (Ref("torch.float16"),)),
    OptionCall("deviceIterations", (1,)),
    OptionCall("outputMode", (Ref("poptorch.OutputMode.Final"),)),
    OptionCall("autoRoundNumIPUs", (True,)),
    OptionCall("Training.accumulationAndReplicationReductionType", (Ref("poptorch.ReductionType.Mean"),)),
    OptionCall("Precision.enableStochasticRounding", (True,)),
    OptionCall("TensorLocations.setOptimizerLocation", (ON_CHIP_UNSHARDED,)),
    OptionCall("setExecutionStrategy", (Construct("poptorch.PipelinedExecution", (AUTO_INCREMENT,)),)),
    OptionCall("setAvailableMemoryProportion", ({"IPU0": 0.2, "IPU1": 0.2},)),
    *POPART_DEFAULTS,
]
DEFAULT_INFERENCE = [
    OptionCall("replicationFactor", (1,)),
    OptionCall("Precision.setPartialsType", (Ref("torch.float16"),)),
    OptionCall("deviceIterations", (1,)),
    OptionCall("autoRoundNumIPUs", (True,)),
    OptionCall("outputMode", (Ref("poptorch.OutputMode.All"),)),
    OptionCall("Precision.enableStochasticRounding", (False,)),
    OptionCall("TensorLocations.setOptimizerLocation", (ON_CHIP_UNSHARDED,)),
    OptionCall("setExecutionStrategy", (Construct("poptorch.ShardedExecution", (AUTO_INCREMENT,)),)),
    OptionCall("setAvailableMemoryProportion", ({"IPU0": 0.2, "IPU1": 0.2},)),
    *POPART_DEFAULTS,
]


def settings(**values):
    return vars(PlainIPUConfig(**dict({"layers_per_ipu": [1, 1]}, **values)))


def calls(method, plan):
    return [call for call in plan.calls if call.method == method]


def test_the_defaults_make_optimum_graphcore_s_calls_in_order():
    assert list(build_plan(settings()).calls) == DEFAULT_TRAINING
    assert list(build_plan(settings(), for_inference=True).calls) == DEFAULT_INFERENCE
    assert build_plan(settings()).options == Construct("poptorch.Options")
    assert (build_plan(settings()).compile_only, build_plan(settings()).notes) == (False, ())


def test_an_offline_target_comes_before_popart_s_options_and_popart_options_come_last():
    plan = build_plan(settings(popart_options={"x": 1, "y": "z"}), compile_only=True)
    assert list(plan.calls) == [*DEFAULT_TRAINING[:11], OptionCall("useOfflineIpuTarget"), *POPART_DEFAULTS,
                                OptionCall("_Popart.set", ("x", 1)), OptionCall("_Popart.set", ("y", "z"))]
    assert plan.compile_only


def test_a_null_setting_makes_no_call():
    plan = build_plan(settings(outline_threshold=None, matmul_proportion=None, optimizer_state_offchip=None,
                               execution_strategy=None))
    methods = [call.method for call in plan.calls]
    assert ("outlineThreshold",) not in [call.args[:1] for call in calls("_Popart.set", plan)]
    assert not {"setAvailableMemoryProportion", "TensorLocations.setOptimizerLocation",
                "setExecutionStrategy"} & set(methods)


def test_a_setting_with_a_call_and_a_key_passes_the_key_first():
    plan = build_plan(settings(recomputation_mode="pipeline"))
    assert calls("_Popart.set", plan)[1] == OptionCall(
        "_Popart.set", ("autoRecomputation", Ref("popart.RecomputationType.Pipeline", as_int=True)))


def test_the_encoder_on_the_cpu_for_generation_is_not_built():
    with pytest.raises(NotImplementedError, match="^execute_encoder_on_cpu_for_generation is not supported yet.$"):
        build_plan(settings(execute_encoder_on_cpu_for_generation=True))


# --- the calls of several settings --------------------------------------------------------------------------------


@pytest.mark.parametrize("values, location", [
    ({}, ON_CHIP_UNSHARDED),
    ({"optimizer_state_offchip": True, "replicated_tensor_sharding": True},  # one replica shards nothing
     Construct("poptorch.TensorLocationSettings",
               chain=(("useOnChipStorage", (False,)), ("useReplicatedTensorSharding", (False,))))),
    ({"replicated_tensor_sharding": True, "replication_factor": 2},
     Construct("poptorch.TensorLocationSettings",
               chain=(("useOnChipStorage", (True,)), ("useReplicatedTensorSharding", (True,))))),
])
def test_the_optimizer_location_shards_only_over_replicas(values, location):
    plan = build_plan(settings(**values))
    assert plan.argument("TensorLocations.setOptimizerLocation") == location
    assert shards_optimizer_state(plan) is location.chain[1][1][0]


def test_no_optimizer_location_shards_nothing():
    assert not shards_optimizer_state(build_plan(settings(optimizer_state_offchip=None)))


@pytest.mark.parametrize("values, for_inference, proportions", [
    ({"matmul_proportion": 0.3}, False, {"IPU0": 0.3, "IPU1": 0.3}),
    ({"matmul_proportion": [0.1, 0.2]}, False, {"IPU0": 0.1, "IPU1": 0.2}),
    ({"matmul_proportion": [0.1, 0.2], "inference_layers_per_ipu": [1, 0, 1], "inference_matmul_proportion": 0.5},
     True, {"IPU0": 0.5, "IPU1": 0.5, "IPU2": 0.5}),
])
def test_each_ipu_of_the_pipeline_has_its_memory_proportion(values, for_inference, proportions):
    plan = build_plan(settings(**values), for_inference=for_inference)
    assert plan.argument("setAvailableMemoryProportion") == proportions


STAGES = [{"blocks": ["a", "b"], "ipu": 0}, {"blocks": ["c"]}]
BUILT_STAGES = (Construct("poptorch.Stage", ("a", "b"), chain=(("ipu", (0,)),)), Construct("poptorch.Stage", ("c",)))


@pytest.mark.parametrize("values, strategy", [
    ({"auto_stage": None}, Construct("poptorch.PipelinedExecution")),
    ({"auto_stage": "same_as_ipu"}, Construct("poptorch.PipelinedExecution", (Ref("poptorch.AutoStage.SameAsIpu"),))),
    ({"execution_stages": STAGES}, Construct("poptorch.PipelinedExecution", BUILT_STAGES)),
    ({"execution_strategy": "serial_phased", "execution_phases": [STAGES[:1], STAGES[1:]],
      "separate_backward_phase": True, "tensors_liveness": "off_chip_after_fwd"},
     Construct("poptorch.SerialPhasedExecution",
               (Construct("poptorch.Phase", BUILT_STAGES[:1]), Construct("poptorch.Phase", BUILT_STAGES[1:])),
               chain=(("useSeparateBackwardPhase", (True,)),
                      ("setTensorsLiveness", (Ref("poptorch.Liveness.OffChipAfterFwd"),))))),
    ({"execution_strategy": "parallel_phased", "execution_phases": [STAGES], "tensors_liveness": "always_live"},
     Construct("poptorch.ParallelPhasedExecution", (Construct("poptorch.Phase", BUILT_STAGES),),
               chain=(("sendTensorsOffChipAfterFwd", (False,)),))),
])
def test_the_execution_strategy_of_its_settings(values, strategy):
    assert build_plan(settings(**values)).argument("setExecutionStrategy") == strategy


# --- the settings a composite call's state holds, read back ----------------------------------------------------------

ON_CHIP = {"onChip": 1, "useReplicatedTensorSharding": 0}
SHARDED_OFF_CHIP = {"onChip": 0, "useReplicatedTensorSharding": 1}


@pytest.mark.parametrize("states, values", [
    ([{"location_optimizer": ON_CHIP, "replication_factor": 1}],
     {"optimizer_state_offchip": False, "optimizer_location": None}),
    ([{"location_optimizer": SHARDED_OFF_CHIP, "replication_factor": 4}],
     {"optimizer_state_offchip": True, "optimizer_location": None, "replicated_tensor_sharding": True}),
    ([{"location_optimizer": ON_CHIP, "replication_factor": 2},
      {"location_optimizer": ON_CHIP, "replication_factor": 1}],
     {"optimizer_state_offchip": False, "optimizer_location": None, "replicated_tensor_sharding": False}),
    # what the two settings cannot write: their row `optimizer_location` holds it
    ([{"location_optimizer": {"onChip": 0}, "replication_factor": 1}],
     {"optimizer_state_offchip": None, "replicated_tensor_sharding": None}),
    ([{"location_optimizer": SHARDED_OFF_CHIP, "replication_factor": 1}],
     {"optimizer_state_offchip": None, "replicated_tensor_sharding": None}),
    ([{"replication_factor": 1}], {"optimizer_state_offchip": None, "replicated_tensor_sharding": None}),
])
def test_the_optimizer_settings_read_off_the_builds_locations(states, values):
    assert read_optimizer_location(states) == values


@pytest.mark.parametrize("state, mode, ipus, values", [
    ({}, TRAINING, None, {"matmul_proportion": None}),
    ({"available_memory_proportion": {}}, INFERENCE, 2,
     {"matmul_proportion": None, "inference_matmul_proportion": None}),
    ({"available_memory_proportion": {0: 0.3, 1: 0.3}}, TRAINING, None,
     {"ipus_per_replica": 2, "matmul_proportion": 0.3}),
    ({"available_memory_proportion": {0: 0.1, 1: 0.2, 2: 0.2}}, INFERENCE, 2,
     {"inference_ipus_per_replica": 2, "inference_matmul_proportion": [0.1, 0.2]}),
    ({"available_memory_proportion": {0: 0.0, 1: 0.0}}, INFERENCE, None,  # 0 alone would mean "as in training"
     {"inference_ipus_per_replica": 2, "inference_matmul_proportion": [0.0, 0.0]}),
])
def test_the_memory_proportions_read_off_a_state(state, mode, ipus, values):
    assert read_memory_proportions(state, mode, ipus) == values


@pytest.mark.parametrize("proportions, ipus", [({1: 0.1}, None), ({0: 0.1, 2: 0.1}, None), ({0: 0.1}, 2)])
def test_memory_proportions_that_skip_an_ipu_are_refused(proportions, ipus):
    with pytest.raises(UnsupportedOptionsError) as raised:
        read_memory_proportions({"available_memory_proportion": proportions}, TRAINING, ipus)
    names = ", ".join(f"IPU{index}: {value!r}" for index, value in sorted(proportions.items()))
    assert raised.value.options == {
        "available_memory_proportion": f"{{{names}}}: the settings give IPU0 to IPU<n-1>, n >= 1"}
