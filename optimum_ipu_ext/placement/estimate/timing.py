"""How long one step of the whole job takes: a training step is one optimizer step of every replica (its G
micro-batches), an inference step one run of `inference_device_iterations` micro-batches.

- pipeline: each cycle, every IPU runs one stage forward and one backward (with its recomputation); the IPU that
  computes the most paces them all, at `COMPUTE_EFFICIENCY` of the IPU's fp16.16 peak. A build that is not
  pipelined runs its micro-batches through the IPUs one at a time;
- weight update: the optimizer state kept off chip is read from Streaming Memory and written back, each IPU its own
  share;
- reduction: each IPU's gradients are summed over the replicas by a ring (reduce-scatter then all-gather, which
  replicated tensor sharding splits around the update: the same bytes), over IPU-Links within a Pod of 64 IPUs,
  and between Pods over the Gateway-Links, where each replica's share of the Pod's sum goes;
- overhead: `STEP_OVERHEAD_SECONDS` for each optimizer step.

The constants are in hardware.py, with their sources. Inference has no update, reduction or overhead.
"""

from math import ceil
from typing import Any, Dict, NamedTuple, Optional, Sequence

from ..hardware import (
    COMPUTE_EFFICIENCY,
    GATEWAY_LINK_BYTES_PER_SECOND,
    IPU_LINK_BYTES_PER_SECOND,
    POD_IPUS,
    STEP_OVERHEAD_SECONDS,
    STREAMING_BYTES_PER_SECOND,
    IPUType,
)


class IPUShare(NamedTuple):
    """What one IPU of the pipeline does in a step: its FLOPs for one micro-batch (forward, backward and
    recomputation), its gradients' bytes, and the bytes of optimizer state it keeps in Streaming Memory."""

    flops: int
    gradient_bytes: int
    streamed_bytes: int


class Job(NamedTuple):
    """The build around the pipeline: `micro_batches` a step (G, or the inference device iterations), the pipeline's
    `cycles` for them (None: not pipelined), the replicas, the IPUs of a replica and the samples of a micro-batch."""

    training: bool
    micro_batches: int
    cycles: Optional[int]
    replicas: int
    ipus_per_replica: int
    samples_per_micro_batch: int


class StepTime(NamedTuple):
    """One step in seconds, by part, on IPUs of type `ipu`, and the samples it takes."""

    ipu: str
    pipeline_seconds: float
    weight_update_seconds: float
    reduction_seconds: float
    overhead_seconds: float
    samples_per_step: int

    @property
    def step_seconds(self) -> float:
        return self.pipeline_seconds + self.weight_update_seconds + self.reduction_seconds + self.overhead_seconds

    @property
    def samples_per_second(self) -> float:
        return self.samples_per_step / self.step_seconds

    def to_dict(self) -> Dict[str, Any]:
        return {"ipu": self.ipu, "step_seconds": self.step_seconds, "samples_per_step": self.samples_per_step,
                "samples_per_second": self.samples_per_second,
                "step_parts": {"pipeline": self.pipeline_seconds, "weight_update": self.weight_update_seconds,
                               "reduction": self.reduction_seconds, "overhead": self.overhead_seconds}}


def step_time(shares: Sequence[IPUShare], job: Job, ipu: IPUType) -> StepTime:
    """The step of `job` whose pipeline's IPUs do `shares`, on IPUs of type `ipu`."""
    rate = ipu.peak_flops * COMPUTE_EFFICIENCY
    if job.cycles is None:
        pipeline = job.micro_batches * sum(share.flops for share in shares) / rate
    else:
        pipeline = job.cycles * max(share.flops for share in shares) / rate
    samples = job.samples_per_micro_batch * job.micro_batches * job.replicas
    if not job.training:
        return StepTime(ipu.name, pipeline, 0.0, 0.0, 0.0, samples)
    update = max(2 * share.streamed_bytes for share in shares) / STREAMING_BYTES_PER_SECOND
    reduction = max(reduction_seconds(share.gradient_bytes, job.replicas, job.ipus_per_replica) for share in shares)
    return StepTime(ipu.name, pipeline, update, reduction, STEP_OVERHEAD_SECONDS, samples)


def reduction_seconds(gradient_bytes: int, replicas: int, ipus_per_replica: int) -> float:
    """The ring sum of one IPU's `gradient_bytes` over the replicas: within each Pod over IPU-Links, then of each
    replica's share between Pods over the Gateway-Links."""
    if replicas == 1:
        return 0.0
    within = max(1, min(replicas, POD_IPUS // ipus_per_replica))
    pods = ceil(replicas / within)
    seconds = 2 * (within - 1) / within * gradient_bytes / IPU_LINK_BYTES_PER_SECOND
    if pods > 1:
        seconds += 2 * (pods - 1) / pods * gradient_bytes / within / GATEWAY_LINK_BYTES_PER_SECOND
    return seconds
