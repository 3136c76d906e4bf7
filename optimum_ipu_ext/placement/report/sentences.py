"""What every report of a placement or a plan says in words, said once: its title, its shape, its pipeline, its time,
its verdict with the reasons, a plan's request and its candidates in a few words; and the numbers as they are
written (MiB, GFLOP, seconds, shares, compressed names). Each format (text, picture, page, model card) lays them
out its own way."""

import re
from typing import Any, Callable, List, Mapping, Optional, Sequence, Tuple

from ..estimate.memory import Verdict
from ..estimate.timing import SHIPPED
from ..hardware import IPU_TYPES
from .view import CandidateView, PlacementView, PlanView, TimeView

MIB = 1 << 20

# `style(text, name)`: `text` styled by a format ("bold", or the name of a verdict's colour); plain by default
Style = Callable[[str, str], str]


def plain(text: str, name: str) -> str:
    return text


# --- numbers ---------------------------------------------------------------------------------------------------


def mib(size: int) -> str:
    return f"{size / MIB:,.1f}"


def gflop(flops: int) -> str:
    return f"{flops / 1e9:,.1f}"


def milliseconds(value: float) -> str:
    return f"{1e3 * value:,.2f}"


def seconds(value: float) -> str:
    return f"{value:.3g} s"


def percent(share: float) -> str:
    return f"{100 * share:.0f}%"


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


def ranges(numbers: Sequence[int]) -> str:
    """Runs of consecutive integers shortened: `0-2, 5`."""
    runs: List[List[int]] = []
    for number in numbers:
        if runs and number == runs[-1][1] + 1:
            runs[-1][1] = number
        else:
            runs.append([number, number])
    return ", ".join(str(first) if first == last else f"{first}-{last}" for first, last in runs)


# --- a placement -----------------------------------------------------------------------------------------------


def title_line(placement: PlacementView) -> str:
    """The model, its architecture and the build."""
    return f"{placement.model}: {placement.architecture}, {placement.build}"


def shape_clause(placement: PlacementView) -> str:
    """The split, and the micro-batch the activations are counted for (a generation build's batch, beams and
    tokens)."""
    clause = f"layers_per_ipu {list(placement.layers_per_ipu)}"
    generation = placement.generation
    if generation is not None:
        beams = generation["num_beams"]
        clause += (f", batch {generation['batch_size']}" + (f" x {beams} beams" if beams > 1 else "")
                   + f", up to {generation['max_length']:,} tokens")
        if generation["sequence_length"] is not None:
            clause += f", encoder input {generation['sequence_length']:,}"
        return clause
    if not placement.counted:
        return clause
    clause += f", micro-batch {placement.micro_batch_size}, sequence length {placement.sequence_length}"
    if placement.decoder_sequence_length is not None:
        clause += f", decoder sequence length {placement.decoder_sequence_length}"
    return clause


def shape_line(placement: PlacementView, config: Optional[str] = None) -> str:
    """The config (where it came from, if given), its split and the micro-batch the activations are counted for."""
    line = (f"config {config}, " if config else "") + shape_clause(placement)
    return line if placement.counted else line + "; no micro-batch given: the parameters' memory only"


def pipeline_line(placement: PlacementView) -> str:
    """The stages, the cycles of a step, the share of them every stage works, and the IPU that sets the pace."""
    stages = placement.stages
    ipus = ", ".join(str(stage.ipu) for stage in stages)
    slowest = placement.bottleneck_ipu
    pace = f"; IPU {slowest} takes the longest and sets the pace" if slowest is not None else ""
    if placement.cycles is None:
        return f"Not pipelined: the {len(stages)} stages (IPUs {ipus}) run one micro-batch at a time{pace}."
    return (f"Pipeline: {len(stages)} stages (IPUs {ipus}), {placement.cycles:,} cycles a step, "
            f"{100 * placement.efficiency:.1f}% of them with every stage busy{pace}.")


def time_line(placement: PlacementView) -> Optional[str]:
    """A step's time, by part, and its samples (None: activations not counted)."""
    time = placement.time
    if time is None:
        return None
    parts = ", ".join(f"{name.replace('_', ' ')} {seconds(value)}" for name, value in time.parts.items())
    low, high = time.samples_per_second_range
    line = (f"Time: {seconds(time.step_seconds)} a step on {time.ipu.label} IPUs ({parts}): "
            f"{time.samples_per_step:,} samples, {time.samples_per_second:,.1f} a second, {low:,.0f}-{high:,.0f} by "
            f"the model's error on {time.runs} measured runs (data loading not counted).")
    return line + outside_sentence(time.outside) + timed_with(time.calibration, " Timed with the calibration {}.")


def outside_sentence(outside: Sequence[str]) -> str:
    """How a build is outside the runs the time model is fitted on, as a sentence after its time (none where it is
    not)."""
    return f" Outside the runs it is fitted on: {'; '.join(outside)}." if outside else ""


