"""From a configuration to its options plan: which `poptorch.Options` calls it implies.

The calls follow optimum-graphcore 0.7.1's `IPUConfig.to_options`, extended by the settings of
`settings.EXTENSION_SETTINGS`. A setting whose row has a `Call` becomes that call through one generic
loop; the few calls that take several settings at once (`Call(..., composite=True)`) are made here. Under a poprun
launch the options are PopDist's `popdist.poptorch.Options`, which set the instance's replicas, process and
IPUs themselves. Nothing here imports the Poplar SDK.
"""

from typing import Any, Dict, List, Optional, Union

from ..errors import UnsupportedOptionsError
from ..sdk.plan import Construct, OptionCall, OptionsPlan
from ..sdk.popdist import PopDistLaunch
from ..settings.mode import MODES, Mode, ModeSettings
from ..settings.rules import check_reserved_ipus
from ..settings.table import EXECUTION_STRATEGIES, PHASED_STRATEGIES, SETTINGS, TENSORS_LIVENESS_CALLS, StageSetting

# The rows the generic loop turns into calls, per build
SIMPLE_ROWS = {
    mode: [(name, setting) for name, setting in SETTINGS.items() if setting.sdk and not setting.sdk.composite
           and mode.name in setting.sdk.modes]
    for mode in MODES
}

NEW_OPTIONS = Construct("poptorch.Options")


def build_plan(
    settings: Dict[str, Any],
    for_inference: bool = False,
    compile_only: bool = False,
    popdist: Optional[PopDistLaunch] = None,
) -> OptionsPlan:
    """The options plan of a config's `settings` (its `vars()`, where either base stores them) for training
    (default) or inference, for a real or an offline target, on one host or (`popdist`) as one instance of a
    poprun launch."""
    if settings["execute_encoder_on_cpu_for_generation"]:
        raise NotImplementedError("execute_encoder_on_cpu_for_generation is not supported yet.")
    mode = Mode.of(for_inference)
    if not compile_only:
        check_reserved_ipus(settings, mode, popdist)
    replication_setting = mode.setting("replication_factor")
    replicas = settings[replication_setting]
    if popdist is None:
        options, notes = NEW_OPTIONS, ()
    else:
        replicas = popdist.job_replicas(replication_setting, replicas)
        ipus = settings[mode.setting("ipus_per_replica")]
        options = Construct("popdist.poptorch.Options", kwargs=(("ipus_per_replica", ipus),))
        notes = (popdist.describe(),)
        # PopDist's options set the instance's share of the replicas themselves
        settings = {**settings, replication_setting: None}

    calls: List[OptionCall] = []
    popart_calls: List[OptionCall] = []  # PopART session options go last, as in optimum-graphcore's build
    for name, setting in SIMPLE_ROWS[mode]:
        argument = setting.argument(settings[name])
        if argument is not None:  # most new settings are null: no call
            arguments = argument if type(argument) is tuple else (argument,)
            sdk = setting.sdk
            call = OptionCall(sdk.method, (sdk.key, *arguments) if sdk.key else arguments)
            (popart_calls if sdk.sets_popart_option else calls).append(call)
    in_mode = mode.view(settings)
    composite = {
        "TensorLocations.setOptimizerLocation": _optimizer_location(settings, replicas),
        "setExecutionStrategy": _execution_strategy(in_mode),
        "setAvailableMemoryProportion": _memory_proportions(in_mode),
    }
    calls += [OptionCall(method, (argument,)) for method, argument in composite.items() if argument is not None]
    if compile_only:
        calls.append(OptionCall("useOfflineIpuTarget"))
    calls += popart_calls
    calls += [OptionCall("_Popart.set", (key, value)) for key, value in (settings["popart_options"] or {}).items()]
    return OptionsPlan(options, tuple(calls), compile_only, notes)


# The composite calls, each with its read-back: the settings a `toDict()` state (or, for the execution strategy,
# which `toDict()` shows only as `execution_mode`, the options object) holds. A read-back raises
# `UnsupportedOptionsError` for a state the settings cannot express.

