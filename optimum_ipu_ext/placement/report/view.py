"""The typed view every report reads: a placement (`PlacementView`) or a plan (`PlanView`) as the JSON of
`Placement.to_dict()` / `Plan.to_dict()` gives it (`place --json`, `plan --json`), so that a saved JSON is reported
the same as a placement just made. Text, pictures, pages and model cards each write their own format from it."""

from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Tuple

from ..estimate.memory import Verdict, verdict_of
from ..estimate.pipeline import fill_cycles
from ..estimate.timing import SHIPPED
from ..hardware import IPU_TYPES, IPUType

# the parts of an IPU's on-chip memory, in the order its bar stacks them, and the letter each is drawn with: after
# the parameters' parts, the pipeline's or the update's, whichever is larger
BAR_PARTS = (("weights", "W"), ("gradient accumulators", "A"), ("optimizer state", "O"), ("stash", "S"),
             ("recomputation", "R"), ("optimizer state brought in for the update", "U"))
# a generation build's parts, in the same order: its weights, then what generating keeps on the IPU
GENERATION_BAR_PARTS = (("weights", "W"), ("KV caches", "K"), ("cross caches", "C"), ("encoder output", "E"),
                        ("generation state", "G"), ("working activations", "X"))
# the verdict of a placement that poptorch refuses to run, whatever its memory
DOES_NOT_RUN = "does not run"


@dataclass(frozen=True)
class IPUView:
    """One IPU of a placement: its blocks, layers, parameters and bytes (`IPUPlacement`), its work for the
    micro-batches in flight (None where the activations are not counted), its verdict, and its part of a generation
    build (None: not one; `GenerationLoad`'s fields)."""

    ipu: int
    blocks: Tuple[Optional[str], ...]
    layers: Tuple[int, ...]
    parameters: int
    on_chip_bytes: int
    streaming_bytes: int
    weights_bytes: int
    gradient_accumulator_bytes: int
    optimizer_state_bytes: int
    update_bytes: int
    stash_bytes: Optional[int]
    recompute_bytes: Optional[int]
    forward_flops: Optional[int]
    backward_flops: Optional[int]
    recompute_flops: Optional[int]
    cycle_seconds: Optional[float]
    verdict: Verdict
    generation: Optional[Mapping[str, int]] = None

    @property
    def flops(self) -> int:
        """Forward, backward and recomputation: what paces its cycles."""
        return self.forward_flops + self.backward_flops + self.recompute_flops

    @property
    def parts(self) -> Tuple[int, ...]:
        """The sizes of the parts of its on-chip memory (BAR_PARTS): the pipeline's (stash, recomputation) or the
        update's, whichever is larger, the other's 0; the pipeline's are 0 where the activations are not counted.
        A generation build's: its weights and what generating keeps (GENERATION_BAR_PARTS). They add up to
        `on_chip_bytes`."""
        if self.generation is not None:
            part = self.generation
            return (self.weights_bytes, part["kv_cache_bytes"], part["cross_cache_bytes"],
                    part["encoder_output_bytes"], part["state_bytes"], part["working_bytes"])
        pipeline = [self.stash_bytes or 0, self.recompute_bytes or 0]
        update = self.update_bytes if self.update_bytes > sum(pipeline) else 0
        return (self.weights_bytes, self.gradient_accumulator_bytes, self.optimizer_state_bytes,
                *(pipeline if not update else [0, 0]), update)


@dataclass(frozen=True)
class StageView:
    """An independent pipeline stage: its IPU, the blocks it begins, and the micro-batches it stashes for."""

    ipu: int
    blocks: Tuple[Optional[str], ...]
    stash_depth: int


@dataclass(frozen=True)
class TimeView:
    """A step: its seconds by part on IPUs of type `ipu`, and its samples; the samples a second a run would measure
    by the model's error on the `runs` measured runs of its calibration, how the build is outside them, and the
    calibration that timed it (its name: "shipped", or the file it was read from)."""

    ipu: IPUType
    step_seconds: float
    samples_per_step: int
    samples_per_second: float
    parts: Mapping[str, float]
    samples_per_second_range: Tuple[float, float]
    runs: int
    outside: Tuple[str, ...]
    calibration: str = SHIPPED


@dataclass(frozen=True)
class ScheduleView:
    """The step of a pipeline drawn cycle by cycle: its stages, its micro-batches, its cycles and whether each cycle
    runs a backward pass too."""

    stages: int
    micro_batches: int
    cycles: int
    training: bool

    @property
    def fill(self) -> int:
        return self.cycles - self.micro_batches


