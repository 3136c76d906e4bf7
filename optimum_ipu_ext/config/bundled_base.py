"""The base class used where `optimum.graphcore` cannot be imported (any machine without the Poplar SDK).

It keeps the contract of optimum-graphcore 0.7.1's `IPUConfig`: the same constructor arguments and
defaults, the `inference_*` fallbacks, training/inference modes with their mode-managed attributes,
the same validation, `batch_size_factor`, `update_from_string`, `to_dict` and file name, on optimum's
`BaseConfig`. Defaults, fallbacks and validation are the core's (`core.py`, `settings.BASE_SETTINGS`).
"""

import functools
from typing import Any, Dict, List, Optional, Union

from optimum.configuration_utils import BaseConfig

from ..errors import IncompatibleSettingsError, InvalidSettingError, UnknownSettingError
from ..settings.mode import Mode
from ..settings.rules import check_base_rules, derive_base_settings, update_settings_from_string
from ..settings.table import BASE_SETTINGS, TRANSFORMERS_KEYS

IncompatibleIPUConfigError = IncompatibleSettingsError

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
        return Mode.named(config.mode).setting(self.attr)

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
            if key not in TRANSFORMERS_KEYS:
                raise UnknownSettingError(key, BASE_SETTINGS)
        self.train()
        for name, value in derive_base_settings(arguments).items():
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
        return Mode.named(self.mode).setting(attr)

    def _validate_ipu_config(self) -> "IPUConfig":
        """Checks that the settings agree with each other, in both modes."""
        check_base_rules(vars(self))
        return self

    def to_dict(self) -> Dict[str, Any]:
        """The attributes that make up this configuration, as a JSON-serializable dictionary."""
        output = super().to_dict()
        output.pop("_mode", None)
        return output

    def batch_size_factor(self, for_inference: bool = False) -> int:
        """The factor from micro batch size to combined batch size: replicas x accumulation x device iterations."""
        mode = Mode.of(for_inference)
        settings = mode.view(vars(self))
        accumulation = 1 if mode.is_inference else self.gradient_accumulation_steps
        return settings["replication_factor"] * accumulation * settings["device_iterations"]

    update_from_string = update_settings_from_string


for _attr in MODE_MANAGED:
    setattr(IPUConfig, f"_{_attr}", ManagedAttribute(_attr))


@functools.lru_cache(maxsize=None)
def transformers_defaults() -> Dict[str, Any]:
    """transformers' own config attributes and their defaults. A saved config may carry them (its versions,
    say): they are not IPU settings and are ignored, as upstream does. Do not mutate."""
    return BaseConfig().to_dict()
