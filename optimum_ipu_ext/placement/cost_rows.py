"""The cost tables: what each step of optimum-graphcore 0.7.1's pipelined models keeps for the backward pass and
computes, for one training micro-batch, in the vocabulary of cost_ops.py.

Sizes, as the formulas name them (`dims` of each family):
b sequences of the micro-batch (examples x choices), e examples, c choices, s tokens (patches, frames) of the encoder,
t tokens of the decoder, h hidden size, a attention heads, d head size, i feed-forward size, v vocabulary, n labels,
layer: the index of a layer in its group (`last`: the index of the last one).

Read off the forward passes of transformers 4.29.2 and optimum-graphcore 0.7.1's overrides (BERT, GroupBERT and
MPNet attend with one fused query-key-value weight, concatenated in each pass and kept), and checked against them by
tests/placement/test_upstream_costs.py.
"""

from typing import Any, Callable, Dict, Mapping, NamedTuple

from .cost_ops import (
    INTEGER,
    Kept,
    Op,
    Table,
    attention,
    conv,
    cross_entropy,
    elementwise,
    embedding,
    keep,
    layer_norm,
    linear,
    table,
)

TEXT = "text"
ENCODER_DECODER = "encoder-decoder"
IMAGE = "image"
AUDIO = "audio"
SPEECH_RECOGNITION = "speech recognition"


class ArchitectureCosts(NamedTuple):
    """An architecture's cost tables: `kind` (TEXT, ...: how its input is sized), `dims(config, shape)`: the sizes its
    formulas name, `tables`: `{step path: Table}`, a layer's path as its row writes it (`{i}`, `{stage}`)."""

    kind: str
    dims: Callable[[Any, Any], Dict[str, int]]
    tables: Mapping[str, Table]


IMAGE_SIZE = 224  # ViTConfig's and ConvNextConfig's default
WHISPER_SOURCE_POSITIONS = 1500  # WhisperConfig's defaults: 3000 frames of features, 448 tokens
WHISPER_TARGET_POSITIONS = 448


def read(config: Any, field: str, default: Any = None) -> Any:
    """A config field the placement rules give no default: `default` where config.json leaves it out."""
    value = config.values.get(field)
    return default if value is None else value


HIDDEN = (Kept("hidden", "b*s*h"),)
EMPTY = table()


def _post_norm_layer(fused: bool) -> Table:
    """A BERT layer: attention, add and norm, feed-forward, add and norm."""
    return table(
        keep("query-key-value weight", "3*h*h", when=str(fused)),
        linear("input", "b*s", "h", "3*h"),
        attention("self", "b", "a", "s", "s", "d"),
        linear("context", "b*s", "h", "h"),
        layer_norm("attention sum", "b*s", "h"),
        linear("attention output", "b*s", "h", "i"),
        elementwise("intermediate", "b*s*i"),
        linear("activated", "b*s", "i", "h"),
        layer_norm("output sum", "b*s", "h"),
        enters=HIDDEN, leaves=HIDDEN,
    )


def _pre_norm_layer(gelu_keeps: int = 1) -> Table:
    """A ViT, Whisper-encoder or GPT-2 layer: norm, attention, add, norm, feed-forward, add. `gelu_keeps`: the
    tensors the activation keeps (GPT-2's tanh approximation keeps 4)."""
    return table(
        layer_norm("input", "b*s", "h"),
        linear("normalised", "b*s", "h", "3*h"),
        attention("self", "b", "a", "s", "s", "d"),
        linear("context", "b*s", "h", "h"),
        layer_norm("attention sum", "b*s", "h"),
        linear("normalised sum", "b*s", "h", "i"),
        *(elementwise(f"intermediate {index}", "b*s*i") for index in range(gelu_keeps)),
        linear("activated", "b*s", "i", "h"),
        enters=HIDDEN, leaves=HIDDEN,
    )


TOKEN_CLASSIFIER = table(linear("hidden", "b*s", "h", "n"), cross_entropy("loss", "b*s", "n"), enters=HIDDEN)


def _encoder_dims(config: Any, shape: Any, hidden: str = "hidden_size", heads: str = "num_attention_heads",
                  intermediate: str = "intermediate_size") -> Dict[str, int]:
    """BERT-like sizes; the defaults are BertConfig's and DistilBertConfig's (12 heads, 3072 wide)."""
    h = getattr(config, hidden)
    a = read(config, heads, 12)
    return {"e": shape.micro_batch_size, "c": shape.choices, "b": shape.micro_batch_size * shape.choices,
            "s": shape.sequence_length, "h": h, "a": a, "d": h // a, "i": read(config, intermediate, 3072),
            "v": read(config, "vocab_size", 0), "n": config.num_labels}


UNFUSED_LAYER = _post_norm_layer(fused=False)

# --- GPT-2 -----------------------------------------------------------------------------------------------------------

GPT2_BODY = {
    "transformer.wte": table(embedding("ids", "b*s"), enters=(Kept("ids", "b*s", INTEGER),)),
    "transformer.wpe": table(embedding("positions", "s"), enters=HIDDEN, leaves=HIDDEN),
    "transformer.h.{i}": _pre_norm_layer(gelu_keeps=4),
    "transformer.ln_f": table(layer_norm("hidden", "b*s", "h"), enters=HIDDEN, leaves=HIDDEN),
}
GPT2 = {
    "GPT2LMHeadModel": {**GPT2_BODY, "lm_head": table(linear("hidden", "b*s", "h", "v"),
                                                      cross_entropy("next tokens", "b*s", "v"), enters=HIDDEN)},
    # the logits of each sequence's last token, picked by two index tensors
    "GPT2ForSequenceClassification": {**GPT2_BODY, "score": table(
        linear("hidden", "b*s", "h", "n"), keep("last tokens", "2*b", INTEGER), cross_entropy("loss", "b", "n"),
        enters=HIDDEN)},
    "GPT2ForTokenClassification": {**GPT2_BODY, "classifier": TOKEN_CLASSIFIER},
}


