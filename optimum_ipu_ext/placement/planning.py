"""`search()`: the fastest builds of a model on a number of IPUs, each placed and timed by the code `place` uses.

The outer choices are enumerated: the IPUs of a replica (a power of two dividing the IPUs) and so the replicas; the
micro-batch (the powers of two whose G = global batch / (micro-batch x replicas) is whole, or the one given, up to
the first none of whose builds fits: a larger one keeps more; an inference plan's is 1 unless given, since the
placement does not count an inference build's activations); recomputation checkpoints after every layer or not;
the optimizer state on chip or in Streaming Memory; and, where no build of a micro-batch fits without one, the least
serialization factor of the vocabulary (or of the projection) that makes one fit. A training build runs as many
optimizer steps a host call (`device_iterations`) as keep the calls within `timing.CALL_SHARE` of its even split's
step (timed from the costs of its runs of layers, the step `place` times); an inference build as many micro-batches
a call as keep its pipeline busy. For each, the split is exact
(`balance.least_weighted_sum`): the one whose step is shortest among those that fit, else the one needing the least
memory.

Left out, as never faster by the time model: replicas without replicated tensor sharding of the optimizer state (the
same time, more memory), and serialization where a build fits without it (the model has no time for it).
`matmul_proportion` changes nothing the model counts: each IPU is given what its reserve leaves, from 0.1 to 0.6.
"""

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

from ..errors import PlacementError
from ..settings.mode import Mode
from .estimate import balance
from .estimate.configured import ConfiguredModel, Shapes
from .estimate.costs import block_costs
from .estimate.generation import KWARGS
from .estimate.layer_runs import LayerRunCosts
from .estimate.layout import fixed_layer_groups, layer_counts
from .estimate.memory import MATMUL_PROPORTIONS, Verdict, matmul_proportions
from .estimate.parameters import LARGEST_FACTOR
from .estimate.pipeline import Schedule, fewest_device_iterations
from .estimate.timing import Calibration
from .hardware import IPU_MEMORY_BYTES, IPUType
from .models import resolve_shape
from .models.rules import Architecture, Split
from .placement import Placement
from .placer import Placer, generated, placer_of
from .report.text import plan_text

# the serialization factors tried, least first, where no build of a micro-batch fits without one (1: none); those
# that do not divide a vocabulary the model's parallelize() cuts are refused as `place` refuses them
SERIALIZATION_FACTORS = tuple(range(2, LARGEST_FACTOR + 1))
# the micro-batches searched where none is given: 1, 2, 4, ... up to this
LARGEST_MICRO_BATCH = 1 << 15


class Request(NamedTuple):
    """What a plan is for: `ipus` in all, a training step's `global_batch_size` (samples; None for inference), a
    fixed `micro_batch_size` or None, the input's lengths, the IPU generation, the reserve, the build, and the time
    model's constants (None: the shipped ones)."""

    ipus: int
    global_batch_size: Optional[int]
    micro_batch_size: Optional[int]
    sequence_length: Optional[int]
    decoder_sequence_length: Optional[int]
    ipu: IPUType
    reserve: float
    for_inference: bool
    fp32: bool = False
    calibration: Optional[Calibration] = None


# what a build chooses, by the name of its training setting; `inference_device_iterations` is `device_iterations`.
# A build cuts a vocabulary by its factors alone: it sets the splits over the IPUs (the base config's, for its own
# IPUs) null
SERIALIZATION = ("embedding_serialization_factor", "serialized_embedding_splits_per_ipu",
                 "projection_serialization_factor", "serialized_projection_splits_per_ipu")
TRAINING_BUILD = ("ipus_per_replica", "replication_factor", "layers_per_ipu", "gradient_accumulation_steps",
                  "device_iterations",
                  "recompute_checkpoint_every_layer", "optimizer_state_offchip", "replicated_tensor_sharding",
                  *SERIALIZATION, "matmul_proportion")
INFERENCE_BUILD = ("ipus_per_replica", "replication_factor", "layers_per_ipu", "device_iterations", *SERIALIZATION,
                   "matmul_proportion")


def build_names(mode: Mode) -> Tuple[str, ...]:
    return INFERENCE_BUILD if mode.is_inference else TRAINING_BUILD


