"""Declarative, shareable PopTorch builds as Hugging Face Optimum `IPUConfig`s."""

from typing import TYPE_CHECKING

from .errors import (
    BuilderError,
    ConfigFileError,
    HubAccessDeniedError,
    HubConfigFileError,
    HubError,
    HubFileNotFoundError,
    HubRepositoryNotFoundError,
    HubRevisionNotFoundError,
    HubUnavailableError,
    HubVisibilityError,
    IncompatibleSettingsError,
    InvalidSettingError,
    IPUConfigError,
    PoplarSDKNotFoundError,
    SettingTypeError,
    UnknownSettingError,
    UnsupportedOptionsError,
)
from .plan import OptionsPlan
from .popdist import PopDistLaunch

if TYPE_CHECKING:
    from .configuration import IPUConfig

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
    "UnsupportedOptionsError",
    "ConfigFileError",
    "PoplarSDKNotFoundError",
    "HubError",
    "HubRepositoryNotFoundError",
    "HubRevisionNotFoundError",
    "HubFileNotFoundError",
    "HubAccessDeniedError",
    "HubUnavailableError",
    "HubVisibilityError",
    "HubConfigFileError",
    "BuilderError",
]


def __getattr__(name: str):
    """`IPUConfig` is imported on first use: it imports transformers (and, on IPU hosts, optimum-graphcore)."""
    if name == "IPUConfig":
        from .configuration import IPUConfig

        return IPUConfig
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
