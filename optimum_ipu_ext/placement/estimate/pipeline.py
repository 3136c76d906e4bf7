"""The pipeline a placement runs, as PopART runs it: its independent stages, what each IPU stashes and recomputes for
the micro-batches in flight, what it computes, and how many cycles a step takes.

- Stages (popart `willow/src/transforms/pipeline.cpp`, `Pipeline::withStages`): poptorch's `AutoStage.AutoIncrement`
  gives every block a stage of its own, and PopART runs consecutive stages on one IPU as one. So the independent
  forward stages are the runs of consecutive steps on one IPU: S = the IPU changes along the forward pass + 1.
- Recomputation: poptorch turns on `autoRecomputation` Pipeline for a pipeline of more than one IPU where the options
  leave it unset (popart_compiler `Compiler.cpp`); `recomputation_mode` sets it.
- Stash (`Pipeline::getStashSize`, `PipelineInfo::numIndependentStages`): forward stage k (from 0) keeps what it
  stashes for 2(S-k)-1 micro-batches. With recomputation (`autoRecomputation` Pipeline, `prepareForStashing`) it
  stashes the stage's input from the previous IPU, and the checkpoints `recompute_checkpoint_every_layer` puts after
  each layer; it then recomputes the activations of one segment at a time: one layer with checkpoints, else the whole
  stage. Without recomputation it stashes every activation, and keeps those of the micro-batch it runs backward.
- Cycles (`PipelineInfo`): a training step is G + 2S-2 cycles, G = `gradient_accumulation_steps`, of which G-(2S-2)
  must be at least 1; an inference step D + S-1, D = `inference_device_iterations` >= S (poptorch's own check).
- Inference keeps nothing for a backward pass: no activations, no stash, no recomputation. A build that is not
  pipelined (sharded, phased) runs one micro-batch at a time: nothing is stashed and nothing recomputed.
"""

from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from ...options.build import build_plan
from ..models.blocks import NO_OPERATIONS, Operations, StepCost
from .layout import ForwardStep, Layout

# `{step path: its cost}`: what one training micro-batch keeps and computes in each step (`costs.block_costs`)
Costs = Mapping[str, StepCost]

# a module wrapped but never called (its weight read directly) runs nothing of its own
UNCALLED = StepCost(0, 0, 0, 0)

_RECOMPUTING = ("popart.RecomputationType.Pipeline", "popart.RecomputationType.RecomputeAll")


class Execution(NamedTuple):
    """How a build runs its pipeline, read off the options its config builds: training or inference, pipelined or
    not, recomputing or not (and from a checkpoint after every layer), and the micro-batches of a step with the
    setting that gives them."""

    training: bool
    pipelined: bool
    recomputes: bool
    checkpoints_every_layer: bool
    micro_batches: int
    micro_batches_setting: str


def execution_of(settings: Mapping[str, Any], for_inference: bool) -> Execution:
    """How a config's build (`settings`: its `vars()`) runs its pipeline."""
    plan = build_plan(dict(settings), for_inference)
    strategy = plan.argument("setExecutionStrategy")
    pipelined = strategy is None or strategy.path == "poptorch.PipelinedExecution"
    if for_inference:
        return Execution(False, pipelined, False, False, plan.argument("deviceIterations"),
                         "inference_device_iterations")
    recomputation = next((call.args[1] for call in plan.calls
                          if call.method == "_Popart.set" and call.args[0] == "autoRecomputation"), None)
    if recomputation is None:  # poptorch's default: the pipeline's recomputation, with more than one IPU
        recomputes = pipelined and settings["ipus_per_replica"] > 1
    else:
        recomputes = pipelined and recomputation.path in _RECOMPUTING
    return Execution(True, pipelined, recomputes, bool(settings["recompute_checkpoint_every_layer"]),
                 plan.argument("Training.gradientAccumulation"), "gradient_accumulation_steps")


class Stage(NamedTuple):
    """An independent pipeline stage: its IPU, the blocks it begins, how many micro-batches it stashes for (0: it
    stashes nothing), and its steps in forward order."""

    ipu: int
    blocks: Tuple[Optional[str], ...]
    stash_depth: int
    steps: Tuple[ForwardStep, ...]

    def to_dict(self) -> Dict[str, Any]:
        return {"ipu": self.ipu, "blocks": list(self.blocks), "stash_depth": self.stash_depth}


def stash_depth(stage: int, stages: int, execution: Execution) -> int:
    """The micro-batches forward stage `stage` (from 0) of `stages` stashes for: 2(S-k)-1 in a pipelined training
    build, else 0."""
    return 2 * (stages - stage) - 1 if execution.training and execution.pipelined else 0


def stages_of(layout: Layout, execution: Execution) -> Tuple[Stage, ...]:
    """The independent stages of each executor's forward pass, executors in turn."""
    found: List[Stage] = []
    for executor in layout.executors:
        runs: List[List[ForwardStep]] = []
        for step in layout.forward:
            if step.executor != executor.name:
                continue
            if runs and runs[-1][-1].ipu == step.ipu:
                runs[-1].append(step)
            else:
                runs.append([step])
        for index, run in enumerate(runs):
            blocks = tuple(step.name for step in run if step.begins)
            found.append(Stage(run[0].ipu, blocks, stash_depth(index, len(runs), execution), tuple(run)))
    return tuple(found)