def _optimizer_location(settings: Dict[str, Any], replicas: int) -> Optional[Construct]:
    if settings["optimizer_state_offchip"] is None:
        return None
    sharded = bool(settings["replicated_tensor_sharding"]) and replicas > 1
    return Construct(
        "poptorch.TensorLocationSettings",
        chain=(
            ("useOnChipStorage", (not settings["optimizer_state_offchip"],)),
            ("useReplicatedTensorSharding", (sharded,)),
        ),
    )


def shards_optimizer_state(plan: OptionsPlan) -> bool:
    """Whether the build `plan` shards the optimizer state across replicas."""
    location = plan.argument("TensorLocations.setOptimizerLocation")
    return location is not None and bool(dict(location.chain).get("useReplicatedTensorSharding", (False,))[0])


def read_optimizer_location(states: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The two optimizer settings where every build's location (`states`, the last one's settings kept) is one they
    write: `onChip` and the sharding, which only replicas turn on. Else null: the row `optimizer_location` holds it."""
    values: Dict[str, Any] = {}
    for state in states:
        location = state.get("location_optimizer")
        if location is None or set(location) != {"onChip", "useReplicatedTensorSharding"} \
                or (location["useReplicatedTensorSharding"] and state["replication_factor"] == 1):
            return {"optimizer_state_offchip": None, "replicated_tensor_sharding": None}
        values.update(optimizer_state_offchip=not location["onChip"], optimizer_location=None)
        if location["useReplicatedTensorSharding"] or state["replication_factor"] > 1:
            values["replicated_tensor_sharding"] = bool(location["useReplicatedTensorSharding"])
        # else one replica, which shards nothing either way: the other build's replicas tell
    return values


def _execution_strategy(settings: ModeSettings) -> Optional[Construct]:
    """The strategy of the build, `None` for none (poptorch's default stays)."""
    strategy = settings["execution_strategy"]
    if strategy is None:
        return None
    path = EXECUTION_STRATEGIES[strategy]
    if strategy in PHASED_STRATEGIES:
        phases = tuple(
            Construct("poptorch.Phase", tuple(map(_stage, phase))) for phase in settings["execution_phases"]
        )
        chain = []
        if settings["separate_backward_phase"] is not None:
            chain.append(("useSeparateBackwardPhase", (settings["separate_backward_phase"],)))
        if settings["tensors_liveness"] is not None:
            method, arguments = TENSORS_LIVENESS_CALLS[strategy]
            chain.append((method, (arguments[settings["tensors_liveness"]],)))
        return Construct(path, phases, chain=tuple(chain))
    if settings["execution_stages"]:
        return Construct(path, tuple(map(_stage, settings["execution_stages"])))
    auto_stage = settings["auto_stage"]
    return Construct(path, () if auto_stage is None else (SETTINGS["auto_stage"].argument(auto_stage),))


def _stage(stage: StageSetting) -> Construct:
    placed = (("ipu", (stage["ipu"],)),) if "ipu" in stage else ()
    return Construct("poptorch.Stage", tuple(stage["blocks"]), chain=placed)


# What `poptorch.Options()` holds before `setExecutionStrategy`: a pipeline staged by IPU (`AutoStage.SameAsIpu`)
POPTORCH_DEFAULT_STRATEGY = {"execution_strategy": "pipelined", "execution_stages": None, "auto_stage": "same_as_ipu"}


def read_execution_strategy(options: Any, mode: Mode) -> Dict[str, Any]:
    """From where poptorch 3.4 keeps the strategy: `Options._execution_strategy`; a pipelined or sharded one has its
    explicit stages in `_block_map` (each block to its `Stage`), else its `AutoStage` in its stage manager; a phased
    one its `Phase`s in `_phases` and its own options in `backendOptions()`. poptorch's default strategy reads as
    none (`null`), which rebuilds it whatever `auto_stage` the other build needs."""
    strategy = options._execution_strategy
    names = {path.rsplit(".", 1)[1]: choice for choice, path in EXECUTION_STRATEGIES.items()}
    kind = type(strategy).__name__
    if kind not in names:
        raise UnsupportedOptionsError({"setExecutionStrategy": f"{kind}: the settings express {', '.join(names)}"})
    values = {"execution_strategy": names[kind]}
    values.update(_read_phases(strategy) if names[kind] in PHASED_STRATEGIES else _read_stages(strategy, kind))
    for name in ("execution_stages", "execution_phases"):
        problem = SETTINGS[name].constraint(values[name]) if values.get(name) is not None else None
        if problem:
            raise UnsupportedOptionsError({"setExecutionStrategy": f"{kind}: {problem}"})
    if values == POPTORCH_DEFAULT_STRATEGY:
        return {mode.setting("execution_strategy"): None}
    values[mode.setting("execution_strategy")] = values.pop("execution_strategy")
    return values


def _read_stages(strategy: Any, kind: str) -> Dict[str, Any]:
    stages = list({id(stage): stage for stage in strategy._block_map.values()}.values())
    if [stage._stage_id for stage in stages] != list(range(len(stages))):
        raise UnsupportedOptionsError({"setExecutionStrategy": f"{kind} with a stage of no blocks"})
    if stages:
        return {"execution_stages": [_stage_setting(stage) for stage in stages]}
    auto_stage = SETTINGS["auto_stage"].choice(strategy._stages_manager._auto_stage)
    return {"execution_stages": None, "auto_stage": auto_stage}


def _read_phases(strategy: Any) -> Dict[str, Any]:
    backend = strategy.backendOptions()
    return {
        "execution_phases": [[_stage_setting(stage) for stage in phase.stages] for phase in strategy._phases],
        "separate_backward_phase": backend["separate_backward_phase"],
        "tensors_liveness": SETTINGS["tensors_liveness"].read(backend),
    }


def _stage_setting(stage: Any) -> StageSetting:
    return {"blocks": list(stage.blocks), **({} if stage._ipu is None else {"ipu": stage._ipu})}


def _memory_proportions(settings: ModeSettings) -> Optional[Dict[str, Union[float, int]]]:
    """`{"IPU0": p0, ...}` for each IPU of one replica's pipeline."""
    ipus = settings["ipus_per_replica"]
    proportion = settings["matmul_proportion"]
    if proportion is None:
        return None
    per_ipu = proportion if isinstance(proportion, list) else [proportion] * ipus
    return {f"IPU{index}": per_ipu[index] for index in range(ipus)}


def read_memory_proportions(state: Dict[str, Any], mode: Mode, ipus: Optional[int] = None) -> Dict[str, Any]:
    """The proportions of IPUs 0 to `ipus - 1` (default: every IPU the state names, as many as the pipeline has);
    null where the call was not made."""
    proportions = state.get("available_memory_proportion") or {}
    if not proportions:  # no call; an inference build makes none only where the training one makes none too
        return {"matmul_proportion": None, mode.setting("matmul_proportion"): None}
    ipus = len(proportions) if ipus is None else ipus
    if not ipus or any(index not in proportions for index in range(ipus)):
        raise UnsupportedOptionsError(
            {"available_memory_proportion": f"{_ipu_names(proportions)}: the settings give IPU0 to IPU<n-1>, n >= 1"}
        )
    per_ipu = [proportions[index] for index in range(ipus)]
    return {
        mode.setting("ipus_per_replica"): ipus,
        # one number for all IPUs, but a list for 0: an inference proportion of 0 means "as in training"
        mode.setting("matmul_proportion"): per_ipu[0] if len(set(per_ipu)) == 1 and per_ipu[0] else per_ipu,
    }


def _ipu_names(proportions: Dict[int, Any]) -> str:
    return "{" + ", ".join(f"IPU{index}: {value!r}" for index, value in sorted(proportions.items())) + "}"
