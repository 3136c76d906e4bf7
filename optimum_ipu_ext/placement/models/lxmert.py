"""LXMERT: a language encoder of post-norm layers on the tokens, a visual one of the same layers on the objects
detected in the image, then cross-modality layers in which each modality attends to the other.

`parallelize()` puts the embeddings and the objects' projection on IPU 0, the language layers on IPU 1, the visual
layers on IPU 2, the cross-modality layers, the pooler and the answer head on IPU 3, whatever `layers_per_ipu` says.
Read off transformers 4.29.2's `modeling_lxmert.py` and optimum-graphcore 0.7.1's `models/lxmert`.
"""

from dataclasses import dataclass, replace
from typing import Tuple

from .blocks import Activation, Attention, CrossEntropy, Embedding, LayerNorm, Linear, Saved, Sequential
from .rules import TEXT, Architecture, Block, InputShape, Layers, ModelConfig, Position
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


def objects(sizes: LxmertSizes) -> Tuple[Saved, ...]:
    """The objects' hidden state a step hands on, or takes from the one before."""
    return (Saved("objects", sizes.b * sizes.o * sizes.h),)


# --- the modules ----------------------------------------------------------------------------------------------------


def lxmert_embeddings(sizes: LxmertSizes) -> Sequential:
    """Word, position and token type embeddings, summed and normed: the positions (one row, broadcast) and the token
    types (zeros) are made in each pass, and their lookups keep them."""
    tokens = sizes.b * sizes.s
    return Sequential(
        Embedding("word_embeddings", sizes.v, sizes.h, "ids", tokens),
        Embedding("position_embeddings", sizes.positions, sizes.h, "positions", sizes.s),
        Embedding("token_type_embeddings", sizes.types, sizes.h, "token types", tokens),
        LayerNorm("LayerNorm", sizes.h, tokens, "sum"),
        enters=ids(sizes), leaves=hidden(sizes))


def visual_features(sizes: LxmertSizes) -> Sequential:
    """`visn_fc`: the objects' features and boxes, each projected and normed, then averaged."""
    rows = sizes.b * sizes.o
    return Sequential(
        Linear("visn_fc", sizes.features, sizes.h, rows, "features"),
        LayerNorm("visn_layer_norm", sizes.h, rows, "projected features"),
        Linear("box_fc", sizes.boxes, sizes.h, rows, "boxes"),
        LayerNorm("box_layer_norm", sizes.h, rows, "projected boxes"),
        enters=(Saved("features", sizes.b * sizes.o * (sizes.features + sizes.boxes)),), leaves=objects(sizes))


def language_layer(sizes: LxmertSizes, at: Position) -> Sequential:
    return post_norm_layer(LAYER_NAMES, sizes)


def visual_layer(sizes: LxmertSizes, at: Position) -> Sequential:
    """The language layer's module, on the objects."""
    return post_norm_layer(LAYER_NAMES, replace(sizes, s=sizes.o))


def _attention(sizes: LxmertSizes, name: str, path: str, output: str, queries: int, keys: int, query_input: str,
               key_input: str) -> Tuple:
    """`name`: the attention at `path` of `queries` positions of `query_input` on `keys` positions of `key_input`
    (one input: self-attention, kept once), then its output `output`: a projection, add and norm."""
    return (
        Linear(f"{path}.query", sizes.h, sizes.h, sizes.b * queries, query_input),
        tuple(Linear(f"{path}.{projection}", sizes.h, sizes.h, sizes.b * keys, key_input)
              for projection in ("key", "value")),
        Attention(name, sizes.b, sizes.a, queries, keys, sizes.d),
        Linear(f"{output}.dense", sizes.h, sizes.h, sizes.b * queries, f"{name}: context"),
        LayerNorm(f"{output}.LayerNorm", sizes.h, sizes.b * queries, f"{name}: sum"),
    )


def _feed_forward(sizes: LxmertSizes, modality: str, name: str, length: int, x: str) -> Tuple:
    """A modality's feed-forward on `length` positions of `x`, then add and norm."""
    rows = sizes.b * length
    return (
        Linear(f"{modality}_inter.dense", sizes.h, sizes.i, rows, x),
        Activation(f"{name}: intermediate", rows * sizes.i),
        Linear(f"{modality}_output.dense", sizes.i, sizes.h, rows, f"{name}: activated"),
        LayerNorm(f"{modality}_output.LayerNorm", sizes.h, rows, f"{name}: output sum"),
    )


def cross_modality_layer(sizes: LxmertSizes, at: Position) -> Sequential:
    """An `LxmertXLayer`: each modality attends to the other (one module both ways), then to itself, then its
    feed-forward."""
    cross = ("visual_attention.att", "visual_attention.output")
    return Sequential(
        _attention(sizes, "language to vision", *cross, sizes.s, sizes.o, "language", "vision"),
        _attention(sizes, "vision to language", *cross, sizes.o, sizes.s, "vision", "language"),
        _attention(sizes, "language", "lang_self_att.self", "lang_self_att.output", sizes.s, sizes.s,
                   "language: attended", "language: attended"),
        _attention(sizes, "vision", "visn_self_att.self", "visn_self_att.output", sizes.o, sizes.o, "vision: attended",
                   "vision: attended"),
        _feed_forward(sizes, "lang", "language", sizes.s, "language: self-attended"),
        _feed_forward(sizes, "visn", "vision", sizes.o, "vision: self-attended"),
        enters=(*hidden(sizes), *objects(sizes)), leaves=(*hidden(sizes), *objects(sizes)))


def lxmert_pooler(sizes: LxmertSizes) -> Sequential:
    return pooler(sizes)


def answer_head(sizes: LxmertSizes) -> Sequential:
    """`answer_head.logit_fc`: dense to twice the width, gelu, norm, the scores of the answers, and their loss."""
    width = 2 * sizes.h
    return Sequential(
        Linear("logit_fc.0", sizes.h, width, sizes.b, "pooled"),
        Activation("expanded", sizes.b * width),
        LayerNorm("logit_fc.2", width, sizes.b, "activated"),
        Linear("logit_fc.3", width, sizes.answers, sizes.b, "normalised"),
        CrossEntropy("loss", sizes.b, sizes.answers),
        enters=pooled(sizes))


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
