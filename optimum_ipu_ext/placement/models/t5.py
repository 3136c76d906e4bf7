"""T5 and MT5: `T5ForConditionalGeneration`, `T5EncoderModel` and `MT5ForConditionalGeneration`.

`parallelize()` puts the embedding shared by both stacks on IPU 0, each stack's layers as `get_layer_ipu` places
them, each stack's final norm with its last layer, and the LM head on the last IPU (MT5's with the embedding it is
tied to, else on the last IPU; untied, MT5 may split the embedding and the head over IPUs). The pipelined models
embed the encoder's and the decoder's ids in one lookup (`SharedEmbedding`), of which each stack's first layer keeps
a view; the first layer of each stack alone holds the relative attention bias. Read off transformers 4.29.2's
`modeling_t5.py` / `modeling_mt5.py` and optimum-graphcore 0.7.1's `models/t5` and `models/mt5`.
"""

from dataclasses import dataclass, replace
from typing import Dict, Tuple

from .blocks import (
    BOOL,
    INTEGER,
    Activation,
    Attention,
    Embedding,
    Keeps,
    Linear,
    RMSNorm,
    Saved,
    Sequential,
    Unused,
)
from .generation import Decoding, cache_writes, cached_attention, generation_head
from .rules import (
    DECODER,
    ENCODER,
    ENCODER_DECODER,
    LAST,
    TEXT,
    Architecture,
    Block,
    GenerationRow,
    InputShape,
    LayerIPU,
    Layers,
    ModelConfig,
    Position,
    Split,
    WhenConfig,
)
from .transformer import EncoderDecoderSizes, encoder_decoder_sizes, encoder_output, hidden, lm_head

DEFAULTS = {"vocab_size": 32128, "d_model": 512, "d_kv": 64, "d_ff": 2048, "num_layers": 6,
            "num_decoder_layers": lambda c: c.num_layers, "num_heads": 8, "relative_attention_num_buckets": 32,
            "feed_forward_proj": "relu", "tie_word_embeddings": True}
MT5_DEFAULTS = {**DEFAULTS, "vocab_size": 250112, "d_ff": 1024, "num_layers": 8, "num_heads": 6,
                "feed_forward_proj": "gated-gelu", "tie_word_embeddings": False}
# the tensors of the intermediate size upstream's gelu gating keeps: gelu's tanh approximation 4, the gate and its
# product 3 more (and the mask of the values its `CustomGELU` clamps)
GATED_ACTIVATION_KEEPS = 7


@dataclass(frozen=True)
class T5Sizes(EncoderDecoderSizes):
    """An encoder-decoder's sizes (d: `d_kv`, which need not be h / a), and the config's: the relative position
    `buckets`, a `gated` feed-forward (two input projections), `tied` word embeddings; `joint`: the encoder's and the
    decoder's ids are embedded together."""

    buckets: int
    gated: bool
    tied: bool
    joint: bool


def t5_sizes(config: ModelConfig, shape: InputShape) -> T5Sizes:
    base = encoder_decoder_sizes(shape, config.d_model, config.num_heads, config.d_ff, config.num_heads, config.d_ff,
                                 config.vocab_size, config.num_labels)
    return T5Sizes(**{**vars(base), "d": config.d_kv, "decoder": replace(base.decoder, d=config.d_kv)},
                   buckets=config.relative_attention_num_buckets,
                   gated=config.feed_forward_proj.split("-")[0] == "gated", tied=config.tie_word_embeddings,
                   joint=True)


def encoder_model_sizes(config: ModelConfig, shape: InputShape) -> T5Sizes:
    """`T5EncoderModel` embeds its own ids alone."""
    return replace(t5_sizes(config, shape), joint=False)


# --- the modules ----------------------------------------------------------------------------------------------------


