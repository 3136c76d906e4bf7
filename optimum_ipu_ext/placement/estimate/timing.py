"""How long one step of the whole job takes, from what each IPU runs: a training step is one optimizer step of every
replica (its G micro-batches), an inference step one call of `inference_device_iterations` micro-batches.

- a pipeline cycle: each IPU runs its stages' operations for one micro-batch forward, and in training one backward
  with its recomputation; an operation takes a fixed time (compute, exchange and synchronisation on all tiles),
  a matrix product the cycles the IPU takes at its shape (`hardware.matmul_cycles`, the measured sweep) and the
  other operations a time by the elements they touch; the IPU then receives its stages' inputs (and gradients) from
  the others over IPU-Links. The slowest IPU paces every cycle; a build that is not pipelined runs its micro-batches
  through the IPUs one at a time;
- the weight update: the optimizer's arithmetic on each trained parameter, and the state kept off chip read from
  Streaming Memory and written back;
- the reduction: each IPU's gradients summed over the replicas by a ring, over IPU-Links within a Pod of 64 IPUs and
  between Pods over the Gateway-Links;
- the host: each call of the IPUs (`device_iterations` optimizer steps in training) costs a fixed time, and the
  micro-batches' inputs cross to each replica's first IPU. Loading the data is the user's, outside the step.

The fitted constants (`Calibration`) are data: one file shipped in the package (`placement/data/calibration.json`),
written by `placement.calibration` from the measured runs beside it, or one `ipu-config calibrate` wrote from a user's
runs (`calibration_file` reads them); the hardware's are in hardware.py.
"""

from math import ceil
from typing import Any, Dict, NamedTuple, Optional, Sequence, Tuple

from ..hardware import (
    GATEWAY_LINK_BYTES_PER_SECOND,
    HOST_LINK_BYTES_PER_SECOND,
    IPU_LINK_BYTES_PER_SECOND,
    POD_IPUS,
    POPTORCH_CALL_SECONDS,
    STREAMING_BYTES_PER_SECOND,
    IPUType,
)
from ..models.rules import ENCODER_DECODER, TEXT, InputShape
from .pipeline import PipelineWork

# the elements the optimizer reads and writes for each trained parameter: the weight, its gradient and two moments
UPDATE_ELEMENTS = 4
# the largest share of a training step a plan lets the host's calls take: it runs this many steps a call to keep it
CALL_SHARE = 0.05
# the name of the calibration shipped in the package; one read from a file is named by its path
SHIPPED = "shipped"


class Calibration(NamedTuple):
    """The time model's fitted constants: the cycles each operation costs, the cycles an IPU takes per element of
    elementwise work, and the seconds each host call costs; `band`: the relative errors of the model on the measured
    runs it was fitted on, left out one at a time (the 10th and 90th percentiles of modelled over measured, less
    one); `runs`: how many; `coverage`: what those runs span (model types, rows of a matrix product)."""

    operation_cycles: float
    elementwise_cycles: float
    call_seconds: float
    band: Tuple[float, float] = (0.0, 0.0)
    runs: int = 0
    coverage: Dict[str, Any] = {}
    name: str = SHIPPED

    def outside(self, model_type: str, rows: Optional[int]) -> Tuple[str, ...]:
        """How a build of a `model_type` model, its products taking `rows` rows (None: not a text model), is outside
        the runs the constants are fitted on: none of its model type, or rows beyond twice the range they had."""
        notes = []
        if self.coverage.get("model_types") and model_type not in self.coverage["model_types"]:
            notes.append(f"no {model_type} model among them")
        measured = self.coverage.get("rows")
        if rows is not None and measured and not measured[0] / 2 <= rows <= 2 * measured[1]:
            notes.append(f"{rows:,} row{'' if rows == 1 else 's'} a matrix product, where they had {measured[0]:,} to "
                         f"{measured[1]:,}")
        return tuple(notes)

    def measured_range(self, speed: float) -> Tuple[float, float]:
        """The range a run would measure of a modelled `speed`, by the model's error on its runs (`band`: modelled
        over measured, less one)."""
        low, high = self.band
        return speed / (1 + high), speed / (1 + low)

    def report(self, outside: Sequence[str]) -> Dict[str, Any]:
        """A time's `time_model` in a report: this calibration's name, runs and band, and how the build timed is
        outside its runs."""
        return {"calibration": self.name, "runs": self.runs, "band": list(self.band), "outside": list(outside)}


class Job(NamedTuple):
    """The build around the pipeline: `micro_batches` a step (G, or the inference device iterations), the replicas,
    the IPUs of a replica, the samples of a micro-batch, the optimizer steps a host call runs (training's
    `device_iterations`; 1 in inference, whose step is a call) and the bytes of a micro-batch's inputs."""

    training: bool
    micro_batches: int
    replicas: int
    ipus_per_replica: int
    samples_per_micro_batch: int
    steps_per_call: int = 1
    input_bytes: int = 0


class IPUTime(NamedTuple):
    """What one IPU's share of a step costs in time: `cycle_load`, the seconds of each pipeline cycle it runs, and
    after the pipeline its weight update and its gradients' sum over the replicas."""

    cycle_load: float
    update_seconds: float
    reduction_seconds: float

    @property
    def after_pipeline_seconds(self) -> float:
        return self.update_seconds + self.reduction_seconds


