"""The two builds of a config, training and inference, as values: which settings each reads.

A setting that both builds read differently has an `inference_` twin (`ipus_per_replica`,
`inference_ipus_per_replica`); `Mode.setting` names the one a build reads, as optimum-graphcore's
`IPUConfig._get_managed_attr_mode_name` does for its own attributes, and `Mode.view` reads a settings dict so.
"""

from dataclasses import dataclass
from typing import Any, Mapping

from .table import SETTINGS

INFERENCE_PREFIX = "inference_"

# The settings whose inference build reads an `inference_` twin
TWINNED = frozenset(name[len(INFERENCE_PREFIX):] for name in SETTINGS if name.startswith(INFERENCE_PREFIX))


@dataclass(frozen=True)
class Mode:
    """A build: `TRAINING` or `INFERENCE` (`name`: `"training"` or `"inference"`, as `IPUConfig.mode` says it)."""

    name: str

    def __str__(self) -> str:
        return self.name

    @property
    def is_inference(self) -> bool:
        return self.name == "inference"

    def setting(self, name: str) -> str:
        """The setting this build reads for `name`: `"ipus_per_replica"` -> `"inference_ipus_per_replica"` in
        inference; a setting without a twin (`gradient_accumulation_steps`) is itself in both builds."""
        return INFERENCE_PREFIX + name if self.is_inference and name in TWINNED else name

    def view(self, settings: Mapping[str, Any]) -> "ModeSettings":
        """`settings` (a config's `vars()`) as this build reads them."""
        return ModeSettings(self, settings)

    @staticmethod
    def of(for_inference: bool) -> "Mode":
        """The build the public `for_inference=` keywords ask for."""
        return INFERENCE if for_inference else TRAINING

    @staticmethod
    def named(name: str) -> "Mode":
        """The build called `name` (`"training"` or `"inference"`)."""
        return _BY_NAME[name]


@dataclass(frozen=True)
class ModeSettings:
    """A settings dict as one build reads it: `view["ipus_per_replica"]` is `inference_ipus_per_replica` in
    inference."""

    mode: Mode
    settings: Mapping[str, Any]

    def __getitem__(self, name: str) -> Any:
        return self.settings[self.mode.setting(name)]


TRAINING = Mode("training")
INFERENCE = Mode("inference")
MODES = (TRAINING, INFERENCE)
_BY_NAME = {mode.name: mode for mode in MODES}
