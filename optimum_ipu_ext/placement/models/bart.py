"""BART: `BartForConditionalGeneration` and `BartForSequenceClassification`.

One embedding, shared by the encoder and the decoder, is computed once on IPU 0; each stack's learned positions
(with an offset of 2) and its embedding norm are blocks named "Embedding" on IPU 0 too; the layers are post-norm,
the decoder's with an attention on the encoder's output. The LM head goes on the last IPU; the classifier, which
reads each sequence's last end-of-sequence token after the last decoder layer, with that layer. Read off
transformers 4.29.2's `modeling_bart.py` and optimum-graphcore 0.7.1's `models/bart`.
"""

from dataclasses import dataclass
from typing import Any, Dict, Tuple

from .blocks import INTEGER, Activation, CrossEntropy, Embedding, Keeps, LayerNorm, Linear, Saved, Sequential
from .generation import Decoding, cached_decoder_layer, generation_head
from .rules import (
    DECODER,
    ENCODER,
    ENCODER_DECODER,
    TEXT,
    Architecture,
    Block,
    GenerationRow,
    InputShape,
    LayerIPU,
    LayerModule,
    Layers,
    ModelConfig,
    Position,
    Step,
)
from .transformer import (
    EncoderDecoderSizes,
    Sizes,
    decoder_layer,
    encoder_decoder_names,
    encoder_decoder_sizes,
    hidden,
    lm_head,
    post_norm_layer,
)

DEFAULTS = {"num_labels": 3, "vocab_size": 50265, "max_position_embeddings": 1024, "d_model": 1024,
            "encoder_layers": 12, "decoder_layers": 12, "encoder_attention_heads": 16, "decoder_attention_heads": 16,
            "encoder_ffn_dim": 4096, "decoder_ffn_dim": 4096, "tie_word_embeddings": True}
# the learned positions start at 2 (fairseq's padding offset)
POSITION_OFFSET = 2


@dataclass(frozen=True)
class BartSizes(EncoderDecoderSizes):
    """An encoder-decoder's sizes, and the config's: learned `positions`, `tied` word embeddings."""

    positions: int
    tied: bool


def bart_sizes(config: ModelConfig, shape: InputShape) -> BartSizes:
    base = encoder_decoder_sizes(shape, config.d_model, config.encoder_attention_heads, config.encoder_ffn_dim,
                                 config.decoder_attention_heads, config.decoder_ffn_dim, config.vocab_size,
                                 config.num_labels)
    return BartSizes(**vars(base), positions=config.max_position_embeddings, tied=config.tie_word_embeddings)


def classifier_sizes(config: ModelConfig, shape: InputShape) -> BartSizes:
    """`BartForSequenceClassification`'s decoder reads the encoder's tokens, shifted."""
    return bart_sizes(config, shape._replace(decoder_sequence_length=shape.sequence_length))


# --- the modules ----------------------------------------------------------------------------------------------------


def shared_embedding(sizes: BartSizes) -> Sequential:
    """One lookup of the encoder's ids and the decoder's."""
    lookups = sizes.b * sizes.s + sizes.decoder.b * sizes.decoder.s
    return Sequential(Embedding("", sizes.v, sizes.h, "ids", lookups), enters=(Saved("ids", lookups, INTEGER),))


def _stack(sizes: BartSizes, decoder: bool) -> Sizes:
    return sizes.decoder if decoder else sizes


def positions(decoder: bool):
    """A stack's learned positions: an index for each token, looked up and added to the embeddings."""
    def module(sizes: BartSizes) -> Sequential:
        own = _stack(sizes, decoder)
        return Sequential(Embedding("", sizes.positions + POSITION_OFFSET, sizes.h, "positions", own.b * own.s),
                          enters=hidden(own), leaves=hidden(own))

    return module


def embedding_norm(decoder: bool):
    def module(sizes: BartSizes) -> Sequential:
        own = _stack(sizes, decoder)
        return Sequential(LayerNorm("", sizes.h, own.b * own.s, "sum"), enters=hidden(own), leaves=hidden(own))

    return module


ENCODER_LAYER_NAMES = encoder_decoder_names("self_attn")


def encoder_layer(sizes: BartSizes, at: Position) -> Sequential:
    return post_norm_layer(ENCODER_LAYER_NAMES, sizes)


def bart_decoder_layer(sizes: BartSizes, at: Position) -> Sequential:
    return decoder_layer(sizes.decoder, sizes.s, pre_norm=False)


