"""Declarative, shareable PopTorch builds as Hugging Face Optimum `IPUConfig`s."""

from typing import TYPE_CHECKING

from ._version import __version__
from .errors import (
    ArchitectureError,
    BuilderError,
    CalibrationFileError,
    ConfigFileError,
    ConfigMigrationWarning,
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
    IPUConfigWarning,
    MeasuredRunError,
    ModelFileError,
    OptionsFileError,
    OutputExistsError,
    PlacementError,
    PoplarSDKNotFoundError,
    SettingTypeError,
    UnknownSettingError,
    UnsupportedOptionsError,
)
from .sdk.plan import OptionsPlan
from .sdk.popdist import PopDistLaunch

if TYPE_CHECKING:
    from .config.configuration import IPUConfig
    from .config.plain import PlainIPUConfig
    from .placement.placement import Placement
    from .placement.planning import Plan

__all__ = [
    "IPUConfig",
    "PlainIPUConfig",
    "OptionsPlan",
    "PopDistLaunch",
    "Placement",
    "Plan",
    "plan",
    "IPUConfigError",
    "InvalidSettingError",
    "SettingTypeError",
    "IncompatibleSettingsError",
    "UnknownSettingError",
    "UnsupportedOptionsError",
    "ConfigFileError",
    "ModelFileError",
    "OptionsFileError",
    "OutputExistsError",
    "PlacementError",
    "ArchitectureError",
    "CalibrationFileError",
    "MeasuredRunError",
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
    "IPUConfigWarning",
    "ConfigMigrationWarning",
    "__version__",
]


def __getattr__(name: str):
    """The config classes are imported on first use: `IPUConfig` imports transformers (and, on IPU hosts,
    optimum-graphcore); `PlainIPUConfig` needs neither, and `ipu-config` on local files imports nothing else."""
    if name == "IPUConfig":
        from .config.configuration import IPUConfig

        return IPUConfig
    if name == "PlainIPUConfig":
        from .config.plain import PlainIPUConfig

        return PlainIPUConfig
    if name == "Placement":  # what `placement()` returns, for annotations and isinstance
        from .placement.placement import Placement

        return Placement
    if name == "plan":
        from .config.planning import plan

        return plan
    if name == "Plan":  # what `plan()` returns
        from .placement.planning import Plan

        return Plan
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