def _gpt2_dims(config: Any, shape: Any) -> Dict[str, int]:
    h, a = config.n_embd, read(config, "n_head", 12)
    return {"b": shape.micro_batch_size, "s": shape.sequence_length, "h": h, "a": a, "d": h // a,
            "i": read(config, "n_inner") or 4 * h, "v": config.vocab_size, "n": config.num_labels}


# --- ViT -------------------------------------------------------------------------------------------------------------

VIT = {"ViTForImageClassification": {
    "vit.embeddings": table(conv("pixels", "b*channels*size*size", "2*b*(s-1)*h*channels*patch*patch"),
                            enters=(Kept("pixels", "b*channels*size*size"),), leaves=HIDDEN),
    "vit.encoder.layer.{i}": _pre_norm_layer(),
    "vit.layernorm": table(layer_norm("hidden", "b*s", "h"), enters=HIDDEN, leaves=HIDDEN),
    "classifier": table(linear("hidden", "b", "h", "n", storage="b*s*h"), cross_entropy("loss", "b", "n"),
                        enters=HIDDEN),
}}


def _vit_dims(config: Any, shape: Any) -> Dict[str, int]:
    size, patch = shape.sequence_length, read(config, "patch_size", 16)
    return {**_encoder_dims(config, shape), "s": (size // patch) ** 2 + 1, "size": size, "patch": patch,
            "channels": read(config, "num_channels", 3)}


# --- ConvNeXt --------------------------------------------------------------------------------------------------------


def _channels_first_norm(x: str, channels: str, pixels: str) -> Op:
    """ConvNextLayerNorm over the channels, written out: keeps the centred input, its normalised and scaled copies,
    and the deviation of each pixel."""
    return keep(x, f"3*b*({channels})*({pixels}) + b*({pixels})")


CONVNEXT = {"ConvNextForImageClassification": {
    "convnext.embeddings": table(
        conv("pixels", "b*channels*size*size", "2*b*C[0]*R[0]**2*channels*patch*patch"),
        _channels_first_norm("patches", "C[0]", "R[0]**2"),
        enters=(Kept("pixels", "b*channels*size*size"),), leaves=(Kept("hidden", "b*C[0]*R[0]**2"),)),
    # a norm, then a convolution of kernel 2 and stride 2 (the first stage has none)
    "convnext.encoder.stages.{stage}.downsampling_layer": table(
        _channels_first_norm("hidden", "C[stage-1]", "R[stage-1]**2"),
        conv("normalised", "b*C[stage-1]*R[stage-1]**2", "2*b*C[stage]*R[stage]**2*C[stage-1]*4"),
        when="stage > 0"),
    "convnext.encoder.stages.{stage}.layers.{i}": table(
        conv("hidden", "b*C[stage]*R[stage]**2", "2*b*C[stage]*R[stage]**2*49"),  # depthwise, 7 x 7
        layer_norm("convolved", "b*R[stage]**2", "C[stage]"),
        linear("normalised", "b*R[stage]**2", "C[stage]", "4*C[stage]"),
        elementwise("expanded", "b*R[stage]**2*4*C[stage]"),
        linear("activated", "b*R[stage]**2", "4*C[stage]", "C[stage]"),
        keep("projected", "b*R[stage]**2*C[stage]", when="layer_scale"),
        enters=(Kept("hidden", "b*C[stage]*R[stage]**2"),), leaves=(Kept("hidden", "b*C[stage]*R[stage]**2"),)),
    "convnext.layernorm": table(layer_norm("pooled", "b", "C[-1]"), enters=(Kept("hidden", "b*C[-1]*R[-1]**2"),),
                                leaves=(Kept("pooled", "b*C[-1]"),)),
    "classifier": table(linear("pooled", "b", "C[-1]", "n"), cross_entropy("loss", "b", "n"),
                        enters=(Kept("pooled", "b*C[-1]"),)),
}}


def _convnext_dims(config: Any, shape: Any) -> Dict[str, Any]:
    """C: each stage's channels, R: its resolution (the patches of a side, halved by each later stage)."""
    channels = list(read(config, "hidden_sizes", [96, 192, 384, 768]))
    patch = read(config, "patch_size", 4)
    first = shape.sequence_length // patch
    return {"b": shape.micro_batch_size, "size": shape.sequence_length, "patch": patch, "C": channels,
            "R": [first >> stage for stage in range(len(channels))], "channels": read(config, "num_channels", 3),
            "n": config.num_labels, "layer_scale": read(config, "layer_scale_init_value", 1e-6) > 0}


def _with(kind: str, dims: Callable[[Any, Any], Dict[str, int]],
          rows: Mapping[str, Mapping[str, Table]]) -> Dict[str, ArchitectureCosts]:
    return {name: ArchitectureCosts(kind, dims, tables) for name, tables in rows.items()}


COSTS: Dict[str, ArchitectureCosts] = {
    **_with(TEXT, _gpt2_dims, GPT2),
    **_with(IMAGE, _vit_dims, VIT),
    **_with(IMAGE, _convnext_dims, CONVNEXT),
}
