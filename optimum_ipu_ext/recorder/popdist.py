"""`popdist` as a process that `poprun` did not launch sees it: one instance running one replica of one IPU."""


def isPopdistEnvSet() -> bool:
    """Whether poprun launched this process: never, where the recorder stands in."""
    return False


def getNumTotalReplicas() -> int:
    return 1


def getNumLocalReplicas() -> int:
    return 1


def getNumIpusPerReplica() -> int:
    return 1


def getReplicaIndexOffset() -> int:
    return 0


def getNumInstances() -> int:
    return 1


def getInstanceIndex() -> int:
    return 0
