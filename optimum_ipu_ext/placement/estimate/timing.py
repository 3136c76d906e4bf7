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
from .pipeline import PipelineWork


class Job(NamedTuple):
    """The build around the pipeline: `micro_batches` a step (G, or the inference device iterations), the replicas,
    the IPUs of a replica and the samples of a micro-batch."""

    training: bool
    micro_batches: int
    replicas: int
    ipus_per_replica: int
    samples_per_micro_batch: int


class IPUTime(NamedTuple):
    """What one IPU's share of a step costs in time: `cycle_load`, what paces each pipeline cycle it runs (its
    FLOPs for one micro-batch: forward, backward and recomputation), and after the pipeline its off-chip optimizer
    state's round trip and its gradients' sum over the replicas, in seconds."""

    cycle_load: float
    update_seconds: float
    reduction_seconds: float

    @property
    def after_pipeline_seconds(self) -> float:
        return self.update_seconds + self.reduction_seconds


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


class TimeModel(NamedTuple):
    """The time of a step of `job` on IPUs of type `ipu`, whose weights take `weight_bytes` a parameter (their
    gradients too): each IPU's share (`ipu_time`), then the step of the pipeline's IPUs (`step`)."""

    ipu: IPUType
    job: Job
    weight_bytes: int

    @property
    def _rate(self) -> float:
        """The FLOPs a second an IPU computes at."""
        return self.ipu.peak_flops * COMPUTE_EFFICIENCY

    def ipu_time(self, work: PipelineWork, trained: int, streamed_bytes: int) -> IPUTime:
        """The time of an IPU doing `work` each cycle, holding `trained` parameters and `streamed_bytes` of optimizer
        state in Streaming Memory."""
        if not self.job.training:
            return IPUTime(work.flops, 0.0, 0.0)
        return IPUTime(work.flops, 2 * streamed_bytes / STREAMING_BYTES_PER_SECOND,
                       reduction_seconds(trained * self.weight_bytes, self.job.replicas, self.job.ipus_per_replica))

    def cycle_scale(self, cycles: int) -> float:
        """The seconds a step of `cycles` pipeline cycles takes per unit of the slowest IPU's `cycle_load`."""
        return cycles / self._rate

    def step(self, times: Sequence[IPUTime], cycles: Optional[int]) -> StepTime:
        """The step whose pipeline's IPUs take `times`, in `cycles` (None: not pipelined, each micro-batch through
        every IPU in turn)."""
        job = self.job
        if cycles is None:
            pipeline = job.micro_batches * sum(time.cycle_load for time in times) / self._rate
        else:
            pipeline = cycles * max(time.cycle_load for time in times) / self._rate
        samples = job.samples_per_micro_batch * job.micro_batches * job.replicas
        if not job.training:
            return StepTime(self.ipu.name, pipeline, 0.0, 0.0, 0.0, samples)
        return StepTime(self.ipu.name, pipeline, max(time.update_seconds for time in times),
                        max(time.reduction_seconds for time in times), STEP_OVERHEAD_SECONDS, samples)


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
