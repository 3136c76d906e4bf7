"""What poprun exports to the instances it launches."""


def poprun_environment(num_replicas, num_instances, instance, ipus_per_replica=2):
    """What `poprun --num-replicas R --num-instances N --ipus-per-replica I` exports to one instance (the
    POPDIST_* variables of its verbose log) and what mpirun, which starts the instances, sets."""
    local = num_replicas // num_instances
    return {
        "POPDIST_NUM_TOTAL_REPLICAS": str(num_replicas),
        "POPDIST_NUM_IPUS_PER_REPLICA": str(ipus_per_replica),
        "POPDIST_NUM_LOCAL_REPLICAS": str(local),
        "POPDIST_UNIFORM_REPLICAS_PER_INSTANCE": "1",
        "POPDIST_REPLICA_INDEX_OFFSET": str(instance * local),
        "POPDIST_LOCAL_INSTANCE_INDEX": "0",
        "OMPI_COMM_WORLD_SIZE": str(num_instances),
        "OMPI_COMM_WORLD_RANK": str(instance),
    }