def setting_name(name: str, mode: Mode) -> str:
    """The setting a build's `name` is: that of `mode`, but for the embedding's factor, which upstream's models
    read from the training setting in both builds."""
    return name if name == "embedding_serialization_factor" else mode.setting(name)


def build_of(settings: Dict[str, Any], mode: Mode) -> Dict[str, Any]:
    """What a config whose `vars()` are `settings` chooses of a build (`build_names`)."""
    return {name: settings[setting_name(name, mode)] for name in build_names(mode)}


def settings_of(build: Dict[str, Any], mode: Mode) -> Dict[str, Any]:
    """The settings of `build`, by the names `mode` reads."""
    return {setting_name(name, mode): value for name, value in build.items()}


@dataclass(frozen=True)
class Candidate:
    """One build: what it chooses (`build`, by the names of `build_names`), its micro-batch, and its placement (with
    its time). `ipu_config`: the config of the build, where the caller made it."""

    build: Dict[str, Any]
    micro_batch_size: int
    placement: Placement
    ipu_config: Any = None

    @property
    def samples_per_second(self) -> float:
        return self.placement.time.samples_per_second

    @property
    def largest_share(self) -> float:
        """The largest IPU's on-chip figure, as a share of its memory."""
        return self.placement.largest_share

    @property
    def verdict(self) -> Verdict:
        return self.placement.verdict

    def to_dict(self) -> Dict[str, Any]:
        placement, time = self.placement, self.placement.time
        return {**self.build, "micro_batch_size": self.micro_batch_size, "largest_share": self.largest_share,
                "verdict": placement.verdict.value, "fits": placement.fits,
                "samples_per_second": time.samples_per_second, "step_seconds": time.step_seconds,
                "pipeline_efficiency": placement.schedule.efficiency,
                "ipu_config": None if self.ipu_config is None else self.ipu_config.to_dict(),
                "placement": placement.to_dict()}


_RANK = {Verdict.FITS: 0, Verdict.TIGHT: 1, Verdict.DOES_NOT_FIT: 2}


def ranked(candidates: Sequence[Candidate]) -> List[Candidate]:
    """Best first: those that fit, then the tight, each by samples a second then by memory; then those that do not
    fit, the nearest to fitting first."""

    def rank(found: Candidate) -> Tuple[int, float, float]:
        if found.verdict == Verdict.DOES_NOT_FIT:
            return _RANK[Verdict.DOES_NOT_FIT], found.largest_share, -found.samples_per_second
        return _RANK[found.verdict], -found.samples_per_second, found.largest_share

    return sorted(candidates, key=rank)


def pareto(candidates: Sequence[Candidate]) -> List[int]:
    """The indices of the candidates that run within their IPUs' memory (fit or tight) and that no other beats both
    in samples a second and in memory: the frontier of speed against memory, fastest first."""
    within = [index for index, found in enumerate(candidates)
              if not found.placement.problems and found.verdict in (Verdict.FITS, Verdict.TIGHT)]
    frontier: List[int] = []
    for index in sorted(within, key=lambda index: (-candidates[index].samples_per_second,
                                                   candidates[index].largest_share)):
        if not frontier or candidates[index].largest_share < candidates[frontier[-1]].largest_share:
            frontier.append(index)
    return frontier


# --- the search ------------------------------------------------------------------------------------------------------


class Model(NamedTuple):
    """The model the search places: its name, architecture, `config.json` values, and its parameters' shapes."""

    name: str
    architecture: Architecture
    values: Dict[str, Any]
    shapes: Shapes


def search(model: Model, base: Dict[str, Any], request: Request) -> List[Candidate]:
    """Every build searched that poptorch runs, each with its fastest split, ranked best first (`ranked()`):
    `base` is the settings (`vars()`) of the config whose other settings they keep.

    Raises:
        PlacementError: where no build of the model runs on these IPUs for this batch.
    """
    searching = _Search(model, base, request)
    found: List[Candidate] = []
    factors = SERIALIZATION_FACTORS if _serialized(model.architecture) else ()
    for ipus in replica_sizes(request.ipus):
        for micro_batch, steps in searching.micro_batches(ipus):
            built = searching.builds(ipus, micro_batch, steps, 1)
            for factor in factors if not _any_fits(built) else ():
                serialized = searching.builds(ipus, micro_batch, steps, factor)
                if _any_fits(serialized):
                    built += serialized
                    break
            found += built
            if not _any_fits(built):
                break  # a larger micro-batch keeps more: it fits no better
    if not found:
        raise searching.refusal or PlacementError(
            model.name, f"no build runs on {request.ipus} IPUs for this batch: give more IPUs, or a global batch size "
            "that the replicas and the pipeline's stages divide")
    return ranked(found)


