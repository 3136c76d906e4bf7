"""`Placement`: where optimum-graphcore 0.7.1 puts a model's blocks, layers and parameters on the IPUs of a config,
and the memory each IPU needs, as data and as text: one row per IPU, its blocks compressed (`Embedding, Encoder0-5`),
its parameters, its on-chip memory with a bar against the IPU's and its Streaming Memory; a verdict, and the
assumptions in one line."""

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ..estimate.pipeline import Schedule, Stage, Work
from ..estimate.timing import StepTime
from ..hardware import IPU_TYPES
from ..models import ARCHITECTURES
from ..models.rules import ENCODER_DECODER, SPEECH_RECOGNITION, InputShape


@dataclass(frozen=True)
class IPUPlacement:
    """One IPU of the pipeline: its blocks (named as `poptorch.BeginBlock` is given them; None: a block upstream
    leaves unnamed), the indices of its layers in the layer list, its parameters and their bytes: on chip, its
    weights, gradient accumulators and optimizer state (their on-chip parts), and the larger of what the pipeline
    keeps (stash and recomputation) and what the weight update brings on chip after it (`update_bytes`: optimizer
    state kept in Streaming Memory); in Streaming Memory. `work`: what it keeps and computes for the micro-batches
    in flight (None: activations not counted)."""

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
    work: Optional[Work] = None

    def to_dict(self) -> Dict[str, Any]:
        work = self.work._asdict() if self.work is not None else dict.fromkeys(Work._fields)
        return {"ipu": self.ipu, "blocks": list(self.blocks), "layers": list(self.layers),
                "parameters": self.parameters, "on_chip_bytes": self.on_chip_bytes,
                "streaming_bytes": self.streaming_bytes, "weights_bytes": self.weights_bytes,
                "gradient_accumulator_bytes": self.gradient_accumulator_bytes,
                "optimizer_state_bytes": self.optimizer_state_bytes, "update_bytes": self.update_bytes, **work}


FITS = "fits"
TIGHT = "tight"
DOES_NOT_FIT = "does not fit"
# how a terminal shows each verdict
VERDICT_STYLES = {FITS: "green", TIGHT: "yellow", DOES_NOT_FIT: "red"}


@dataclass(frozen=True)
class Placement:
    """Where optimum-graphcore 0.7.1's `parallelize()` puts a model on the IPUs of a config, the memory each IPU
    needs (a lower bound: see `assumptions`), and the pipeline it runs: its stages, the cycles of a step and what
    poptorch refuses (`problems`). `str()` is a table to read; `to_dict()` and `to_json_string()` the same as data.
    `shape` is the micro-batch the activations are counted for (None: they are not); `time` a step of the whole job
    then. `reserve_bytes`: what each IPU keeps for what is not counted (code, exchange buffers, temporaries)."""

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
    _planner: Any = field(repr=False, compare=False)

    @property
    def problems(self) -> Tuple[str, ...]:
        """What poptorch refuses in this pipeline, one line each."""
        return self.schedule.problems

    @property
    def verdict(self) -> str:
        """FITS: every IPU's on-chip bytes leave it its reserve; TIGHT: they are within its memory, not all within
        what the reserve leaves; DOES_NOT_FIT: some IPU's are over its memory."""
        largest = max(ipu.on_chip_bytes for ipu in self.ipus)
        if largest > self.ipu_memory_bytes:
            return DOES_NOT_FIT
        return TIGHT if largest > self.ipu_memory_bytes - self.reserve_bytes else FITS

    @property
    def fits(self) -> bool:
        """Whether the verdict is FITS, and poptorch runs the pipeline."""
        return not self.problems and self.verdict == FITS

    @property
    def bottleneck_ipu(self) -> Optional[int]:
        """The IPU that computes the most (forward, backward, recomputation), which paces every cycle (None:
        activations not counted)."""
        if self.shape is None:
            return None
        return max(self.ipus, key=lambda ipu: (ipu.work.flops, -ipu.ipu)).ipu

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
            "verdict": self.verdict,
            "fits": self.fits,
            "problems": list(self.problems),
            "stages": [stage.to_dict() for stage in self.stages],
            "pipeline_cycles": self.schedule.cycles,
            "pipeline_efficiency": self.schedule.efficiency,
            "bottleneck_ipu": self.bottleneck_ipu,
            **(self.time.to_dict() if self.time is not None else dict.fromkeys(NO_TIME)),
            "ipus": [ipu.to_dict() for ipu in self.ipus],
        }

    def to_json_string(self) -> str:
        return json.dumps(self.to_dict(), indent=2) + "\n"

    def __str__(self) -> str:
        return render(self)

    def parameter_ipus(self) -> Dict[str, Tuple[int, ...]]:
        """`{parameter: the IPUs it is on}`, named as `named_parameters()` names it: one IPU, where it is first used;
        in a generation build, where each executor (encoder, decoder) using it first uses it."""
        return self._planner.parameter_ipus(self.layers_per_ipu)

    def with_layers_per_ipu(self, layers_per_ipu: Sequence[int]) -> "Placement":
        """The placement of the same model and config with another `layers_per_ipu` (of the build's mode)."""
        return self._planner.placement(layers_per_ipu)

    def balanced(self, objective: str = "memory") -> "Placement":
        """The placement with the `layers_per_ipu` (same number of IPUs) that balances the pipeline, among the
        splits upstream accepts, ties to the split closest to this one's. `objective`: "memory", the smallest
        largest on-chip figure; "time" (activations counted), the fewest FLOPs on the slowest IPU among the splits
        that fit, then the smallest largest on-chip figure.

        Raises:
            PlacementError: for an architecture whose `parallelize()` places its layers itself.
            ValueError: for another objective, or "time" without activations counted.
        """
        return self._planner.balanced(self, objective)


