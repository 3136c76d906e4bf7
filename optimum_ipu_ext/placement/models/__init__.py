"""The model families the placement knows: what optimum-graphcore 0.7.1's `parallelize()` does with each transformers
class it pipelines (45), and what each of its modules holds, keeps and computes, written once per family, in a module
of its own; and this registry of them, the architecture a model's `config.json` names, and the shape of a
micro-batch each kind of model takes.

`rules` is the vocabulary of a family's rows (the steps of a forward pass, the IPU each goes to, the sizes read off
`config.json`), `blocks` the building blocks a step is written in, `transformer` what several families share under
the names each gives its modules. No module but a family's own and this registry names a family.

May import: `errors`.
"""

from typing import Any, Dict, Mapping, Optional

from ...errors import ArchitectureError, PlacementError, as_json, is_positive_whole
from .bart import BART
from .bert import BERT, GROUPBERT, ROBERTA
from .convnext import CONVNEXT
from .deberta import DEBERTA
from .distilbert import DISTILBERT
from .gpt2 import GPT2
from .lxmert import LXMERT
from .mpnet import MPNET
from .rules import AUDIO, ENCODER_DECODER, IMAGE, SPEECH_RECOGNITION, Architecture, InputShape, ModelConfig
from .speech import SPEECH
from .t5 import T5
from .vit import VIT
from .whisper import WHISPER

ARCHITECTURES: Dict[str, Architecture] = dict(sorted({
    **BERT,
    **GROUPBERT,
    **ROBERTA,
    **MPNET,
    **DISTILBERT,
    **DEBERTA,
    **GPT2,
    **BART,
    **T5,
    **WHISPER,
    **VIT,
    **CONVNEXT,
    **SPEECH,
    **LXMERT,
}.items()))

# Tensors checkpoints hold that are buffers, not parameters: position and token type ids, GPT-2's attention masks,
# BART's logits bias.
BUFFER_PATTERN = r"(^|\.)(position_ids|token_type_ids|final_logits_bias)$|(^|\.)attn\.(bias|masked_bias)$"


def choices(model_type: Any) -> str:
    """The architectures of `model_type` that have a pipelined version, and how to give one; for a model type with
    none, the model types that have one."""
    own = [name for name, architecture in ARCHITECTURES.items() if model_type in architecture.model_types]
    if own:
        return f"give one of model type {as_json(model_type)}'s with --architecture (architecture=): {', '.join(own)}"
    types = sorted({kind for architecture in ARCHITECTURES.values() for kind in architecture.model_types})
    return (f"model type {as_json(model_type)} has no pipelined architecture; these have: {', '.join(types)} "
            "(ipu-config place --list-architectures)")


def architecture_of(model: str, values: Mapping[str, Any], name: Optional[str] = None) -> Architecture:
    """The row of the architecture `name`, else of the one `model`'s `config.json` (`values`) names. A `config.json`
    without `model_type` (an early checkpoint's) is of the model type of the architecture it names, as transformers
    reads its model type from a name.

    Raises:
        ArchitectureError: for an architecture with no pipelined version, a config naming several or none, or one
            of another model type.
    """
    model_type = values.get("model_type")
    if name is None:
        named = values.get("architectures") or []
        if len(named) != 1:
            listed = f"{len(named)} architectures ({', '.join(named)})" if named else "no architecture"
            raise ArchitectureError(model, f"its config.json names {listed}; {choices(model_type)}")
        name = named[0]
    if name not in ARCHITECTURES:
        raise ArchitectureError(model, f"{name} has no pipelined version in optimum-graphcore 0.7.1; "
                                f"{choices(model_type)}")
    architecture = ARCHITECTURES[name]
    if model_type is None and name in (values.get("architectures") or ()):
        model_type = architecture.model_types[0]
    if model_type not in architecture.model_types:
        raise ArchitectureError(model, f"{name} takes a config of model type "
                                f"{as_json(architecture.model_types[0])}, and this one is {as_json(model_type)}")
    return architecture


# --- the shape of a micro-batch --------------------------------------------------------------------------------------

DEFAULT_TOKENS = 128
DEFAULT_AUDIO_SAMPLES = 16000  # one second at 16 kHz, as optimum-graphcore's audio-classification example runs it
MULTIPLE_CHOICES = 4  # SWAG's, upstream's multiple-choice example


def _positive(model: str, field: str, value: Any) -> int:
    if not is_positive_whole(value):
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