def _any_fits(candidates: Sequence[Candidate]) -> bool:
    return any(candidate.placement.fits for candidate in candidates)


def replica_sizes(ipus: int) -> List[int]:
    """The IPUs a replica may take: the powers of two dividing `ipus`."""
    return [size for size in (1 << power for power in range(ipus.bit_length())) if ipus % size == 0]


def _builds(ipus: int, request: Request, steps: int, factor: int, mode: Mode) -> Iterator[Dict[str, Any]]:
    """The builds searched for one size of replica and micro-batch (their splits even, to be balanced)."""
    replicas = request.ipus // ipus
    common = {"ipus_per_replica": ipus, "replication_factor": replicas, "layers_per_ipu": [-1] * ipus,
              "embedding_serialization_factor": factor, "serialized_embedding_splits_per_ipu": None,
              "projection_serialization_factor": factor, "serialized_projection_splits_per_ipu": None,
              "matmul_proportion": MATMUL_PROPORTIONS[1]}
    if mode.is_inference:
        yield {**common, "device_iterations": steps}
        return
    for checkpoints in (False, True):
        for offchip in (False, True):
            yield {**common, "gradient_accumulation_steps": steps, "device_iterations": 1,
                   "recompute_checkpoint_every_layer": checkpoints, "optimizer_state_offchip": offchip,
                   "replicated_tensor_sharding": replicas > 1}


def _serialized(architecture: Architecture) -> bool:
    """Whether a serialization factor changes the model's build."""
    return bool(architecture.serialized_embedding or architecture.padded_embedding
                or any(isinstance(step, Split) for step in architecture.steps))


