"""MPNet: post-norm layers under names of its own, attending with the relative position buckets the encoder works
out once for all its layers.

`parallelize()` puts the embeddings on IPU 0, the layers as `get_layer_ipu` places them, and the pooler or the
masked LM back on IPU 0; it serializes no embedding. The pipelined model attends with one query-key-value weight,
concatenated in each pass and kept. Read off transformers 4.29.2's `modeling_mpnet.py` and optimum-graphcore 0.7.1's
`models/mpnet`.
"""

from dataclasses import dataclass
from typing import Any, Mapping

from .blocks import Embedding, Sequential
from .rules import TEXT, Architecture, Block, InputShape, ModelConfig, Position, Run
from .transformer import (
    LayerNames,
    Sizes,
    config_sizes,
    embeddings,
    encoder_steps,
    hidden,
    masked_lm_head,
    masked_lm_ties,
    pooler,
    post_norm_layer,
    under,
)

DEFAULTS = {"vocab_size": 30527, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
            "intermediate_size": 3072, "max_position_embeddings": 512, "tie_word_embeddings": True,
            "relative_attention_num_buckets": 32}


@dataclass(frozen=True)
class MPNetSizes(Sizes):
    """A transformer's sizes, and the config's: `positions` learned, relative position `buckets`, `tied` word
    embeddings."""

    positions: int
    buckets: int
    tied: bool


def mpnet_sizes(config: ModelConfig, shape: InputShape) -> MPNetSizes:
    base = config_sizes(config, shape)
    return MPNetSizes(**vars(base), positions=config.max_position_embeddings,
                      buckets=config.relative_attention_num_buckets, tied=config.tie_word_embeddings)


# --- the modules ----------------------------------------------------------------------------------------------------

LAYER_NAMES = LayerNames(("attention.attn.q", "attention.attn.k", "attention.attn.v"), "attention.attn.o",
                         "attention.LayerNorm", "intermediate.dense", "output.dense", "output.LayerNorm")


def mpnet_embeddings(sizes: MPNetSizes) -> Sequential:
    """MPNet works out each token's position from the ids, and looks it up; it has no token types."""
    return embeddings(sizes, "word_embeddings", ("position_embeddings", sizes.positions), None, "LayerNorm",
                      computed_positions=True)


def relative_attention_bias(sizes: MPNetSizes) -> Sequential:
    """Each pair of tokens' bucket of relative position, looked up once for every layer: keeps the s x s buckets."""
    return Sequential(Embedding("", sizes.buckets, sizes.a, "buckets", sizes.s * sizes.s), enters=hidden(sizes),
                      leaves=hidden(sizes))


def mpnet_layer(sizes: MPNetSizes, at: Position) -> Sequential:
    """An `MPNetLayer`, its query, key and value fused by the pipelined model."""
    return post_norm_layer(LAYER_NAMES, sizes, fused=True)


def mpnet_pooler(sizes: MPNetSizes) -> Sequential:
    return pooler(sizes)


def lm_head(sizes: MPNetSizes) -> Sequential:
    return masked_lm_head(sizes, "dense", "layer_norm", "decoder", "bias", sizes.tied)


# --- the rows -------------------------------------------------------------------------------------------------------


def _unserialized(settings: Mapping[str, Any]) -> bool:
    return (settings["embedding_serialization_factor"] or 1) <= 1


def _row(name: str, base: str, tail: Block, **fields: Any) -> Architecture:
    """The encoder under `base`, the buckets worked out before the first layer, then the head `tail`."""
    steps = encoder_steps(base, mpnet_embeddings, mpnet_layer, (tail,), after_embeddings=(
        Run(under(base, "encoder.relative_attention_bias"), module=relative_attention_bias),))
    return Architecture(name, ("mpnet",), "mpnet", steps, DEFAULTS, inputs=TEXT, sizes=mpnet_sizes, **fields)


MPNET = {
    "MPNetModel": _row("MPNetModel", "", Block("Pooler", "pooler", module=mpnet_pooler, head=True)),
    # its __init__ builds a new encoder after the head is tied: the decoder keeps a copy of the word embeddings,
    # tied again only where `parallelize()` serializes it
    "MPNetForMaskedLM": _row(
        "MPNetForMaskedLM", "mpnet", Block("Classifier", "lm_head", module=lm_head, head=True),
        ties=masked_lm_ties("lm_head", "mpnet.embeddings.word_embeddings.weight"), reads_embedding_factor=True,
        copies={"lm_head.decoder.weight": ("mpnet.embeddings.word_embeddings.weight", _unserialized)}),
}
