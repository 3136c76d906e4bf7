"""The recorder (`optimum_ipu_ext.recorder`) keeps the option state poptorch 3.4 keeps: for every supported call, its
state equals the strict doubles' (which follow poptorch 3.4), and for a representative subset, and the calls the
doubles do not have, the state poptorch 3.4 leaves, written out below. Wrong calls fail as in poptorch."""

import contextlib
import enum
import subprocess
import sys

import pytest
import torch

from optimum_ipu_ext import PlainIPUConfig
from optimum_ipu_ext.recorder import sdk_modules
from support import doubles
from support.doubles import installed
from support.enum_values import POPART_ENUM_VALUES, POPTORCH_ENUM_VALUES

REMOVED = object()  # a key the call takes out of the state


@contextlib.contextmanager
def stack(name):
    """The `poptorch` module of the recorder or of the doubles, in `sys.modules` for the block (popart too)."""
    if name == "recorder":
        with sdk_modules() as recorded:
            assert recorded, "a poptorch left in sys.modules would hide the recorder"
            yield sys.modules["poptorch"]
    else:
        with installed():
            yield sys.modules["poptorch"]


def plain(value):
    """Option state as comparable data: enum members by value, sequences as lists, other objects by type name."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    return type(value).__name__


def typed(value):
    """`value` with each scalar paired with its type: `True` and `1` (or `0.0` and `0`) compare unequal."""
    if isinstance(value, dict):
        return {key: typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [typed(item) for item in value]
    return type(value).__name__, value


def state(opts, poptorch):
    """`toDict()` as `trainingModel` sees it (the default output mode resolved to `Final`), plus, under `"<python>"`,
    the state poptorch 3.4 keeps outside it: the execution strategy (class, `AutoStage`, and each block's
    [stage id, phase id, IPU]), the relaxed optimizer checks, the module namescope, the source-location excludes."""
    resolved = opts.clone()
    if resolved.defaultOutputMode():
        resolved.outputMode(poptorch.OutputMode.Final)
    data = plain(resolved.toDict())
    strategy = opts._execution_strategy
    data["<python>"] = {
        "strategy": type(strategy).__name__,
        "auto_stage": plain(getattr(strategy._stages_manager, "_auto_stage", None)),
        "stages": {
            block: [stage._stage_id, getattr(stage, "_phase_id", -1), stage._ipu]
            for block, stage in strategy._block_map.items()
        },
        "relax_optimizer_checks": opts._relax_optimizer_checks,
        "module_namescope": opts._module_namescope_enabled,
        "source_location_excludes": list(opts._source_location_excludes),
    }
    return data


def applied(name, call):
    """The state of fresh options after `call` (Python statements on `opts`), on the recorder or the doubles."""
    with stack(name) as poptorch:
        opts = poptorch.Options()
        namespace = {"opts": opts, "poptorch": poptorch, "popart": sys.modules["popart"], "torch": torch,
                     "TLS": poptorch.TensorLocationSettings}
        exec(call, namespace)
        return state(opts, poptorch)


# --- every supported call: the recorder's state == the doubles' -------------------------------------------------

CALLS = [
    "opts.autoRoundNumIPUs()",
    "opts.autoRoundNumIPUs(False)",
    "opts.deviceIterations(4)",
    "opts.replicationFactor(4)",
    "opts.replication_factor = 8",
    "opts.replicationFactor(4); opts.inputReplicaGrouping(2, poptorch.CommGroupType.Orthogonal)",
    "opts.replicationFactor(4); opts.inputReplicaGrouping(4, poptorch.CommGroupType.NoGrouping)",
    "opts.broadcastBuffers(False)",
    "opts.broadcastBuffers()",
    "opts.logDir('/logs')",
    "opts.maxRepeatLogs(None)",
    "opts.maxRepeatLogs(10)",
    "opts.modelName('bert')",
    "opts.useIpuModel(True)",
    "opts.useIpuId(3)",
    "opts.useOfflineIpuTarget()",
    "opts.useOfflineIpuTarget(21)",
    "opts.connectionType(poptorch.ConnectionType.OnDemand)",
    "opts.syncPattern(poptorch.SyncPattern.ReplicaAndLadder)",
    "opts.outputMode(poptorch.OutputMode.All)",
    "opts.outputMode(poptorch.OutputMode.Sum)",
    "opts.outputMode(poptorch.OutputMode.Final)",
    "opts.outputMode(poptorch.OutputMode.EveryN, 5)",
    "opts.outputMode(poptorch.OutputMode.All, output_return_period=3)",
    "opts.randomSeed(0)",
    "opts.randomSeed(1234)",
    "opts.setAvailableMemoryProportion({'IPU0': 0.1, 'IPU3': 0.3})",
    "opts.setExecutionStrategy(poptorch.PipelinedExecution())",
    "opts.setExecutionStrategy(poptorch.PipelinedExecution(poptorch.AutoStage.AutoIncrement))",
    "opts.setExecutionStrategy(poptorch.PipelinedExecution('0', ['1', '2'], poptorch.Stage('3', '4').ipu(1)))",
    "opts.setExecutionStrategy(poptorch.ShardedExecution(poptorch.AutoStage.SameAsIpu))",
    "opts.setExecutionStrategy(poptorch.ShardedExecution(poptorch.Stage('a').ipu(0), poptorch.Stage('b').ipu(0)))",
    "opts.enableExecutableCaching('exec')",
    "opts.enableExecutableCaching(None)",
    "opts.enableStableNorm(True)",
    "opts.enableSyntheticData(True)",
    "opts.enableSyntheticData(False)",
    "opts.logCycleCount(True)",
    "opts.updatableNamedBuffers(['running_mean'])",
    "opts.relaxOptimizerAttributesChecks()",
    "opts.relaxOptimizerAttributesChecks(False)",
    "opts.showCompilationProgressBar(False)",
    "opts.disableModuleNamescope()",
    "opts.sourceLocationExcludes(['my_lib'])",
    "opts.appendToLocationExcludes('a', 'b')",
    "opts.anchorTensor('grad', 'Gradient___x', poptorch.OutputMode.EveryN, 2)",
    "opts.from_json('{\"replicationFactor\": 2, \"outputMode\": \"OutputMode.Sum\", \"_Popart.set\": [\"a\", 1]}')",
    "opts.Jit.traceModel(False)",
    "opts.Precision.enableFloatingPointExceptions(True)",
    "opts.Precision.enableStochasticRounding(True)",
    "opts.Precision.enableStochasticRounding(False)",
    "opts.Precision.setPartialsType(torch.half)",
    "opts.Precision.setPartialsType(torch.float16)",
    "opts.Precision.setPartialsType(torch.float)",
    "opts.Precision.setPartialsType(torch.float32)",
    "opts.Training.gradientAccumulation(16)",
    "opts.Training.gradient_accumulation = 8",
    "opts.Training.accumulationAndReplicationReductionType(poptorch.ReductionType.Sum)",
    "opts.Training.setMeanAccumulationAndReplicationReductionStrategy(poptorch.MeanReductionStrategy.Running)",
    "opts.Training.setAutomaticLossScaling(True)",
    "opts.Training.setConvolutionDithering(True)",
    "opts.Distributed.disable()",
    "opts.Distributed.configureProcessId(1, 4)",
    "opts.Distributed.setEnvVarNames('NUM_PROCESSES', 'PROCESS_ID')",
    "opts.TensorLocations.numIOTiles(64)",
    "opts.TensorLocations.setActivationLocation(TLS().useOnChipStorage(False))",
    "opts.TensorLocations.setWeightLocation(TLS().useIOTilesToLoad().minElementsForOffChip(128))",
    "opts.TensorLocations.setOptimizerLocation(TLS().useOnChipStorage(True).useReplicatedTensorSharding(True)"
    ".minElementsForReplicatedTensorSharding(1024))",
    "opts.TensorLocations.setOptimizerLocation(TLS().useOnChipStorage(False).useOnChipStorage(None))",
    "opts.TensorLocations.setAccumulatorLocation(TLS().useIOTilesToStore(False).useReplicatedTensorSharding())",
    "opts._Popart.set('autoRecomputation', int(popart.RecomputationType.RecomputeAll))",
    "opts._Popart.set('accumulateOuterFragmentSettings.excludedVirtualGraphs', ['0'])",
    "opts._Popart.setEngineOptions({'opt.useAutoloader': 'true'})",
    "opts._Popart.setPatterns({'TiedGather': True})",
    "opts._Popart.setPatterns({'TiedGather': False}, 3)",
    "opts.setExecutionStrategy(poptorch.SerialPhasedExecution(poptorch.Phase(poptorch.Stage('0').ipu(0), "
    "poptorch.Stage('1').ipu(1)), ['2', '3']).setTensorsLiveness(poptorch.Liveness.OffChipAfterEachPhase)"
    ".useSeparateBackwardPhase())",
    "opts.setExecutionStrategy(poptorch.ParallelPhasedExecution(['0'], ['1']).sendTensorsOffChipAfterFwd())",
    "strategy = poptorch.ParallelPhasedExecution(poptorch.Phase(poptorch.Stage('a'), poptorch.Stage('b')), "
    "poptorch.Phase(poptorch.Stage('c'), poptorch.Stage('d'))); strategy.phase(0).ipus(0, 2); "
    "strategy.phase(1).ipus(1, 3); opts.setExecutionStrategy(strategy)",
]


@pytest.mark.parametrize("call", CALLS)
def test_the_recorders_state_is_the_doubles(call):
    assert typed(applied("recorder", call)) == typed(applied("doubles", call))


def test_a_call_the_table_misses_changes_the_state():
    """The comparison can fail: two different calls leave different states, and a flag is not its int."""
    assert applied("recorder", "opts.randomSeed(0)") != applied("doubles", "opts.randomSeed(1)")
    assert typed({"onChip": 1}) != typed({"onChip": True})


# --- poptorch 3.4's state, written out --------------------------------------------------------------------------

DEFAULT_STATE = {
    "execution_mode": 0,
    "instrumentWithHardwareCycleCounter": False,
    "rearrangeAnchorsOnHost": False,
    "replication_factor": 1,
    "input_group_size": 1,
    "input_cgt": 1,
    "broadcast_buffers": True,
    "device_iterations": 1,
    "log_dir": ".",
    "max_repeat_logs": 4,
    "auto_round_num_ipus": False,
    "anchored_tensors": {},
    "output_mode": 0,
    "output_return_period": 1,
    "connection_type": 0,
    "sync_pattern": 0,
    "available_memory_proportion": {},
    "gradient_accumulation": 1,
    "accumulation_and_replication_reduction_type": 1,
    "meanAccumulationAndReplicationReductionStrategy": 1,
    "num_distributed_processes": 1,
    "distributed_process_id": 0,
    "ipuof_configs": {},
    "compilation_progress_bar_fn": "ProgressBar",
    "<python>": {
        "strategy": "PipelinedExecution",
        "auto_stage": 0,
        "stages": {},
        "relax_optimizer_checks": False,
        "module_namescope": True,
        "source_location_excludes": ["install/poptorch", "site-packages/torch", "site-packages/poptorch"],
    },
}


def python(**changes):
    return {"<python>": {**DEFAULT_STATE["<python>"], **changes}}


# call: the keys of DEFAULT_STATE it changes (REMOVED: takes out), from poptorch 3.4's python/options.py
EXPECTED_CHANGES = {
    "opts.replicationFactor(4)": {"replication_factor": 4},
    "opts.randomSeed(0)": {"random_seed": 0},
    "opts.enableExecutableCaching('exec')": {"cachePath": "exec", "enableEngineCaching": True},
    "opts.enableExecutableCaching(None)": {"enableEngineCaching": False},
    "opts.outputMode(poptorch.OutputMode.EveryN, 5)": {"output_mode": 1, "output_return_period": 5},
    "opts.outputMode(poptorch.OutputMode.All, output_return_period=3)": {"output_mode": 2, "output_return_period": 3},
    "opts.maxRepeatLogs(None)": {"max_repeat_logs": (1 << 64) - 1},
    "opts.useOfflineIpuTarget()": {"connection_type": 2, "ipu_version": 2},
    "opts.replicationFactor(4); opts.inputReplicaGrouping(2, poptorch.CommGroupType.Orthogonal)":
        {"replication_factor": 4, "input_group_size": 2, "input_cgt": 2},
    "opts.setAvailableMemoryProportion({'IPU0': 0.1, 'IPU3': 0.3})": {"available_memory_proportion": {0: 0.1, 3: 0.3}},
    "opts.enableSyntheticData(True)": {"syntheticDataMode": 2},
    "opts.showCompilationProgressBar(False)": {"compilation_progress_bar_fn": REMOVED},
    "opts.Precision.setPartialsType(torch.float)":
        {"partialsTypeMatMuls": "float", "convolutionOptions": {"partialsType": "float"}},
    "opts.Precision.setPartialsType(torch.half)":
        {"partialsTypeMatMuls": "half", "convolutionOptions": {"partialsType": "half"}},
    "opts.Training.setMeanAccumulationAndReplicationReductionStrategy(poptorch.MeanReductionStrategy.Running)":
        {"meanAccumulationAndReplicationReductionStrategy": 0},
    "opts.Training.setAutomaticLossScaling(True)": {"automaticLossScalingSettings.enabled": True},
    "opts.Distributed.configureProcessId(1, 4)": {"distributed_process_id": 1, "num_distributed_processes": 4},
    "opts.TensorLocations.numIOTiles(32)": {"numIOTiles": 32},
    "opts.TensorLocations.setWeightLocation(TLS().useIOTilesToLoad().minElementsForOffChip(128))":
        {"location_weight": {"useIOTilesToLoad": 1, "minElementsForOffChip": 128}},
    "opts.TensorLocations.setOptimizerLocation(TLS().useOnChipStorage(False).useOnChipStorage(None))":
        {"location_optimizer": {}},
    "opts._Popart.setPatterns({'TiedGather': False}, 3)": {"patterns": {"TiedGather": False}, "patterns_level": 3},
    "opts.enableProfiling('prof')": {"engineOptions": {
        "debug.allowOutOfMemory": "true", "autoReport.directory": "prof", "autoReport.all": "true"}},
    "opts.Precision.halfFloatCasting(poptorch.HalfFloatCastingBehavior.HalfUpcastToFloat)": {},
    "opts.Precision.runningStatisticsAlwaysFloat(False)": {},
    "opts.relaxOptimizerAttributesChecks()": python(relax_optimizer_checks=True),
    "opts.disableModuleNamescope()": python(module_namescope=False),
    "opts.sourceLocationExcludes(['my_lib'])": python(source_location_excludes=["my_lib"]),
    "opts.setExecutionStrategy(poptorch.PipelinedExecution('0', ['1', '2'], poptorch.Stage('3', '4').ipu(1)))":
        python(auto_stage=None, stages={"0": [0, -1, None], "1": [1, -1, None], "2": [1, -1, None],
                                        "3": [2, -1, 1], "4": [2, -1, 1]}),
    "opts.setExecutionStrategy(poptorch.ShardedExecution(poptorch.AutoStage.AutoIncrement))":
        {"execution_mode": 1, **python(strategy="ShardedExecution", auto_stage=1)},
    "opts.setExecutionStrategy(poptorch.SerialPhasedExecution(poptorch.Phase(poptorch.Stage('0').ipu(0), "
    "poptorch.Stage('1').ipu(1)), ['2', '3']).setTensorsLiveness(poptorch.Liveness.OffChipAfterEachPhase)"
    ".useSeparateBackwardPhase())": {
        "execution_mode": 2, "separate_backward_phase": True, "tensors_liveness": 3, "serial_phases_execution": True,
        **python(strategy="SerialPhasedExecution", auto_stage=None,
                 stages={"0": [-1, 0, 0], "1": [-1, 0, 1], "2": [-1, 1, None], "3": [-1, 1, None]}),
    },
    "opts.setExecutionStrategy(poptorch.ParallelPhasedExecution(['0'], ['1']).sendTensorsOffChipAfterFwd())": {
        "execution_mode": 2, "separate_backward_phase": False, "tensors_liveness": 1, "serial_phases_execution": False,
        **python(strategy="ParallelPhasedExecution", auto_stage=None, stages={"0": [-1, 0, None], "1": [-1, 1, None]}),
    },
    "strategy = poptorch.ParallelPhasedExecution(poptorch.Phase(poptorch.Stage('a'), poptorch.Stage('b')), "
    "poptorch.Phase(poptorch.Stage('c'), poptorch.Stage('d'))); strategy.phase(0).ipus(0, 2); "
    "strategy.phase(1).ipus(1, 3); opts.setExecutionStrategy(strategy)": {
        "execution_mode": 2, "separate_backward_phase": False, "tensors_liveness": 0, "serial_phases_execution": False,
        **python(strategy="ParallelPhasedExecution", auto_stage=None,
                 stages={"a": [-1, 0, 0], "b": [-1, 0, 2], "c": [-1, 1, 1], "d": [-1, 1, 3]}),
    },
}


def expected_state(changes):
    expected = {**DEFAULT_STATE, **changes}
    return {key: value for key, value in expected.items() if value is not REMOVED}


# what the doubles leave out: methods that poptorch 3.4 keeps only for old builders
NOT_IN_THE_DOUBLES = {"opts.enableProfiling('prof')",
                      "opts.Precision.halfFloatCasting(poptorch.HalfFloatCastingBehavior.HalfUpcastToFloat)",
                      "opts.Precision.runningStatisticsAlwaysFloat(False)",
                      "opts.Precision.runningStatisticsAlwaysFloat(1)"}


def on_both(calls):
    """(stand-in, call) for each call, on the recorder and, where they have it, the doubles."""
    return [(name, call) for call in sorted(calls) for name in ("recorder", "doubles")
            if name == "recorder" or call not in NOT_IN_THE_DOUBLES]


@pytest.mark.parametrize("name, call", on_both(EXPECTED_CHANGES))
def test_the_state_is_poptorch_34s(name, call):
    assert typed(applied(name, call)) == typed(expected_state(EXPECTED_CHANGES[call]))


@pytest.mark.parametrize("name", ["recorder", "doubles"])
def test_fresh_options_hold_poptorch_34s_defaults(name):
    assert typed(applied(name, "")) == typed(DEFAULT_STATE)


@pytest.mark.parametrize(
    "variable, value, changes",
    [("POPTORCH_CACHE_DIR", "/cache", {"cachePath": "/cache", "enableEngineCaching": True}),
     ("POPTORCH_DEFAULT_OPTIONS", '{"deviceIterations": 4, "Training.gradientAccumulation": 8}',
      {"device_iterations": 4, "gradient_accumulation": 8})],
)
def test_options_read_poptorchs_environment_variables_when_made(monkeypatch, variable, value, changes):
    monkeypatch.setenv(variable, value)
    assert typed(applied("recorder", "")) == typed(applied("doubles", "")) == typed(expected_state(changes))


def test_the_options_of_a_clone_are_its_own():
    with stack("recorder") as poptorch:
        opts = poptorch.Options()
        clone = opts.clone()
        clone.replicationFactor(4)
        clone.TensorLocations.setOptimizerLocation(poptorch.TensorLocationSettings().useOnChipStorage(False))
        assert state(opts, poptorch) == DEFAULT_STATE


# --- wrong calls fail as in poptorch ----------------------------------------------------------------------------

WRONG_CALLS = {
    "opts.replicationFactor()": TypeError,
    "opts.replicationFactor(1, 2)": TypeError,
    "opts.replicationFactor(replicas=2)": TypeError,
    "opts.Training.gradientAccumulation()": TypeError,
    "opts.disableModuleNamescope(True)": TypeError,
    "TLS().useOnChipStorage(True, False)": TypeError,
    "opts.replicationFactors(2)": AttributeError,
    "opts.Training.setGradientAccumulation(2)": AttributeError,
    "opts.TensorLocations.setLocation(TLS())": AttributeError,
    "opts._Popart.setOption('a', 1)": AttributeError,
    "opts.replication": AttributeError,
    "opts._extra = 1": AttributeError,
    "opts.replicationFactor('2')": AssertionError,
    "opts.replication_factor = 2.0": AssertionError,
    "opts.randomSeed('1')": AssertionError,
    "opts.useIpuId('0')": AssertionError,
    "opts.connectionType(0)": AssertionError,
    "opts.syncPattern('Full')": AssertionError,
    "opts.outputMode(2)": AssertionError,
    "opts.outputMode(poptorch.OutputMode.EveryN)": AssertionError,
    "opts.setExecutionStrategy('pipelined')": AssertionError,
    "opts.setAvailableMemoryProportion({'0': 0.1})": AssertionError,
    "opts.toDict()": AssertionError,
    "opts.Training.accumulationAndReplicationReductionType(poptorch.ReductionType.NoReduction)": ValueError,
    "opts.Training.accumulationAndReplicationReductionType(1)": ValueError,
    "opts.Training.setMeanAccumulationAndReplicationReductionStrategy(0)": AssertionError,
    "opts.Precision.setPartialsType(torch.int32)": ValueError,
    "opts.Precision.enableFloatingPointExceptions(1)": AssertionError,
    "opts.Jit.traceModel(True)": ValueError,
    "opts.inputReplicaGrouping(1, poptorch.CommGroupType.All)": ValueError,
    "opts.inputReplicaGrouping(2, poptorch.CommGroupType.Consecutive)": ValueError,
    "opts.TensorLocations.numIOTiles(33)": AssertionError,
    "opts.TensorLocations.numIOTiles(200)": AssertionError,
    "opts.TensorLocations.setWeightLocation({'onChip': 0})": AssertionError,
    "TLS().useOnChipStorage(1)": AssertionError,
    "TLS().minElementsForOffChip(1.5)": AssertionError,
    "opts._Popart.setPatterns({'TiedGather': True}, '2')": AssertionError,
    "poptorch.Stage(0)": AssertionError,
    "poptorch.PipelinedExecution('a', poptorch.Stage('a'))": AssertionError,
    "poptorch.PipelinedExecution().stage('a')": AssertionError,
}


@pytest.mark.parametrize("call", sorted(WRONG_CALLS))
@pytest.mark.parametrize("name", ["recorder", "doubles"])
def test_a_wrong_call_fails_as_in_poptorch(name, call):
    with pytest.raises(WRONG_CALLS[call]) as raised:
        applied(name, call)
    assert type(raised.value) is WRONG_CALLS[call]  # not a subclass standing in for it


PHASED_WRONG_CALLS = {
    "poptorch.SerialPhasedExecution()": AssertionError,
    "poptorch.SerialPhasedExecution(['a'], ['a'])": AssertionError,
    "poptorch.SerialPhasedExecution(['a']).setTensorsLiveness(1)": AssertionError,
    "poptorch.ParallelPhasedExecution(['a']).useSeparateBackwardPhase(1)": AssertionError,
    "poptorch.ParallelPhasedExecution(['a']).phase(-1)": AssertionError,
    "poptorch.Phase(poptorch.Stage('a')).ipus(0, 1)": AssertionError,
    "poptorch.Phase('a', poptorch.Stage('b'))": AssertionError,
    "opts.Precision.runningStatisticsAlwaysFloat(1)": ValueError,
}


@pytest.mark.parametrize("name, call", on_both(PHASED_WRONG_CALLS))
def test_a_wrong_phased_call_fails_as_in_poptorch(name, call):
    with pytest.raises(PHASED_WRONG_CALLS[call]):
        applied(name, call)


def test_methods_keep_poptorchs_signatures():
    import inspect

    with stack("recorder") as poptorch:
        opts = poptorch.Options()
        assert str(inspect.signature(opts.outputMode)) == "(output_mode, output_return_period=None)"
        assert str(inspect.signature(opts.appendToLocationExcludes)) == "(*excludes)"
        assert str(inspect.signature(poptorch.TensorLocationSettings().useOnChipStorage)) == "(use=True)"
        assert opts.Training.gradientAccumulation.__name__ == "gradientAccumulation"
        assert opts.replicationFactor(2) is opts and opts.Training.gradientAccumulation(2) is opts.Training


# --- enums, written out ------------------------------------------------------------------------------------------



def members(enum_class):
    return {member.name: member.value for member in enum_class}


@pytest.mark.parametrize("module, values", [("poptorch.enums", POPTORCH_ENUM_VALUES), ("popart", POPART_ENUM_VALUES)])
def test_enum_members_and_values(module, values):
    with sdk_modules():
        recorded = sys.modules[module]
        assert {name: members(getattr(recorded, name)) for name in values} == values
        assert set(recorded.__all__) == set(values)
    for name in values:  # the doubles hold the same, for the enums they have
        doubled = getattr(getattr(doubles, module.split(".")[0]), name, None)
        assert doubled is None or members(doubled) == values[name]


def test_popart_enums_convert_to_int_but_equal_no_int():
    with sdk_modules():
        import popart
        import poptorch

        assert int(popart.RecomputationType.Pipeline) == 3 and popart.RecomputationType.Pipeline != 3
        assert poptorch.OutputMode.All == 2  # poptorch's are IntEnums


# --- popdist, as a process poprun did not launch -----------------------------------------------------------------

POPDIST_FUNCTIONS = ["isPopdistEnvSet", "getNumTotalReplicas", "getNumLocalReplicas", "getNumIpusPerReplica",
                     "getReplicaIndexOffset", "getNumInstances", "getInstanceIndex"]


def popdist_view():
    import popdist
    import popdist.poptorch
    import poptorch

    opts = popdist.poptorch.Options(ipus_per_replica=2)
    refused = []
    for call in (lambda: opts.replicationFactor(2), lambda: opts.useIpuId(1), opts.Distributed.disable,
                 lambda: opts.Distributed.configureProcessId(0, 1), lambda: opts.Distributed.setEnvVarNames("A", "B")):
        with pytest.raises(RuntimeError) as raised:
            call()
        refused.append(str(raised.value))
    return {name: getattr(popdist, name)() for name in POPDIST_FUNCTIONS}, state(opts, poptorch), refused


def test_popdist_is_that_of_a_process_poprun_did_not_launch():
    with sdk_modules():
        recorded = popdist_view()
    with installed(popdist_environment={}):
        assert recorded == popdist_view()
    functions, options_state, _ = recorded
    assert functions == {"isPopdistEnvSet": False, "getNumTotalReplicas": 1, "getNumLocalReplicas": 1,
                         "getNumIpusPerReplica": 1, "getReplicaIndexOffset": 0, "getNumInstances": 1,
                         "getInstanceIndex": 0}
    assert options_state == DEFAULT_STATE


# --- the modules in sys.modules, and what reads the options -----------------------------------------------------

def test_sdk_modules_takes_the_recorder_out_again_and_prefers_a_poptorch_already_imported():
    before = {name: sys.modules.get(name) for name in ("poptorch", "popart", "popdist", "popdist.poptorch")}
    with sdk_modules() as recorded:
        assert recorded and sys.modules["poptorch"].__name__ == "optimum_ipu_ext.recorder.poptorch"
    assert {name: sys.modules.get(name) for name in before} == before
    with installed(), sdk_modules() as recorded:
        assert not recorded and sys.modules["poptorch"] is doubles.poptorch


def a_build(poptorch, popart):
    opts = poptorch.Options()
    opts.replicationFactor(2)
    opts.Training.gradientAccumulation(16)
    opts.setExecutionStrategy(poptorch.PipelinedExecution(poptorch.AutoStage.SameAsIpu))
    opts.setAvailableMemoryProportion({"IPU0": 0.15, "IPU1": 0.25})
    opts.Precision.enableStochasticRounding(True)
    opts.TensorLocations.setOptimizerLocation(
        poptorch.TensorLocationSettings().useOnChipStorage(False).useReplicatedTensorSharding(True)
    )
    opts._Popart.set("autoRecomputation", int(popart.RecomputationType.Standard))
    return opts


def test_from_options_reads_the_recorders_options_as_the_doubles():
    imported = {}
    for name in ("recorder", "doubles"):
        with stack(name) as poptorch:
            imported[name] = PlainIPUConfig.from_options(training=a_build(poptorch, sys.modules["popart"]))
    assert imported["recorder"].settings_dict() == imported["doubles"].settings_dict()
    assert imported["recorder"].recomputation_mode == "standard"


def test_the_recorder_imports_no_torch():
    code = (
        "import sys\n"
        "from optimum_ipu_ext import PlainIPUConfig\n"
        "from optimum_ipu_ext.recorder import sdk_modules\n"
        "with sdk_modules():\n"
        "    import popart, poptorch\n"
        "    opts = poptorch.Options().replicationFactor(2)\n"
        "    opts.setAvailableMemoryProportion({'IPU0': 0.2})\n"
        "    opts.Precision.enableStochasticRounding(True)\n"
        "    opts.TensorLocations.setOptimizerLocation(poptorch.TensorLocationSettings().useOnChipStorage(True)"
        ".useReplicatedTensorSharding(False))\n"
        "    PlainIPUConfig.from_options(training=opts)\n"
        "print(sorted(name for name in ('torch', 'transformers', 'poptorch') if name in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout == "[]\n"
