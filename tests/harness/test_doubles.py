"""The poptorch/popart doubles are strict, follow poptorch 3.4 and record state like ``toDict()``."""
import inspect
import sys
import types

import pytest
import torch

from support import doubles
from support.doubles import installed, state
from support.expected_states import differences, differences_in, seed_memory_proportion_as_written, seed_state

ENVIRONMENT_READ_BY_OPTIONS = (
    "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_RANK",
    "POPTORCH_CACHE_DIR",
    "POPTORCH_DEFAULT_OPTIONS",
)

# Parameters of the real poptorch 3.4 / popart methods, annotations left out.
REAL_SIGNATURES = {
    "poptorch.ipuHardwareVersion": "()",
    "poptorch.ipuHardwareIsAvailable": "(num_ipus=1)",
    "poptorch_core.ipuHardwareVersion": "(numIpus=1)",
    "poptorch.isRunningOnIpu": "()",
    "poptorch.BeginBlock": "(layer_to_call, user_id=None, ipu_id=None)",
    "poptorch.removeBlocks": "(module)",
    "poptorch.recomputationCheckpoint": "(*tensors)",
    "poptorch.serializedMatMul": "(lhs, rhs, mode, factor=0, keep_precision=False)",
    "poptorch.identity_loss": "(x, reduction)",
    "poptorch.dynamic_slice": "(tensor, dim, start, size, step)",
    "poptorch.dynamic_update": "(input, src, dim, start, size)",
    "poptorch.cond": "(condition, then_body, then_inps, else_body, else_inps)",
    "Block.__init__": "(self, user_id=None, ipu_id=None)",
    "Block.useAutoId": "()",
    "Block.start": "(user_id=None, ipu_id=None)",
    "_BlockHook.__init__": "(self, user_id, ipu_id)",
    "_BlockHook.__call__": "(self, module, input)",
    "Attribute.__init__": "(self, **kwargs)",
    "Attribute.__enter__": "(self)",
    "Attribute.__exit__": "(self, type, value, traceback)",
    "OptionsDict.set": "(self, **kwargs)",
    "OptionsDict.createOrSet": "(self, **kwargs)",
    "OptionsDict.exists": "(self, option)",
    "OptionsDict.deleteIfExists": "(self, option)",
    "OptionsDict.update": "(self, other)",
    "OptionsDict.toDict": "(self)",
    "OptionsDict.checkIsFrozen": "(self, option=None)",
    "Options.__init__": "(self)",
    "Options.from_json": "(self, string)",
    "Options.loadFromFile": "(self, filepath)",
    "Options.showCompilationProgressBar": "(self, show=True)",
    "Options.relaxOptimizerAttributesChecks": "(self, relax=True)",
    "Options.sourceLocationExcludes": "(self, excludes)",
    "Options.appendToLocationExcludes": "(self, *excludes)",
    "Options.autoRoundNumIPUs": "(self, auto_round_num_ipus=True)",
    "Options.deviceIterations": "(self, device_iterations)",
    "Options.setExecutionStrategy": "(self, strategy)",
    "Options.setAvailableMemoryProportion": "(self, available_memory_proportion)",
    "Options.replicationFactor": "(self, replication_factor)",
    "Options.inputReplicaGrouping": "(self, input_group_size, input_group_type)",
    "Options.broadcastBuffers": "(self, broadcast_buffers=True)",
    "Options.logDir": "(self, log_dir)",
    "Options.maxRepeatLogs": "(self, max_lines)",
    "Options.modelName": "(self, name)",
    "Options.enableExecutableCaching": "(self, path)",
    "Options.useIpuModel": "(self, use_model)",
    "Options.connectionType": "(self, connection_type)",
    "Options.syncPattern": "(self, sync_pattern)",
    "Options.useIpuId": "(self, ipu_id)",
    "Options.useOfflineIpuTarget": "(self, ipu_version=2)",
    "Options.anchorTensor": "(self, short_name, long_name, output_mode=None, output_return_period=1)",
    "Options.outputMode": "(self, output_mode, output_return_period=None)",
    "Options.defaultOutputMode": "(self)",
    "Options.randomSeed": "(self, random_seed)",
    "Options.enableStableNorm": "(self, enabled)",
    "Options.enableSyntheticData": "(self, enabled)",
    "Options.logCycleCount": "(self, log_cycle_count)",
    "Options.disableModuleNamescope": "(self)",
    "Options.updatableNamedBuffers": "(self, buffers)",
    "Options.toDict": "(self)",
    "Options.clone": "(self)",
    "_JitOptions.traceModel": "(self, trace_model)",
    "_PrecisionOptions.__init__": "(self, popart_options)",
    "_PrecisionOptions.enableFloatingPointExceptions": "(self, enabled)",
    "_PrecisionOptions.enableStochasticRounding": "(self, enabled)",
    "_PrecisionOptions.setPartialsType": "(self, dtype)",
    "_TrainingOptions.__init__": "(self, popart_options)",
    "_TrainingOptions.gradientAccumulation": "(self, gradient_accumulation)",
    "_TrainingOptions.accumulationAndReplicationReductionType": "(self, reduction_type)",
    "_TrainingOptions.setMeanAccumulationAndReplicationReductionStrategy": "(self, mean_reduction_strategy)",
    "_TrainingOptions.setAutomaticLossScaling": "(self, enabled)",
    "_TrainingOptions.setConvolutionDithering": "(self, enabled)",
    "_PopartOptions.__init__": "(self)",
    "_PopartOptions.set": "(self, key, value)",
    "_PopartOptions.checkIsFrozen": "(self, option=None)",
    "_PopartOptions.setEngineOptions": "(self, engine_options)",
    "_PopartOptions.setPatterns": "(self, patterns, level=2)",
    "_DistributedOptions.__init__": "(self)",
    "_DistributedOptions.disable": "(self)",
    "_DistributedOptions.setEnvVarNames": "(self, var_num_processes, var_process_id)",
    "_DistributedOptions.configureProcessId": "(self, process_id, num_processes)",
    "TensorLocationSettings.minElementsForOffChip": "(self, min_elements)",
    "TensorLocationSettings.minElementsForReplicatedTensorSharding": "(self, min_elements)",
    "TensorLocationSettings.useOnChipStorage": "(self, use=True)",
    "TensorLocationSettings.useReplicatedTensorSharding": "(self, use=True)",
    "TensorLocationSettings.useIOTilesToLoad": "(self, use=True)",
    "TensorLocationSettings.useIOTilesToStore": "(self, use=True)",
    "_TensorLocationOptions.numIOTiles": "(self, num_tiles)",
    "_TensorLocationOptions.setActivationLocation": "(self, location)",
    "_TensorLocationOptions.setWeightLocation": "(self, location)",
    "_TensorLocationOptions.setOptimizerLocation": "(self, location)",
    "_TensorLocationOptions.setAccumulatorLocation": "(self, location)",
    "Stage.__init__": "(self, *block_ids)",
    "Stage.ipu": "(self, ipu)",
    "_IExecutionStrategy.stage": "(self, block_id)",
    "_IExecutionStrategy.backendOptions": "(self)",
    "PipelinedExecution.__init__": "(self, *args)",
    "PipelinedExecution.backendOptions": "(self)",
    "ShardedExecution.backendOptions": "(self)",
    "Phase.__init__": "(self, *arg)",
    "Phase.stage": "(self, idx)",
    "Phase.ipus": "(self, *ipus)",
    "_IPhasedExecution.__init__": "(self, *phases)",
    "_IPhasedExecution.phase": "(self, phase)",
    "_IPhasedExecution.useSeparateBackwardPhase": "(self, use=True)",
    "_IPhasedExecution.backendOptions": "(self)",
    "ParallelPhasedExecution.backendOptions": "(self)",
    "ParallelPhasedExecution.sendTensorsOffChipAfterFwd": "(self, off_chip=True)",
    "SerialPhasedExecution.setTensorsLiveness": "(self, liveness)",
    "SerialPhasedExecution.backendOptions": "(self)",
}
REAL_PROPERTIES = {
    "Options": {"TensorLocations", "Distributed", "Jit", "Precision", "Training", "_Popart"},
    "_DistributedOptions": {"processId", "numProcesses"},
    "Stage": {"blocks"},
}

