"""The memory an IPU needs for the parameters placed on it, as optimum-graphcore 0.7.1's `IPUTrainer` builds a model:
a lower bound, since activations, pipeline stashes, code and exchange buffers come on top.

- weights in fp16 (`model.half()`), fp32 with `fp32`;
- training: one gradient accumulator per trained weight, in the weights' type, when `gradient_accumulation_steps` > 1;
  the optimizer state of AdamW or LAMB: a first moment in fp16 (fp32 with `fp32`) and a second moment in fp32, that
  is 6 (8) bytes a trained parameter. A frozen parameter (`requires_grad=False`) has neither;
- where the build's `TensorLocations` put each kind of tensor: on chip, or in Streaming Memory (`useOnChipStorage`
  false: `optimizer_state_offchip`, or the `*_location` settings), divided among the replicas where it is sharded
  (`useReplicatedTensorSharding` with more than one replica);
- an optimizer state kept in Streaming Memory is still brought on chip for the weight update, a tensor at a time
  (optimum-graphcore's translation notebook): the state of the IPU's largest trained tensor (a
  serialized embedding's part) is on chip then, after the pipeline has flushed its stashes.
"""

from typing import Any, Dict, List, NamedTuple, Sequence

from ...options.build import build_plan
from ...settings.mode import Mode
from ..models.rules import Word

# the least and the most `matmul_proportion` a planned build gives an IPU
MATMUL_PROPORTIONS = (0.1, 0.6)


class Storage(NamedTuple):
    """Where one kind of tensor is kept: on chip or not, and among how many replicas it is sharded (1: not)."""

    on_chip: bool
    shards: int


class Placed(NamedTuple):
    """The bytes of one kind of tensor on chip and in Streaming Memory (one of them is 0)."""

    on_chip: int
    streaming: int


class ParameterBytes(NamedTuple):
    """The bytes of an IPU's parameters, by kind of tensor, each where the build keeps it."""

    weights: Placed
    accumulators: Placed
    optimizer: Placed

    @property
    def on_chip(self) -> int:
        return sum(kind.on_chip for kind in self)

    @property
    def streaming(self) -> int:
        return sum(kind.streaming for kind in self)


class Storages(NamedTuple):
    """Where the build keeps each kind of tensor of the parameters."""

    weights: Storage
    accumulators: Storage
    optimizer: Storage


# the `TensorLocations` call that places each kind of tensor
_LOCATIONS = Storages("setWeightLocation", "setAccumulatorLocation", "setOptimizerLocation")


class MemoryModel(NamedTuple):
    """Bytes per parameter of each kind of tensor in a build (`mode`), and where each is kept."""

    mode: Mode
    weight_bytes: int
    accumulator_bytes: int
    optimizer_bytes: int
    storage: Storages

    def parameters(self, trained: int, frozen: int) -> ParameterBytes:
        """The bytes of `trained` and `frozen` parameters, by kind of tensor, where each is kept."""
        sizes = ((trained + frozen) * self.weight_bytes, trained * self.accumulator_bytes,
                 trained * self.optimizer_bytes)
        placed = []
        for size, storage in zip(sizes, self.storage):
            share = -(-size // storage.shards)
            placed.append(Placed(share, 0) if storage.on_chip else Placed(0, share))
        return ParameterBytes(*placed)

    def update_bytes(self, largest: int) -> int:
        """The optimizer state brought on chip to update the largest trained tensor, of `largest` elements, where the
        state is kept in Streaming Memory."""
        storage = self.storage.optimizer
        return 0 if storage.on_chip else -(-largest * self.optimizer_bytes // storage.shards)

    def describe(self, activations: bool = False) -> str:
        """The assumptions, in one line; `activations`: whether the figures count them and the pipeline's stashes."""
        kinds = [f"weights fp{8 * self.weight_bytes}{self._where(self.storage.weights)}"]
        if not self.mode.is_inference:
            if self.accumulator_bytes:
                kinds.append(f"gradient accumulators fp{8 * self.accumulator_bytes}"
                             f"{self._where(self.storage.accumulators)}")
            kinds.append(f"AdamW/LAMB state {self.optimizer_bytes} bytes a parameter"
                         f"{self._where(self.storage.optimizer)}")
        uncounted = "code, exchange buffers and the temporaries matmul_proportion allows are the reserve's"
        if activations:
            return f"{self.mode}: {', '.join(kinds)}; {uncounted}"
        return f"{self.mode}: {', '.join(kinds)}; activations and pipeline stashes come on top; {uncounted}"

    @staticmethod
    def _where(storage: Storage) -> str:
        where = "" if storage.on_chip else " in Streaming Memory"
        return where + (f", sharded over {storage.shards} replicas" if storage.shards > 1 else "")


def memory_model(settings: Dict[str, Any], for_inference: bool, fp32: bool) -> MemoryModel:
    """The memory model of a config's build (`settings`: its `vars()`), read off the options `to_options()` makes."""
    mode = Mode.of(for_inference)
    plan = build_plan(settings, for_inference)
    replicas = settings[mode.setting("replication_factor")]
    storages = []
    for method in _LOCATIONS:
        location = plan.argument(f"TensorLocations.{method}")
        calls = dict(location.chain) if location is not None else {}
        on_chip = calls.get("useOnChipStorage", (True,))[0]
        sharded = calls.get("useReplicatedTensorSharding", (False,))[0] and replicas > 1
        storages.append(Storage(bool(on_chip), replicas if sharded else 1))
    storage = Storages(*storages)
    weight_bytes = 4 if fp32 else 2
    if for_inference:
        return MemoryModel(mode, weight_bytes, 0, 0, storage)
    accumulator_bytes = weight_bytes if settings["gradient_accumulation_steps"] > 1 else 0
    return MemoryModel(mode, weight_bytes, accumulator_bytes, (4 if fp32 else 2) + 4, storage)


def matmul_proportions(on_chip_bytes: Sequence[int], memory_bytes: int, reserve_bytes: int) -> List[float]:
    """Each IPU's `matmul_proportion`: the share of its memory its counted figure leaves, less the reserve's part for
    code and exchange (half of it), between 0.1 and 0.6 (poptorch's default), to a hundredth."""
    low, high = MATMUL_PROPORTIONS
    reserve = reserve_bytes / memory_bytes
    return [round(min(high, max(low, 1 - size / memory_bytes - reserve / 2)), 2) for size in on_chip_bytes]


class Verdict(Word):
    """Whether what an IPU holds on chip fits it: within what its reserve leaves (`FITS`), within its memory but not
    its reserve (`TIGHT`), or over its memory (`DOES_NOT_FIT`); a placement's is its largest IPU's. Each equals its
    word (`Verdict.FITS == "fits"`), as the JSON writes it."""

    FITS = "fits"
    TIGHT = "tight"
    DOES_NOT_FIT = "does not fit"


def verdict_of(on_chip_bytes: int, memory_bytes: int, reserve_bytes: int) -> Verdict:
    """The verdict of an IPU of `memory_bytes` keeping `reserve_bytes` in reserve, holding `on_chip_bytes`."""
    if on_chip_bytes > memory_bytes:
        return Verdict.DOES_NOT_FIT
    return Verdict.TIGHT if on_chip_bytes > memory_bytes - reserve_bytes else Verdict.FITS
