"""Strict test double of Graphcore's ``popdist`` (Poplar SDK 3.4): what poprun tells each instance.

Like the real library, every function reads poprun's ``POPDIST_*`` variables when it is called,
with the documented defaults outside a launch. Only what option builders use is here; anything
else raises ``AttributeError``. ``popdist.poptorch`` is a submodule that ``import popdist`` does
not load. Install it with ``doubles.installed(popdist_environment=...)``.
"""
import os

_ENVIRONMENT = (
    "POPDIST_NUM_TOTAL_REPLICAS",
    "POPDIST_NUM_IPUS_PER_REPLICA",
    "POPDIST_NUM_LOCAL_REPLICAS",
    "POPDIST_UNIFORM_REPLICAS_PER_INSTANCE",
    "POPDIST_REPLICA_INDEX_OFFSET",
    "POPDIST_LOCAL_INSTANCE_INDEX",
)


def _variable(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


def _require_uniform_replicas(function: str) -> None:
    if os.environ.get("POPDIST_UNIFORM_REPLICAS_PER_INSTANCE", "1") != "1":
        raise RuntimeError(f"popdist.{function}() can only be used with a uniform number of replicas per instance")


def isPopdistEnvSet() -> bool:
    """Whether this process was launched by poprun."""
    return "POPDIST_NUM_TOTAL_REPLICAS" in os.environ


def getNumTotalReplicas() -> int:
    """The replicas of the whole job (``poprun --num-replicas``); 1 outside a launch."""
    return _variable("POPDIST_NUM_TOTAL_REPLICAS", 1)


def getNumLocalReplicas() -> int:
    """The replicas of this instance; 1 outside a launch."""
    return _variable("POPDIST_NUM_LOCAL_REPLICAS", 1)


def getNumIpusPerReplica() -> int:
    """The IPUs of one replica (``poprun --ipus-per-replica``); 1 outside a launch."""
    return _variable("POPDIST_NUM_IPUS_PER_REPLICA", 1)


def getReplicaIndexOffset() -> int:
    """The index of this instance's first replica in the job; 0 outside a launch."""
    return _variable("POPDIST_REPLICA_INDEX_OFFSET", 0)


def getNumInstances() -> int:
    """The instances of the job; needs a uniform number of replicas per instance."""
    _require_uniform_replicas("getNumInstances")
    return getNumTotalReplicas() // getNumLocalReplicas()


def getInstanceIndex() -> int:
    """The index of this instance, in ``[0, getNumInstances())``; needs a uniform number of replicas per instance."""
    _require_uniform_replicas("getInstanceIndex")
    return getReplicaIndexOffset() // getNumLocalReplicas()


def getDeviceId(ipusPerReplica: int = 0) -> int:
    """The id of the multi-IPU device of this instance: its local replicas x ``ipusPerReplica`` IPUs
    (0: ``getNumIpusPerReplica()``), in a partition of the job's IPUs, as ``gc-info`` numbers devices:
    the single IPUs first, then the pairs, the groups of 4, ... each group in order.

    For ``poprun --num-replicas 8 --num-instances 4 --ipus-per-replica 2`` (16 IPUs, 4 per instance)
    the instances get devices 24, 25, 26 and 27, as Graphcore's PopRun tutorial shows.
    """
    ipus_per_replica = ipusPerReplica or getNumIpusPerReplica()
    partition = getNumTotalReplicas() * getNumIpusPerReplica()
    device = getNumLocalReplicas() * ipus_per_replica
    if not _power_of_two(partition) or not _power_of_two(device) or device > partition:
        raise ValueError(
            f"getDeviceId({ipusPerReplica}): the double models devices of 2^n IPUs within a partition of 2^m IPUs; "
            f"this instance would need {device} IPUs out of {partition}"
        )
    smaller_groups = 0
    size = 1
    while size < device:
        smaller_groups += partition // size
        size *= 2
    return smaller_groups + getInstanceIndex()


def _power_of_two(number: int) -> bool:
    return number > 0 and number & (number - 1) == 0
