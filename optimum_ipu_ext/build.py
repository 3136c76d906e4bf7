"""From a configuration to its options plan: which `poptorch.Options` calls it implies.

The calls follow optimum-graphcore 0.7.1's `IPUConfig.to_options`, extended by the settings of
`settings.EXTENSION_SETTINGS`. A setting whose row names its `call` becomes that call through one generic
loop; the few calls that take several settings at once (rows marked `composite`) are made here. Under a poprun
launch the options are PopDist's `popdist.poptorch.Options`, which set the instance's replicas, process and
IPUs themselves. Nothing here imports the Poplar SDK.
"""

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Union

from .errors import UnsupportedOptionsError
from .plan import Construct, OptionCall, OptionsPlan, Ref, sdk_value
from .popdist import PopDistLaunch
from .settings import EXECUTION_STRATEGIES, SETTINGS

if TYPE_CHECKING:
    from .core import SettingsMixin

# The rows the generic loop turns into calls, per build
SIMPLE_ROWS = {
    mode: [(name, setting) for name, setting in SETTINGS.items() if setting.call and not setting.composite
           and mode in setting.modes]
    for mode in ("training", "inference")
}


def build_plan(
    config: "SettingsMixin",
    for_inference: bool = False,
    compile_only: bool = False,
    popdist: Optional[PopDistLaunch] = None,
) -> OptionsPlan:
    """The options plan of `config` for training (default) or inference, for a real or an offline target,
    on one host or (`popdist`) as one instance of a poprun launch."""
    # settings are stored in the instance on either base: reading them there skips transformers' attribute hooks
    settings = vars(config)
    if settings["execute_encoder_on_cpu_for_generation"]:
        raise NotImplementedError("execute_encoder_on_cpu_for_generation is not supported yet.")
    mode = "inference" if for_inference else "training"
    prefix = "inference_" if for_inference else ""
    values: Dict[str, Any] = {}
    replication_setting = f"{prefix}replication_factor"
    replicas = settings[replication_setting]
    if popdist is None:
        options, notes = Construct("poptorch.Options"), ()
    else:
        replicas = popdist.job_replicas(replication_setting, replicas)
        ipus = settings[f"{prefix}ipus_per_replica"]
        options = Construct("popdist.poptorch.Options", kwargs=(("ipus_per_replica", ipus),))
        notes = (popdist.describe(),)
        values[replication_setting] = None  # PopDist's options set the instance's share of the replicas themselves

    calls: List[OptionCall] = []
    popart_calls: List[OptionCall] = []  # PopART session options go last, as in optimum-graphcore's build
    for name, setting in SIMPLE_ROWS[mode]:
        argument = setting.argument(values[name] if name in values else settings[name])
        if argument is not None:
            arguments = argument if type(argument) is tuple else (argument,)
            call = OptionCall(setting.call, (setting.key, *arguments) if setting.key else arguments)
            (popart_calls if setting.call.startswith("_Popart.") else calls).append(call)
    composite = {
        "TensorLocations.setOptimizerLocation": _optimizer_location(settings, replicas),
        "setExecutionStrategy": _execution_strategy(settings, prefix),
        "setAvailableMemoryProportion": _memory_proportions(settings, prefix),
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
        chain=(("useOnChipStorage", (not settings["optimizer_state_offchip"],)), ("useReplicatedTensorSharding", (sharded,))),
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
        sharded = bool(location.get("useReplicatedTensorSharding")) if location else False
        if location is None or set(location) != {"onChip", "useReplicatedTensorSharding"} \
                or (sharded and state["replication_factor"] == 1):
            return {"optimizer_state_offchip": None, "replicated_tensor_sharding": None}
        values.update(optimizer_state_offchip=not location["onChip"], optimizer_location=None)
        if sharded or state["replication_factor"] > 1:  # with one replica, the build shards nothing either way
            values["replicated_tensor_sharding"] = sharded
    return values


def _execution_strategy(settings: Dict[str, Any], prefix: str) -> Optional[Construct]:
    if settings[f"{prefix}execution_strategy"] is None:
        return None
    strategy = EXECUTION_STRATEGIES[settings[f"{prefix}execution_strategy"]]
    auto_stage = settings["auto_stage"]
    return Construct(strategy, () if auto_stage is None else (Ref(SETTINGS["auto_stage"].sdk_member(auto_stage)),))


def read_execution_strategy(options: Any, prefix: str) -> Dict[str, Any]:
    """From where poptorch 3.4 keeps the strategy: `Options._execution_strategy`, its explicit stages in
    `_block_map`, its `AutoStage` in its stage manager."""
    strategy = options._execution_strategy
    names = {path.rsplit(".", 1)[1]: choice for choice, path in EXECUTION_STRATEGIES.items()}
    kind = type(strategy).__name__
    if kind not in names:
        raise UnsupportedOptionsError({"setExecutionStrategy": f"{kind}: the settings express {', '.join(names)}"})
    if strategy._block_map:
        raise UnsupportedOptionsError({"setExecutionStrategy": f"{kind} with explicit stages {list(strategy._block_map)}"})
    auto_stage = SETTINGS["auto_stage"]
    members = {int(sdk_value(auto_stage.sdk_member(choice))): choice for choice in auto_stage.choices}
    return {
        f"{prefix}execution_strategy": names[kind],
        "auto_stage": members[int(strategy._stages_manager._auto_stage)],
    }


def _memory_proportions(settings: Dict[str, Any], prefix: str) -> Optional[Dict[str, Union[float, int]]]:
    """`{"IPU0": p0, ...}` for each IPU of one replica's pipeline."""
    ipus = settings[f"{prefix}ipus_per_replica"]
    proportion = settings[f"{prefix}matmul_proportion"]
    if proportion is None:
        return None
    per_ipu = proportion if isinstance(proportion, list) else [proportion] * ipus
    return {f"IPU{index}": per_ipu[index] for index in range(ipus)}


def read_memory_proportions(state: Dict[str, Any], prefix: str, ipus: Optional[int] = None) -> Dict[str, Any]:
    """The proportions of IPUs 0 to `ipus - 1` (default: every IPU the state names, as many as the pipeline has);
    null where the call was not made."""
    proportions = state.get("available_memory_proportion") or {}
    if not proportions:
        return {f"{prefix}matmul_proportion": None}
    ipus = len(proportions) if ipus is None else ipus
    if not ipus or any(index not in proportions for index in range(ipus)):
        raise UnsupportedOptionsError(
            {"available_memory_proportion": f"{_ipu_names(proportions)}: the settings give IPU0 to IPU<n-1>, n >= 1"}
        )
    per_ipu = [proportions[index] for index in range(ipus)]
    return {
        f"{prefix}ipus_per_replica": ipus,
        # one number for all IPUs, but a list for 0: an inference proportion of 0 means "as in training"
        f"{prefix}matmul_proportion": per_ipu[0] if len(set(per_ipu)) == 1 and per_ipu[0] else per_ipu,
    }


def _ipu_names(proportions: Dict[int, Any]) -> str:
    return "{" + ", ".join(f"IPU{index}: {value!r}" for index, value in sorted(proportions.items())) + "}"
