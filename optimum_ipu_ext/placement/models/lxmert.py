"""LXMERT: a language encoder of post-norm layers on the tokens, a visual one of the same layers on the objects
detected in the image, then cross-modality layers in which each modality attends to the other.

`parallelize()` puts the embeddings and the objects' projection on IPU 0, the language layers on IPU 1, the visual
layers on IPU 2, the cross-modality layers, the pooler and the answer head on IPU 3, whatever `layers_per_ipu` says.
Read off transformers 4.29.2's `modeling_lxmert.py` and optimum-graphcore 0.7.1's `models/lxmert`.
"""

from dataclasses import dataclass, replace
from typing import Tuple

from .blocks import Activation, Attention, CrossEntropy, Embedding, LayerNorm, Linear, Saved, Sequential
from .rules import TEXT, Architecture, At, Block, InputShape, Layers, ModelConfig
from .transformer import LAYER_NAMES, Sizes, config_sizes, hidden, ids, pooled, pooler, post_norm_layer

DEFAULTS = {"vocab_size": 30522, "hidden_size": 768, "num_attention_heads": 12, "intermediate_size": 3072,
            "max_position_embeddings": 512, "type_vocab_size": 2, "l_layers": 9, "x_layers": 5, "r_layers": 5,
            "visual_feat_dim": 2048, "visual_pos_dim": 4, "num_qa_labels": 9500}

OBJECTS = 36  # the regions of interest of each image, as LXMERT's pre-training and fine-tuning detect them


@dataclass(frozen=True)
class LxmertSizes(Sizes):
    """A transformer's sizes, and the config's: `positions` learned, `types` of token, `o` objects of each image,
    each of `features` visual features and `boxes` coordinates, `answers` to choose from."""

    positions: int
    types: int
    o: int
    features: int
    boxes: int
    answers: int


def lxmert_sizes(config: ModelConfig, shape: InputShape) -> LxmertSizes:
    base = config_sizes(config, shape)
    return LxmertSizes(**vars(base), positions=config.max_position_embeddings, types=config.type_vocab_size,
                       o=OBJECTS, features=config.visual_feat_dim, boxes=config.visual_pos_dim,
                       answers=config.num_qa_labels)


def objects(z: LxmertSizes) -> Tuple[Saved, ...]:
    """The objects' hidden state a step hands on, or takes from the one before."""
    return (Saved("objects", z.b * z.o * z.h),)


# --- the modules ----------------------------------------------------------------------------------------------------


def lxmert_embeddings(z: LxmertSizes) -> Sequential:
    """Word, position and token type embeddings, summed and normed: the positions (one row, broadcast) and the token
    types (zeros) are made in each pass, and their lookups keep them."""
    tokens = z.b * z.s
    return Sequential(
        Embedding("word_embeddings", z.v, z.h, "ids", tokens),
        Embedding("position_embeddings", z.positions, z.h, "positions", z.s),
        Embedding("token_type_embeddings", z.types, z.h, "token types", tokens),
        LayerNorm("LayerNorm", z.h, tokens, "sum"),
        enters=ids(z), leaves=hidden(z))


def visual_features(z: LxmertSizes) -> Sequential:
    """`visn_fc`: the objects' features and boxes, each projected and normed, then averaged."""
    rows = z.b * z.o
    return Sequential(
        Linear("visn_fc", z.features, z.h, rows, "features"),
        LayerNorm("visn_layer_norm", z.h, rows, "projected features"),
        Linear("box_fc", z.boxes, z.h, rows, "boxes"),
        LayerNorm("box_layer_norm", z.h, rows, "projected boxes"),
        enters=(Saved("features", z.b * z.o * (z.features + z.boxes)),), leaves=objects(z))


def language_layer(z: LxmertSizes, at: At) -> Sequential:
    return post_norm_layer(LAYER_NAMES, z)


def visual_layer(z: LxmertSizes, at: At) -> Sequential:
    """The language layer's module, on the objects."""
    return post_norm_layer(LAYER_NAMES, replace(z, s=z.o))


