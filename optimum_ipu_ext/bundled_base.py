"""The base class used where `optimum.graphcore` cannot be imported (any machine without the Poplar SDK).

It keeps the contract of optimum-graphcore 0.7.1's `IPUConfig`: the same constructor arguments and
defaults, the `inference_*` fallbacks, training/inference modes with their mode-managed attributes,
the same validation, `batch_size_factor`, `update_from_string`, `to_dict` and file name, on optimum's
`BaseConfig`. Validation is table driven (`BASE_SETTINGS`), which makes construction cheap.
"""

import functools
import logging
from typing import Any, Dict, List, Optional, Union

from optimum.configuration_utils import BaseConfig

from .errors import IncompatibleSettingsError, InvalidSettingError, UnknownSettingError
from .schema import Setting, parse_update_string, table


logger = logging.getLogger(__name__)

IncompatibleIPUConfigError = IncompatibleSettingsError


def _consecutive_splits(splits: List[int]) -> Optional[str]:
    if sum(splits) < 1:
        return "at least one split is needed"
    used = [index for index, count in enumerate(splits) if count]
    if used[-1] - used[0] + 1 != len(used):
        return "splits must sit on consecutive IPUs, e.g. [3, 1, 0, 0]"
    return None


def _pair(name: str, annotation: Any, default: Any, doc: str, **checks: Any) -> List[Setting]:
    """A training setting and its `inference_` twin (which defaults to `None`: fall back to training)."""
    inference_annotation = annotation if default is None else Optional[annotation]
    return [
        Setting(name, annotation, default, doc, **checks),
        Setting(f"inference_{name}", inference_annotation, None, f"As `{name}`, for inference.", **checks),
    ]


BASE_SETTINGS = table(
    Setting("replication_factor", int, 1, "Replicas for data parallelism in training.",
            option="opts.replicationFactor", minimum=1),
    Setting("inference_replication_factor", int, 1, "Replicas for data parallelism in inference.",
            option="opts.replicationFactor", minimum=1),
    Setting("gradient_accumulation_steps", int, 1, "Micro-batches accumulated per weight update.",
            option="opts.Training.gradientAccumulation", minimum=1),
    *_pair("layers_per_ipu", List[int], [-1],
           "Layers on each IPU of the pipeline; -1 spreads the remaining layers evenly.", minimum=-1),
    *_pair("ipus_per_replica", Optional[int], None, "IPUs per replica (default: `len(layers_per_ipu)`).",
           minimum=1),
    Setting("optimizer_state_offchip", bool, False, "Keep the optimizer state in off-chip (streaming) memory.",
            option="opts.TensorLocations.setOptimizerLocation(...useOnChipStorage)"),
    Setting("replicated_tensor_sharding", bool, False,
            "Shard the optimizer state across replicas (when there are several).",
            option="opts.TensorLocations.setOptimizerLocation(...useReplicatedTensorSharding)"),
    *_pair("matmul_proportion", Union[float, List[float]], 0.2,
           "Available memory proportion for matmuls and convolutions, for every IPU or per IPU.",
           option="opts.setAvailableMemoryProportion", minimum=0),
    Setting("enable_half_partials", bool, True, "float16 partials for matmuls and convolutions.",
            option="opts.Precision.setPartialsType(torch.float16)"),
    *_pair("embedding_serialization_factor", Optional[int], None,
           "Serialise the embedding into this many parts on one IPU.", minimum=1),
    *_pair("serialized_embedding_splits_per_ipu", Optional[List[int]], None,
           "Embedding splits on each IPU of the pipeline.", minimum=0, constraint=_consecutive_splits),
    *_pair("projection_serialization_factor", Optional[int], None,
           "Serialise the output projection into this many parts.", minimum=1),
    *_pair("serialized_projection_splits_per_ipu", Optional[List[int]], None,
           "Projection splits on each IPU of the pipeline.", minimum=0, constraint=_consecutive_splits),
    Setting("recompute_checkpoint_every_layer", bool, False, "Checkpoint activations at the end of every layer."),
    Setting("device_iterations", int, 1, "Batches the device runs per call in training.",
            option="opts.deviceIterations", minimum=1),
    Setting("inference_device_iterations", int, 1, "Batches the device runs per call in inference.",
            option="opts.deviceIterations", minimum=1),
    Setting("output_mode", str, "final", "Which results return to the host in training (inference: all).",
            option="opts.outputMode", choices={"all": "All", "sum": "Sum", "final": "Final", "default": "Default"},
            sdk_enum="poptorch.OutputMode"),
    Setting("seed", Optional[int], None, "Seed of the IPU random number generator.", option="opts.randomSeed"),
    Setting("auto_loss_scaling", bool, False, "Automatic loss scaling in training (experimental).",
            option="opts.Training.setAutomaticLossScaling"),
    Setting("executable_cache_dir", str, "", "Cache compiled executables here (`\"\"` or `\"disabled\"`: off).",
            option="opts.enableExecutableCaching"),
    Setting("explicit_ir_inference", bool, False, "PopART's explicit IR for inference (experimental).",
            option='opts._Popart.set("enableExplicitIR")'),
    *_pair("parallelize_kwargs", Optional[Dict[str, Any]], None, "Keyword arguments for the model's `parallelize`."),
    Setting("execute_encoder_on_cpu_for_generation", bool, False, "Run the encoder on the CPU (not supported)."),
)