def shared_embedding(sizes: T5Sizes) -> Sequential:
    """One lookup of the encoder's ids, and the decoder's where they are embedded together."""
    lookups = sizes.b * sizes.s + (sizes.b * sizes.decoder.s if sizes.joint else 0)
    return Sequential(Embedding("", sizes.v, sizes.h, "ids", lookups), enters=(Saved("ids", lookups, INTEGER),),
                      leaves=hidden(sizes))


def _attention(path: str, name: str, sizes: T5Sizes, queries: int, keys: int, relative: bool, cross: bool) -> Tuple:
    """A `T5Attention` at `path` of `queries` normalised positions on `keys` positions: of the same input, or of the
    encoder's output (`cross`); `relative`: it holds the relative attention bias, and looks up the position buckets
    of each pair. Its projections have no bias, and map h to a x d."""
    inner, rows = sizes.a * sizes.d, sizes.b * queries
    x = f"{name}: normalised"
    source, source_rows = ("encoder output", sizes.b * keys) if cross else (x, rows)
    return (
        Linear(f"{path}.q", sizes.h, inner, rows, x, bias=False),
        Linear(f"{path}.k", sizes.h, inner, source_rows, source, bias=False),
        Linear(f"{path}.v", sizes.h, inner, source_rows, source, bias=False),
        Embedding(f"{path}.relative_attention_bias", sizes.buckets, sizes.a, f"{name}: buckets",
                  queries * keys) if relative else None,
        Attention(name, sizes.b, sizes.a, queries, keys, sizes.d),
        Linear(f"{path}.o", inner, sizes.h, rows, f"{name}: context", bias=False),
    )


def _feed_forward(path: str, sizes: T5Sizes, rows: int) -> Tuple:
    """An activation (relu) between two projections, or (`gated`) gelu gating: two input projections, one through
    gelu gating the other."""
    x = "feed-forward: normalised"
    if not sizes.gated:
        return (Linear(f"{path}.wi", sizes.h, sizes.i, rows, x, bias=False), Activation("activated", rows * sizes.i),
                Linear(f"{path}.wo", sizes.i, sizes.h, rows, "activated", bias=False))
    return (
        tuple(Linear(f"{path}.{name}", sizes.h, sizes.i, rows, x, bias=False) for name in ("wi_0", "wi_1")),
        tuple(Activation(f"gated {index}", rows * sizes.i) for index in range(GATED_ACTIVATION_KEEPS)),
        Keeps("clamped", rows * sizes.i, BOOL),
        Linear(f"{path}.wo", sizes.i, sizes.h, rows, "activated", bias=False),
    )


def t5_block(decoder: bool):
    """A `T5Block` of the encoder or the decoder: norm and self-attention, the decoder's norm and attention on the
    encoder's output, norm and feed-forward (each norm on its sublayer's input). The first layer holds the relative
    attention bias, and keeps a view of the joint embedding of both stacks."""
    def block(sizes: T5Sizes, at: Position) -> Sequential:
        own, other = (sizes.decoder, sizes) if decoder else (sizes, sizes.decoder)
        rows, first = own.b * own.s, at.layer == 0
        feed_forward = 2 if decoder else 1
        return Sequential(
            RMSNorm("layer.0.layer_norm", sizes.h, rows, "self: input"),
            Keeps("the other stack's embeddings", other.b * other.s * sizes.h) if sizes.joint and first else None,
            _attention("layer.0.SelfAttention", "self", sizes, own.s, own.s, relative=first, cross=False),
            (RMSNorm("layer.1.layer_norm", sizes.h, rows, "cross: input"),
             _attention("layer.1.EncDecAttention", "cross", sizes, own.s, sizes.s, relative=False, cross=True))
            if decoder else None,
            RMSNorm(f"layer.{feed_forward}.layer_norm", sizes.h, rows, "feed-forward: input"),
            _feed_forward(f"layer.{feed_forward}.DenseReluDense", sizes, rows),
            enters=(*hidden(own), *((encoder_output(sizes, sizes.s),) if decoder else ())), leaves=hidden(own))

    return block