class PipelineWork(NamedTuple):
    """What one IPU keeps and computes for the micro-batches in flight, in bytes and FLOPs; the operations it runs
    each cycle (forward, backward and recomputation) and the bytes it receives from other IPUs each cycle (its
    stages' inputs, and in training the gradients of their outputs)."""

    activation_bytes: int
    stash_bytes: int
    recompute_bytes: int
    forward_flops: int
    backward_flops: int
    recompute_flops: int
    operations: Operations = NO_OPERATIONS
    exchange_bytes: int = 0

    @property
    def flops(self) -> int:
        """Forward, backward and recomputation: what paces the IPU's cycles."""
        return self.forward_flops + self.backward_flops + self.recompute_flops


def work(stages: Sequence[Tuple[int, Sequence[ForwardStep]]], costs: Costs, execution: Execution) -> PipelineWork:
    """The work of an IPU running `stages`, each `(stash depth, its steps on the IPU)`; `costs` by step path."""
    activations = forward = stash = exchange = 0
    # the operations of the forward and the backward passes: (count, matmul cycles, elementwise elements) each
    forward_ops, backward_ops = [0, 0.0, 0], [0, 0.0, 0]
    segments: List[int] = []
    for depth, steps in stages:
        step_costs = [costs.get(step.path, UNCALLED) for step in steps]
        stage_activations = sum(cost.activation_bytes for cost in step_costs)
        activations += stage_activations
        forward += sum(cost.forward_flops for cost in step_costs)
        for cost in step_costs:
            for total, operations in ((forward_ops, cost.forward), (backward_ops, cost.backward)):
                total[0] += operations.count
                total[1] += operations.matmul_cycles
                total[2] += operations.elementwise_elements
        exchange += step_costs[0].input_bytes + (step_costs[-1].output_bytes if execution.training else 0)
        if not execution.recomputes:
            stash += depth * stage_activations
            continue
        checkpoints = [cost.output_bytes for step, cost in zip(steps, step_costs)
                       if execution.checkpoints_every_layer and step.layer is not None]
        stash += depth * (step_costs[0].input_bytes + sum(checkpoints))
        segments += _segments(steps, step_costs, execution.checkpoints_every_layer)
    if not execution.training:
        return PipelineWork(0, 0, 0, forward, 0, 0, Operations(*forward_ops), exchange)
    passes = 2 if execution.recomputes else 1  # the forward pass, and its recomputation
    operations = Operations(*(passes * ahead + behind for ahead, behind in zip(forward_ops, backward_ops)))
    if not execution.recomputes:
        return PipelineWork(activations, stash, activations, forward, 2 * forward, 0, operations, exchange)
    return PipelineWork(activations, stash, max(segments, default=0), forward, 2 * forward, forward, operations,
                        exchange)


def _segments(steps: Sequence[ForwardStep], step_costs: Sequence[StepCost], every_layer: bool) -> List[int]:
    """The activations of each segment a stage recomputes at once: the stage, or with a checkpoint after every
    layer the steps up to and including each layer, and those after the last."""
    segments = [0]
    for step, cost in zip(steps, step_costs):
        segments[-1] += cost.activation_bytes
        if every_layer and step.layer is not None:
            segments.append(0)
    return segments


def ipu_work(ipus: int, stages: Sequence[Stage], costs: Costs, execution: Execution) -> Tuple[PipelineWork, ...]:
    """The work of each of the pipeline's `ipus` IPUs."""
    return tuple(work([(stage.stash_depth, stage.steps) for stage in stages if stage.ipu == ipu], costs, execution)
                 for ipu in range(ipus))


class Schedule(NamedTuple):
    """The cycles of one step (None: the build is not pipelined), the share of them every IPU is busy, and what
    poptorch refuses."""

    stages: int
    cycles: Optional[int]
    efficiency: Optional[float]
    problems: Tuple[str, ...]


def fill_cycles(stages: int, training: bool) -> int:
    """The cycles a pipeline of `stages` stages takes to fill and to flush, besides its micro-batches'
    (`PipelineInfo`): 2S-2 in training, S-1 in inference."""
    return 2 * stages - 2 if training else stages - 1


def schedule(stages: Sequence[Stage], execution: Execution) -> Schedule:
    """The step of a pipeline of `stages`; in a generation build, whose encoder and decoder run as pipelines of their
    own, that of the executor with the most stages."""
    executors = [stage.steps[0].executor for stage in stages]
    count = max(executors.count(executor) for executor in executors)
    if not execution.pipelined:
        return Schedule(count, None, None, ())
    batches = execution.micro_batches
    fill = fill_cycles(count, execution.training)
    least = fill + 1
    problems = ()
    if batches < least:
        need = f"2 x {count} - 1 = {least}" if execution.training else str(least)
        problems = (f"`{execution.micro_batches_setting}` is {batches}, and a pipeline of {count} stages needs at "
                    f"least {need}: set it to {least} or more",)
    return Schedule(count, batches + fill, batches / (batches + fill), problems)


# a pipelined inference build's device iterations: the fewest keeping this share of its cycles every stage busy
INFERENCE_EFFICIENCY = 0.9


def fewest_device_iterations(stages: int) -> int:
    """The fewest device iterations D, a power of two, keeping `INFERENCE_EFFICIENCY` of a pipelined inference
    step's D + S - 1 cycles every stage busy."""
    iterations = 1
    while iterations / (iterations + fill_cycles(stages, False)) < INFERENCE_EFFICIENCY:
        iterations *= 2
    return iterations
