"""Declarative, shareable PopTorch builds as Hugging Face Optimum `IPUConfig`s."""

from .configuration import IPUConfig
from .errors import (
    ConfigFileError,
    IncompatibleSettingsError,
    InvalidSettingError,
    IPUConfigError,
    PoplarSDKNotFoundError,
    SettingTypeError,
    UnknownSettingError,
)
from .plan import OptionsPlan

__version__ = "0.1.0"

__all__ = [
    "IPUConfig",
    "OptionsPlan",
    "IPUConfigError",
    "InvalidSettingError",
    "SettingTypeError",
    "IncompatibleSettingsError",
    "UnknownSettingError",
    "ConfigFileError",
    "PoplarSDKNotFoundError",
]