@dataclass(frozen=True)
class PlacementView:
    """A placement as its reports read it (`Placement.to_dict()`); `data` is that dict."""

    model: str
    architecture: str
    build: str
    layers_per_ipu: Tuple[int, ...]
    micro_batch_size: Optional[int]
    sequence_length: Optional[int]
    decoder_sequence_length: Optional[int]
    memory_bytes: int
    reserve_bytes: int
    verdict: Verdict
    fits: bool
    problems: Tuple[str, ...]
    stages: Tuple[StageView, ...]
    cycles: Optional[int]
    efficiency: Optional[float]
    bottleneck_ipu: Optional[int]
    time: Optional[TimeView]
    ipus: Tuple[IPUView, ...]
    data: Mapping[str, Any]
    generation: Optional[Mapping[str, Any]] = None

    @property
    def bar_parts(self) -> Tuple[Tuple[str, str], ...]:
        """The parts its bars stack, each with its letter."""
        return BAR_PARTS if self.generation is None else GENERATION_BAR_PARTS

    @property
    def counted(self) -> bool:
        """Whether the placement counts the activations (a micro-batch was given)."""
        return self.micro_batch_size is not None

    @property
    def training(self) -> bool:
        return self.build == "training"

    @property
    def verdict_word(self) -> str:
        """The verdict as a badge shows it: its value, or DOES_NOT_RUN where poptorch refuses the pipeline."""
        return DOES_NOT_RUN if self.problems else self.verdict.value

    @property
    def slowest_cycle(self) -> float:
        """The seconds of the slowest IPU's cycle, which paces them all (1 where none has any: a share of it is
        then 0)."""
        return max(ipu.cycle_seconds for ipu in self.ipus) or 1.0

    @property
    def schedule(self) -> Optional[ScheduleView]:
        """The step's schedule; None where the build is not pipelined, or its stages do not run as one pipeline (a
        generation build's encoder and decoder run as two)."""
        if self.cycles is None:
            return None
        batches = round(self.efficiency * self.cycles)
        count = len(self.stages)
        if fill_cycles(count, self.training) != self.cycles - batches:
            return None
        return ScheduleView(count, batches, self.cycles, self.training)


def _ipu(data: Mapping[str, Any], memory: int, reserve: int) -> IPUView:
    return IPUView(data["ipu"], tuple(data["blocks"]), tuple(data["layers"]), data["parameters"],
                   data["on_chip_bytes"], data["streaming_bytes"], data["weights_bytes"],
                   data["gradient_accumulator_bytes"], data["optimizer_state_bytes"], data["update_bytes"],
                   data["stash_bytes"], data["recompute_bytes"], data["forward_flops"], data["backward_flops"],
                   data["recompute_flops"], data["cycle_seconds"], verdict_of(data["on_chip_bytes"], memory, reserve),
                   data.get("generation"))


def placement_view(data: Mapping[str, Any]) -> PlacementView:
    """The view of a placement's dict (`Placement.to_dict()`, or the JSON `place --json` printed, read back)."""
    memory, reserve = data["ipu_memory_bytes"], data["reserve_bytes"]
    time = None
    if data["step_seconds"] is not None:
        model = data["time_model"]
        time = TimeView(IPU_TYPES[data["ipu"]], data["step_seconds"], data["samples_per_step"],
                        data["samples_per_second"], data["step_parts"], tuple(data["samples_per_second_range"]),
                        model["runs"], tuple(model["outside"]), model["calibration"])
    return PlacementView(
        data["model"], data["architecture"], data["build"], tuple(data["layers_per_ipu"]), data["micro_batch_size"],
        data["sequence_length"], data["decoder_sequence_length"], memory, reserve, Verdict(data["verdict"]),
        data["fits"], tuple(data["problems"]),
        tuple(StageView(stage["ipu"], tuple(stage["blocks"]), stage["stash_depth"]) for stage in data["stages"]),
        data["pipeline_cycles"], data["pipeline_efficiency"], data["bottleneck_ipu"], time,
        tuple(_ipu(ipu, memory, reserve) for ipu in data["ipus"]), data, data.get("generation"))