ENUM_VALUES = {
    ("poptorch", "OutputMode"): {"Final": 0, "EveryN": 1, "All": 2, "Sum": 3, "Default": 4},
    ("poptorch", "ReductionType"): {"Sum": 0, "Mean": 1, "NoReduction": 2},
    ("poptorch", "AutoStage"): {"SameAsIpu": 0, "AutoIncrement": 1},
    ("poptorch", "Liveness"): {
        "AlwaysLive": 0, "OffChipAfterFwd": 1, "OffChipAfterFwdNoOverlap": 2, "OffChipAfterEachPhase": 3
    },
    ("poptorch", "ConnectionType"): {"Always": 0, "OnDemand": 1, "Never": 2},
    ("poptorch", "SyncPattern"): {"Full": 0, "SinglePipeline": 1, "ReplicaAndLadder": 2},
    ("poptorch", "MeanReductionStrategy"): {"Running": 0, "Post": 1, "PostAndLoss": 2},
    ("poptorch", "CommGroupType"): {"All": 0, "Consecutive": 1, "Orthogonal": 2, "NoGrouping": 3},
    ("popart", "RecomputationType"): {
        "NoRecompute": 0,
        "Standard": 1,
        "NormOnly": 2,
        "Pipeline": 3,
        "RecomputeAll": 4,
    },
    ("popart", "AccumulateOuterFragmentSchedule"): {
        "Scheduler": 0,
        "Serial": 1,
        "OverlapCycleOptimized": 2,
        "OverlapMemoryOptimized": 3,
    },
    ("popart", "SubgraphCopyingStrategy"): {"OnEnterAndExit": 0, "JustInTime": 1},
    ("popart", "PatternsLevel"): {"NoPatterns": 0, "Minimal": 1, "Default": 2, "All": 3},
    ("popart", "SyntheticDataMode"): {"Off": 0, "Zeros": 1, "RandomNormal": 2, "RandomUniform": 3},
}


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    """``poptorch.Options()`` reads these variables, like the real one."""
    for name in ENVIRONMENT_READ_BY_OPTIONS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def poptorch():
    with installed():
        import poptorch

        yield poptorch


@pytest.fixture
def popart():
    with installed():
        import popart

        yield popart


def _plain_signature(function) -> str:
    signature = inspect.signature(function)
    parameters = [parameter.replace(annotation=parameter.empty) for parameter in signature.parameters.values()]
    return str(signature.replace(parameters=parameters, return_annotation=signature.empty))