def stack_norm(decoder: bool):
    """A stack's last norm."""
    def norm(sizes: T5Sizes) -> Sequential:
        own = sizes.decoder if decoder else sizes
        return Sequential(RMSNorm("", sizes.h, own.b * own.s, "hidden"), enters=hidden(own), leaves=hidden(own))

    return norm


def t5_lm_head(sizes: T5Sizes) -> Sequential:
    """Tied to the embedding, the hidden state is scaled by d_model ** -0.5 first: a new tensor either way."""
    return lm_head(sizes.decoder, sizes.tied)


# --- one step of the generation build's decoder ---------------------------------------------------------------------


def decoding_embedding(decoding: Decoding) -> Sequential:
    """The decoder's executor embeds the decoder's ids alone."""
    own = decoding.decoder
    return Sequential(Embedding("", own.v, own.h, "ids", own.b * own.s),
                      enters=(Saved("ids", own.b * own.s, INTEGER),), leaves=hidden(own))


def _cached_attention(path: str, name: str, decoding: Decoding, x: str, keys: int, relative: bool,
                      cross: bool) -> Tuple:
    """An `IPUT5Attention` at `path` of one token a row: on its KV cache of `keys` positions, the first layer
    working out the relative bias of every pair of them and taking the step's row; or on the encoder's output of
    `keys` positions, projected each step, or at the first step into its cross cache (`cross`)."""
    sizes: T5Sizes = decoding.sizes
    own = decoding.decoder
    rows, inner = own.b, own.a * own.d
    if cross:
        projections = tuple(Linear(f"{path}.{kind}", sizes.h, inner, rows * keys, "encoder output", bias=False)
                            for kind in ("k", "v"))
        keys_values: Tuple = (Unused(*projections) if decoding.cross_cached and not decoding.first
                              else projections)
    else:
        keys_values = (tuple(Linear(f"{path}.{kind}", sizes.h, inner, rows, x, bias=False) for kind in ("k", "v")),
                       cache_writes(name, rows, own.a, keys, own.d))
    return (
        Linear(f"{path}.q", sizes.h, inner, rows, x, bias=False),
        keys_values,
        (Embedding(f"{path}.relative_attention_bias", sizes.buckets, own.a, f"{name}: buckets", keys * keys),
         Keeps(f"{name}: position bias", own.a * keys * keys)) if relative else None,
        cached_attention(name, rows, own.a, keys, own.d),
        Linear(f"{path}.o", inner, sizes.h, rows, f"{name}: context", bias=False),
    )


def decoding_block(decoding: Decoding, at: Position) -> Sequential:
    """A decoder `T5Block` of one step: on the KV cache, or without one the whole padded sequence (the decoder's
    executor embeds the decoder's ids alone: its first layer keeps no view of the encoder's)."""
    sizes = replace(decoding.sizes, joint=False)
    if decoding.cache_length is None:
        return t5_block(True)(sizes, at)
    own, rows = sizes.decoder, sizes.decoder.b
    return Sequential(
        RMSNorm("layer.0.layer_norm", sizes.h, rows, "self: input"),
        _cached_attention("layer.0.SelfAttention", "self", decoding, "self: normalised", decoding.cache_length,
                          relative=at.layer == 0, cross=False),
        RMSNorm("layer.1.layer_norm", sizes.h, rows, "cross: input"),
        _cached_attention("layer.1.EncDecAttention", "cross", decoding, "cross: normalised", sizes.s,
                          relative=False, cross=True),
        RMSNorm("layer.2.layer_norm", sizes.h, rows, "feed-forward: input"),
        _feed_forward("layer.2.DenseReluDense", sizes, rows),
        enters=(*hidden(own), encoder_output(own, sizes.s)), leaves=hidden(own))


def decoding_head(decoding: Decoding) -> Sequential:
    return generation_head(decoding, decoding.sizes.tied)