class _Search:
    """The state of one search: the costs of each micro-batch, worked out once, and the layer runs' costs of each
    pipeline, shared by its builds that differ only in where the optimizer state is."""

    def __init__(self, model: Model, base: Dict[str, Any], request: Request):
        self.model = model
        self.request = request
        self.mode = Mode.of(request.for_inference)
        self.base = base
        self.config = model.architecture.config(model.values, model.name)
        self.costs = lru_cache(maxsize=None)(self._costs)
        self._layer_runs: Dict[Tuple[Any, ...], LayerRunCosts] = {}
        self.planned = 0
        self.refused: List[PlacementError] = []

    @property
    def refusal(self) -> Optional[PlacementError]:
        """Where every build tried was refused, the first refusal: it is the model's (a `config.json` value of the
        wrong kind, a checkpoint missing a layer), not a build's."""
        return self.refused[0] if self.refused and len(self.refused) == self.planned else None

    def _costs(self, micro_batch: int):
        request = self.request
        shape = resolve_shape(self.model.name, self.model.architecture.name, self.config, micro_batch,
                              request.sequence_length, request.decoder_sequence_length)
        return shape, block_costs(self.model.architecture, self.config, shape, request.fp32)

    def placer(self, build: Dict[str, Any], micro_batch: int) -> Optional[Placer]:
        """The placer of `build`; None where it is refused (a serialization factor that does not divide the
        vocabulary, say), the refusal kept."""
        self.planned += 1
        try:
            return self.build_placer(build, micro_batch)
        except PlacementError as refused:
            self.refused.append(refused)
            return None

    def build_placer(self, build: Dict[str, Any], micro_batch: int) -> Placer:
        """The placer of `build`, its costs those of `micro_batch`.

        Raises:
            PlacementError: where the build is refused.
        """
        model, request = self.model, self.request
        settings = {**self.base, **settings_of(build, self.mode)}
        return placer_of(model.name, model.architecture, model.values, settings, model.shapes, request.for_inference,
                         request.fp32, lambda *_: self.costs(micro_batch), request.ipu, request.reserve,
                         request.calibration,
                         generated((micro_batch, request.sequence_length, request.decoder_sequence_length)))

    def micro_batches(self, ipus: int) -> Iterator[Tuple[int, int]]:
        """(micro-batch, micro-batches a step) of each micro-batch searched on replicas of `ipus` IPUs: a training
        step takes the global batch, G micro-batches on each replica; an inference step the fewest device iterations
        that keep the pipeline busy."""
        request = self.request
        replicas = request.ipus // ipus
        if request.micro_batch_size is not None:
            sizes = [request.micro_batch_size]
        elif self.mode.is_inference:  # its activations are not counted: nothing would bound a larger micro-batch
            sizes = [1]
        else:
            sizes = [1 << power for power in range(LARGEST_MICRO_BATCH.bit_length())]
        if self.mode.is_inference:
            stages = self._stages(ipus)
            # a generation build's decoder runs a token a device iteration
            generating = (self.base[KWARGS] or {}).get("for_generation")
            steps = ({size: 1 if generating else fewest_device_iterations(stages) for size in sizes}
                     if stages is not None else {})
        else:
            steps = {size: request.global_batch_size // (size * replicas) for size in sizes
                     if request.global_batch_size % (size * replicas) == 0}
        yield from steps.items()

    def _stages(self, ipus: int) -> Optional[int]:
        """The stages of the pipeline of an inference build on `ipus` IPUs (None: the model has no such build)."""
        placer = self.placer(next(_builds(ipus, self.request, 1, 1, self.mode)), 1)
        return None if placer is None else placer.place().schedule.stages

    def builds(self, ipus: int, micro_batch: int, steps: int, factor: int) -> List[Candidate]:
        """The candidates of the builds of replicas of `ipus` IPUs, `micro_batch` and serialization `factor`."""
        return [candidate for candidate in (self.fastest(build, micro_batch)
                                            for build in _builds(ipus, self.request, steps, factor, self.mode))
                if candidate is not None]

    def fastest(self, build: Dict[str, Any], micro_batch: int) -> Optional[Candidate]:
        """The candidate of `build` with its fastest split that fits (else the split needing the least memory);
        None where poptorch would refuse the build, or the placement the config."""
        placer = self.placer(build, micro_batch)
        if placer is None:
            return None
        even = placer.schedule()
        if even.problems:
            return None
        configured = placer.configured
        runs = self.layer_runs(build, micro_batch, configured)
        if not self.mode.is_inference:  # as many steps a call as keep the host's calls a small share of a step
            even_step = runs.step(configured.layout().layers_per_ipu, even.cycles)
            steps = configured.cost_model.time.fewest_steps_per_call(even_step)
            build = {**build, "device_iterations": steps}
            placer = Placer(configured.with_steps_per_call(steps))
        split = list(_fastest_split(placer, even, runs))
        placement = placer.place(split)
        proportions = matmul_proportions([ipu.on_chip_bytes for ipu in placement.ipus], placement.ipu_memory_bytes,
                                         placement.reserve_bytes)
        build = {**build, "layers_per_ipu": split, "matmul_proportion": proportions}
        return Candidate(build, micro_batch, placement)

    def layer_runs(self, build: Dict[str, Any], micro_batch: int, configured: ConfiguredModel) -> LayerRunCosts:
        """The costs of the runs of layers of `build`'s pipeline, costed by `configured`'s model: worked out once
        for both places of the optimizer state. No IPU's cost depends on the steps a host call runs (the host's
        part is the step's), so they cost the build whatever its steps a call."""
        key = (build["ipus_per_replica"], build.get("recompute_checkpoint_every_layer"),
               build["embedding_serialization_factor"], micro_batch)
        if key not in self._layer_runs:
            self._layer_runs[key] = LayerRunCosts(configured, None)
            return self._layer_runs[key]
        return self._layer_runs[key].with_cost_model(configured.cost_model)


