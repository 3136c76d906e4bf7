"""Whisper: `WhisperForConditionalGeneration`.

`parallelize()` puts each of the encoder's two convolutions in a block of its own, its positions (whose weight the
encoder reads, never calling the module) in a third, the layers as `get_layer_ipu` places them and the encoder's
final norm with its last layer; the decoder's token embedding and the output projection tied to it where the
decoder starts, or where `serialized_projection_splits_per_ipu` puts the projection, and the decoder's final norm
with its last layer. The layers are pre-norm, their key projections without a bias, the decoder's with an attention
on the encoder's output. Read off transformers 4.29.2's `modeling_whisper.py` and
optimum-graphcore 0.7.1's `models/whisper`.
"""

from dataclasses import dataclass
from typing import Dict

from .blocks import INTEGER, Activation, Convolution, Embedding, Saved, Sequential
from .generation import Decoding, cached_decoder_layer, generation_head
from .rules import (
    DECODER,
    ENCODER,
    SPEECH_RECOGNITION,
    Architecture,
    Block,
    FirstSplitIPU,
    GenerationRow,
    InputShape,
    LayerIPU,
    Layers,
    ModelConfig,
    Position,
    Run,
)
from .transformer import (
    EncoderDecoderSizes,
    decoder_layer,
    encoder_decoder_names,
    encoder_decoder_sizes,
    final_norm,
    hidden,
    lm_head,
    pre_norm_layer,
)

DEFAULTS = {"vocab_size": 51865, "num_mel_bins": 80, "d_model": 256, "encoder_layers": 6, "decoder_layers": 6,
            "encoder_attention_heads": 4, "decoder_attention_heads": 4, "encoder_ffn_dim": 1536,
            "decoder_ffn_dim": 1536, "max_source_positions": 1500, "max_target_positions": 448,
            "tie_word_embeddings": True}
KERNEL = 3  # of both convolutions; the second's stride of 2 halves the frames


@dataclass(frozen=True)
class WhisperSizes(EncoderDecoderSizes):
    """An encoder-decoder's sizes (s: the encoder's positions, half its `frames` of features), and the config's:
    `mels` features a frame, the encoder's `source_positions` and the decoder's `target_positions`, `tied` word
    embeddings."""

    frames: int
    mels: int
    source_positions: int
    target_positions: int
    tied: bool


