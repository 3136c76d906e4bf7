"""`IPUConfig`: optimum-graphcore's IPU configuration, extended to describe a whole PopTorch build."""

import json
import os
import tempfile
import warnings
from typing import Any, Dict, Union

from .base import BaseIPUConfig
from .build import build_plan
from .bundled_base import BASE_SETTINGS, transformers_defaults
from .bundled_base import IPUConfig as BundledIPUConfig
from .errors import ConfigFileError, IncompatibleSettingsError, IPUConfigError, UnknownSettingError
from .legacy import LEGACY_KEYS
from .plan import OptionsPlan
from .settings import EXTENSION_SETTINGS, POPART_KEYS_WITH_A_SETTING


VERSION_KEYS = ("transformers_version", "optimum_version")


class IPUConfig(BaseIPUConfig):
    """Configuration of PopTorch and PopART for training and inference on IPUs.

    Takes every argument of `optimum.graphcore.IPUConfig` (with the same defaults and validation) and
    the settings of `optimum_ipu_ext.settings.EXTENSION_SETTINGS`, which describe the rest of the
    `poptorch.Options` build. It is an `optimum.graphcore.IPUConfig` where optimum-graphcore imports, so
    it can be handed to `IPUTrainer`; elsewhere it keeps the same contract, for authoring and review.

    Example:

    ```python
    >>> from optimum_ipu_ext import IPUConfig
    >>> config = IPUConfig.from_pretrained("configs/pipelined-2ipu.json", replication_factor=4)
    >>> print(config.options_plan())   # anywhere: the calls to_options() makes
    >>> opts = config.to_options()     # with the Poplar SDK: the poptorch.Options
    ```
    """

    SETTINGS = {**BASE_SETTINGS, **EXTENSION_SETTINGS}

    def __init__(self, **kwargs):
        _check_keys(kwargs)
        for name, setting in EXTENSION_SETTINGS.items():
            setattr(self, name, kwargs.pop(name) if name in kwargs else setting.default_value())
        super().__init__(**kwargs)

    def __setattr__(self, name: str, value: Any):
        setting = EXTENSION_SETTINGS.get(name)
        if setting is None:
            super().__setattr__(name, value)
        else:
            self.__dict__[name] = setting.check(value)

    update_from_string = BundledIPUConfig.update_from_string

    def _validate_ipu_config(self) -> "IPUConfig":
        super()._validate_ipu_config()
        ipus = self.ipus_per_replica
        for graph in self.accumulate_outer_fragment_excluded_virtual_graphs or []:
            if graph >= ipus:
                raise IncompatibleSettingsError(
                    "accumulate_outer_fragment_excluded_virtual_graphs",
                    self.accumulate_outer_fragment_excluded_virtual_graphs,
                    f"virtual graphs are the IPUs of the pipeline, 0 to {ipus - 1} as `ipus_per_replica={ipus}`",
                )
        for key in self.popart_options:
            if key in POPART_KEYS_WITH_A_SETTING:
                raise IncompatibleSettingsError(
                    "popart_options", {key: self.popart_options[key]}, f"set `{POPART_KEYS_WITH_A_SETTING[key]}` instead"
                )
        return self

    def options_plan(self, for_inference: bool = False, compile_only: bool = False) -> OptionsPlan:
        """The `poptorch.Options` calls `to_options()` makes, as data. Needs no Poplar SDK.

        `print(config.options_plan())` shows them as the equivalent Python; `.to_json()` as JSON.
        """
        self._validate_ipu_config()
        return build_plan(self, for_inference=for_inference, compile_only=compile_only)

    def to_options(self, for_inference: bool = False, compile_only: bool = False):
        """Builds the `poptorch.Options` of this configuration (needs the Poplar SDK).

        Args:
            for_inference: build for inference rather than training.
            compile_only: compile for an offline IPU target, needing no IPU.

        Raises:
            PoplarSDKNotFoundError: poptorch is not installed; `options_plan()` works without it.
            RuntimeError: no IPU Mk2 is attached and `compile_only` is not set.
        """
        return self.options_plan(for_inference=for_inference, compile_only=compile_only).apply()

    def to_dict(self) -> Dict[str, Any]:
        """The configuration as a dictionary. Extension settings at their default are left out, so a config
        that uses none of them stays loadable by optimum-graphcore's own `IPUConfig`."""
        output = super().to_dict()
        for name, setting in EXTENSION_SETTINGS.items():
            if output.get(name) == setting.default:
                del output[name]
        return output

    @classmethod
    def from_dict(cls, config_dict: Dict[str, Any], **kwargs) -> "IPUConfig":
        """Builds a configuration from a dictionary; keyword arguments override its values."""
        return_unused_kwargs = kwargs.pop("return_unused_kwargs", False)
        for internal in ("_from_auto", "_from_pipeline", "_commit_hash"):
            kwargs.pop(internal, None)
        config = cls(**{**config_dict, **kwargs})
        return (config, {}) if return_unused_kwargs else config

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path: Union[str, os.PathLike], **kwargs) -> "IPUConfig":
        """Loads a configuration from a JSON file, a directory holding `ipu_config.json`, or a Hub repository.

        Keyword arguments are those of `transformers.PretrainedConfig.from_pretrained` (`revision`,
        `cache_dir`, `token`, ...) and settings overriding the loaded values.
        """
        config_dict, overrides = cls.get_config_dict(pretrained_model_name_or_path, **kwargs)
        try:
            return cls.from_dict(config_dict, **overrides)
        except IPUConfigError as error:
            error.args = (f"{error} (loading '{pretrained_model_name_or_path}')",)
            raise

    @classmethod
    def _dict_from_json_file(cls, json_file: Union[str, os.PathLike]) -> Dict[str, Any]:
        try:
            with open(json_file, encoding="utf-8") as reader:
                config_dict = json.load(reader)
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise ConfigFileError(str(json_file), f"not valid JSON ({error})") from error
        if not isinstance(config_dict, dict):
            raise ConfigFileError(str(json_file), f"expected a JSON object, found {type(config_dict).__name__}")
        return config_dict

    def save_pretrained(self, save_directory: Union[str, os.PathLike], push_to_hub: bool = False, **kwargs):
        """Writes `ipu_config.json` to `save_directory` (optionally pushing it), after checking the settings."""
        self._validate_ipu_config()
        super().save_pretrained(save_directory, push_to_hub=push_to_hub, **kwargs)

    def to_json_string(self, use_diff: bool = True) -> str:
        """The configuration as JSON. With `use_diff`, transformers' own attributes are left out where they
        hold their default, as transformers does, without building default configs on every call."""
        config_dict = self.to_dict()
        if use_diff:
            defaults = transformers_defaults()
            config_dict = {
                key: value
                for key, value in config_dict.items()
                if key not in defaults or key in VERSION_KEYS or value != defaults[key]
            }
        return json.dumps(config_dict, indent=2, sort_keys=True) + "\n"

    def to_json_file(self, json_file_path: Union[str, os.PathLike], use_diff: bool = True) -> None:
        """Writes the configuration as JSON, atomically: a failed write leaves any previous file intact."""
        text = self.to_json_string(use_diff=use_diff)
        directory = os.path.dirname(os.path.abspath(json_file_path))
        descriptor, partial = tempfile.mkstemp(dir=directory, prefix=".ipu_config.", suffix=".partial")
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as writer:
                writer.write(text)
            os.replace(partial, json_file_path)
        except BaseException:
            os.unlink(partial)
            raise


def _check_keys(kwargs: Dict[str, Any]) -> None:
    """Rejects keys no release ever had; drops, with a warning, keys that earlier releases had."""
    for key in list(kwargs):
        if key in IPUConfig.SETTINGS or key in transformers_defaults():
            continue
        if key in LEGACY_KEYS:
            warnings.warn(f"`{key}` is no longer an IPUConfig setting and is ignored: {LEGACY_KEYS[key]}", FutureWarning)
            del kwargs[key]
        else:
            raise UnknownSettingError(key, IPUConfig.SETTINGS)
