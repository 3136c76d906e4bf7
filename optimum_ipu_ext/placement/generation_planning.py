"""`generation_search()`: the builds that serve a model's generation on a number of IPUs, each placed and timed by the
placer's code (`plan --generate`).

Enumerated: the IPUs of a replica (the powers of two dividing the IPUs, from 2; 1 too where the model can run its
encoder on the decoder's IPU, `use_cond_encoder`) and so the replicas; the batch (each power of two, up to the
first none of whose builds fits, or the one given); the tokens a call of the decoder's executor
(`on_device_generation_steps`: 0, the host generating each, then the powers of two below `max_length`, where the
model has a KV cache). For each replica and batch, the split of each number of IPUs the encoder may take whose
largest on-chip figure is smallest; the fastest of them is kept. The encoder's output is kept in a buffer where
there is one replica (upstream refuses the buffer with more).

A build that fits and meets `max_latency` (a token) comes first, the most tokens a second of the job first; the
frontier is that of the latency of a token against the job's tokens a second.
"""

from dataclasses import dataclass, replace
from typing import Any, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

from ..errors import PlacementError
from .estimate.generation import KWARGS, generation_kwargs, not_generating
from .estimate.layout import layer_counts
from .estimate.memory import MATMUL_PROPORTIONS, Verdict, matmul_proportions
from .estimate.timing import Calibration
from .hardware import IPU_MEMORY_BYTES, IPUType
from .placement import Placement
from .placer import Placer, even_split, placer_of
from .planning import Model, replica_sizes

# the largest batch searched where none is given
LARGEST_BATCH = 1 << 12


class GenerationRequest(NamedTuple):
    """What a generation plan is for: `ipus` in all; what generate() is called with where given (`batch_size`, else
    searched; `num_beams`, `max_length`, else the model's generation config's); the encoder's input; the most
    seconds a token may take (None: the highest throughput); the IPU generation, the reserve, fp32."""

    ipus: int
    batch_size: Optional[int]
    num_beams: Optional[int]
    max_length: Optional[int]
    sequence_length: Optional[int]
    max_latency: Optional[float]
    ipu: IPUType
    reserve: float
    fp32: bool = False
    calibration: Optional[Calibration] = None


@dataclass(frozen=True)
class GenerationCandidate:
    """One build: what it chooses (`build`: the IPUs of a replica, the replicas, the split, the matmul proportions,
    the batch, the tokens a call, the encoder's output buffer), its placement with its time, and its config where
    the caller made it."""

    build: Dict[str, Any]
    placement: Placement
    ipu_config: Any = None

    @property
    def verdict(self) -> Verdict:
        return self.placement.verdict

    @property
    def fits(self) -> bool:
        return self.placement.fits

    @property
    def largest_share(self) -> float:
        return self.placement.largest_share

    @property
    def token_seconds(self) -> float:
        return self.placement.generation_time.token_seconds

    @property
    def settings(self) -> Dict[str, Any]:
        """The inference settings of its config (upstream's pipelines add `for_generation`, and set the device
        iterations for on-device generation themselves)."""
        build = self.build
        return {"inference_ipus_per_replica": build["ipus_per_replica"],
                "inference_replication_factor": build["replication_factor"],
                "inference_layers_per_ipu": build["layers_per_ipu"],
                "inference_matmul_proportion": build["matmul_proportion"], "inference_device_iterations": 1,
                "inference_parallelize_kwargs": build["kwargs"]}

    @property
    def job_tokens_per_second(self) -> float:
        return self.placement.generation_time.job_tokens_per_second

    def to_dict(self) -> Dict[str, Any]:
        time = self.placement.generation_time
        return {**self.build, "largest_share": self.largest_share, "verdict": self.verdict.value, "fits": self.fits,
                "first_token_seconds": time.first_token_seconds, "token_seconds": time.token_seconds,
                "job_tokens_per_second": time.job_tokens_per_second,
                "ipu_config": None if self.ipu_config is None else self.ipu_config.to_dict(),
                "placement": self.placement.to_dict()}


def ranked(candidates: Sequence[GenerationCandidate], max_latency: Optional[float]) -> List[GenerationCandidate]:
    """Best first: those that fit and meet `max_latency`, then those that fit, then the tight, each the most tokens
    a second of the job first (then the least latency, the least memory); then those that do not fit, the nearest
    to fitting first."""

    def rank(found: GenerationCandidate) -> Tuple[float, ...]:
        if found.verdict == Verdict.DOES_NOT_FIT:
            return 3, found.largest_share, found.token_seconds
        late = max_latency is not None and found.token_seconds > max_latency
        group = 2 if found.verdict == Verdict.TIGHT else int(late)
        return group, -found.job_tokens_per_second, found.token_seconds, found.largest_share

    return sorted(candidates, key=rank)