def timed_with(calibration: str, words: str) -> str:
    """`words` naming `calibration` (`{}` stands for its name), or nothing for the shipped one."""
    return "" if calibration == SHIPPED else words.format(calibration)


def memory_reason(placement: PlacementView, style: Style = plain) -> str:
    """Why the memory's verdict is what it is: every IPU within what the reserve leaves, or the IPUs over it (or
    over the IPU's memory), `style` giving each its verdict's colour."""
    memory, reserve = placement.memory_bytes, placement.reserve_bytes
    leaves = f"the {mib(memory - reserve)} MiB a reserve of {mib(reserve)} MiB leaves of an IPU's {mib(memory)} MiB"
    verdict = placement.verdict
    if verdict == Verdict.FITS:
        return f"every IPU's on-chip figure is within {leaves}"
    limit = memory if verdict == Verdict.DOES_NOT_FIT else memory - reserve
    named = ", ".join(style(f"IPU {ipu.ipu}", verdict.value) + f" ({mib(ipu.on_chip_bytes)} MiB)"
                      for ipu in placement.ipus if ipu.on_chip_bytes > limit)
    return f"{named} over " + (f"the {mib(memory)} MiB of an IPU" if verdict == Verdict.DOES_NOT_FIT else leaves)


def verdict_lines(placement: PlacementView) -> List[str]:
    """The verdict and its reasons, a line each: the memory's, then what poptorch refuses."""
    return ([f"{placement.verdict.value.capitalize()}: {memory_reason(placement)}."]
            + [f"Does not run: {problem}." for problem in placement.problems])


def _ipus(numbers: Sequence[int]) -> str:
    return f"IPU{'s' if len(numbers) > 1 else ''} {ranges(numbers)}"


def generation_lines(placement: PlacementView) -> List[str]:
    """A generation build in words: its executors, its caches, where the encoder's output and the tokens go, what
    upstream does besides, and where it does not fit, the batch and the length that fit."""
    generation = placement.generation
    executors = generation["executors"]
    if "encoder" in executors:
        where = (f"the encoder on {_ipus(executors['encoder'])}, the decoder on {_ipus(executors['decoder'])}, each "
                 "running its IPUs in turn")
    elif generation["use_cond_encoder"]:
        where = f"the encoder and the decoder on {_ipus(executors['model'])}, the encoder at the first step"
    else:
        where = f"the decoder on {_ipus(executors['model'])}, in turn"
    parts = [where]
    rows = generation["batch_size"] * generation["num_beams"]
    kv = sum(ipu.generation["kv_cache_bytes"] for ipu in placement.ipus)
    if generation["use_cache"]:
        parts.append(f"KV caches of {generation['max_length']:,} tokens for {rows:,} sequence{'s' if rows > 1 else ''}"
                     f", {mib(kv)} MiB")
    cross = sum(ipu.generation["cross_cache_bytes"] for ipu in placement.ipus)
    if generation["use_cross_cache"]:
        parts.append(f"cross caches of {generation['encoder_max_length']:,} positions, {mib(cross)} MiB")
    if generation["encoder_length"] is not None and not generation["use_cond_encoder"]:
        parts.append("the encoder's output kept on the decoder's IPUs" if generation["use_encoder_output_buffer"]
                     else "the encoder's output sent with every call")
    steps = generation["on_device_generation_steps"]
    parts.append(f"{steps} tokens a call, generated on the device" if steps else "a token a call, from the host")
    lines = [f"Generation: {'; '.join(parts)}.", *_generation_time(generation),
             *(f"Note: {note}." for note in generation["notes"])]
    fitting = generation["fitting"]
    if fitting is not None:
        limit = placement.memory_bytes - placement.reserve_bytes
        largest = max(placement.ipus, key=lambda ipu: (ipu.on_chip_bytes, -ipu.ipu))
        found = [f"{name} {fitting[name]:,} ({other} {generation[other]:,})"
                 for name, other in (("batch_size", "max_length"), ("max_length", "batch_size"))
                 if fitting[name] is not None]
        lines.append(f"IPU {largest.ipu} needs {mib(largest.on_chip_bytes - limit)} MiB more than its reserve leaves; "
                     + (f"it fits with {' or '.join(found)}." if found
                        else "no smaller batch_size or max_length fits."))
    return lines


def _generation_time(generation: Mapping[str, Any]) -> List[str]:
    """A generation build's time, in a line (none where it is not timed)."""
    time = generation["time"]
    if time is None:
        return []
    replicas, model = time["replicas"], time["time_model"]
    low, high = time["job_tokens_per_second_range"]
    line = (f"Time on {IPU_TYPES[time['ipu']].label} IPUs: {seconds(time['first_token_seconds'])} to the first token "
            f"(the encoder {seconds(time['parts']['encoder'])}), {milliseconds(time['token_seconds'])} ms a token: "
            f"{time['tokens_per_second']:,.1f} tokens a second for a replica's batch, "
            f"{time['job_tokens_per_second']:,.1f} for the job's {replicas} replica{'s' if replicas > 1 else ''} "
            f"({low:,.0f}-{high:,.0f} by the model's error on {model['runs']} measured runs); "
            f"{seconds(time['sequence_seconds'])} for {generation['max_length']:,} tokens.")
    return [line + outside_sentence(model["outside"])
            + timed_with(model["calibration"], " Timed with the calibration {}.")]


