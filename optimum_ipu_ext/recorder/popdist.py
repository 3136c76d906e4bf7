"""`popdist` as a process that `poprun` did not launch sees it: one instance running one replica of one IPU."""


def isPopdistEnvSet() -> bool:
    """Whether poprun launched this process: never, where the recorder stands in."""
    return False


def getNumTotalReplicas() -> int:
    """The replicas of the whole job."""
    return 1


def getNumLocalReplicas() -> int:
    """The replicas of this instance."""
    return 1


def getNumIpusPerReplica() -> int:
    """The IPUs of one replica."""
    return 1


def getReplicaIndexOffset() -> int:
    """The index of this instance's first replica in the job."""
    return 0


def getNumInstances() -> int:
    """The instances of the job."""
    return 1


def getInstanceIndex() -> int:
    """The index of this instance."""
    return 0