def frontier(candidates: Sequence[GenerationCandidate]) -> List[int]:
    """The indices of the candidates that fit and that no other beats both in the latency of a token and in the
    job's tokens a second: the frontier of latency against throughput, fastest token first."""
    fitting = [index for index, found in enumerate(candidates) if found.fits]
    found: List[int] = []
    for index in sorted(fitting, key=lambda index: (candidates[index].token_seconds,
                                                    -candidates[index].job_tokens_per_second)):
        if not found or candidates[index].job_tokens_per_second > candidates[found[-1]].job_tokens_per_second:
            found.append(index)
    return found


def generation_search(model: Model, base: Dict[str, Any], request: GenerationRequest) -> List[GenerationCandidate]:
    """Every build searched, each with its fastest split, ranked best first (`ranked()`); `base`: the settings
    (`vars()`) of the config whose other settings they keep.

    Raises:
        PlacementError: where no build of the model generates on these IPUs (the first refusal, where every build
            was refused).
    """
    searching = _GenerationSearch(model, base, request)
    found: List[GenerationCandidate] = []
    for ipus, cond in searching.replica_sizes():
        for batch in searching.batches():
            built = searching.builds(ipus, cond, batch)
            found += built
            if not any(candidate.fits for candidate in built):
                break  # a larger batch keeps more: it fits no better
    if not found:
        raise searching.refused[0] if searching.refused else PlacementError(
            model.name, f"{model.architecture.name} generates with its encoder and its decoder on IPUs of their "
            f"own (its parallelize() takes no `use_cond_encoder`): plan on 2 IPUs or more")
    return ranked(found, request.max_latency)