class StepTime(NamedTuple):
    """One step in seconds, by part, on IPUs of type `ipu`, and the samples it takes; the calibration that timed it
    (its name, its band and runs), and how the build is outside what its runs measured."""

    ipu: str
    pipeline_seconds: float
    weight_update_seconds: float
    reduction_seconds: float
    host_seconds: float
    samples_per_step: int
    calibration: Calibration
    outside: Tuple[str, ...] = ()

    @property
    def step_seconds(self) -> float:
        return self.pipeline_seconds + self.weight_update_seconds + self.reduction_seconds + self.host_seconds

    @property
    def samples_per_second(self) -> float:
        return self.samples_per_step / self.step_seconds

    @property
    def samples_per_second_range(self) -> Tuple[float, float]:
        """The samples a second a run would measure, by the model's error on the runs of its calibration (`band`:
        modelled over measured, less one)."""
        return self.calibration.measured_range(self.samples_per_second)

    def to_dict(self) -> Dict[str, Any]:
        return {"ipu": self.ipu, "step_seconds": self.step_seconds, "samples_per_step": self.samples_per_step,
                "samples_per_second": self.samples_per_second,
                "samples_per_second_range": list(self.samples_per_second_range),
                "step_parts": {"pipeline": self.pipeline_seconds, "weight_update": self.weight_update_seconds,
                               "reduction": self.reduction_seconds, "host": self.host_seconds},
                "time_model": self.calibration.report(self.outside)}


class TimeModel(NamedTuple):
    """The time of a step of `job` on IPUs of type `ipu`, whose weights take `weight_bytes` a parameter (their
    gradients too), with the constants of `calibration`: each IPU's share (`ipu_time`), then the step of the
    pipeline's IPUs (`step`)."""

    ipu: IPUType
    job: Job
    weight_bytes: int
    calibration: Calibration
    outside: Tuple[str, ...] = ()

    def cycle_seconds(self, work: PipelineWork) -> float:
        """The seconds of one pipeline cycle of an IPU doing `work`: its operations, then what it receives."""
        operations, constants = work.operations, self.calibration
        cycles = (operations.count * constants.operation_cycles + operations.matmul_cycles
                  + operations.elementwise_elements * constants.elementwise_cycles)
        return cycles / self.ipu.clock_hz + work.exchange_bytes / IPU_LINK_BYTES_PER_SECOND

    def ipu_time(self, work: PipelineWork, trained: int, streamed_bytes: int) -> IPUTime:
        """The time of an IPU doing `work` each cycle, holding `trained` parameters and `streamed_bytes` of optimizer
        state in Streaming Memory."""
        cycle = self.cycle_seconds(work)
        if not self.job.training:
            return IPUTime(cycle, 0.0, 0.0)
        arithmetic = trained * UPDATE_ELEMENTS * self.calibration.elementwise_cycles / self.ipu.clock_hz
        return IPUTime(cycle, arithmetic + 2 * streamed_bytes / STREAMING_BYTES_PER_SECOND,
                       reduction_seconds(trained * self.weight_bytes, self.job.replicas, self.job.ipus_per_replica))

    def cycle_scale(self, cycles: int) -> float:
        """The seconds a step of `cycles` pipeline cycles takes per second of the slowest IPU's cycle."""
        return float(cycles)

    def host_seconds(self) -> float:
        """The host's part of a step: its share of a call, and the micro-batches' inputs to each replica's first IPU
        (the IPUs of an IPU-M2000 share its host link)."""
        job = self.job
        link = HOST_LINK_BYTES_PER_SECOND * min(job.ipus_per_replica, 4) / 4
        call = self.calibration.call_seconds if job.training else POPTORCH_CALL_SECONDS
        return call / job.steps_per_call + job.micro_batches * job.input_bytes / link

    def fewest_steps_per_call(self, step: StepTime) -> int:
        """The fewest optimizer steps a host call (training's `device_iterations`, a power of two) keeping each
        call's cost within `CALL_SHARE` of the step's time, `step` timed at this job's steps a call."""
        call = self.calibration.call_seconds
        rest = step.step_seconds - call / self.job.steps_per_call
        steps = 1
        while call / steps > CALL_SHARE * (rest + call / steps):
            steps *= 2
        return steps

    def step(self, times: Sequence[IPUTime], cycles: Optional[int]) -> StepTime:
        """The step whose pipeline's IPUs take `times`, in `cycles` (None: not pipelined, each micro-batch through
        every IPU in turn)."""
        job = self.job
        if cycles is None:
            pipeline = job.micro_batches * sum(time.cycle_load for time in times)
        else:
            pipeline = cycles * max(time.cycle_load for time in times)
        samples = job.samples_per_micro_batch * job.micro_batches * job.replicas
        if not job.training:
            return StepTime(self.ipu.name, pipeline, 0.0, 0.0, self.host_seconds(), samples, self.calibration,
                            self.outside)
        return StepTime(self.ipu.name, pipeline, max(time.update_seconds for time in times),
                        max(time.reduction_seconds for time in times), self.host_seconds(), samples, self.calibration,
                        self.outside)


def product_rows(inputs: str, shape: InputShape) -> Optional[int]:
    """The rows a matrix product of a text model's layers takes, a micro-batch's tokens (each example's choices' of a
    multiple-choice model; None: not a text model)."""
    if inputs not in (TEXT, ENCODER_DECODER):
        return None
    return shape.micro_batch_size * shape.choices * shape.sequence_length


def reduction_seconds(gradient_bytes: int, replicas: int, ipus_per_replica: int) -> float:
    """The ring sum of one IPU's `gradient_bytes` over the replicas: within each Pod over IPU-Links, then of each
    replica's share between Pods over the Gateway-Links."""
    within = max(1, min(replicas, POD_IPUS // ipus_per_replica))
    pods = ceil(replicas / within)
    # each ring's term is 0 where it has one member: one replica, or one Pod
    return (2 * (within - 1) / within * gradient_bytes / IPU_LINK_BYTES_PER_SECOND
            + 2 * (pods - 1) / pods * gradient_bytes / within / GATEWAY_LINK_BYTES_PER_SECOND)