def _fastest_split(placer: Placer, even: Schedule, runs: LayerRunCosts) -> Sequence[int]:
    """The split whose step is shortest among those that fit, else the one needing the least memory; the even one
    (the config's, whose pipeline runs `even`) where `parallelize()` places the layers itself, or a replica has one
    IPU; in a generation build, whose encoder and decoder run as pipelines of their own, the split `--balance time`
    finds (the slowest IPU fastest among those that fit, else the least memory).

    A pipelined step is `cycle_scale` x the slowest IPU's cycle load + the largest IPU's time after the pipeline +
    what no split changes (`timing.TimeModel.step`): the least weighted sum of the two is the fastest split."""
    configured = placer.configured
    current = configured.layout().layers_per_ipu
    if fixed_layer_groups(configured.architecture) or len(current) == 1:
        return current
    if placer.cuts(len(current)) != [None]:  # an encoder and a decoder, each a pipeline of its own
        return placer.balanced(placer.place(), "time").layers_per_ipu
    layers = sum(layer_counts(configured.architecture, configured.config).values())
    least = runs.least_layers()
    splits = balance.Splits(layers, len(least), least=least, growing=(runs.on_chip_bytes,))
    if even.cycles is not None:
        fitting = splits.within(runs.on_chip_bytes, configured.fitting_bytes)
        scale = configured.cost_model.time.cycle_scale(even.cycles)
        split, _ = balance.least_weighted_sum(fitting, runs.cycle_load, scale, runs.after_pipeline_seconds, current)
        if split is not None:
            return split
    smallest, _ = balance.best_of([balance.Section(splits, (runs.on_chip_bytes,), current)])
    return smallest or current


def with_config(candidate: Candidate, config: Any) -> Candidate:
    return replace(candidate, ipu_config=config)