DECODING_STEPS = {"shared": decoding_embedding, "decoder.block.{i}": decoding_block, "lm_head": decoding_head}
# `parallelize(for_generation=True, use_cache=..., use_cross_cache=..., **kwargs)`: what it reads of `kwargs`
T5_GENERATES = GenerationRow(
    {"batch_size": 1, "num_beams": 1, "max_length": 128, "encoder_max_length": 1500,
     "use_encoder_output_buffer": False, "on_device_generation_steps": 0},
    kv_cache=True, steps=DECODING_STEPS, encoder_mask=True)
# MT5's `parallelize(for_generation=False)` takes nothing else: no KV cache
MT5_GENERATES = GenerationRow({}, kv_cache=False, steps=DECODING_STEPS, encoder_mask=True)


# --- the rows -------------------------------------------------------------------------------------------------------

EMBEDDING = Block("Embedding", "shared", module=shared_embedding)
ENCODER_STEPS = (
    Layers("encoder", "Encoder{i}", "encoder.block.{i}", "num_layers", executor=ENCODER, module=t5_block(False)),
    Block("Encoder Stack Final LayerNorm", "encoder.final_layer_norm", LayerIPU("encoder", -1), executor=ENCODER,
          module=stack_norm(False)),
)
DECODER_STEPS = (
    Layers("decoder", "Decoder{i}", "decoder.block.{i}", "num_decoder_layers", executor=DECODER,
           module=t5_block(True)),
    Block("Decoder Stack Final LayerNorm", "decoder.final_layer_norm", LayerIPU("decoder", -1), executor=DECODER,
          module=stack_norm(True)),
)
_SHARED = {f"{stack}.embed_tokens.weight": ("shared.weight", None) for stack in ("encoder", "decoder")}
_TIES = {**_SHARED, "lm_head.weight": ("shared.weight", "tie_word_embeddings")}

T5: Dict[str, Architecture] = {
    "T5ForConditionalGeneration": Architecture(
        "T5ForConditionalGeneration", ("t5",), "transformer",
        (EMBEDDING, *ENCODER_STEPS, *DECODER_STEPS,
         Block("LM Head Output", "lm_head", executor=DECODER, module=t5_lm_head, head=True)),
        DEFAULTS, ties=_TIES, kwargs=("for_generation", "use_cache", "use_cross_cache", "*"),
        generation=("encoder", "decoder"), generates=T5_GENERATES, reads_embedding_factor=True,
        inputs=ENCODER_DECODER, sizes=t5_sizes),
    "T5EncoderModel": Architecture(
        "T5EncoderModel", ("t5",), "transformer", (EMBEDDING, *ENCODER_STEPS), DEFAULTS,
        ties={"encoder.embed_tokens.weight": ("shared.weight", None)}, inputs=TEXT, sizes=encoder_model_sizes),
    # the LM head goes with the embedding it is tied to, else to the last IPU; untied, the embedding and the head
    # may be split over IPUs
    "MT5ForConditionalGeneration": Architecture(
        "MT5ForConditionalGeneration", ("mt5",), "transformer",
        (Split("Embedding", "shared", "split_embeddings", "serialized_embedding_splits_per_ipu",
               "embedding_serialization_factor", EMBEDDING, own_share=False, factor_divides=True),
         *ENCODER_STEPS, *DECODER_STEPS,
         Split("Linear", "lm_head", "split_linear_layers", "serialized_projection_splits_per_ipu",
               "projection_serialization_factor",
               Block("LM Head Output", "lm_head", WhenConfig("tie_word_embeddings", 0, LAST), executor=DECODER,
                     module=t5_lm_head, head=True),
               own_share=True, factor_divides=False)),
        MT5_DEFAULTS, ties=_TIES, kwargs=("for_generation",), generation=("encoder", "decoder"),
        generates=MT5_GENERATES, untied_splits=True, inputs=ENCODER_DECODER, sizes=t5_sizes),
}
