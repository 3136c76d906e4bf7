"""`Placement`: where optimum-graphcore 0.7.1's `parallelize()` puts a model's blocks, layers and parameters on the
IPUs of a config, the memory each IPU needs and the pipeline it runs, as data. `placer.Placer` works it out;
`to_dict()` is what every report reads (report/), and `str()` the text report."""

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Mapping, Optional, Tuple

from .estimate.generation import GenerationBuild, GenerationLoad, GenerationTime
from .estimate.layout import Executor
from .estimate.memory import Verdict, verdict_of
from .estimate.pipeline import PipelineWork, Schedule, Stage
from .estimate.timing import StepTime
from .models import ARCHITECTURES
from .models.rules import ENCODER_DECODER, SPEECH_RECOGNITION, InputShape

# the keys of a step's time, where the activations are not counted
NO_TIME = ("ipu", "step_seconds", "samples_per_step", "samples_per_second", "samples_per_second_range", "step_parts",
           "time_model")


@dataclass(frozen=True)
class IPUPlacement:
    """One IPU of the pipeline: its blocks (named as `poptorch.BeginBlock` is given them; None: a block upstream
    leaves unnamed), the indices of its layers in the layer list, its parameters and their bytes: on chip, its
    weights, gradient accumulators and optimizer state (their on-chip parts), and the larger of what the pipeline
    keeps (stash and recomputation) and what the weight update brings on chip after it (`update_bytes`: optimizer
    state kept in Streaming Memory); in Streaming Memory. `work`: what it keeps and computes for the micro-batches
    in flight, and `cycle_seconds` the time of each pipeline cycle it runs (None: activations not counted);
    `generation`: its part of a generation build (None: not one), whose bytes are on chip too."""

    ipu: int
    blocks: Tuple[Optional[str], ...]
    layers: Tuple[int, ...]
    parameters: int
    on_chip_bytes: int
    streaming_bytes: int
    weights_bytes: int
    gradient_accumulator_bytes: int
    optimizer_state_bytes: int
    update_bytes: int = 0
    work: Optional[PipelineWork] = None
    cycle_seconds: Optional[float] = None
    generation: Optional[GenerationLoad] = None

    def to_dict(self) -> Dict[str, Any]:
        work = dict.fromkeys(PipelineWork._fields)
        if self.work is not None:
            work = {**self.work._asdict(), "operations": self.work.operations._asdict()}
        return {"ipu": self.ipu, "blocks": list(self.blocks), "layers": list(self.layers),
                "parameters": self.parameters, "on_chip_bytes": self.on_chip_bytes,
                "streaming_bytes": self.streaming_bytes, "weights_bytes": self.weights_bytes,
                "gradient_accumulator_bytes": self.gradient_accumulator_bytes,
                "optimizer_state_bytes": self.optimizer_state_bytes, "update_bytes": self.update_bytes, **work,
                "cycle_seconds": self.cycle_seconds,
                "generation": None if self.generation is None else self.generation.to_dict()}