# --- the plan --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """The builds a search found for a model on a number of IPUs, best first (`candidates`: those that fit first),
    the frontier of speed against memory (`pareto`: indices into `candidates`), the `reference` config (the base
    config given) placed and timed the same way, where it runs on these IPUs and batch, and the `trials` worth
    measuring, where they were asked for (`choose_trials()`). `str()` is a report to read; `to_dict()` the same as
    data."""

    model: str
    architecture: str
    request: Request
    candidates: Tuple[Candidate, ...]
    pareto: Tuple[int, ...]
    reference: Optional[Candidate] = None
    trials: Tuple["Trial", ...] = ()

    @property
    def best(self) -> Optional[Candidate]:
        """The fastest candidate that fits, or None."""
        return self.candidates[0] if self.candidates and self.candidates[0].placement.fits else None

    def to_dict(self) -> Dict[str, Any]:
        request = self.request
        return {"model": self.model, "architecture": self.architecture, "build": Mode.of(request.for_inference).name,
                "ipus": request.ipus, "ipu": request.ipu.name, "global_batch_size": request.global_batch_size,
                "micro_batch_size": request.micro_batch_size, "sequence_length": request.sequence_length,
                "decoder_sequence_length": request.decoder_sequence_length,
                "ipu_memory_bytes": IPU_MEMORY_BYTES, "reserve_bytes": round(request.reserve * IPU_MEMORY_BYTES),
                "candidates": [candidate.to_dict() for candidate in self.candidates], "pareto": list(self.pareto),
                "reference": None if self.reference is None else self.reference.to_dict(),
                "trials": [trial.to_dict() for trial in self.trials]}

    def __str__(self) -> str:
        return plan_text(self.to_dict())


# --- the trials: the builds worth measuring --------------------------------------------------------------------------

# what a trial differs from the others in (`_dimensions`): where the time model's constants weigh differently (an
# operation's fixed cycles are shared by a micro-batch's samples; a host call by its device iterations; a replica's
# IPUs set its ramp and what crosses between them)
TRIAL_WORDS = {"ipus_per_replica": "IPUs a replica", "micro_batch_size": "micro-batch",
               "device_iterations": "device iterations"}
# a trial is taken where the shares of its step its constants' terms take differ from every trial's before it by this
# much at least (summed over the constants): else its measurement would tell the fit what it is told already
TRIAL_DISTANCE = 0.02


@dataclass(frozen=True)
class Trial:
    """A build worth measuring: its folder's `name`, its candidate, its `rank` in the plan (1: the best; None: the best
    with one host call a step, a build the search does not list), the share of its step each constant's term takes
    (`calibration.CONSTANTS`' order) and what it differs from the best in, in words."""

    name: str
    candidate: Candidate
    rank: Optional[int]
    shares: Tuple[float, ...]
    differs: Tuple[str, ...]

    def to_dict(self) -> Dict[str, Any]:
        from .calibration import CONSTANTS

        return {"name": self.name, "rank": self.rank, "differs": list(self.differs),
                "shares": dict(zip(CONSTANTS, self.shares)), **self.candidate.to_dict()}


def _dimensions(candidate: Candidate) -> Dict[str, int]:
    return {"ipus_per_replica": candidate.build["ipus_per_replica"], "micro_batch_size": candidate.micro_batch_size,
            "device_iterations": candidate.build["device_iterations"]}


def choose_trials(model: Model, base: Dict[str, Any], request: Request, candidates: Sequence[Candidate],
                  count: int) -> Tuple[Trial, ...]:
    """The `count` builds of a training plan worth measuring: the best, then those whose order against it the model
    is least sure of. A build is one where its speed's range (the calibration's band) reaches the best's and it
    differs from every trial taken in its IPUs a replica, its micro-batch or its device iterations; of those, the one
    whose step spends the most other shares of its time on the constants' terms (an operation's fixed cycles, the
    elementwise work, the host's calls) than the nearest trial taken, faster first among equals: their measurements
    tell the constants apart. The best with one host call a step is one of the builds weighed, where it runs several.
    Nothing where no build fits, or `count` is 0.
    """
    from .calibration import CONSTANTS, shares, timed_placement
    from .estimate.calibration_file import shipped_calibration

    if count < 1 or not candidates or not candidates[0].placement.fits:
        return ()
    best = candidates[0]
    calibration = request.calibration or shipped_calibration()
    constants = tuple(getattr(calibration, name) for name in CONSTANTS)
    lowest = best.placement.time.samples_per_second_range[0]
    searching = _Search(model, base, request)  # each micro-batch's costs worked out once
    others = list(enumerate(candidates[1:], start=2))
    if best.build["device_iterations"] > 1:
        others.insert(0, (None, _one_call_a_step(searching, best)))
    pool: List[Tuple[Optional[int], Candidate]] = [(1, best)] + [
        (rank, candidate) for rank, candidate in others
        if candidate.placement.fits and candidate.placement.time.samples_per_second_range[1] >= lowest]
    found_shares: Dict[int, Tuple[float, ...]] = {}

    def spent(index: int) -> Tuple[float, ...]:
        if index not in found_shares:
            candidate = pool[index][1]
            placer = searching.build_placer(candidate.build, candidate.micro_batch_size)
            found_shares[index] = shares(timed_placement(placer), constants)  # the build's split is its config's
        return found_shares[index]

    chosen = [0]
    while len(chosen) < count:
        found = None
        for index in range(1, len(pool)):
            if index in chosen or any(_dimensions(pool[index][1]) == _dimensions(pool[other][1])
                                      for other in chosen):
                continue
            distance = min(sum(abs(a - b) for a, b in zip(spent(index), spent(other))) for other in chosen)
            if distance >= TRIAL_DISTANCE and (found is None or distance > found[0]):
                found = (distance, index)
        if found is None:
            break
        chosen.append(found[1])
    return tuple(_trial(pool[index][0], pool[index][1], spent(index), best) for index in chosen)


def _trial(rank: Optional[int], candidate: Candidate, spent: Tuple[float, ...], best: Candidate) -> Trial:
    build = candidate.build
    dimensions, best_dimensions = _dimensions(candidate), _dimensions(best)
    differs = tuple(f"{TRIAL_WORDS[name]} {value} (the best's {best_dimensions[name]})"
                    for name, value in dimensions.items() if value != best_dimensions[name])
    shape = (f"{build['ipus_per_replica']}x{build['replication_factor']}-mb{candidate.micro_batch_size}"
             f"-di{build['device_iterations']}")
    name = f"rank{rank}-{shape}" if rank is not None else f"best-{shape}"
    return Trial(name, candidate, rank, spent, differs)


def _one_call_a_step(searching: _Search, best: Candidate) -> Candidate:
    """The best build with one optimizer step a host call (`device_iterations` 1), its split the best's."""
    build = {**best.build, "device_iterations": 1}
    placement = searching.build_placer(build, best.micro_batch_size).place(build["layers_per_ipu"])
    return replace(best, build=build, placement=placement)
