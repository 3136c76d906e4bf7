"""GPT-2: its language model and its sequence and token classifiers.

`parallelize()` puts the token and the position embeddings on IPU 0 (blocks of their own), the layers as
`get_layer_ipu` places them, the final norm after the last layer, and the head on the last IPU, but the language
model's, which goes back to IPU 0 (its weight is the token embeddings' unless the config unties them); with
`embedding_serialization_factor` > 1 it pads the vocabulary to a multiple of the factor. A layer is pre-norm, its
linear layers transformers' `Conv1D` (the query, key and value one of them), its gelu the tanh approximation. Read
off transformers 4.29.2's `modeling_gpt2.py` and optimum-graphcore 0.7.1's `models/gpt2`.
"""

from dataclasses import dataclass
from typing import Any, Tuple

from .blocks import INTEGER, CrossEntropy, Embedding, Keeps, LayerNorm, Linear, Sequential, Unused
from .generation import Decoding, generation_head
from .rules import TEXT, Architecture, Block, GenerationRow, InputShape, Layers, ModelConfig, Position, Run
from .transformer import (
    LayerNames,
    Sizes,
    final_norm,
    head,
    hidden,
    ids,
    lm_head,
    pre_norm_layer,
    sizes_of,
    token_classifier,
)

DEFAULTS = {"vocab_size": 50257, "n_positions": 1024, "n_embd": 768, "n_layer": 12, "n_head": 12,
            "n_inner": lambda c: 4 * c.n_embd, "add_cross_attention": False, "tie_word_embeddings": True}

LAYER = LayerNames(("attn.c_attn",), "attn.c_proj", "ln_2", "mlp.c_fc", "mlp.c_proj", "")
GELU_TANH_KEEPS = 4  # the tanh approximation of gelu (`gelu_new`), written out in ops


@dataclass(frozen=True)
class GPT2Sizes(Sizes):
    """A transformer's sizes, and the config's: learned `positions`, a `cross`-attention (which runs only on an
    encoder's states, not given here), `tied` token embeddings and language model head."""

    positions: int
    cross: bool
    tied: bool


def gpt2_sizes(config: ModelConfig, shape: InputShape) -> GPT2Sizes:
    base = sizes_of(shape, config.n_embd, config.n_head, config.n_inner, config.vocab_size, config.num_labels)
    return GPT2Sizes(**vars(base), positions=config.n_positions, cross=config.add_cross_attention,
                     tied=config.tie_word_embeddings)


# --- the modules ----------------------------------------------------------------------------------------------------


def token_embedding(sizes: GPT2Sizes) -> Sequential:
    return Sequential(Embedding("", sizes.v, sizes.h, "ids", sizes.b * sizes.s), enters=ids(sizes))


def position_embedding(sizes: GPT2Sizes) -> Sequential:
    """One sequence's positions, broadcast over the micro-batch and added to the tokens' embeddings."""
    return Sequential(Embedding("", sizes.positions, sizes.h, "positions", sizes.s), enters=hidden(sizes),
                      leaves=hidden(sizes))


def _cross_attention(sizes: GPT2Sizes) -> Tuple:
    """The cross-attention the config adds: keys and values of the encoder's states, queries of the layer's."""
    if not sizes.cross:
        return ()
    rows = sizes.b * sizes.s
    return (Unused(Linear("crossattention.c_attn", sizes.h, 2 * sizes.h, rows, "", transposed=True),
                   Linear("crossattention.q_attn", sizes.h, sizes.h, rows, "", transposed=True),
                   Linear("crossattention.c_proj", sizes.h, sizes.h, rows, "", transposed=True),
                   LayerNorm("ln_cross_attn", sizes.h, rows, "")),)


def gpt2_layer(sizes: GPT2Sizes, at: Position) -> Sequential:
    return pre_norm_layer(LAYER, "ln_1", sizes, GELU_TANH_KEEPS, transposed=True, extra=_cross_attention(sizes))


def gpt2_lm_head(sizes: GPT2Sizes) -> Sequential:
    """The projection to the vocabulary (its weight the token embeddings' where `tied`), and the loss over every
    token."""
    return lm_head(sizes, sizes.tied)


def score(sizes: GPT2Sizes) -> Sequential:
    """The logits of every token, then those of each sequence's last, picked by two index tensors."""
    return Sequential(Linear("", sizes.h, sizes.n, sizes.b * sizes.s, "hidden", bias=False),
                      Keeps("last tokens", 2 * sizes.b, INTEGER),
                      CrossEntropy("loss", sizes.b, sizes.n), enters=hidden(sizes))


def decoding_head(decoding: Decoding) -> Sequential:
    return generation_head(decoding, decoding.sizes.tied)


# `parallelize(for_generation=False)`: no KV cache; a generation step runs the whole padded sequence
GENERATES = GenerationRow({}, kv_cache=False, steps={"lm_head": decoding_head}, positions="n_positions")


# --- the rows -------------------------------------------------------------------------------------------------------


def _row(suffix: str, last: Block, **fields: Any) -> Architecture:
    """A row, `last` its head's step."""
    name = f"GPT2{suffix}"
    steps = (
        Block("Token embedding", "transformer.wte", module=token_embedding),
        Block("Position embedding", "transformer.wpe", module=position_embedding),
        Layers("layers", "Layer{i}", "transformer.h.{i}", "n_layer", module=gpt2_layer),
        Run("transformer.ln_f", module=final_norm),
        last,
    )
    return Architecture(name, ("gpt2",), "transformer", steps, DEFAULTS, padded_embedding="transformer.wte.weight",
                        reads_embedding_factor=True, inputs=TEXT, sizes=gpt2_sizes, **fields)


GPT2 = {
    "GPT2LMHeadModel": _row(
        "LMHeadModel", Block("LM head", "lm_head", module=gpt2_lm_head, head=True),
        ties={"lm_head.weight": ("transformer.wte.weight", "tie_word_embeddings")}, kwargs=("for_generation",),
        generates=GENERATES),
    "GPT2ForSequenceClassification": _row("ForSequenceClassification", head("Score", "score", score)),
    "GPT2ForTokenClassification": _row("ForTokenClassification", head("Classifier", "classifier", token_classifier)),
}
