"""The class `IPUConfig` builds on: `optimum.graphcore.IPUConfig` where it imports, else the bundled one.

optimum-graphcore imports poptorch, so it imports only where the Poplar SDK is installed: there our
`IPUConfig` is a real `optimum.graphcore.IPUConfig` (which `IPUTrainer` requires). Nothing else in
the package knows which base it got.
"""

try:
    from optimum.graphcore import IPUConfig as BaseIPUConfig
except ImportError:
    from .bundled_base import IPUConfig as BaseIPUConfig

BASE_ORIGIN = BaseIPUConfig.__module__

__all__ = ["BaseIPUConfig", "BASE_ORIGIN"]