def _double_classes():
    options_module = doubles.poptorch.options
    return {
        "OptionsDict": doubles.poptorch._options_impl.OptionsDict,
        "Options": options_module.Options,
        "_JitOptions": options_module._JitOptions,
        "_PrecisionOptions": options_module._PrecisionOptions,
        "_TrainingOptions": options_module._TrainingOptions,
        "_PopartOptions": options_module._PopartOptions,
        "_DistributedOptions": options_module._DistributedOptions,
        "TensorLocationSettings": options_module.TensorLocationSettings,
        "_TensorLocationOptions": options_module._TensorLocationOptions,
        "Stage": options_module.Stage,
        "_IExecutionStrategy": options_module._IExecutionStrategy,
        "PipelinedExecution": options_module.PipelinedExecution,
        "ShardedExecution": options_module.ShardedExecution,
        "Phase": options_module.Phase,
        "_IPhasedExecution": options_module._IPhasedExecution,
        "ParallelPhasedExecution": options_module.ParallelPhasedExecution,
        "SerialPhasedExecution": options_module.SerialPhasedExecution,
        "Attribute": options_module.Attribute,
        "Block": doubles.poptorch.blocks.Block,
        "_BlockHook": doubles.poptorch.blocks._BlockHook,
    }


def _build_seed(seed_build, replication_factor, optimizer_state_offchip):
    args = types.SimpleNamespace(
        replication_factor=replication_factor, optimizer_state_offchip=optimizer_state_offchip
    )
    return seed_build.build_ipu_config(args)


# --- the API surface is the real one ---------------------------------------------------------


@pytest.mark.parametrize("name", sorted(REAL_SIGNATURES))
def test_signature_matches_poptorch(name):
    owner, _, attribute = name.partition(".")
    namespaces = {"poptorch": doubles.poptorch, "poptorch_core": doubles.poptorch.poptorch_core}
    function = getattr(namespaces.get(owner) or _double_classes()[owner], attribute)
    assert _plain_signature(function) == REAL_SIGNATURES[name]


@pytest.mark.parametrize("class_name", sorted(_double_classes()))
def test_doubles_define_no_public_api_beyond_poptorch(class_name):
    cls = _double_classes()[class_name]
    real = {name.partition(".")[2] for name in REAL_SIGNATURES if name.partition(".")[0] == class_name}
    real |= REAL_PROPERTIES.get(class_name, set())
    public = {name: member for name, member in vars(cls).items() if not name.startswith("_") or name == "_Popart"}
    defined = {name for name, member in public.items() if callable(member) or isinstance(member, property)}
    assert defined - real == set()


@pytest.mark.parametrize("module_and_enum", sorted(ENUM_VALUES))
def test_enum_names_and_values(module_and_enum, poptorch, popart):
    module = {"poptorch": poptorch, "popart": popart}[module_and_enum[0]]
    members = getattr(module, module_and_enum[1]).__members__
    assert {name: member.value for name, member in members.items()} == ENUM_VALUES[module_and_enum]


def test_popart_enums_behave_like_pybind11_enums(popart):
    schedule = popart.AccumulateOuterFragmentSchedule.OverlapMemoryOptimized
    assert int(schedule) == 3 and schedule.name == "OverlapMemoryOptimized"
    assert schedule != 3
    assert popart.RecomputationType(3) is popart.RecomputationType.Pipeline


# --- strictness -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reach",
    [
        lambda p: p.Options().setReplicationFactor,
        lambda p: p.Options().replication_factr,
        lambda p: p.Options().Training.gradientAccumulations,
        lambda p: p.Options().Precision.setHalfPartials,
        lambda p: p.Options()._Popart.setOption,
        lambda p: p.Options().TensorLocations.setOptimiserLocation,
        lambda p: p.Options().Distributed.processIndex,
        lambda p: p.Options().Jit.enable,
        lambda p: p.TensorLocationSettings().useOffChipStorage,
        lambda p: p.PipelinedExecution().auto_stage,
        lambda p: p.ParallelPhasedExecution("A").setTensorsLiveness,
        lambda p: p.SerialPhasedExecution("A").sendTensorsOffChipAfterFwd,
        lambda p: p.Phase("A").blocks,
        lambda p: p.AsynchronousDataAccessor,
    ],
)
def test_unknown_attribute_raises_attribute_error(reach, poptorch):
    with pytest.raises(AttributeError):
        reach(poptorch)


def test_unknown_popart_name_raises_attribute_error(popart):
    with pytest.raises(AttributeError):
        _ = popart.SessionOptions  # reading the name raises


@pytest.mark.parametrize(
    "call",
    [
        lambda p: p.Options(1),
        lambda p: p.Options().replicationFactor(),
        lambda p: p.Options().replicationFactor(2, 4),
        lambda p: p.Options().randomSeed(seed=1234),
        lambda p: p.Options().setExecutionStrategy(),
        lambda p: p.Options().enableExecutableCaching(),
        lambda p: p.Options().setAvailableMemoryProportion({"IPU0": 0.1}, 0.2),
        lambda p: p.Options().Training.gradientAccumulation(),
        lambda p: p.Options().Training.accumulationAndReplicationReductionType(),
        lambda p: p.Options().Precision.enableStochasticRounding(),
        lambda p: p.Options()._Popart.set("outlineThreshold"),
        lambda p: p.Options()._Popart.setPatterns({}, 2, True),
        lambda p: p.Options().Distributed.configureProcessId(0),
        lambda p: p.TensorLocationSettings().useOnChipStorage(True, False),
        lambda p: p.ipuHardwareVersion(2),
        lambda p: p.SerialPhasedExecution("A").setTensorsLiveness(),
        lambda p: p.SerialPhasedExecution("A").phase(),
        lambda p: p.Phase("A").stage(),
    ],
)
def test_wrong_arity_or_keyword_raises_type_error(call, poptorch):
    with pytest.raises(TypeError):
        call(poptorch)


