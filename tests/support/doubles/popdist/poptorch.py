"""Strict test double of ``popdist.poptorch`` (Poplar SDK 3.4): ``poptorch.Options`` set up by poprun.

``Options`` sets, from PopDist, the instance's local replicas, its process id and count and (under
poprun) its IPUs, then refuses the calls that would change them, with the real one's ``RuntimeError``.
Outside a launch it is a single process with one replica, as the real one is.
"""
from typing import Optional

import popdist
import poptorch


def _refuse(method: str):
    raise RuntimeError(f"Cannot call `{method}` with popdist.poptorch.Options")


class _DistributedOptions(poptorch.options._DistributedOptions):
    """``Options.Distributed`` once PopDist has configured it: the process id and count are PopDist's.

    The real one refuses these calls whatever their arguments (poptorch's ``popdist_test.py`` calls
    ``configureProcessId(1)`` and expects the ``RuntimeError``).
    """

    def disable(self, *args, **kwargs):
        _refuse("Distributed.disable")

    def setEnvVarNames(self, *args, **kwargs):
        _refuse("Distributed.setEnvVarNames")

    def configureProcessId(self, *args, **kwargs):
        _refuse("Distributed.configureProcessId")


class Options(poptorch.Options):
    """``poptorch.Options`` for this instance of a poprun launch."""

    def __init__(self, ipus_per_replica: Optional[int] = None) -> None:
        self._configured_by_popdist = False  # private attributes must exist before the option values
        super().__init__()
        if ipus_per_replica is None:
            ipus_per_replica = popdist.getNumIpusPerReplica()
        self.replicationFactor(popdist.getNumLocalReplicas())
        self.Distributed.configureProcessId(popdist.getInstanceIndex(), popdist.getNumInstances())
        if popdist.isPopdistEnvSet():
            self.useIpuId(popdist.getDeviceId(ipus_per_replica))
        # poptorch's own OptionsDict lets ``__class__`` be reassigned for this wrapping; the poptorch double does not.
        object.__setattr__(self._distributed, "__class__", _DistributedOptions)
        self._configured_by_popdist = True

    def replicationFactor(self, replication_factor: int) -> "Options":
        if self._configured_by_popdist:
            _refuse("replicationFactor")
        return super().replicationFactor(replication_factor)

    def useIpuId(self, ipu_id: int) -> "Options":
        if self._configured_by_popdist:
            _refuse("useIpuId")
        return super().useIpuId(ipu_id)