@dataclass(frozen=True)
class Placement:
    """Where optimum-graphcore 0.7.1's `parallelize()` puts a model on the IPUs of a config, the memory each IPU
    needs (a lower bound: see `assumptions`), and the pipeline it runs: its stages, the cycles of a step and what
    poptorch refuses (`problems`). `str()` is a table to read; `to_dict()` and `to_json_string()` the same as data.
    `shape` is the micro-batch the activations are counted for (None: they are not); `time` a step of the whole job
    then. `reserve_bytes`: what each IPU keeps for what is not counted (code, exchange buffers, temporaries).
    `parameter_ipus`: `{parameter: the IPUs it is on}`, named as `named_parameters()` names it: one IPU, where it is
    first used; in a generation build, where each executor (encoder, decoder) using it first uses it.
    `generation`: what a generation build runs (None: not one); its `shape` is then its batch, the encoder's input
    and `max_length`; `executors`, the encoder's and the decoder's IPUs; `fitting`, where it does not fit, the
    largest `batch_size` and the largest `max_length` (None: none) with which it does, the other as it is;
    `generation_time`, its time to the first token and a token."""

    model: str
    architecture: str
    build: str
    layers_per_ipu: Tuple[int, ...]
    ipu_memory_bytes: int
    reserve_bytes: int
    ipus: Tuple[IPUPlacement, ...]
    assumptions: str
    shape: Optional[InputShape]
    stages: Tuple[Stage, ...]
    schedule: Schedule
    time: Optional[StepTime]
    parameter_ipus: Mapping[str, Tuple[int, ...]] = field(default_factory=dict, repr=False, compare=False)
    generation: Optional[GenerationBuild] = None
    executors: Tuple[Executor, ...] = ()
    fitting: Optional[Mapping[str, Optional[int]]] = None
    generation_time: Optional[GenerationTime] = None

    @property
    def problems(self) -> Tuple[str, ...]:
        """What poptorch refuses in this pipeline, one line each."""
        return self.schedule.problems

    @property
    def verdict(self) -> Verdict:
        """Its largest IPU's: FITS where every IPU's on-chip bytes leave it its reserve, TIGHT where they are within
        its memory, not all within what the reserve leaves, DOES_NOT_FIT where some IPU's are over its memory."""
        return verdict_of(max(ipu.on_chip_bytes for ipu in self.ipus), self.ipu_memory_bytes, self.reserve_bytes)

    @property
    def fits(self) -> bool:
        """Whether the verdict is FITS, and poptorch runs the pipeline."""
        return not self.problems and self.verdict == Verdict.FITS

    @property
    def largest_share(self) -> float:
        """The largest IPU's on-chip figure, as a share of its memory."""
        return max(ipu.on_chip_bytes for ipu in self.ipus) / self.ipu_memory_bytes

    @property
    def bottleneck_ipu(self) -> Optional[int]:
        """The IPU whose cycle takes the longest (forward, backward, recomputation and what it receives), which paces
        every cycle (None: activations not counted)."""
        if self.shape is None:
            return None
        return max(self.ipus, key=lambda ipu: (ipu.cycle_seconds, -ipu.ipu)).ipu

    @property
    def decoder_sequence_length(self) -> Optional[int]:
        """The tokens an encoder-decoder's decoder takes (None: activations not counted, or no decoder)."""
        kind = ARCHITECTURES[self.architecture].inputs
        if self.shape is None or kind not in (ENCODER_DECODER, SPEECH_RECOGNITION):
            return None
        return self.shape.decoder_sequence_length

    def to_dict(self) -> Dict[str, Any]:
        shape = self.shape._asdict() if self.shape is not None else {}
        return {
            "model": self.model,
            "architecture": self.architecture,
            "build": self.build,
            "layers_per_ipu": list(self.layers_per_ipu),
            "micro_batch_size": shape.get("micro_batch_size"),
            "sequence_length": shape.get("sequence_length"),
            "decoder_sequence_length": self.decoder_sequence_length,
            "ipu_memory_bytes": self.ipu_memory_bytes,
            "reserve_bytes": self.reserve_bytes,
            "verdict": self.verdict.value,
            "fits": self.fits,
            "problems": list(self.problems),
            "stages": [stage.to_dict() for stage in self.stages],
            "pipeline_cycles": self.schedule.cycles,
            "pipeline_efficiency": self.schedule.efficiency,
            "bottleneck_ipu": self.bottleneck_ipu,
            **(self.time.to_dict() if self.time is not None else dict.fromkeys(NO_TIME)),
            "generation": None if self.generation is None else {
                **self.generation.to_dict(), "fitting": self.fitting,
                "time": None if self.generation_time is None else self.generation_time.to_dict(),
                "executors": {executor.name.value: list(range(executor.first_ipu, executor.first_ipu + executor.ipus))
                              for executor in self.executors}},
            "ipus": [ipu.to_dict() for ipu in self.ipus],
        }

    def to_json_string(self) -> str:
        return json.dumps(self.to_dict(), indent=2) + "\n"

    def text(self, style: Optional[Callable[[str, str], str]] = None) -> str:
        """The text report; `style(text, name)` styles its parts for a terminal (`name`: "bold", or a colour)."""
        from .report.text import placement_text

        return placement_text({**self.to_dict(), "assumptions": self.assumptions}, *([style] if style else []))

    def __str__(self) -> str:
        return self.text()