# the keys of a step's time, where the activations are not counted
NO_TIME = ("ipu", "step_seconds", "samples_per_step", "samples_per_second", "step_parts")


# --- text ------------------------------------------------------------------------------------------------------

MIB = 1 << 20
BAR_WIDTH = 20

# `style(text, name)`: the text styled ("red", "bold", ...), as the CLI's `Stream.style` does; plain by default
Style = Callable[[str, str], str]


def _plain(text: str, name: str) -> str:
    return text


def compress(names: Sequence[Optional[str]]) -> str:
    """Block names, runs of consecutive numbers shortened: `Embedding, Encoder0-5`; unnamed blocks counted."""
    parts: List[str] = []
    run: Optional[Tuple[str, int, int]] = None  # (stem, first, last) of the run being read
    unnamed = 0
    for name in names:
        if name is None:
            unnamed += 1
            continue
        match = re.fullmatch(r"(.*?)(\d+)", name.strip())
        if match and run and match.group(1) == run[0] and int(match.group(2)) == run[2] + 1:
            run = (run[0], run[1], run[2] + 1)
            continue
        if run:
            parts.append(_run(run))
            run = None
        if match:
            run = (match.group(1), int(match.group(2)), int(match.group(2)))
        else:
            parts.append(name)
    if run:
        parts.append(_run(run))
    if unnamed:
        parts.append(f"{unnamed} unnamed" if parts else f"{unnamed} unnamed block{'s' if unnamed > 1 else ''}")
    return ", ".join(parts) or "-"


def _run(run: Tuple[str, int, int]) -> str:
    stem, first, last = run
    return f"{stem}{first}" if first == last else f"{stem}{first}-{last}"


def mib(size: int) -> str:
    return f"{size / MIB:,.1f}"


def bar(size: int, capacity: int) -> str:
    filled = min(BAR_WIDTH, round(BAR_WIDTH * size / capacity))
    return "[" + "#" * filled + "." * (BAR_WIDTH - filled) + "]"


# the parts of an IPU's on-chip memory, in the order its bar stacks them, and the letter each is drawn with: after
# the parameters' parts, the pipeline's or the update's, whichever is larger
BAR_PARTS = (("weights", "W"), ("gradient accumulators", "A"), ("optimizer state", "O"), ("stash", "S"),
             ("recomputation", "R"), ("optimizer state brought in for the update", "U"))


def stacked_bar(sizes: Sequence[int], capacity: int) -> str:
    """A bar of `capacity`, each of `sizes` drawn with the letter of its part (BAR_PARTS), the rest free."""
    cells, total, drawn = [], 0, 0
    for size, (_, letter) in zip(sizes, BAR_PARTS):
        total += size
        end = min(BAR_WIDTH, round(BAR_WIDTH * total / capacity))
        cells.append(letter * (end - drawn))
        drawn = end
    return "[" + "".join(cells) + "." * (BAR_WIDTH - drawn) + "]"


def gflop(flops: int) -> str:
    return f"{flops / 1e9:,.1f}"


