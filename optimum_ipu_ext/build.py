"""From a configuration to its options plan: which `poptorch.Options` calls it implies, in which order.

The order and the calls follow optimum-graphcore 0.7.1's `IPUConfig.to_options`, extended by the
settings of `settings.EXTENSION_SETTINGS`. Under a poprun launch the options are PopDist's
`popdist.poptorch.Options`, which set the instance's replicas, process and IPUs themselves.
Nothing here imports the Poplar SDK.
"""

from typing import Any, List, Optional

from .plan import Construct, OptionCall, OptionsPlan, Ref, TempFile
from .popdist import PopDistLaunch
from .settings import EXECUTION_STRATEGIES, EXTENSION_SETTINGS


def build_plan(
    config: Any, for_inference: bool = False, compile_only: bool = False, popdist: Optional[PopDistLaunch] = None
) -> OptionsPlan:
    """The options plan of `config` for training (default) or inference, for a real or an offline target,
    on one host or (`popdist`) as one instance of a poprun launch."""
    if config.execute_encoder_on_cpu_for_generation:
        raise NotImplementedError("execute_encoder_on_cpu_for_generation is not supported yet.")
    calls: List[OptionCall] = []

    def call(method: str, *args: Any) -> None:
        calls.append(OptionCall(method, args))

    def member(name: str) -> Ref:
        """The SDK enum member a choice setting's current value stands for."""
        return Ref(_setting(config, name).sdk_member(getattr(config, name)))

    replication_setting = "inference_replication_factor" if for_inference else "replication_factor"
    replicas = getattr(config, replication_setting)
    if popdist is None:
        options, notes = Construct("poptorch.Options"), ()
    else:
        replicas = popdist.job_replicas(replication_setting, replicas)
        ipus = config.inference_ipus_per_replica if for_inference else config.ipus_per_replica
        options = Construct("popdist.poptorch.Options", kwargs=(("ipus_per_replica", ipus),))
        notes = (popdist.describe(),)
    call("autoRoundNumIPUs", config.auto_round_num_ipus)
    if popdist is None:  # PopDist's options set the instance's share of the replicas themselves
        call("replicationFactor", replicas)
    call("deviceIterations", config.inference_device_iterations if for_inference else config.device_iterations)
    if not for_inference:
        call("Training.gradientAccumulation", config.gradient_accumulation_steps)
        call("Training.accumulationAndReplicationReductionType", member("accumulation_and_replication_reduction_type"))
        if config.auto_loss_scaling:
            call("Training.setAutomaticLossScaling", True)
    call("outputMode", Ref("poptorch.OutputMode.All") if for_inference else member("output_mode"))
    if config.seed:
        call("randomSeed", config.seed)
    call(
        "TensorLocations.setOptimizerLocation",
        Construct(
            "poptorch.TensorLocationSettings",
            chain=(
                ("useOnChipStorage", (not config.optimizer_state_offchip,)),
                ("useReplicatedTensorSharding", (config.replicated_tensor_sharding and replicas > 1,)),
            ),
        ),
    )
    strategy = config.inference_execution_strategy if for_inference else config.execution_strategy
    call("setExecutionStrategy", Construct(EXECUTION_STRATEGIES[strategy], (member("auto_stage"),)))
    if compile_only:
        call("useOfflineIpuTarget")
    call("setAvailableMemoryProportion", _memory_proportions(config, for_inference))
    if config.executable_cache_dir and config.executable_cache_dir != "disabled":
        call("enableExecutableCaching", config.executable_cache_dir)
    if config.save_initializers_to_file:
        call("_Popart.set", "saveInitializersToFile", TempFile())
    call("Precision.enableStochasticRounding", config.stochastic_rounding and not for_inference)
    if config.enable_half_partials:
        call("Precision.setPartialsType", Ref("torch.float16"))
    for name, setting in EXTENSION_SETTINGS.items():
        value = getattr(config, name)
        if setting.popart_key and value is not None:
            option_value = Ref(setting.sdk_member(value), as_int=True) if setting.sdk_enum else setting.option_value(value)
            call("_Popart.set", setting.popart_key, option_value)
    if config.popart_patterns is not None:
        call("_Popart.setPatterns", dict(config.popart_patterns))
    if for_inference and config.explicit_ir_inference:
        call("_Popart.set", "enableExplicitIR", True)
    for key, value in config.popart_options.items():
        call("_Popart.set", key, value)
    return OptionsPlan(options, tuple(calls), compile_only, notes)


def _memory_proportions(config: Any, for_inference: bool) -> dict:
    """`{"IPU0": p0, ...}` for each IPU of one replica's pipeline."""
    ipus = config.inference_ipus_per_replica if for_inference else config.ipus_per_replica
    proportion = config.inference_matmul_proportion if for_inference else config.matmul_proportion
    per_ipu = proportion if isinstance(proportion, list) else [proportion] * ipus
    return {f"IPU{index}": per_ipu[index] for index in range(ipus)}


def _setting(config: Any, name: str):
    return type(config).SETTINGS[name]
