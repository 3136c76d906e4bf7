"""The cost of one IPU of a pipeline, from what it holds, keeps and computes: its on-chip and streamed bytes and its
share of a step's time. `place`, `--balance` and `plan` all cost an IPU here, and a step from its IPUs' costs.

- memory: its parameters' bytes by kind of tensor (`memory.MemoryModel`), and on top the larger of what the pipeline
  keeps (its stash and its recomputation) and what the weight update brings on chip after the pipeline has flushed
  (the optimizer state of its largest trained tensor, where that state is kept in Streaming Memory);
- time: what paces each pipeline cycle it runs, and its weight update and gradients' sum after the pipeline
  (`timing.TimeModel`).
"""

from typing import NamedTuple, Optional, Sequence

from .generation import GenerationLoad
from .memory import MemoryModel, ParameterBytes
from .pipeline import PipelineWork
from .timing import IPUTime, StepTime, TimeModel


class IPULoad(NamedTuple):
    """What one IPU holds, keeps and computes: its `trained` and `frozen` parameters, the elements of its `largest`
    trained tensor as the weight update takes it, its `work` for the micro-batches in flight (None: activations
    not counted), and its part of a generation build (None: not one)."""

    trained: int
    frozen: int
    largest: int
    work: Optional[PipelineWork]
    generation: Optional[GenerationLoad] = None


class IPUCost(NamedTuple):
    """What one IPU costs: its parameters' bytes by kind, the optimizer state the update brings on chip, its work
    (None: not counted), its time (None: not timed) and its part of a generation build (None: not one)."""

    parameters: ParameterBytes
    update_bytes: int
    work: Optional[PipelineWork]
    time: Optional[IPUTime]
    generation: Optional[GenerationLoad] = None

    @property
    def pipeline_bytes(self) -> int:
        """What the pipeline keeps on the IPU: its stash and its recomputation (0: activations not counted)."""
        return 0 if self.work is None else self.work.stash_bytes + self.work.recompute_bytes

    @property
    def on_chip_bytes(self) -> int:
        """Its parameters' on-chip bytes, the larger of what the pipeline keeps and what the update brings, and a
        generation build's caches, buffers and working memory."""
        generation = 0 if self.generation is None else self.generation.on_chip_bytes
        return self.parameters.on_chip + max(self.update_bytes, self.pipeline_bytes) + generation

    @property
    def streaming_bytes(self) -> int:
        return self.parameters.streaming


class CostModel(NamedTuple):
    """The costs of a build's IPUs: its memory model, and its time model where the activations are counted."""

    memory: MemoryModel
    time: Optional[TimeModel]

    def ipu(self, load: IPULoad) -> IPUCost:
        """The cost of an IPU with `load`."""
        parameters = self.memory.parameters(load.trained, load.frozen)
        time = None
        if self.time is not None and load.work is not None:
            time = self.time.ipu_time(load.work, load.trained, parameters.optimizer.streaming)
        return IPUCost(parameters, self.memory.update_bytes(load.largest), load.work, time, load.generation)

    def step(self, costs: Sequence[IPUCost], cycles: Optional[int]) -> Optional[StepTime]:
        """The step of the pipeline whose IPUs cost `costs`, in `cycles` (None: not pipelined); None where it is not
        timed."""
        if self.time is None:
            return None
        return self.time.step([cost.time for cost in costs], cycles)