def whisper_sizes(config: ModelConfig, shape: InputShape) -> WhisperSizes:
    base = encoder_decoder_sizes(shape._replace(sequence_length=shape.sequence_length // 2), config.d_model,
                                 config.encoder_attention_heads, config.encoder_ffn_dim,
                                 config.decoder_attention_heads, config.decoder_ffn_dim, config.vocab_size,
                                 config.num_labels)
    return WhisperSizes(**vars(base), frames=shape.sequence_length, mels=config.num_mel_bins,
                        source_positions=config.max_source_positions,
                        target_positions=config.max_target_positions, tied=config.tie_word_embeddings)


# --- the modules ----------------------------------------------------------------------------------------------------


def first_convolution(sizes: WhisperSizes) -> Sequential:
    """A convolution of the features' frames to h channels, and gelu."""
    features = Saved("features", sizes.b * sizes.mels * sizes.frames)
    return Sequential(Convolution("", sizes.mels, sizes.h, (KERNEL,), sizes.b, sizes.frames, features.name,
                                  features.elements),
                      Activation("convolved", sizes.b * sizes.h * sizes.frames), enters=(features,),
                      leaves=(Saved("activated", sizes.b * sizes.h * sizes.frames),))


def second_convolution(sizes: WhisperSizes) -> Sequential:
    """A convolution of stride 2 to the encoder's positions, and gelu."""
    activated = Saved("activated", sizes.b * sizes.h * sizes.frames)
    return Sequential(Convolution("", sizes.h, sizes.h, (KERNEL,), sizes.b, sizes.s, activated.name,
                                  activated.elements),
                      Activation("convolved", sizes.b * sizes.h * sizes.s), enters=(activated,), leaves=hidden(sizes))


def encoder_positions(sizes: WhisperSizes) -> Sequential:
    """Never called: the encoder adds its weight."""
    return Sequential(Embedding("", sizes.source_positions, sizes.h))


# a pre-norm layer: the self-attention's norm on the layer's input, the final norm on the attention's sum
ENCODER_LAYER_NAMES = encoder_decoder_names("self_attn", key_bias=False)._replace(attention_norm="final_layer_norm")


def encoder_layer(sizes: WhisperSizes, at: Position) -> Sequential:
    return pre_norm_layer(ENCODER_LAYER_NAMES, "self_attn_layer_norm", sizes)


def token_embedding(sizes: WhisperSizes) -> Sequential:
    own = sizes.decoder
    return Sequential(Embedding("", sizes.v, sizes.h, "ids", own.b * own.s),
                      enters=(Saved("ids", own.b * own.s, INTEGER),), leaves=hidden(own))


def decoder_positions(sizes: WhisperSizes) -> Sequential:
    """A slice of its weight, added to the embeddings: it keeps nothing."""
    return Sequential(Embedding("", sizes.target_positions, sizes.h))


def whisper_decoder_layer(sizes: WhisperSizes, at: Position) -> Sequential:
    return decoder_layer(sizes.decoder, sizes.s, pre_norm=True, key_bias=False)


def decoder_norm(sizes: WhisperSizes) -> Sequential:
    return final_norm(sizes.decoder)


def projection(sizes: WhisperSizes) -> Sequential:
    return lm_head(sizes.decoder, sizes.tied)


# --- one step of the generation build's decoder ---------------------------------------------------------------------


def decoding_layer(decoding: Decoding, at: Position) -> Sequential:
    if decoding.cache_length is None:
        return whisper_decoder_layer(decoding.sizes, at)
    return cached_decoder_layer(decoding, pre_norm=True, key_bias=False)


def decoding_projection(decoding: Decoding) -> Sequential:
    return generation_head(decoding, decoding.sizes.tied)


# `parallelize(for_generation=True, use_cache=..., use_cross_cache=..., **kwargs)`: what it reads of `kwargs`
GENERATES = GenerationRow(
    {"batch_size": 1, "num_beams": 1, "max_length": 448, "encoder_max_length": 1500, "use_cond_encoder": False,
     "use_encoder_output_buffer": False, "on_device_generation_steps": 0, "batch_serialization_factor": 1,
     "sequence_serialization_factor": 1, "use_group_quantized_linears": False},
    kv_cache=True, steps={"model.decoder.layers.{i}": decoding_layer, "proj_out": decoding_projection},
    positions="max_target_positions")


# --- the row --------------------------------------------------------------------------------------------------------

# the decoder's embedding and the output projection tied to it go where the decoder starts, or where
# `serialized_projection_splits_per_ipu` puts the projection
PROJECTION_IPU = FirstSplitIPU("serialized_projection_splits_per_ipu", LayerIPU("decoder", 0))

WHISPER: Dict[str, Architecture] = {
    "WhisperForConditionalGeneration": Architecture(
        "WhisperForConditionalGeneration", ("whisper",), "model",
        (
            Block("Conv1", "model.encoder.conv1", executor=ENCODER, module=first_convolution),
            Block("Conv2", "model.encoder.conv2", executor=ENCODER, module=second_convolution),
            Block("Embed Positions", "model.encoder.embed_positions", called=False, executor=ENCODER,
                  module=encoder_positions),
            Layers("encoder", "Encoder{i}", "model.encoder.layers.{i}", "encoder_layers", executor=ENCODER,
                   module=encoder_layer),
            Block("Encoder Layer Norm", "model.encoder.layer_norm", LayerIPU("encoder", -1), executor=ENCODER,
                  module=final_norm),
            Block("Decoder Embedding", "model.decoder.embed_tokens", PROJECTION_IPU, executor=DECODER,
                  module=token_embedding),
            Run("model.decoder.embed_positions", executor=DECODER, module=decoder_positions),
            Layers("decoder", "Decoder{i}", "model.decoder.layers.{i}", "decoder_layers", executor=DECODER,
                   module=whisper_decoder_layer),
            Block("Decoder Layer Norm", "model.decoder.layer_norm", LayerIPU("decoder", -1), executor=DECODER,
                  module=decoder_norm),
            Block("Output Projection", "proj_out", PROJECTION_IPU, executor=DECODER, module=projection, head=True),
        ),
        DEFAULTS, ties={"proj_out.weight": ("model.decoder.embed_tokens.weight", "tie_word_embeddings")},
        kwargs=("for_generation", "use_cache", "use_cross_cache", "*"), generation=("encoder", "decoder"),
        generates=GENERATES, inputs=SPEECH_RECOGNITION, sizes=whisper_sizes),
}
