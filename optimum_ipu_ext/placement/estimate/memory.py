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

from typing import Any, Dict, NamedTuple, Tuple

from ...options.build import build_plan
from ...settings.mode import Mode

IPU_MEMORY_BYTES = 1472 * 624 * 1024

_LOCATIONS = {"weights": "setWeightLocation", "accumulators": "setAccumulatorLocation",
              "optimizer": "setOptimizerLocation"}


class Storage(NamedTuple):
    """Where one kind of tensor is kept: on chip or not, and among how many replicas it is sharded (1: not)."""

    on_chip: bool
    shards: int


class MemoryModel(NamedTuple):
    """Bytes per parameter of each kind of tensor, and where each is kept."""

    build: str
    weight_bytes: int
    accumulator_bytes: int
    optimizer_bytes: int
    storage: Dict[str, Storage]

    def bytes(self, trained: int, frozen: int) -> Tuple[int, int]:
        """(on-chip bytes, Streaming Memory bytes) of `trained` and `frozen` parameters."""
        parts = self.parts(trained, frozen).values()
        return sum(on_chip for on_chip, _ in parts), sum(streaming for _, streaming in parts)

    def parts(self, trained: int, frozen: int) -> Dict[str, Tuple[int, int]]:
        """`{"weights" | "accumulators" | "optimizer": (on-chip bytes, Streaming Memory bytes)}` of `trained` and
        `frozen` parameters."""
        sizes = {"weights": (trained + frozen) * self.weight_bytes,
                 "accumulators": trained * self.accumulator_bytes,
                 "optimizer": trained * self.optimizer_bytes}
        parts = {}
        for kind, size in sizes.items():
            storage = self.storage[kind]
            share = -(-size // storage.shards)
            parts[kind] = (share, 0) if storage.on_chip else (0, share)
        return parts

    def update_bytes(self, largest: int) -> int:
        """The optimizer state brought on chip to update the largest trained tensor, of `largest` elements, where the
        state is kept in Streaming Memory."""
        storage = self.storage["optimizer"]
        return 0 if storage.on_chip else -(-largest * self.optimizer_bytes // storage.shards)

    def describe(self, activations: bool = False) -> str:
        """The assumptions, in one line; `activations`: whether the figures count them and the pipeline's stashes."""
        kinds = [f"weights fp{8 * self.weight_bytes}{self._where('weights')}"]
        if self.build == "training":
            if self.accumulator_bytes:
                kinds.append(f"gradient accumulators fp{8 * self.accumulator_bytes}{self._where('accumulators')}")
            kinds.append(f"AdamW/LAMB state {self.optimizer_bytes} bytes a parameter{self._where('optimizer')}")
        uncounted = "code, exchange buffers and the temporaries matmul_proportion allows are the reserve's"
        if activations:
            return f"{self.build}: {', '.join(kinds)}; {uncounted}"
        return f"{self.build}: {', '.join(kinds)}; activations and pipeline stashes come on top; {uncounted}"

    def _where(self, kind: str) -> str:
        storage = self.storage[kind]
        where = "" if storage.on_chip else " in Streaming Memory"
        return where + (f", sharded over {storage.shards} replicas" if storage.shards > 1 else "")


def memory_model(settings: Dict[str, Any], for_inference: bool, fp32: bool) -> MemoryModel:
    """The memory model of a config's build (`settings`: its `vars()`), read off the options `to_options()` makes."""
    plan = build_plan(settings, for_inference)
    replicas = settings[Mode.of(for_inference).setting("replication_factor")]
    storage = {}
    for kind, method in _LOCATIONS.items():
        location = plan.argument(f"TensorLocations.{method}")
        calls = dict(location.chain) if location is not None else {}
        on_chip = calls.get("useOnChipStorage", (True,))[0]
        sharded = calls.get("useReplicatedTensorSharding", (False,))[0] and replicas > 1
        storage[kind] = Storage(bool(on_chip), replicas if sharded else 1)
    weight_bytes = 4 if fp32 else 2
    if for_inference:
        return MemoryModel("inference", weight_bytes, 0, 0, storage)
    accumulator_bytes = weight_bytes if settings["gradient_accumulation_steps"] > 1 else 0
    return MemoryModel("training", weight_bytes, accumulator_bytes, (4 if fp32 else 2) + 4, storage)