def _attention(z: LxmertSizes, name: str, path: str, output: str, queries: int, keys: int, query_input: str,
               key_input: str) -> Tuple:
    """`name`: the attention at `path` of `queries` positions of `query_input` on `keys` positions of `key_input`
    (one input: self-attention, kept once), then its output `output`: a projection, add and norm."""
    return (
        Linear(f"{path}.query", z.h, z.h, z.b * queries, query_input),
        tuple(Linear(f"{path}.{projection}", z.h, z.h, z.b * keys, key_input) for projection in ("key", "value")),
        Attention(name, z.b, z.a, queries, keys, z.d),
        Linear(f"{output}.dense", z.h, z.h, z.b * queries, f"{name}: context"),
        LayerNorm(f"{output}.LayerNorm", z.h, z.b * queries, f"{name}: sum"),
    )


def _feed_forward(z: LxmertSizes, modality: str, name: str, length: int, x: str) -> Tuple:
    """A modality's feed-forward on `length` positions of `x`, then add and norm."""
    rows = z.b * length
    return (
        Linear(f"{modality}_inter.dense", z.h, z.i, rows, x),
        Activation(f"{name}: intermediate", rows * z.i),
        Linear(f"{modality}_output.dense", z.i, z.h, rows, f"{name}: activated"),
        LayerNorm(f"{modality}_output.LayerNorm", z.h, rows, f"{name}: output sum"),
    )


def cross_modality_layer(z: LxmertSizes, at: At) -> Sequential:
    """An `LxmertXLayer`: each modality attends to the other (one module both ways), then to itself, then its
    feed-forward."""
    cross = ("visual_attention.att", "visual_attention.output")
    return Sequential(
        _attention(z, "language to vision", *cross, z.s, z.o, "language", "vision"),
        _attention(z, "vision to language", *cross, z.o, z.s, "vision", "language"),
        _attention(z, "language", "lang_self_att.self", "lang_self_att.output", z.s, z.s, "language: attended",
                   "language: attended"),
        _attention(z, "vision", "visn_self_att.self", "visn_self_att.output", z.o, z.o, "vision: attended",
                   "vision: attended"),
        _feed_forward(z, "lang", "language", z.s, "language: self-attended"),
        _feed_forward(z, "visn", "vision", z.o, "vision: self-attended"),
        enters=(*hidden(z), *objects(z)), leaves=(*hidden(z), *objects(z)))


def lxmert_pooler(z: LxmertSizes) -> Sequential:
    return pooler(z)


def answer_head(z: LxmertSizes) -> Sequential:
    """`answer_head.logit_fc`: dense to twice the width, gelu, norm, the scores of the answers, and their loss."""
    width = 2 * z.h
    return Sequential(
        Linear("logit_fc.0", z.h, width, z.b, "pooled"),
        Activation("expanded", z.b * width),
        LayerNorm("logit_fc.2", width, z.b, "activated"),
        Linear("logit_fc.3", width, z.answers, z.b, "normalised"),
        CrossEntropy("loss", z.b, z.answers),
        enters=pooled(z))


# --- the row --------------------------------------------------------------------------------------------------------

LXMERT = {
    "LxmertForQuestionAnswering": Architecture(
        "LxmertForQuestionAnswering", ("lxmert",), "lxmert",
        (Block("Embedding", "lxmert.embeddings", module=lxmert_embeddings),
         Block("Image embedding", "lxmert.encoder.visn_fc", module=visual_features),
         Layers("language", "Language layer{i}", "lxmert.encoder.layer.{i}", "l_layers", ipu=1, module=language_layer),
         Layers("visual", "Visual layer{i}", "lxmert.encoder.r_layers.{i}", "r_layers", ipu=2, module=visual_layer),
         Layers("cross", "Cross modality layer{i}", "lxmert.encoder.x_layers.{i}", "x_layers", ipu=3,
                module=cross_modality_layer),
         Block("Pooler", "lxmert.pooler", 3, module=lxmert_pooler, head=True),
         Block("Head", "answer_head", 3, module=answer_head, head=True)),
        DEFAULTS, inputs=TEXT, sizes=lxmert_sizes),
}