@pytest.mark.parametrize(
    "call, error",
    [
        (lambda p: p.Options().outputMode(2), AssertionError),
        (lambda p: p.Options().outputMode(p.OutputMode.EveryN), AssertionError),
        (lambda p: p.Options().Training.accumulationAndReplicationReductionType(1), ValueError),
        (
            lambda p: p.Options().Training.accumulationAndReplicationReductionType(p.ReductionType.NoReduction),
            ValueError,
        ),
        (lambda p: p.Options().Training.gradientAccumulation(1.5), AssertionError),
        (lambda p: p.Options().Training.setMeanAccumulationAndReplicationReductionStrategy(1), AssertionError),
        (lambda p: p.Options().setExecutionStrategy(p.AutoStage.AutoIncrement), AssertionError),
        (lambda p: p.Options().setAvailableMemoryProportion({"0": 0.1}), AssertionError),
        (lambda p: p.Options().setAvailableMemoryProportion({"IPUa": 0.1}), ValueError),
        (lambda p: p.Options().replicationFactor(2.0), AssertionError),
        (lambda p: p.Options().deviceIterations("4"), AssertionError),
        (lambda p: p.Options().autoRoundNumIPUs(1), AssertionError),
        (lambda p: p.Options().randomSeed("1234"), AssertionError),
        (lambda p: p.Options().connectionType(2), AssertionError),
        (lambda p: p.Options().useIpuId("0"), AssertionError),
        (lambda p: p.Options().Precision.setPartialsType(torch.bfloat16), ValueError),
        (lambda p: p.Options().Precision.setPartialsType("half"), ValueError),
        (lambda p: p.Options().Precision.enableFloatingPointExceptions(1), AssertionError),
        (lambda p: p.Options()._Popart.setPatterns(["TiedGather"]), AssertionError),
        (lambda p: p.Options()._Popart.setPatterns({"TiedGather": True}, level="2"), AssertionError),
        (lambda p: p.Options().TensorLocations.setOptimizerLocation({"onChip": 1}), AssertionError),
        (lambda p: p.Options().TensorLocations.numIOTiles(33), AssertionError),
        (lambda p: p.TensorLocationSettings().useOnChipStorage(1), AssertionError),
        (lambda p: p.TensorLocationSettings().useReplicatedTensorSharding(None), AssertionError),
        (lambda p: p.Options().Jit.traceModel(True), ValueError),
        (lambda p: p.Options().toDict(), AssertionError),
        (lambda p: p.PipelinedExecution(1), TypeError),
        (lambda p: p.PipelinedExecution("A", "A"), AssertionError),
        (lambda p: p.Stage(0), AssertionError),
        (lambda p: p.Stage("A").ipu("0"), AssertionError),
        (lambda p: p.Phase("A", p.Stage("B")), AssertionError),
        (lambda p: p.Phase(1), AssertionError),
        (lambda p: p.Phase(p.Stage("A")).ipus(0, 1), AssertionError),
        (lambda p: p.Phase(p.Stage("A")).stage(1), IndexError),
        (lambda p: p.SerialPhasedExecution(), AssertionError),
        (lambda p: p.ParallelPhasedExecution(), AssertionError),
        (lambda p: p.SerialPhasedExecution(["A"], p.Phase(p.Stage("B", "A"))), AssertionError),
        (lambda p: p.SerialPhasedExecution([p.Phase("A"), p.Phase("B")]), AssertionError),  # phases are not listed
        (lambda p: p.SerialPhasedExecution(("A", "B")), AssertionError),  # a tuple is one argument of a phase
        (lambda p: p.SerialPhasedExecution("A").setTensorsLiveness(1), AssertionError),
        (lambda p: p.SerialPhasedExecution("A").useSeparateBackwardPhase(1), AssertionError),
        (lambda p: p.SerialPhasedExecution("A").phase(-1), AssertionError),
        (lambda p: p.SerialPhasedExecution("A").phase(1), IndexError),
        (lambda p: p.ParallelPhasedExecution("A").sendTensorsOffChipAfterFwd(1), AssertionError),
    ],
)
def test_invalid_values_fail_like_poptorch(call, error, poptorch):
    with pytest.raises(error):
        call(poptorch)


def test_option_attributes_read_and_write_only_known_options(poptorch):
    opts = poptorch.Options()
    opts.replication_factor = 4
    assert opts.replication_factor == 4 and opts("replication_factor") == 4
    with pytest.raises(AssertionError):
        opts.replication_factr = 4
    with pytest.raises(AssertionError):
        opts.replication_factor = "4"
    with pytest.raises(AttributeError):
        opts._late_private_attribute = True


# --- what the backend refuses when it compiles (poptorch's SessionOptionsParser.cpp) ---------
# The backend parses `toDict()` with the type tests of `PybindValue` (python/poptorch.cpp): bool, float, int,
# str, list/tuple/set, dict; anything else is "Unknown value type". `state()` parses as it does.


def test_backend_refuses_a_popart_enum_member(poptorch, popart):
    opts = _options_with_output_mode(poptorch)
    opts._Popart.set("autoRecomputation", popart.RecomputationType.Pipeline)  # `_Popart.set` stores anything
    with pytest.raises(poptorch.Error, match="Unknown value type .*RecomputationType.* for option autoRecomputation"):
        state(opts)
    opts._Popart.set("autoRecomputation", int(popart.RecomputationType.Pipeline))
    assert state(opts)["autoRecomputation"] == 3