def parts(ipu: Union[IPUPlacement, Mapping[str, Any]]) -> List[int]:
    """The sizes of the parts of an IPU's on-chip memory (BAR_PARTS), of an `IPUPlacement` or of its dict (as
    `to_dict()` and `--json` give it): the pipeline's (stash, recomputation) or the update's, whichever is larger, the
    other's 0; the pipeline's are 0 where the activations are not counted. They add up to `on_chip_bytes`."""
    data = ipu.to_dict() if isinstance(ipu, IPUPlacement) else ipu
    pipeline = [data["stash_bytes"] or 0, data["recompute_bytes"] or 0]
    update = data["update_bytes"] if data["update_bytes"] > sum(pipeline) else 0
    return [data["weights_bytes"], data["gradient_accumulator_bytes"], data["optimizer_state_bytes"],
            *(pipeline if not update else [0, 0]), update]


def _title(placement: Placement, style: Style) -> str:
    title = (f"{style(placement.model, 'bold')}: {placement.architecture}, {placement.build}, "
             f"layers_per_ipu {list(placement.layers_per_ipu)}")
    shape = placement.shape
    if shape is None:
        return title
    title += f", micro-batch {shape.micro_batch_size}, sequence length {shape.sequence_length}"
    if placement.decoder_sequence_length is not None:
        title += f", decoder sequence length {placement.decoder_sequence_length}"
    return title


def _pipeline_line(placement: Placement) -> str:
    """The stages, the cycles of a step, the efficiency and the slowest IPU, in one line."""
    schedule = placement.schedule
    ipus = ", ".join(str(stage.ipu) for stage in placement.stages)
    slowest = f"IPU {placement.bottleneck_ipu} computes the most and sets the pace"
    if schedule.cycles is None:
        return f"Not pipelined: the {schedule.stages} stages (IPUs {ipus}) run one micro-batch at a time; {slowest}."
    return (f"Pipeline: {schedule.stages} stages (IPUs {ipus}), {schedule.cycles:,} cycles a step, "
            f"{100 * schedule.efficiency:.1f}% of them with every stage busy; {slowest}.")


def seconds(value: float) -> str:
    return f"{value:.3g} s"


def _time_line(time: StepTime) -> str:
    """A step's time, by part, and the samples it takes, in one line."""
    parts = ", ".join(f"{name.replace('_', ' ')} {seconds(value)}"
                      for name, value in time.to_dict()["step_parts"].items())
    return (f"Time: {seconds(time.step_seconds)} a step on {IPU_TYPES[time.ipu].label} IPUs ({parts}): "
            f"{time.samples_per_step:,} samples, {time.samples_per_second:,.1f} a second.")


def _verdict_line(placement: Placement, style: Style) -> str:
    """The verdict, with its reasons: what poptorch refuses, the IPUs over their memory or their reserve."""
    capacity, reserve = placement.ipu_memory_bytes, placement.reserve_bytes
    leaves = (f"the {mib(capacity - reserve)} MiB a reserve of {mib(reserve)} MiB leaves of an IPU's "
              f"{mib(capacity)} MiB")
    verdict = placement.verdict
    if verdict == FITS:
        memory = f"every IPU's on-chip figure is within {leaves}"
    else:
        limit = capacity if verdict == DOES_NOT_FIT else capacity - reserve
        named = ", ".join(style(f"IPU {ipu.ipu}", VERDICT_STYLES[verdict]) + f" ({mib(ipu.on_chip_bytes)} MiB)"
                          for ipu in placement.ipus if ipu.on_chip_bytes > limit)
        memory = f"{named} over " + (f"the {mib(capacity)} MiB of an IPU" if verdict == DOES_NOT_FIT else leaves)
    if placement.problems:
        return f"{style('Does not run', 'red')}: {'; '.join(placement.problems)}; memory {verdict}: {memory}."
    return f"{style(verdict.capitalize(), VERDICT_STYLES[verdict])}: {memory}."


def _ipu_style(placement: Placement, ipu: IPUPlacement) -> Optional[str]:
    """The style of an IPU's number: red over its memory, yellow over what its reserve leaves."""
    if ipu.on_chip_bytes > placement.ipu_memory_bytes:
        return VERDICT_STYLES[DOES_NOT_FIT]
    if ipu.on_chip_bytes > placement.ipu_memory_bytes - placement.reserve_bytes:
        return VERDICT_STYLES[TIGHT]
    return None


