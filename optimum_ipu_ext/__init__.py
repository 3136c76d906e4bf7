"""Declarative, shareable PopTorch builds as Hugging Face Optimum `IPUConfig`s."""

from .configuration import IPUConfig
from .errors import (
    ConfigFileError,
    HubAccessDeniedError,
    HubConfigFileError,
    HubError,
    HubFileNotFoundError,
    HubRepositoryNotFoundError,
    HubRevisionNotFoundError,
    HubUnavailableError,
    IncompatibleSettingsError,
    InvalidSettingError,
    IPUConfigError,
    PoplarSDKNotFoundError,
    SettingTypeError,
    UnknownSettingError,
)
from .plan import OptionsPlan
from .popdist import PopDistLaunch

__version__ = "0.1.0"

__all__ = [
    "IPUConfig",
    "OptionsPlan",
    "PopDistLaunch",
    "IPUConfigError",
    "InvalidSettingError",
    "SettingTypeError",
    "IncompatibleSettingsError",
    "UnknownSettingError",
    "ConfigFileError",
    "PoplarSDKNotFoundError",
    "HubError",
    "HubRepositoryNotFoundError",
    "HubRevisionNotFoundError",
    "HubFileNotFoundError",
    "HubAccessDeniedError",
    "HubUnavailableError",
    "HubConfigFileError",
]
