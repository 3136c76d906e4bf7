"""`popdist.poptorch` outside a poprun launch: `Options` set up for a single instance of one replica.

Like PopDist's, its `Options` sets the replicas and the process itself, then refuses the calls that would change
them (`RuntimeError`).
"""

from typing import Any, Optional

from . import popdist
from .options import Options as _Options, _DistributedOptions


def _refuse(method: str):
    raise RuntimeError(f"Cannot call `{method}` with popdist.poptorch.Options")


class _PopDistDistributedOptions(_DistributedOptions):
    """`Options.Distributed` once PopDist set it: every call that changes the process is refused."""

    def disable(self, *args: Any, **kwargs: Any) -> None:
        _refuse("Distributed.disable")

    def setEnvVarNames(self, *args: Any, **kwargs: Any) -> None:
        _refuse("Distributed.setEnvVarNames")

    def configureProcessId(self, *args: Any, **kwargs: Any) -> None:
        _refuse("Distributed.configureProcessId")


class Options(_Options):
    """`poptorch.Options` for this (single) instance."""

    def __init__(self, ipus_per_replica: Optional[int] = None) -> None:
        self._configured_by_popdist = False  # private attributes are made before the option values
        super().__init__()
        self.replicationFactor(popdist.getNumLocalReplicas())
        self.Distributed.configureProcessId(popdist.getInstanceIndex(), popdist.getNumInstances())
        object.__setattr__(self._distributed, "__class__", _PopDistDistributedOptions)
        self._configured_by_popdist = True

    def replicationFactor(self, replication_factor: int) -> "Options":
        if self._configured_by_popdist:
            _refuse("replicationFactor")
        return super().replicationFactor(replication_factor)

    def useIpuId(self, ipu_id: int) -> "Options":
        if self._configured_by_popdist:
            _refuse("useIpuId")
        return super().useIpuId(ipu_id)