@pytest.mark.parametrize(
    "key, value, words",
    [
        ("outlineThreshold", None, "Unknown value type"),
        ("partialsTypeMatMuls", torch.float16, "Unknown value type"),
        ("syntheticDataMode", -1, "unsigned integer"),
        ("syntheticDataMode", 1 << 64, "unsigned integer"),
        ("accumulateOuterFragmentSettings.excludedVirtualGraphs", [0.5], "to string"),
        ("engineOptions", {"opt.useAutoloader": 1.5}, "to string"),
        ("engineOptions", {"opt.useAutoloader": None}, "to string"),
        ("patterns", {"TiedGather": True}, "without first setting 'patterns_level'"),
    ],
)
def test_backend_refuses_values_it_has_no_type_for(poptorch, key, value, words):
    opts = _options_with_output_mode(poptorch)
    opts._Popart.set(key, value)
    with pytest.raises(poptorch.Error, match=words):
        state(opts)


@pytest.mark.parametrize(
    "value",
    [True, 10.0, 3, "exec", ["0", 1], ("a",), {"b"}, {"opt.useAutoloader": "true", "n": 2}],
    ids=["bool", "float", "int", "str", "list", "tuple", "set", "dict"],
)
def test_backend_takes_the_types_it_parses(poptorch, value):
    opts = _options_with_output_mode(poptorch)
    opts._Popart.set("someOption", value)
    assert "someOption" in state(opts)


def test_backend_takes_poptorch_enums_as_the_ints_they_are(poptorch):
    opts = _options_with_output_mode(poptorch)
    opts.Training.accumulationAndReplicationReductionType(poptorch.ReductionType.Sum)
    assert opts.Training.accumulation_and_replication_reduction_type is poptorch.ReductionType.Sum
    assert state(opts)["accumulation_and_replication_reduction_type"] == 0


@pytest.mark.parametrize(
    "proportions, words",
    [
        ({0: "0.1"}, "to a float"),
        ({"IPU0": 0.1}, "unsigned integer"),  # poptorch's setAvailableMemoryProportion makes the keys ints
        ({0: 1e39}, "too high for a Popart float attribute"),
        ({0: -1e39}, "too low for a Popart float attribute"),
    ],
)
def test_backend_refuses_memory_proportions_it_cannot_convert(poptorch, proportions, words):
    opts = _options_with_output_mode(poptorch)
    opts.available_memory_proportion = proportions
    with pytest.raises(poptorch.Error, match=words):
        state(opts)


def test_memory_proportion_keys_become_ipu_numbers(poptorch):
    opts = _options_with_output_mode(poptorch).setAvailableMemoryProportion({"IPU12": 0.25, "IPU3": 1})
    assert opts.available_memory_proportion == {12: 0.25, 3: 1}
    assert state(opts)["available_memory_proportion"] == {12: 0.25, 3: 1}


# --- frozen after use (poptorch's _poplar_executor.py freezes the options of a model) -----------


FROZEN_CHANGES = {
    "replicationFactor": lambda opts, p: opts.replicationFactor(2),
    "option attribute": lambda opts, p: setattr(opts, "device_iterations", 2),
    "setExecutionStrategy": lambda opts, p: opts.setExecutionStrategy(p.ShardedExecution()),
    "setAvailableMemoryProportion": lambda opts, p: opts.setAvailableMemoryProportion({"IPU0": 0.3}),
    "randomSeed": lambda opts, p: opts.randomSeed(1),
    "Training.gradientAccumulation": lambda opts, p: opts.Training.gradientAccumulation(4),
    "Precision.enableStochasticRounding": lambda opts, p: opts.Precision.enableStochasticRounding(True),
    "_Popart.set": lambda opts, p: opts._Popart.set("outlineThreshold", 1.0),
    "TensorLocations.setOptimizerLocation":
        lambda opts, p: opts.TensorLocations.setOptimizerLocation(p.TensorLocationSettings().useOnChipStorage(True)),
    "Distributed.configureProcessId": lambda opts, p: opts.Distributed.configureProcessId(0, 1),
}


@pytest.mark.parametrize("change", sorted(FROZEN_CHANGES))
def test_frozen_options_refuse_every_change(poptorch, change):
    opts = _options_with_output_mode(poptorch)
    before = state(opts)
    opts._freeze()
    with pytest.raises(AttributeError, match="Can't modify frozen Options"):
        FROZEN_CHANGES[change](opts, poptorch)
    assert differences(state(opts), before) == {}


def test_a_clone_of_frozen_options_is_not_frozen(poptorch):
    opts = _options_with_output_mode(poptorch)
    opts._freeze()
    copy = opts.clone()
    copy.replicationFactor(4)._Popart.set("outlineThreshold", 1.0)
    assert (copy.replication_factor, state(copy)["outlineThreshold"]) == (4, 1.0)
    with pytest.raises(AttributeError):
        opts.replicationFactor(4)
    opts._unfreeze()
    assert opts.replicationFactor(8).replication_factor == 8


# --- recorded state -------------------------------------------------------------------------


def _options_with_output_mode(poptorch):
    return poptorch.Options().outputMode(poptorch.OutputMode.All)


def test_last_execution_strategy_wins(poptorch):
    opts = _options_with_output_mode(poptorch)
    opts.setExecutionStrategy(poptorch.PipelinedExecution(poptorch.AutoStage.SameAsIpu))
    opts.setExecutionStrategy(poptorch.PipelinedExecution(poptorch.AutoStage.AutoIncrement))
    assert state(opts)["_execution_strategy"] == {"type": "PipelinedExecution", "auto_stage": 1, "blocks": {}}
    assert state(opts)["execution_mode"] == 0