class _GenerationSearch:
    """The state of one search: the request, the model, the refusals met."""

    def __init__(self, model: Model, base: Dict[str, Any], request: GenerationRequest):
        self.model = model
        self.base = base
        self.request = request
        self.row = model.architecture.generates
        if self.row is None:
            raise not_generating(model.name, model.architecture)
        self.refused: List[PlacementError] = []
        architecture = model.architecture
        # the layers of each part of the model (its encoder's, then its decoder's), which every build splits
        self.layer_counts = list(layer_counts(architecture, architecture.config(model.values)).values())

    def replica_sizes(self) -> Iterator[Tuple[int, bool]]:
        """(IPUs a replica, whether the encoder runs on the decoder's IPU)."""
        cond = "use_cond_encoder" in self.row.kwargs
        for size in replica_sizes(self.request.ipus):
            if size > 1 or self.model.architecture.generation is None:
                yield size, False
            elif cond:
                yield size, True

    def batches(self) -> List[int]:
        if self.request.batch_size is not None:
            return [self.request.batch_size]
        return [1 << power for power in range(LARGEST_BATCH.bit_length())]

    def steps(self, max_length: int) -> List[int]:
        """The tokens a call searched: 0 (each from the host), then powers of two below `max_length` (with a KV
        cache)."""
        if not self.row.kv_cache:
            return [0]
        return [0, *(1 << power for power in range(max_length.bit_length()) if 1 << power < max_length)]

    def start_split(self, ipus: int) -> List[int]:
        """A split the builds of replicas of `ipus` IPUs start from, before theirs is chosen: each part's layers
        spread evenly, an encoder's on the first half of the IPUs (the even split over all of them may end the
        encoder where upstream refuses it: a model of 6 encoder layers and 2 decoder layers on 2 IPUs)."""
        separate = ipus > 1 and self.model.architecture.generation is not None
        return even_split(self.layer_counts, ipus, ipus // 2 if separate else None)

    def placer(self, ipus: int, cond: bool, batch: int, steps: int) -> Optional[Placer]:
        """The placer of one build (None where it is refused, the refusal kept)."""
        model, request = self.model, self.request
        replicas = request.ipus // ipus
        kwargs = {name: value for name, value in (self.base[KWARGS] or {}).items() if name != "for_generation"}
        chosen = {"on_device_generation_steps": steps, "use_encoder_output_buffer": replicas == 1 and not cond,
                  **({"use_cond_encoder": True} if cond else {})}
        kwargs.update({name: value for name, value in chosen.items() if name in self.row.kwargs})
        settings = {**self.base, "inference_ipus_per_replica": ipus, "inference_replication_factor": replicas,
                    "inference_layers_per_ipu": self.start_split(ipus), "inference_device_iterations": 1,
                    "inference_matmul_proportion": MATMUL_PROPORTIONS[1], KWARGS: kwargs}
        asked = {name: value for name, value in (("batch_size", batch), ("num_beams", request.num_beams),
                                                 ("max_length", request.max_length)) if value is not None}
        try:
            settings[KWARGS] = generation_kwargs(model.name, model.architecture, settings, asked)
            return placer_of(model.name, model.architecture, model.values, settings, model.shapes, True,
                             request.fp32, None, request.ipu, request.reserve, request.calibration,
                             {**asked, "sequence_length": request.sequence_length})
        except PlacementError as refused:
            self.refused.append(refused)
            return None

    def builds(self, ipus: int, cond: bool, batch: int) -> List[GenerationCandidate]:
        """The candidates of replicas of `ipus` IPUs and `batch`, one for each number of tokens a call: its split
        the fastest of those balanced for memory (on the build with the most tokens a call, whose state is
        largest)."""
        first = self.placer(ipus, cond, batch, 0)
        if first is None:
            return []
        max_length = first.configured.generation.build.max_length
        steps = self.steps(max_length)
        widest = self.placer(ipus, cond, batch, steps[-1]) or first
        split = self._fastest_split(widest)
        found = []
        for count in steps:
            placer = first if count == 0 else self.placer(ipus, cond, batch, count)
            if placer is not None:
                found.append(self._candidate(placer, split, batch, count))
        return found

    @staticmethod
    def _fastest_split(placer: Placer) -> List[int]:
        """Of the splits balanced for memory (one for each number of IPUs the encoder may take), the fastest that
        fits, else the one needing the least memory."""
        ipus = placer.configured.settings["inference_ipus_per_replica"]
        placements = [placer.place(split) for split in placer.memory_splits(ipus)]
        fitting = [placement for placement in placements if placement.fits]
        if fitting:
            return list(min(fitting, key=lambda found: (found.generation_time.token_seconds,
                                                         found.generation_time.first_token_seconds,
                                                         found.largest_share)).layers_per_ipu)
        return list(min(placements, key=lambda found: found.largest_share).layers_per_ipu)

    def _candidate(self, placer: Placer, split: List[int], batch: int, steps: int) -> GenerationCandidate:
        placement = placer.place(split)
        build = placement.generation
        proportions = matmul_proportions([ipu.on_chip_bytes for ipu in placement.ipus], IPU_MEMORY_BYTES,
                                         placement.reserve_bytes)
        settings = placer.configured.settings
        return GenerationCandidate(
            {"ipus_per_replica": len(placement.ipus), "replication_factor": settings["inference_replication_factor"],
             "layers_per_ipu": split, "matmul_proportion": proportions, "batch_size": batch,
             "on_device_generation_steps": steps, "use_encoder_output_buffer": build.encoder_output_buffer,
             "use_cond_encoder": build.cond_encoder,
             "kwargs": {name: value for name, value in build.kwargs.items() if name != "for_generation"}},
            placement)


def with_config(candidate: GenerationCandidate, config: Any) -> GenerationCandidate:
    return replace(candidate, ipu_config=config)


# --- the plan ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GenerationPlan:
    """The builds a search found to generate with a model on a number of IPUs, best first, and the frontier of the
    latency of a token against the job's tokens a second (`frontier`: indices into `candidates`). `str()` is a
    report to read; `to_dict()` the same as data."""

    model: str
    architecture: str
    request: GenerationRequest
    candidates: Tuple[GenerationCandidate, ...]
    frontier: Tuple[int, ...]

    @property
    def best(self) -> Optional[GenerationCandidate]:
        """The first candidate, where it fits (and meets the latency asked for)."""
        if not self.candidates or not self.candidates[0].fits:
            return None
        first, latency = self.candidates[0], self.request.max_latency
        return first if latency is None or first.token_seconds <= latency else None

    def to_dict(self) -> Dict[str, Any]:
        request = self.request
        return {"model": self.model, "architecture": self.architecture, "build": "generation", "ipus": request.ipus,
                "ipu": request.ipu.name, "batch_size": request.batch_size, "num_beams": request.num_beams,
                "max_length": request.max_length, "sequence_length": request.sequence_length,
                "max_latency": request.max_latency, "ipu_memory_bytes": IPU_MEMORY_BYTES,
                "reserve_bytes": round(request.reserve * IPU_MEMORY_BYTES),
                "candidates": [candidate.to_dict() for candidate in self.candidates],
                "frontier": list(self.frontier)}

    def __str__(self) -> str:
        from .report.generation_plan import generation_plan_text

        return generation_plan_text(self.to_dict())