def classifying_decoder_layer(sizes: BartSizes, at: Position) -> Sequential:
    """The last layer of the classification model picks each sequence's last end-of-sequence token after it: it
    keeps their positions."""
    layer = bart_decoder_layer(sizes, at)
    if at.layer != at.last:
        return layer
    return Sequential(*layer.modules, Keeps("end-of-sequence positions", sizes.b, INTEGER), enters=layer.enters,
                      leaves=layer.leaves)


def bart_lm_head(sizes: BartSizes) -> Sequential:
    return lm_head(sizes.decoder, sizes.tied)


def classification_head(sizes: BartSizes) -> Sequential:
    """`BartClassificationHead`: dense and tanh on each sequence's end-of-sequence state, then the projection, and the
    loss over the labels."""
    return Sequential(Linear("dense", sizes.h, sizes.h, sizes.b, "end-of-sequence hidden"),
                      Activation("pooled", sizes.b * sizes.h),
                      Linear("out_proj", sizes.h, sizes.n, sizes.b, "pooled"), CrossEntropy("loss", sizes.b, sizes.n),
                      enters=(Saved("end-of-sequence hidden", sizes.b * sizes.h),))


# --- one step of the generation build's decoder ---------------------------------------------------------------------


def decoding_embedding(decoding: Decoding) -> Sequential:
    """The decoder's executor embeds the decoder's ids alone."""
    own = decoding.decoder
    return Sequential(Embedding("", own.v, own.h, "ids", own.b * own.s),
                      enters=(Saved("ids", own.b * own.s, INTEGER),))


def decoding_layer(decoding: Decoding, at: Position) -> Sequential:
    if decoding.cache_length is None:
        return bart_decoder_layer(decoding.sizes, at)
    return cached_decoder_layer(decoding, pre_norm=False)


def decoding_head(decoding: Decoding) -> Sequential:
    return generation_head(decoding, decoding.sizes.tied)


# `parallelize(for_generation=True, use_cache=..., **kwargs)`: what it reads of `kwargs`; no cross cache (its
# attention on the encoder's output projects its keys and values each step)
GENERATES = GenerationRow(
    {"batch_size": 1, "num_beams": 1, "max_length": 128, "use_encoder_output_buffer": False,
     "on_device_generation_steps": 0},
    kv_cache=True, steps={"model.shared": decoding_embedding, "model.decoder.layers.{i}": decoding_layer,
                          "lm_head": decoding_head},
    encoder_mask=True, positions="max_position_embeddings")


# --- the rows -------------------------------------------------------------------------------------------------------

_SHARED = {f"model.{stack}.embed_tokens.weight": ("model.shared.weight", None) for stack in ("encoder", "decoder")}


def _row(name: str, head: Block, decoder_layer_module: LayerModule, **fields: Any) -> Architecture:
    """A row: the steps of both stacks, then `head`."""
    steps: Tuple[Step, ...] = (
        Block("Embedding", "model.shared", module=shared_embedding),
        Block("Embedding", "model.encoder.embed_positions", executor=ENCODER, module=positions(False)),
        Block("Embedding", "model.encoder.layernorm_embedding", executor=ENCODER, module=embedding_norm(False)),
        Layers("encoder", "Encoder{i}", "model.encoder.layers.{i}", "encoder_layers", executor=ENCODER,
               module=encoder_layer),
        Block("Embedding", "model.decoder.embed_positions", executor=DECODER, module=positions(True)),
        Block("Embedding", "model.decoder.layernorm_embedding", executor=DECODER, module=embedding_norm(True)),
        Layers("decoder", "Decoder{i}", "model.decoder.layers.{i}", "decoder_layers", executor=DECODER,
               module=decoder_layer_module),
        head,
    )
    return Architecture(name, ("bart",), "model", steps, DEFAULTS, **fields)


BART: Dict[str, Architecture] = {
    "BartForConditionalGeneration": _row(
        "BartForConditionalGeneration",
        Block("LM Head Output", "lm_head", executor=DECODER, module=bart_lm_head, head=True), bart_decoder_layer,
        ties={**_SHARED, "lm_head.weight": ("model.shared.weight", "tie_word_embeddings")},
        kwargs=("for_generation", "use_cache", "*"), generation=("encoder", "decoder"), generates=GENERATES,
        reads_embedding_factor=True, inputs=ENCODER_DECODER, sizes=bart_sizes),
    "BartForSequenceClassification": _row(
        "BartForSequenceClassification",
        Block("Classification Head Output", "classification_head", LayerIPU("decoder", -1),
              module=classification_head, head=True),
        classifying_decoder_layer, ties=_SHARED, inputs=TEXT, sizes=classifier_sizes),
}
