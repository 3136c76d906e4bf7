"""Strict test double of Graphcore's ``popart`` (Poplar SDK 3.4): the session-option enums option builders use.

The real enums are pybind11 enums without arithmetic: ``int(member)`` gives the
value, ``.name``/``.value`` work, and a member never equals a plain int. The
C++ ``RecomputationType::None`` is spelled ``NoRecompute`` in Python.
"""
import enum


class _NativeEnum(enum.Enum):
    """An enum that converts to ``int`` like a pybind11 enum and compares only with its own members."""

    def __int__(self) -> int:
        return self.value

    def __index__(self) -> int:
        return self.value


class RecomputationType(_NativeEnum):
    """Which forward ops are recomputed in the backward pass (``autoRecomputation``)."""

    NoRecompute = 0
    Standard = 1
    NormOnly = 2
    Pipeline = 3
    RecomputeAll = 4


class AccumulateOuterFragmentSchedule(_NativeEnum):
    """How the accumulate outer fragment is scheduled (``accumulateOuterFragmentSettings.schedule``)."""

    Scheduler = 0
    Serial = 1
    OverlapCycleOptimized = 2
    OverlapMemoryOptimized = 3


class SubgraphCopyingStrategy(_NativeEnum):
    """When subgraph inputs and outputs are copied (``subgraphCopyingStrategy``)."""

    OnEnterAndExit = 0
    JustInTime = 1


class SyntheticDataMode(_NativeEnum):
    """What the IPU feeds the model instead of host data (``syntheticDataMode``)."""

    Off = 0
    Zeros = 1
    RandomNormal = 2
    RandomUniform = 3


class PatternsLevel(_NativeEnum):
    """Which set of PopART patterns runs by default (``patterns_level``; poptorch's default is 2)."""

    NoPatterns = 0
    Minimal = 1
    Default = 2
    All = 3