def summary_lines(placement: PlacementView, config: Optional[str] = None) -> List[str]:
    """What a picture's header and a page say in words: the shape, the pipeline, the time and the verdict (a
    generation build's, `generation_lines`)."""
    if placement.generation is not None:
        return [shape_line(placement, config), *generation_lines(placement), *verdict_lines(placement)]
    lines = [shape_line(placement, config), pipeline_line(placement)]
    timed = time_line(placement)
    return lines + ([timed] if timed else []) + verdict_lines(placement)


# --- a plan ----------------------------------------------------------------------------------------------------

# a plan's training builds: what each turns on, by the column that shows it and the word that names it
SWITCHES = (("recompute_checkpoint_every_layer", "Checkpoint every layer", "checkpoints"),
            ("optimizer_state_offchip", "State off chip", "state off chip"),
            ("replicated_tensor_sharding", "RTS", "RTS"))


def _plan_times(plan: PlanView) -> List[TimeView]:
    return [candidate.placement.time for candidate in plan.candidates
            if candidate.placement is not None and candidate.placement.time is not None]


def plan_calibration_note(plan: PlanView) -> str:
    """The calibration that timed a plan's candidates, in a sentence; nothing for the shipped one, or no time."""
    timed = _plan_times(plan)
    return timed_with(timed[0].calibration, " Timed with the calibration {}.") if timed else ""


def band_line(plan: PlanView) -> Optional[str]:
    """What the speeds of a plan are worth: how measured runs compared with the model (None: no time)."""
    timed = _plan_times(plan)
    if not timed:
        return None
    time = timed[0]
    low, high = (range_ / time.samples_per_second for range_ in time.samples_per_second_range)
    return speeds_sentence(low, high, time.runs, time.calibration)


def generation_band_line(generation: Mapping[str, Any]) -> Optional[str]:
    """`band_line` for a generation plan, of its best build's generation (None: not timed), and how that build is
    outside the runs the model is fitted on."""
    time = generation["time"]
    if time is None:
        return None
    model = time["time_model"]
    low, high = (range_ / time["job_tokens_per_second"] for range_ in time["job_tokens_per_second_range"])
    return speeds_sentence(low, high, model["runs"], model["calibration"]) + outside_sentence(model["outside"])


def speeds_sentence(low: float, high: float, runs: int, calibration: str) -> str:
    """What a plan's speeds are worth: measured runs were `low` to `high` times the model's figure."""
    return (f"Speeds are the model's{timed_with(calibration, ', with the calibration {}')}: runs measured "
            f"{low:.2f} to {high:.2f} times its figure ({runs} runs, each left out of the fit in turn); it ranks "
            "builds of one model.")


def plan_title(plan: PlanView) -> str:
    """What a plan is for, in a line: the model, its architecture, then `plan_request`."""
    return f"{plan.model}: {plan.architecture} on {plan_request(plan)}"


def plan_request(plan: PlanView) -> str:
    """The IPUs, the batch and the lengths a plan is for."""
    what = f"global batch {plan.global_batch_size:,}" if plan.training else "inference"
    lengths = [f"{name} {value:,}" for name, value in (("sequence length", plan.sequence_length),
                                                       ("decoder length", plan.decoder_sequence_length))
               if value is not None]
    return ", ".join([f"{plan.ipus} {plan.ipu.label} IPUs", what, *lengths])


def candidate_label(candidate: CandidateView) -> str:
    """A candidate in a few words: IPUs a replica x replicas, micro-batch, accumulation (or device iterations), and
    what it turns on."""
    build = candidate.build
    ipus = build["ipus_per_replica"]
    label = (f"{ipus} IPU{'s' if ipus > 1 else ''} x {build['replication_factor']}, micro-batch "
             f"{candidate.micro_batch_size}")
    if not candidate.training:
        return label + f", {build['device_iterations']} device iterations"
    flags = [word for name, _, word in SWITCHES if build[name]]
    return label + f", G {build['gradient_accumulation_steps']}" + (f", {', '.join(flags)}" if flags else "")


def candidate_sentence(candidate: CandidateView) -> str:
    """A candidate's build and figures in a sentence."""
    build = candidate.build
    parts: List[str] = [candidate_label(candidate), f"layers_per_ipu {build['layers_per_ipu']}"]
    if (build.get("embedding_serialization_factor") or 1) > 1:
        parts.append(f"serialization factor {build['embedding_serialization_factor']}")
    return (", ".join(parts) + f": {candidate.samples_per_second:,.1f} samples a second, "
            f"{candidate.step_seconds:.3g} s a step, the largest IPU {percent(candidate.largest_share)} of its memory")
