"""From a configuration to its options plan: which `poptorch.Options` calls it implies.

The calls follow optimum-graphcore 0.7.1's `IPUConfig.to_options`, extended by the settings of
`settings.EXTENSION_SETTINGS`. A setting whose row names its `call` becomes that call through one generic
loop; the few calls that take several settings at once (rows marked `composite`) are made here. Under a poprun
launch the options are PopDist's `popdist.poptorch.Options`, which set the instance's replicas, process and
IPUs themselves. Nothing here imports the Poplar SDK.
"""

from typing import TYPE_CHECKING, Any, Dict, List, Optional, Union

from .plan import Construct, OptionCall, OptionsPlan, Ref
from .popdist import PopDistLaunch
from .settings import EXECUTION_STRATEGIES, SETTINGS

if TYPE_CHECKING:
    from .core import SettingsMixin

# What optimum-graphcore's inference build sets whatever the config says (its inference has no such setting).
INFERENCE_CALLS = {"outputMode": Ref("poptorch.OutputMode.All"), "Precision.enableStochasticRounding": False}

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
            call = OptionCall(setting.call, (setting.key, argument) if setting.key else (argument,))
            (popart_calls if setting.call.startswith("_Popart.") else calls).append(call)
    if for_inference:
        calls += [OptionCall(method, (argument,)) for method, argument in INFERENCE_CALLS.items()]
    sharded = settings["replicated_tensor_sharding"] and replicas > 1
    location = Construct(
        "poptorch.TensorLocationSettings",
        chain=(("useOnChipStorage", (not settings["optimizer_state_offchip"],)), ("useReplicatedTensorSharding", (sharded,))),
    )
    strategy = EXECUTION_STRATEGIES[settings[f"{prefix}execution_strategy"]]
    auto_stage = Ref(SETTINGS["auto_stage"].sdk_member(settings["auto_stage"]))
    calls += [
        OptionCall("TensorLocations.setOptimizerLocation", (location,)),
        OptionCall("setExecutionStrategy", (Construct(strategy, (auto_stage,)),)),
        OptionCall("setAvailableMemoryProportion", (_memory_proportions(settings, prefix),)),
    ]
    if compile_only:
        calls.append(OptionCall("useOfflineIpuTarget"))
    calls += popart_calls
    calls += [OptionCall("_Popart.set", (key, value)) for key, value in settings["popart_options"].items()]
    return OptionsPlan(options, tuple(calls), compile_only, notes)


def _memory_proportions(settings: Dict[str, Any], prefix: str) -> Dict[str, Union[float, int]]:
    """`{"IPU0": p0, ...}` for each IPU of one replica's pipeline."""
    ipus = settings[f"{prefix}ipus_per_replica"]
    proportion = settings[f"{prefix}matmul_proportion"]
    per_ipu = proportion if isinstance(proportion, list) else [proportion] * ipus
    return {f"IPU{index}": per_ipu[index] for index in range(ipus)}