def test_strategies_are_told_apart(poptorch):
    strategies = {
        "default": None,
        "same_as_ipu": poptorch.PipelinedExecution(poptorch.AutoStage.SameAsIpu),
        "auto_increment": poptorch.PipelinedExecution(poptorch.AutoStage.AutoIncrement),
        "sharded": poptorch.ShardedExecution(poptorch.AutoStage.AutoIncrement),
        "stages": poptorch.PipelinedExecution(poptorch.Stage("A", "B"), "C"),
    }
    recorded = {}
    for name, strategy in strategies.items():
        opts = _options_with_output_mode(poptorch)
        if strategy is not None:
            opts.setExecutionStrategy(strategy)
        recorded[name] = (state(opts)["execution_mode"], state(opts)["_execution_strategy"])
    assert recorded == {
        "default": (0, {"type": "PipelinedExecution", "auto_stage": 0, "blocks": {}}),
        "same_as_ipu": (0, {"type": "PipelinedExecution", "auto_stage": 0, "blocks": {}}),
        "auto_increment": (0, {"type": "PipelinedExecution", "auto_stage": 1, "blocks": {}}),
        "sharded": (1, {"type": "ShardedExecution", "auto_stage": 1, "blocks": {}}),
        "stages": (
            0,
            {
                "type": "PipelinedExecution",
                "auto_stage": None,
                "blocks": {
                    "A": {"stage": 0, "phase": -1, "ipu": None},
                    "B": {"stage": 0, "phase": -1, "ipu": None},
                    "C": {"stage": 1, "phase": -1, "ipu": None},
                },
            },
        ),
    }


def test_phased_strategies_record_phases_and_their_options(poptorch):
    serial = poptorch.SerialPhasedExecution(
        poptorch.Phase(poptorch.Stage("A").ipu(0), poptorch.Stage("B").ipu(1)), ["C", "D"], "E"
    )
    serial.setTensorsLiveness(poptorch.Liveness.OffChipAfterEachPhase).useSeparateBackwardPhase()
    serial.phase(1).ipus(2)
    parallel = poptorch.ParallelPhasedExecution([poptorch.Stage("A"), poptorch.Stage("B")], poptorch.Phase("C"))
    parallel.phase(0).ipus(0, 2)
    recorded = {}
    for name, strategy in {"serial": serial, "parallel": parallel.sendTensorsOffChipAfterFwd()}.items():
        opts = _options_with_output_mode(poptorch).setExecutionStrategy(strategy)
        keys = ("execution_mode", "separate_backward_phase", "tensors_liveness", "serial_phases_execution")
        recorded[name] = ({key: state(opts)[key] for key in keys}, state(opts)["_execution_strategy"])
    assert recorded == {
        "serial": (
            {
                "execution_mode": 2, "separate_backward_phase": True, "tensors_liveness": 3,
                "serial_phases_execution": True,
            },
            {
                "type": "SerialPhasedExecution",
                "auto_stage": None,
                "blocks": {
                    "A": {"stage": -1, "phase": 0, "ipu": 0},
                    "B": {"stage": -1, "phase": 0, "ipu": 1},
                    "C": {"stage": -1, "phase": 1, "ipu": 2},
                    "D": {"stage": -1, "phase": 1, "ipu": 2},
                    "E": {"stage": -1, "phase": 2, "ipu": None},
                },
                "phases": [[["A"], ["B"]], [["C", "D"]], [["E"]]],
            },
        ),
        "parallel": (
            {
                "execution_mode": 2, "separate_backward_phase": False, "tensors_liveness": 1,
                "serial_phases_execution": False,
            },
            {
                "type": "ParallelPhasedExecution",
                "auto_stage": None,
                "blocks": {
                    "A": {"stage": -1, "phase": 0, "ipu": 0},
                    "B": {"stage": -1, "phase": 0, "ipu": 2},
                    "C": {"stage": -1, "phase": 1, "ipu": None},
                },
                "phases": [[["A"], ["B"]], [["C"]]],
            },
        ),
    }


def test_sending_tensors_back_on_chip_makes_them_always_live(poptorch):
    strategy = poptorch.ParallelPhasedExecution("A").sendTensorsOffChipAfterFwd()
    opts = _options_with_output_mode(poptorch).setExecutionStrategy(strategy.sendTensorsOffChipAfterFwd(False))
    assert state(opts)["tensors_liveness"] == 0


def test_memory_proportion_is_replaced_with_int_keys(poptorch):
    opts = _options_with_output_mode(poptorch)
    opts.setAvailableMemoryProportion({"IPU0": 0.1, "IPU1": 0.2, "IPU2": 0.3})
    opts.setAvailableMemoryProportion({"IPU1": 0.5})
    assert state(opts)["available_memory_proportion"] == {1: 0.5}


def test_popart_options_record_keys_as_given(poptorch, popart):
    opts = _options_with_output_mode(poptorch)
    opts._Popart.set("autoRecomputation", int(popart.RecomputationType.Pipeline))
    opts._popart.set("outlineThreshold", 10.0)
    opts._Popart.setPatterns({"TiedGather": True})
    opts._Popart.setEngineOptions({"opt.useAutoloader": "true"})
    opts.Precision.enableStochasticRounding(True).setPartialsType(torch.float16)
    opts.Training.setAutomaticLossScaling(True)
    recorded = state(opts)
    assert opts._Popart is opts._popart
    expected = {
        "autoRecomputation": 3,
        "outlineThreshold": 10.0,
        "patterns": {"TiedGather": True},
        "patterns_level": 2,
        "engineOptions": {"opt.useAutoloader": "true"},
        "enableStochasticRounding": True,
        "partialsTypeMatMuls": "half",
        "convolutionOptions": {"partialsType": "half"},
        "automaticLossScalingSettings.enabled": True,
    }
    assert differences_in(recorded, expected) == {}


