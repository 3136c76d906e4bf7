"""What one training micro-batch keeps for the backward pass and computes in each step of a placement: the cost
model of `place` (activations, stash, recomputation, FLOPs).

`resolve_shape()` gives the input shape a model takes (defaults by its kind), `block_costs()` the cost of each step of
its placement, keyed by the step's module path as the placement's layout names it (`Layout.claims`), from the
modules of its row (models/). No torch, no model: a few thousand blocks for the largest models.

The rules (tested against optimum-graphcore 0.7.1's own pipelined models by tests/placement/test_upstream_costs.py):

- `activation_bytes`: the tensors autograd keeps, each storage once per step, parameters, views of them and buffers
  not counted; a floating element 2 bytes (4 with `fp32`), an integer one 4 (int32 on the IPU), a bool 1; dropout
  masks not counted (the IPU regenerates them from the seed); the loss and its logits where upstream computes them;
- `forward_flops`: as `torch.utils.flop_counter` counts them (2mnk per matrix product, convolutions; elementwise
  operations count nothing).
"""

from typing import Any, Dict, List, Mapping, Optional, Union

from ..errors import PlacementError
from .architectures import ARCHITECTURES
from .layout import Layout
from .models.blocks import StepCost
from .models.rules import (
    AUDIO,
    ENCODER_DECODER,
    IMAGE,
    SPEECH_RECOGNITION,
    Architecture,
    Block,
    InputShape,
    ModelConfig,
    expand,
    module_of,
)

__all__ = ["StepCost", "InputShape", "block_costs", "ipu_costs", "resolve_shape"]

DEFAULT_TOKENS = 128
DEFAULT_AUDIO_SAMPLES = 16000  # one second at 16 kHz, as optimum-graphcore's HuBERT example runs it
MULTIPLE_CHOICES = 4  # SWAG's, upstream's multiple-choice example


def _positive(model: str, field: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise PlacementError(model, f"{value!r} is not a positive whole number", field)
    return value


def resolve_shape(model: str, architecture: str, config: ModelConfig, micro_batch_size: int = 1,
                  sequence_length: Optional[int] = None, decoder_sequence_length: Optional[int] = None) -> InputShape:
    """The shape of one micro-batch of `architecture`: text 128 tokens unless given, an encoder-decoder's decoder as
    long as its encoder unless given (Whisper: `max_target_positions`), images the config's `image_size` (a
    sequence length is refused), Wav2Vec2/HuBERT 16,000 samples unless given, Whisper the frames its encoder takes
    (twice `max_source_positions`; another length is refused).

    Raises:
        PlacementError: naming `micro_batch_size`, `sequence_length` or `decoder_sequence_length`.
    """
    kind = ARCHITECTURES[architecture].inputs
    _positive(model, "micro_batch_size", micro_batch_size)
    for field, value in (("sequence_length", sequence_length), ("decoder_sequence_length", decoder_sequence_length)):
        if value is not None:
            _positive(model, field, value)
    if decoder_sequence_length is not None and kind not in (ENCODER_DECODER, SPEECH_RECOGNITION):
        raise PlacementError(model, f"{decoder_sequence_length} is for the decoders of the models that generate "
                             f"(BART, T5, MT5, Whisper); {architecture} has no decoder of its own length",
                             "decoder_sequence_length")
    if kind == IMAGE:
        size = config.image_size
        if sequence_length is not None:
            raise PlacementError(model, f"{architecture} takes images of the size its config.json gives "
                                 f"(image_size {size}), not {sequence_length}", "sequence_length")
        sequence_length = size
    elif kind == SPEECH_RECOGNITION:
        frames = 2 * config.max_source_positions
        if sequence_length not in (None, frames):
            raise PlacementError(model, f"{architecture}'s encoder takes {frames} frames of features (twice "
                                 f"max_source_positions), not {sequence_length}", "sequence_length")
        sequence_length = frames
        decoder_sequence_length = decoder_sequence_length or config.max_target_positions
    elif sequence_length is None:
        sequence_length = DEFAULT_AUDIO_SAMPLES if kind == AUDIO else DEFAULT_TOKENS
    choices = MULTIPLE_CHOICES if architecture.endswith("ForMultipleChoice") else 1
    return InputShape(micro_batch_size, sequence_length, decoder_sequence_length or sequence_length, choices)


def block_costs(architecture: Union[str, Architecture], config: ModelConfig, shape: InputShape,
                fp32: bool = False) -> Dict[str, StepCost]:
    """`{step path: its cost}` for one training micro-batch of `shape`, for each step of the architecture's row that
    runs (a name of `ARCHITECTURES`, or its row): each layer is a step; a module run twice, like a shared embedding, is
    one step with the cost of both runs; a block never called (Whisper's encoder positions) has none."""
    if isinstance(architecture, str):
        architecture = ARCHITECTURES[architecture]
    sizes = architecture.sizes(config, shape)
    found: Dict[str, StepCost] = {}
    for step, _, _ in expand(architecture, config):
        if isinstance(step, Block) and not step.called:
            continue
        module = module_of(step)
        if module is None:
            raise KeyError(f"no module for {architecture.name}'s step {step.path}")
        found[step.path] = module(sizes).cost(fp32)
    return found


def ipu_costs(layout: Layout, costs: Mapping[str, StepCost]) -> List[StepCost]:
    """The costs of each IPU of `layout`: the sum of the steps it runs, in every executor (in a generation build a
    step both executors run, like a shared embedding, counts on the IPU of each)."""
    totals = [[0, 0, 0, 0] for _ in range(layout.ipus)]
    for claims in layout.claims.values():
        for path, claim in claims.items():
            if path in costs:
                totals[claim.ipu] = [total + part for total, part in zip(totals[claim.ipu], costs[path])]
    return [StepCost(*total) for total in totals]
