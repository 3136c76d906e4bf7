"""The native hardware query of ``poptorch.poptorch_core``, answered from the test's setting.

``doubles.installed(hardware_version=...)`` sets ``_hardware_version``: ``None`` stands
for a machine without IPUs, where the real query answers 0.
"""
from typing import Optional

_hardware_version: Optional[int] = None


def ipuHardwareVersion(numIpus: int = 1) -> int:
    """The IPU architecture version (2 for Mk2, 21 for Mk2 with FP8), 0 without IPUs, -1 if unknown."""
    return 0 if _hardware_version is None else _hardware_version