MODE_MANAGED = (
    "layers_per_ipu",
    "ipus_per_replica",
    "matmul_proportion",
    "embedding_serialization_factor",
    "serialized_embedding_splits_per_ipu",
    "projection_serialization_factor",
    "serialized_projection_splits_per_ipu",
    "parallelize_kwargs",
)


class ManagedAttribute:
    """Reads and writes `attr` in training mode and `inference_attr` in inference mode."""

    def __init__(self, attr: str):
        self.attr = attr

    def _target(self, config: "IPUConfig") -> str:
        return f"inference_{self.attr}" if config.mode == "inference" else self.attr

    def __get__(self, config, owner=None):
        return self if config is None else getattr(config, self._target(config))

    def __set__(self, config, value):
        setattr(config, self._target(config), value)


class IPUConfig(BaseConfig):
    """Configuration of PopTorch/PopART for the IPU, with the contract of optimum-graphcore 0.7.1's `IPUConfig`."""

    CONFIG_NAME = "ipu_config.json"
    FULL_CONFIGURATION_FILE = "ipu_config.json"
    SETTINGS = BASE_SETTINGS

    modes = ("training", "inference")

    def __init__(
        self,
        replication_factor: int = 1,
        inference_replication_factor: int = 1,
        gradient_accumulation_steps: int = 1,
        layers_per_ipu: List[int] = [-1],  # noqa: B006 (never mutated; the signature matches upstream's)
        inference_layers_per_ipu: Optional[List[int]] = None,
        ipus_per_replica: Optional[int] = None,
        inference_ipus_per_replica: Optional[int] = None,
        optimizer_state_offchip: bool = False,
        replicated_tensor_sharding: bool = False,
        matmul_proportion: Union[float, List[float]] = 0.2,
        inference_matmul_proportion: Optional[Union[float, List[float]]] = None,
        enable_half_partials: bool = True,
        embedding_serialization_factor: Optional[int] = None,
        inference_embedding_serialization_factor: Optional[int] = None,
        serialized_embedding_splits_per_ipu: Optional[List[int]] = None,
        inference_serialized_embedding_splits_per_ipu: Optional[List[int]] = None,
        projection_serialization_factor: Optional[int] = None,
        inference_projection_serialization_factor: Optional[int] = None,
        serialized_projection_splits_per_ipu: Optional[List[int]] = None,
        inference_serialized_projection_splits_per_ipu: Optional[List[int]] = None,
        recompute_checkpoint_every_layer: bool = False,
        device_iterations: int = 1,
        inference_device_iterations: int = 1,
        output_mode: str = "final",
        seed: Optional[int] = None,
        auto_loss_scaling: bool = False,
        executable_cache_dir: str = "",
        explicit_ir_inference: bool = False,
        parallelize_kwargs: Optional[Dict[str, Any]] = None,
        inference_parallelize_kwargs: Optional[Dict[str, Any]] = None,
        **kwargs,
    ):
        arguments = dict(locals())
        del arguments["self"], arguments["kwargs"]
        arguments["execute_encoder_on_cpu_for_generation"] = kwargs.pop("execute_encoder_on_cpu_for_generation", False)
        for key in kwargs:
            if key not in transformers_defaults():
                raise UnknownSettingError(key, BASE_SETTINGS)

        arguments["inference_layers_per_ipu"] = inference_layers_per_ipu or list(layers_per_ipu)
        arguments["ipus_per_replica"] = ipus_per_replica or len(layers_per_ipu)
        inference_pipeline = arguments["ipus_per_replica"]
        if inference_pipeline == len(layers_per_ipu) or arguments["inference_layers_per_ipu"] != [-1]:
            inference_pipeline = len(arguments["inference_layers_per_ipu"])
        arguments["inference_ipus_per_replica"] = inference_ipus_per_replica or inference_pipeline
        if not inference_matmul_proportion:
            per_ipu_mismatch = isinstance(matmul_proportion, list) and len(matmul_proportion) != inference_pipeline
            arguments["inference_matmul_proportion"] = 0.2 if per_ipu_mismatch else matmul_proportion
        arguments["parallelize_kwargs"] = parallelize_kwargs or {}
        arguments["inference_parallelize_kwargs"] = inference_parallelize_kwargs or {}

        self.train()
        for name, value in arguments.items():
            setattr(self, name, value)
        self._validate_ipu_config()

    def __setattr__(self, name: str, value: Any):
        setting = BASE_SETTINGS.get(name)
        if setting is None:
            super().__setattr__(name, value)
        else:
            self.__dict__[name] = setting.check(value)

    @property
    def mode(self) -> str:
        """`"training"` or `"inference"`: which of a pair of mode-managed attributes is in use."""
        return self._mode

    @mode.setter
    def mode(self, value: str):
        if value not in self.modes:
            raise InvalidSettingError("mode", value, f"allowed values are {self.modes}; use train() or eval()")
        self._mode = value

    def train(self) -> "IPUConfig":
        self._mode = "training"
        return self

    def eval(self) -> "IPUConfig":
        self._mode = "inference"
        return self

    def _get_managed_attr_mode_name(self, attr: str) -> str:
        """The attribute `attr` stands for in the current mode: in inference, its `inference_` twin if it has one."""
        if self.mode == "inference" and hasattr(self, attr) and hasattr(self, f"inference_{attr}"):
            return f"inference_{attr}"
        return attr

    def _validate_ipu_config(self) -> "IPUConfig":
        """Checks that the settings agree with each other, in both modes."""
        if self.replicated_tensor_sharding and self.replication_factor == 1:
            logger.warning("`replicated_tensor_sharding` is not used when `replication_factor=1`")
        for prefix in ("", "inference_"):
            self._validate_pipeline_lengths(prefix)
        return self

    def _validate_pipeline_lengths(self, prefix: str) -> None:
        """Checks the per-IPU settings of one mode: `prefix` is `""` for training, `"inference_"` for inference."""
        ipus_name = f"{prefix}ipus_per_replica"
        ipus = getattr(self, ipus_name)

        def require_pipeline_length(name: str) -> None:
            value = getattr(self, name)
            if len(value) != ipus:
                raise IncompatibleSettingsError(name, value, f"it needs one entry per IPU, as `{ipus_name}={ipus}`")

        if isinstance(getattr(self, f"{prefix}matmul_proportion"), list):
            require_pipeline_length(f"{prefix}matmul_proportion")
        if -1 not in getattr(self, f"{prefix}layers_per_ipu"):
            require_pipeline_length(f"{prefix}layers_per_ipu")
        for layer in ("embedding", "projection"):
            factor_name = f"{prefix}{layer}_serialization_factor"
            splits_name = f"{prefix}serialized_{layer}_splits_per_ipu"
            factor, splits = getattr(self, factor_name), getattr(self, splits_name)
            if splits and factor:
                raise IncompatibleSettingsError(
                    factor_name,
                    factor,
                    f"give `{factor_name}` (serialise on one IPU) or `{splits_name}` (split across IPUs), not both",
                )
            if splits:
                require_pipeline_length(splits_name)
            elif not factor:
                setattr(self, factor_name, 1)

    def to_dict(self) -> Dict[str, Any]:
        """The attributes that make up this configuration, as a JSON-serializable dictionary."""
        output = super().to_dict()
        output.pop("_mode", None)
        return output

    def batch_size_factor(self, for_inference: bool = False) -> int:
        """The factor from micro batch size to combined batch size: replicas x accumulation x device iterations."""
        if for_inference:
            return self.inference_replication_factor * self.inference_device_iterations
        return self.replication_factor * self.gradient_accumulation_steps * self.device_iterations

    def update_from_string(self, update_str: str) -> None:
        """Updates attributes from `"key=value,key=value"`; booleans are `true`/`false`, lists `[a b c]`.

        Every value is checked before any is applied, and the whole update is undone if the settings
        then disagree with each other.
        """
        updates = parse_update_string(update_str, self.SETTINGS)
        previous = {name: getattr(self, name) for name in updates}
        self.__dict__.update(updates)
        try:
            self._validate_ipu_config()
        except Exception:
            self.__dict__.update(previous)
            raise


for _attr in MODE_MANAGED:
    setattr(IPUConfig, f"_{_attr}", ManagedAttribute(_attr))


@functools.lru_cache(maxsize=None)
def transformers_defaults() -> Dict[str, Any]:
    """transformers' own config attributes and their defaults. A saved config may carry them (its versions,
    say): they are not IPU settings and are ignored, as upstream does. Do not mutate."""
    return BaseConfig().to_dict()