def test_executable_caching_and_offline_target(poptorch):
    opts = _options_with_output_mode(poptorch).enableExecutableCaching("exec").useOfflineIpuTarget(21)
    expected = {"cachePath": "exec", "enableEngineCaching": True, "connection_type": 2, "ipu_version": 21}
    assert differences_in(state(opts), expected) == {}
    opts.enableExecutableCaching(None)
    assert (state(opts)["cachePath"], state(opts)["enableEngineCaching"]) == ("exec", False)


def test_tensor_location_settings_chain_and_store_ints(poptorch):
    settings = (
        poptorch.TensorLocationSettings()
        .useOnChipStorage(False)
        .useReplicatedTensorSharding(True)
        .useIOTilesToLoad()
        .useIOTilesToStore(False)
        .minElementsForOffChip(128)
        .minElementsForReplicatedTensorSharding(64)
    )
    opts = _options_with_output_mode(poptorch)
    opts.TensorLocations.setOptimizerLocation(settings).setWeightLocation(poptorch.TensorLocationSettings())
    settings.useOnChipStorage(None)
    recorded = state(opts)
    assert recorded["location_optimizer"] == {
        "onChip": 0,
        "useReplicatedTensorSharding": 1,
        "useIOTilesToLoad": 1,
        "useIOTilesToStore": 0,
        "minElementsForOffChip": 128,
        "minElementsForReplicatedTensorSharding": 64,
    }
    assert recorded["location_weight"] == {}
    assert settings.toDict() == {
        "useReplicatedTensorSharding": 1,
        "useIOTilesToLoad": 1,
        "useIOTilesToStore": 0,
        "minElementsForOffChip": 128,
        "minElementsForReplicatedTensorSharding": 64,
    }


def test_random_seed_is_recorded_and_seeds_torch(poptorch):
    opts = _options_with_output_mode(poptorch).randomSeed(4321)
    assert state(opts)["random_seed"] == 4321
    assert torch.initial_seed() == 4321


def test_state_is_a_deep_copy_with_enums_as_values(poptorch):
    opts = _options_with_output_mode(poptorch).setAvailableMemoryProportion({"IPU0": 0.1})
    opts.Training.accumulationAndReplicationReductionType(poptorch.ReductionType.Sum)
    recorded = state(opts)
    recorded["available_memory_proportion"][0] = 0.9
    assert opts.available_memory_proportion == {0: 0.1}
    assert type(recorded["accumulation_and_replication_reduction_type"]) is int
    assert recorded["accumulation_and_replication_reduction_type"] == 0
    assert recorded["compilation_progress_bar_fn"] == "<ProgressBar>"
    assert "compilation_progress_bar_fn" not in state(opts.showCompilationProgressBar(False))


def test_clone_is_independent(poptorch):
    opts = _options_with_output_mode(poptorch).replicationFactor(2)
    copy = opts.clone()
    copy.replicationFactor(8)
    copy.Training.gradientAccumulation(16)
    assert (opts.replication_factor, opts.Training.gradient_accumulation) == (2, 1)
    assert differences(state(copy), state(opts)) == {"gradient_accumulation": (16, 1), "replication_factor": (8, 2)}


def test_environment_is_read_like_poptorch(monkeypatch, poptorch):
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "4")
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "3")
    monkeypatch.setenv("POPTORCH_CACHE_DIR", "/tmp/cache")
    monkeypatch.setenv("POPTORCH_DEFAULT_OPTIONS", '{"deviceIterations": 8, "outputMode": "OutputMode.Sum"}')
    recorded = state(poptorch.Options())
    expected = {
        "num_distributed_processes": 4,
        "distributed_process_id": 3,
        "cachePath": "/tmp/cache",
        "enableEngineCaching": True,
        "device_iterations": 8,
        "output_mode": 3,
    }
    assert differences_in(recorded, expected) == {}


def test_popdist_style_subclass(poptorch):
    class DistributedOptions(poptorch.Options):
        def __init__(self, ipus_per_replica=None):
            self._ipus_per_replica = ipus_per_replica
            super().__init__()
            self.replicationFactor(2)
            self.Distributed.configureProcessId(1, 4)
            self.useIpuId(7)

    opts = DistributedOptions(ipus_per_replica=2).outputMode(poptorch.OutputMode.Final)
    recorded = state(opts)
    assert (opts.Distributed.processId, opts.Distributed.numProcesses, opts._ipus_per_replica) == (1, 4, 2)
    expected = {"replication_factor": 2, "distributed_process_id": 1, "num_distributed_processes": 4, "ipu_id": 7}
    assert differences_in(recorded, expected) == {}
    opts.Distributed.disable()
    assert (opts.Distributed.processId, opts.Distributed.numProcesses) == (0, 1)


# --- installation and hardware ------------------------------------------------------------


def test_installed_puts_the_same_modules_and_removes_them():
    names = ("poptorch", "poptorch.options", "poptorch.enums", "popart")
    before = {name: sys.modules.get(name) for name in names}
    with installed():
        import popart
        import poptorch

        first = (poptorch, popart, sys.modules["poptorch.options"])
    assert {name: sys.modules.get(name) for name in names} == before
    with installed(hardware_version=2):
        import popart
        import poptorch

        assert (poptorch, popart, sys.modules["poptorch.options"]) == first
        assert poptorch is doubles.poptorch and popart is doubles.popart


def test_installed_restores_previous_modules(monkeypatch):
    previous = types.ModuleType("poptorch")
    monkeypatch.setitem(sys.modules, "poptorch", previous)
    with installed():
        assert sys.modules["poptorch"] is doubles.poptorch
    assert sys.modules["poptorch"] is previous


