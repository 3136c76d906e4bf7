"""`PlainIPUConfig`: an IPU config without transformers, for what only checks, previews or writes configs
(`ipu-config` on local files, editors, pre-commit hooks)."""

import os
from typing import TYPE_CHECKING, Any, Dict, Optional, Union

from ..errors import naming_source
from ..settings.files import CONFIG_NAME, dump, installed_versions, read_config_file, write_text_atomically
from ..settings.migration import migrate_and_warn
from ..settings.rules import check_keys, derive_base_settings
from ..settings.table import EXTENSION_SETTINGS
from .mixin import SettingsMixin

if TYPE_CHECKING:
    from .configuration import IPUConfig


class PlainIPUConfig(SettingsMixin):
    """An IPU config without transformers: the same settings, validation, options plan and JSON as `IPUConfig`.

    What `ipu-config` uses for local files and presets, and what a tool that only checks or previews configs
    can use; `to_ipu_config()` gives the `IPUConfig` for training.

    Example:

    ```python
    >>> from optimum_ipu_ext import PlainIPUConfig
    >>> config = PlainIPUConfig.from_json_file("configs/pipelined-2ipu.json", replication_factor=4)
    >>> print(config.options_plan())
    ```
    """

    def __init__(self, **values: Any):
        check_keys(values)
        for name, setting in EXTENSION_SETTINGS.items():  # first, as IPUConfig does: errors come in the same order
            setattr(self, name, values[name] if name in values else setting.default_value())
        for name, value in derive_base_settings(values).items():
            setattr(self, name, value)
        self._validate_ipu_config()  # transformers' own keys are accepted and, as optimum-graphcore does, not kept

    @classmethod
    def from_dict(cls, config_dict: Dict[str, Any], **overrides: Any) -> "PlainIPUConfig":
        """The config of `config_dict`, with `overrides` replacing its values."""
        return cls(**{**config_dict, **overrides})

    @classmethod
    def from_json_file(cls, path: Union[str, os.PathLike], pod_type: Optional[str] = None,
                       **overrides: Any) -> "PlainIPUConfig":
        """Loads `path`, a file of any optimum-graphcore release in 0.7.1's terms (`pod_type` chooses the values of
        per-pod-type settings); an error about a setting, and a warning about what was migrated, name the file."""
        config_dict = read_config_file(path)
        with naming_source(repr(str(path))):
            return cls.from_dict(migrate_and_warn(config_dict, str(path), pod_type), **overrides)

    def to_ipu_config(self) -> "IPUConfig":
        """An `IPUConfig` of these settings (imports transformers): for training, or to share on the Hub."""
        from .configuration import IPUConfig

        return IPUConfig.from_dict(self.settings_dict())

    def to_dict(self) -> Dict[str, Any]:
        """The settings as saved (see `settings_dict`)."""
        return self.settings_dict()

    def to_json_string(self) -> str:
        """The text of `ipu_config.json`, as `IPUConfig.save_pretrained` writes it with this release of
        transformers and optimum installed."""
        return dump({**self.to_dict(), **installed_versions()})

    def save_pretrained(self, save_directory: Union[str, os.PathLike]) -> str:
        """Writes `save_directory/ipu_config.json` atomically, after checking the settings; returns its path."""
        self._validate_ipu_config()
        os.makedirs(save_directory, exist_ok=True)
        path = os.path.join(save_directory, CONFIG_NAME)
        write_text_atomically(path, self.to_json_string())
        return path