# --- a plan ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CandidateView:
    """A build a plan weighed (or the base config): what it chooses (`build`: its settings, by the names of the
    plan's build), its micro-batch, its figures and its placement (None in a candidate written by hand)."""

    build: Mapping[str, Any]
    micro_batch_size: int
    largest_share: float
    verdict: Verdict
    fits: bool
    samples_per_second: Optional[float]
    step_seconds: Optional[float]
    pipeline_efficiency: Optional[float]
    placement: Optional[PlacementView]

    @property
    def problems(self) -> Tuple[str, ...]:
        return self.placement.problems if self.placement is not None else ()

    @property
    def verdict_word(self) -> str:
        """The verdict, or DOES_NOT_RUN where poptorch refuses the pipeline."""
        return DOES_NOT_RUN if self.problems else self.verdict.value

    @property
    def training(self) -> bool:
        return "gradient_accumulation_steps" in self.build


@dataclass(frozen=True)
class PlanView:
    """A plan as its reports read it (`Plan.to_dict()`): what it is for, its candidates best first, the indices of
    those on the frontier of speed against memory, and the base config (None: not weighed)."""

    model: str
    architecture: str
    build: str
    ipus: int
    ipu: IPUType
    global_batch_size: Optional[int]
    sequence_length: Optional[int]
    decoder_sequence_length: Optional[int]
    candidates: Tuple[CandidateView, ...]
    pareto: Tuple[int, ...]
    reference: Optional[CandidateView]

    @property
    def training(self) -> bool:
        return self.build == "training"


_CANDIDATE_FIGURES = ("micro_batch_size", "largest_share", "verdict", "fits", "samples_per_second", "step_seconds",
                      "pipeline_efficiency", "ipu_config", "placement")


def _candidate(data: Mapping[str, Any]) -> CandidateView:
    build: Dict[str, Any] = {key: value for key, value in data.items() if key not in _CANDIDATE_FIGURES}
    placement = placement_view(data["placement"]) if data.get("placement") else None
    return CandidateView(build, data["micro_batch_size"], data["largest_share"], Verdict(data["verdict"]),
                         data["fits"], data["samples_per_second"], data["step_seconds"], data["pipeline_efficiency"],
                         placement)


def plan_view(data: Mapping[str, Any]) -> PlanView:
    """The view of a plan's dict (`Plan.to_dict()`, or the JSON `plan --json` printed, read back)."""
    reference = data.get("reference")
    return PlanView(data["model"], data["architecture"], data.get("build", "training"), data["ipus"],
                    IPU_TYPES[data["ipu"]], data["global_batch_size"], data["sequence_length"],
                    data["decoder_sequence_length"], tuple(_candidate(candidate) for candidate in data["candidates"]),
                    tuple(data["pareto"]), _candidate(reference) if reference else None)


# --- a generation plan ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GenerationCandidateView:
    """A build a generation plan weighed: what it chooses (`build`), its figures and its placement."""

    build: Mapping[str, Any]
    largest_share: float
    verdict: Verdict
    fits: bool
    first_token_seconds: float
    token_seconds: float
    job_tokens_per_second: float
    placement: PlacementView


@dataclass(frozen=True)
class GenerationPlanView:
    """A generation plan as its reports read it (`GenerationPlan.to_dict()`): what it is for, its candidates best
    first, the indices of those on the frontier of latency against throughput."""

    model: str
    architecture: str
    ipus: int
    ipu: IPUType
    batch_size: Optional[int]
    num_beams: Optional[int]
    max_length: Optional[int]
    max_latency: Optional[float]
    candidates: Tuple[GenerationCandidateView, ...]
    frontier: Tuple[int, ...]


_GENERATION_FIGURES = ("largest_share", "verdict", "fits", "first_token_seconds", "token_seconds",
                       "job_tokens_per_second", "ipu_config", "placement")


def generation_plan_view(data: Mapping[str, Any]) -> GenerationPlanView:
    """The view of a generation plan's dict (`GenerationPlan.to_dict()`, or the JSON `plan --generate --json`
    printed, read back)."""
    candidates = tuple(GenerationCandidateView(
        {key: value for key, value in candidate.items() if key not in _GENERATION_FIGURES},
        candidate["largest_share"], Verdict(candidate["verdict"]), candidate["fits"],
        candidate["first_token_seconds"], candidate["token_seconds"], candidate["job_tokens_per_second"],
        placement_view(candidate["placement"])) for candidate in data["candidates"])
    return GenerationPlanView(data["model"], data["architecture"], data["ipus"], IPU_TYPES[data["ipu"]],
                              data["batch_size"], data["num_beams"], data["max_length"], data["max_latency"],
                              candidates, tuple(data["frontier"]))