def test_no_ipu_by_default(poptorch):
    assert poptorch.ipuHardwareIsAvailable() is False
    with pytest.raises(AssertionError, match="No IPU hardware available"):
        poptorch.ipuHardwareVersion()


@pytest.mark.parametrize("version", [2, 21, -1])
def test_hardware_version_is_set_for_the_block_only(version):
    with installed(hardware_version=version):
        import poptorch

        assert poptorch.ipuHardwareVersion() == version and poptorch.ipuHardwareIsAvailable()
    with installed():
        with pytest.raises(AssertionError):
            poptorch.ipuHardwareVersion()


@pytest.mark.parametrize("version, error", [(0, ValueError), (-2, ValueError), ("2", TypeError), (True, TypeError)])
def test_invalid_hardware_version(version, error):
    with pytest.raises(error, match="hardware_version"):
        with installed(hardware_version=version):
            pass
    assert sys.modules.get("poptorch") is not doubles.poptorch


# --- the seed's build and optimum-graphcore's build -----------------------------------------


@pytest.mark.parametrize("optimizer_state_offchip", [False, True])
@pytest.mark.parametrize("replication_factor", [1, 2, 4, 8, 16, 64])
def test_seed_build_matches_expected_state_but_for_extra_memory_keys(
    seed_build, replication_factor, optimizer_state_offchip
):
    with installed():
        recorded = state(_build_seed(seed_build, replication_factor, optimizer_state_offchip))
    expected = seed_state(replication_factor, optimizer_state_offchip)
    as_written = seed_memory_proportion_as_written(replication_factor)
    difference = differences(recorded, expected)
    if replication_factor == 1:
        assert difference == {}
    else:
        assert difference == {"available_memory_proportion": (as_written, expected["available_memory_proportion"])}
    first_two = {ipu: recorded["available_memory_proportion"][ipu] for ipu in (0, 1)}
    assert first_two == expected["available_memory_proportion"]


def test_expected_state_detects_a_type_change():
    expected = seed_state(2, False)
    changed = dict(expected, enableStochasticRounding=1, outlineThreshold=10)
    assert differences(changed, expected) == {
        "enableStochasticRounding": (1, True),
        "outlineThreshold": (10, 10.0),
    }


def _upstream_options(hardware_version, **to_options):
    ipu_configuration = doubles.load_upstream_ipu_configuration()
    config = ipu_configuration.IPUConfig(
        layers_per_ipu=[3, 3],
        matmul_proportion=[0.1, 0.2],
        replication_factor=2,
        gradient_accumulation_steps=16,
        device_iterations=4,
        replicated_tensor_sharding=True,
        executable_cache_dir="exec",
        auto_loss_scaling=True,
        seed=42,
    )
    with installed(hardware_version=hardware_version):
        return state(config.to_options(**to_options))


def test_upstream_loader_is_cached():
    assert doubles.load_upstream_ipu_configuration() is doubles.load_upstream_ipu_configuration()
    assert getattr(sys.modules.get("optimum.graphcore"), "__file__", None) is None  # its __init__ never ran


def test_upstream_training_build_compile_only():
    recorded = _upstream_options(None, compile_only=True)
    assert isinstance(recorded.pop("saveInitializersToFile"), str)
    assert "autoRecomputation" not in recorded
    expected = {
        "_execution_strategy": {"type": "PipelinedExecution", "auto_stage": 1, "blocks": {}},
        "connection_type": 2,
        "ipu_version": 2,
        "available_memory_proportion": {0: 0.1, 1: 0.2},
        "replication_factor": 2,
        "device_iterations": 4,
        "gradient_accumulation": 16,
        "location_optimizer": {"onChip": 1, "useReplicatedTensorSharding": 1},
        "subgraphCopyingStrategy": 1,
        "partialsTypeMatMuls": "half",
        "engineOptions": {"opt.useAutoloader": "true", "target.syncReplicasIndependently": "true"},
        "automaticLossScalingSettings.enabled": True,
        "random_seed": 42,
        "enableStochasticRounding": True,
        "output_mode": 0,
    }
    assert differences_in(recorded, expected) == {}


def test_upstream_inference_build_compile_only():
    recorded = _upstream_options(None, for_inference=True, compile_only=True)
    expected = {
        "_execution_strategy": {"type": "ShardedExecution", "auto_stage": 1, "blocks": {}},
        "execution_mode": 1,
        "enableStochasticRounding": False,
        "output_mode": 2,
    }
    assert differences_in(recorded, expected) == {}


def test_upstream_build_on_mk2_hardware():
    recorded = _upstream_options(2, compile_only=False)
    assert recorded["connection_type"] == 0 and "ipu_version" not in recorded


def test_upstream_build_without_ipu_fails_like_poptorch():
    with pytest.raises(AssertionError, match="No IPU hardware available"):
        _upstream_options(None, compile_only=False)
    with pytest.raises(RuntimeError, match="Mk2"):
        _upstream_options(1, compile_only=False)


def test_source_location_excludes_are_kept_beside_the_options(poptorch):
    opts = poptorch.Options()
    assert opts._source_location_excludes == ["install/poptorch", "site-packages/torch", "site-packages/poptorch"]
    opts.sourceLocationExcludes(["mine"]).appendToLocationExcludes("theirs")
    assert opts._source_location_excludes == ["mine", "theirs"]
    assert "_source_location_excludes" not in opts.outputMode(poptorch.OutputMode.All).toDict()
    assert poptorch.Options()._source_location_excludes == [
        "install/poptorch", "site-packages/torch", "site-packages/poptorch"
    ]