def render(placement: Placement, style: Style = _plain) -> str:
    """The placement as text; `style` colours the IPUs that are over their memory, on terminals."""
    capacity = placement.ipu_memory_bytes
    counted = placement.shape is not None
    rows = [["IPU", "Blocks", "Parameters", f"On chip, MiB of {mib(capacity)}", "Streaming, MiB"]]
    if counted:
        rows[0] += ["Forward, GFLOP", "Backward, GFLOP", "Pace"]
        slowest = max(ipu.work.flops for ipu in placement.ipus) or 1
    for ipu in placement.ipus:
        drawn = stacked_bar(parts(ipu), capacity) if counted else bar(ipu.on_chip_bytes, capacity)
        share = f"{mib(ipu.on_chip_bytes):>9} {drawn} {100 * ipu.on_chip_bytes / capacity:3.0f}%"
        row = [str(ipu.ipu), compress(ipu.blocks), f"{ipu.parameters:,}", share, mib(ipu.streaming_bytes)]
        if counted:
            work = ipu.work
            row += [gflop(work.forward_flops), gflop(work.backward_flops + work.recompute_flops),
                    f"{100 * work.flops / slowest:.0f}%"]
        rows.append(row)
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines = [_title(placement, style), ""]
    for number, row in enumerate(rows):
        ipu = row[0].rjust(widths[0])
        marked = _ipu_style(placement, placement.ipus[number - 1]) if number else None
        if marked:
            ipu = style(ipu, marked)
        cells = [cell.ljust(width) if column in (1, 3) else cell.rjust(width)
                 for column, (cell, width) in enumerate(zip(row, widths)) if column]
        text = "  ".join([ipu, *cells]).rstrip()
        lines.append(style(text, "bold") if number == 0 else text)
    lines.append("")
    if counted:
        lines.append(_pipeline_line(placement))
        lines.append(_time_line(placement.time))
    lines.append(_verdict_line(placement, style))
    if counted:
        legend = ", ".join(f"{letter} {name}" for name, letter in BAR_PARTS)
        lines.append(f"Bars: {legend}; backward FLOPs count the recomputation; pace: the share of the slowest IPU's "
                     "FLOPs.")
    lines.append(f"Assumes {placement.assumptions}.")
    return "\n".join(lines)


def render_comparison(current: Placement, proposal: Placement, style: Style = _plain,
                      objective: str = "memory") -> str:
    """The balanced split beside the config's: each IPU's layers and on-chip memory, now and balanced; balanced for
    `objective` "time", each IPU's FLOPs too."""
    timed = objective == "time"
    goal = "the slowest IPU fastest among the splits that fit" if timed else "the largest on-chip figure smallest"
    if list(proposal.layers_per_ipu) == list(current.layers_per_ipu):
        return style(f"Balanced: the config's layers_per_ipu already makes {goal}.", "bold")
    rows = [["IPU", "Layers", "Balanced", "On chip, MiB", "Balanced, MiB"]]
    if timed:
        rows[0] += ["GFLOP", "Balanced, GFLOP"]
    for now, then in zip(current.ipus, proposal.ipus):
        row = [str(now.ipu), str(len(now.layers)), str(len(then.layers)), mib(now.on_chip_bytes),
               mib(then.on_chip_bytes)]
        if timed:
            row += [gflop(now.work.flops), gflop(then.work.flops)]
        rows.append(row)
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines = [style(f"Balanced: layers_per_ipu {list(proposal.layers_per_ipu)} (the config's: "
                   f"{list(current.layers_per_ipu)})", "bold")]
    for number, row in enumerate(rows):
        text = "  ".join(cell.rjust(width) for cell, width in zip(row, widths))
        lines.append(style(text, "bold") if number == 0 else text)
    verdict = {FITS: "fits", TIGHT: "is tight", DOES_NOT_FIT: "still does not fit"}[proposal.verdict]
    largest_now = max(ipu.on_chip_bytes for ipu in current.ipus)
    largest = max(ipu.on_chip_bytes for ipu in proposal.ipus)
    summary = f"The largest on-chip figure: {mib(largest)} MiB instead of {mib(largest_now)} MiB"
    if timed:
        slowest_now = max(ipu.work.flops for ipu in current.ipus)
        slowest = max(ipu.work.flops for ipu in proposal.ipus)
        summary = (f"The slowest IPU: {gflop(slowest)} GFLOP a micro-batch instead of {gflop(slowest_now)}; "
                   + summary[0].lower() + summary[1:])
    lines.append(f"{summary}; it {verdict}.")
    return "\n".join(lines)
