"""DeBERTa: post-norm layers whose attention adds, to the scores of the tokens' contents, the scores of their relative
positions (content to position, position to content), with norms written out in float32 operations.

`parallelize()` puts the embeddings on IPU 0, and the encoder and its relative embeddings in unnamed blocks there too
(the relative embeddings' weight is read in the encoder, before the first layer), the layers as `get_layer_ipu` places
them, the task heads on the last IPU; the masked LM's projection, tied to the word embeddings, goes back to IPU 0.
The pipelined masked LM predicts a quarter of the tokens, those its labels rank first, gathered after the last layer.
Read off transformers 4.29.2's `modeling_deberta.py` and optimum-graphcore 0.7.1's `models/deberta`.
"""

from dataclasses import dataclass
from typing import Any, Tuple

from .blocks import (
    INTEGER,
    Activation,
    CrossEntropy,
    Embedding,
    Keeps,
    LayerNorm,
    Linear,
    Matmul,
    Module,
    Parameter,
    Saved,
    Sequential,
)
from .rules import TEXT, Architecture, Block, InputShape, ModelConfig, Position, Run, Step
from .transformer import (
    Sizes,
    config_sizes,
    encoder_steps,
    head,
    hidden,
    ids,
    masked_lm_ties,
    span_classifier,
    token_classifier,
)

# `talking_head` and `embedding_size`: not fields of DebertaConfig, read by the model where a config.json has them
DEFAULTS = {"vocab_size": 50265, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
            "intermediate_size": 3072, "max_position_embeddings": 512, "tie_word_embeddings": True,
            "type_vocab_size": 0, "relative_attention": False, "max_relative_positions": -1,
            "position_biased_input": True, "pos_att_type": (), "talking_head": False,
            "embedding_size": lambda c: c.hidden_size, "pooler_hidden_size": lambda c: c.hidden_size}

MASKED_SHARE = 0.25  # the share of each sequence's tokens the pipelined masked LM predicts


@dataclass(frozen=True)
class DebertaSizes(Sizes):
    """A transformer's sizes, and the config's: `positions` learned (`biased`: added to the input), `types` of
    token, `width` of the embeddings (projected to h where it differs), `distances` relative positions embedded, of
    which a sequence spans `r = 2 min(s, distances)`, the relative attention's content-to-position (`c2p`) and
    position-to-content (`p2c`) scores, `talking` heads, the pooler's `pooled` width, `tied` word embeddings, `m`
    tokens the masked LM predicts of each sequence."""

    positions: int
    biased: bool
    types: int
    width: int
    distances: int
    r: int
    c2p: bool
    p2c: bool
    talking: bool
    pooled: int
    tied: bool
    m: int


def attention_types(config: ModelConfig) -> Tuple[str, ...]:
    """`pos_att_type`: a list, or a string such as "p2c|c2p" (DebertaConfig splits it)."""
    kinds = config.pos_att_type
    return tuple(kind.strip() for kind in kinds.lower().split("|")) if isinstance(kinds, str) else tuple(kinds)


def deberta_sizes(config: ModelConfig, shape: InputShape) -> DebertaSizes:
    base = config_sizes(config, shape)
    distances = config.max_relative_positions
    distances = config.max_position_embeddings if distances < 1 else distances
    kinds = attention_types(config) if config.relative_attention else ()
    return DebertaSizes(**vars(base), positions=config.max_position_embeddings,
                        biased=bool(config.position_biased_input), types=config.type_vocab_size,
                        width=config.embedding_size, distances=distances,
                        r=2 * min(base.s, distances), c2p="c2p" in kinds, p2c="p2c" in kinds,
                        talking=bool(config.talking_head), pooled=config.pooler_hidden_size,
                        tied=config.tie_word_embeddings, m=int(base.s * MASKED_SHARE))


# --- the modules ----------------------------------------------------------------------------------------------------


class DebertaLayerNorm(Module):
    """`DebertaLayerNorm(width)` on `rows` rows of `x`, written out in float32 operations: keeps its input, two
    centred copies of it and each row's deviation."""

    def __init__(self, name: str, width: int, rows: int, x: str):
        super().__init__({f"{name}.weight": (width,), f"{name}.bias": (width,)},
                         (Saved(x, rows * width), Saved(f"{x}: centred", 2 * rows * width),
                          Saved(f"{x}: deviation", rows)))


def deberta_embeddings(sizes: DebertaSizes) -> Sequential:
    """Word embeddings, plus positions (a buffer) where `biased`, plus the token types the tokenizer gives where
    the model has types, projected to h where of another width, normed, then masked by the attention mask (kept)."""
    tokens = sizes.b * sizes.s
    return Sequential(
        Embedding("word_embeddings", sizes.v, sizes.width, "ids", tokens),
        Embedding("position_embeddings", sizes.positions, sizes.width) if sizes.biased else None,
        (Embedding("token_type_embeddings", sizes.types, sizes.width, "token types", tokens) if sizes.types > 0
         else None),
        Linear("embed_proj", sizes.width, sizes.h, tokens, "embedded", bias=False) if sizes.width != sizes.h else None,
        DebertaLayerNorm("LayerNorm", sizes.h, tokens, "sum"),
        Keeps("mask", tokens),
        enters=ids(sizes), leaves=hidden(sizes))


def encoder(sizes: DebertaSizes) -> Sequential:
    """The encoder's own block: the relative positions and the mask it works out keep nothing."""
    return Sequential(enters=hidden(sizes), leaves=hidden(sizes))


def relative_embeddings(sizes: DebertaSizes) -> Sequential:
    return Sequential(Embedding("", 2 * sizes.distances, sizes.h))


def _relative_scores(sizes: DebertaSizes, name: str, projection: Linear) -> Tuple:
    """The `projection` of the r relative embeddings the sequence spans (a slice of all of them, kept whole), its
    product by the queries (or keys), copied, the gather's index (one per pair of tokens) and the gathered scores."""
    pairs = sizes.b * sizes.a
    return (
        projection,
        Matmul(pairs, sizes.s, sizes.d, sizes.r, (Saved(f"{name}: positions", pairs * sizes.d * sizes.r),
                                      Saved(f"{name}: content", pairs * sizes.s * sizes.d))),
        Keeps(f"{name}: index", sizes.s * sizes.s, INTEGER),
        Keeps(f"{name}: scores", pairs * sizes.s * sizes.r),
    )


def _attention(sizes: DebertaSizes, path: str) -> Tuple:
    """The `DisentangledSelfAttention` at `path`, as the pipelined model runs it: one projection to queries, keys and
    values (their biases added), the scaled queries by the keys, the relative positions' scores (content to position,
    position to content: its projection scaled), a masked softmax keeping two tensors, the talking heads'
    projections across the heads (of copies with the heads last), the product by the values."""
    pairs, rows, grid = sizes.b * sizes.a, sizes.b * sizes.s, sizes.b * sizes.s * sizes.s
    relative = 2 * sizes.distances * sizes.h
    content_to_position = _relative_scores(sizes, "content to position", Linear(
        f"{path}.pos_proj", sizes.h, sizes.h, sizes.r, "relative embeddings", bias=False,
        storage=relative)) if sizes.c2p else None
    position_to_content = (_relative_scores(sizes, "position to content", Linear(
        f"{path}.pos_q_proj", sizes.h, sizes.h, sizes.r, "relative embeddings", storage=relative)),
        Keeps("position scale", 1)) if sizes.p2c else None
    return (
        Linear(f"{path}.in_proj", sizes.h, 3 * sizes.h, rows, "input", bias=False),
        Parameter(f"{path}.q_bias", (sizes.h,)), Parameter(f"{path}.v_bias", (sizes.h,)),
        Keeps("scale", 1),
        Matmul(pairs, sizes.s, sizes.d, sizes.s, (Saved("queries", pairs * sizes.s * sizes.d),
                                                  Saved("keys", pairs * sizes.s * sizes.d))),
        content_to_position,
        position_to_content,
        (Linear(f"{path}.head_logits_proj", sizes.a, sizes.a, grid, "scores, heads last", bias=False)
         if sizes.talking else None),
        Keeps("probabilities", 2 * pairs * sizes.s * sizes.s),
        Linear(f"{path}.head_weights_proj", sizes.a, sizes.a, grid, "probabilities, heads last", bias=False)
        if sizes.talking else None,
        Matmul(pairs, sizes.s, sizes.s, sizes.d, (Saved("values", pairs * sizes.s * sizes.d),)),
    )


def deberta_layer(masked_lm: bool):
    """A `DebertaLayer`: attention, add and norm, feed-forward, add and norm; in the masked LM the last layer's
    output is multiplied by the one-hot positions of the m tokens predicted."""
    def layer(sizes: DebertaSizes, at: Position) -> Sequential:
        rows = sizes.b * sizes.s
        picks = masked_lm and at.layer == at.last
        return Sequential(
            _attention(sizes, "attention.self"),
            Linear("attention.output.dense", sizes.h, sizes.h, rows, "context"),
            DebertaLayerNorm("attention.output.LayerNorm", sizes.h, rows, "attention sum"),
            Linear("intermediate.dense", sizes.h, sizes.i, rows, "attention output"),
            Activation("intermediate", rows * sizes.i),
            Linear("output.dense", sizes.i, sizes.h, rows, "activated"),
            DebertaLayerNorm("output.LayerNorm", sizes.h, rows, "output sum"),
            (Matmul(sizes.b, sizes.m, sizes.s, sizes.h, (Saved("one-hot positions", sizes.b * sizes.m * sizes.s),))
             if picks else None),
            enters=hidden(sizes), leaves=hidden(sizes))

    return layer


def masked(sizes: DebertaSizes) -> Tuple[Saved, ...]:
    """The hidden state of the m tokens the masked LM predicts."""
    return (Saved("masked", sizes.b * sizes.m * sizes.h),)


def prediction_transform(sizes: DebertaSizes) -> Sequential:
    """`cls.predictions.transform`: dense, gelu and norm, on the predicted tokens."""
    rows = sizes.b * sizes.m
    return Sequential(Linear("dense", sizes.h, sizes.h, rows, "masked"), Activation("transformed", rows * sizes.h),
                      LayerNorm("LayerNorm", sizes.h, rows, "activated"), enters=masked(sizes))


def prediction_decoder(sizes: DebertaSizes) -> Sequential:
    """`cls.predictions.decoder`: the projection to the vocabulary (its weight the word embeddings' where tied, its
    bias the head's own), and the loss over the predicted tokens."""
    rows = sizes.b * sizes.m
    return Sequential(Linear("", sizes.h, sizes.v, rows, "normalised", tied=sizes.tied),
                      CrossEntropy("masked tokens", rows, sizes.v), enters=masked(sizes))


def context_pooler(sizes: DebertaSizes) -> Sequential:
    """`ContextPooler`: `gelu(dense(hidden[:, 0]))`, `pooler_hidden_size` wide: keeps the whole hidden state (the
    first token is a view of it) and its output."""
    pooled = (Saved("pooled", sizes.b * sizes.pooled),)
    return Sequential(Linear("dense", sizes.pooled, sizes.pooled, sizes.b, "hidden",
                             storage=sizes.b * sizes.s * sizes.h),
                      Activation("pooled", sizes.b * sizes.pooled), enters=hidden(sizes), leaves=pooled)


def sequence_classifier(sizes: DebertaSizes) -> Sequential:
    """The classifier (of the hidden size, as the model builds it) on the pooled state; the loss picks the logits of
    the labelled sequences by an index."""
    return Sequential(Linear("", sizes.h, sizes.n, sizes.b, "pooled"), Keeps("label index", sizes.b, INTEGER),
                      Keeps("picked logits", sizes.b * sizes.n), CrossEntropy("loss", sizes.b, sizes.n),
                      enters=(Saved("pooled", sizes.b * sizes.h),))


# --- the rows -------------------------------------------------------------------------------------------------------

WORD_EMBEDDINGS = "deberta.embeddings.word_embeddings.weight"


def _row(suffix: str, tail: Tuple[Step, ...], masked_lm: bool = False, **fields: Any) -> Tuple[str, Architecture]:
    """The embeddings, the encoder's blocks, the layers, then `tail`; the word embeddings serialized unless said."""
    name = f"Deberta{suffix}"
    steps = encoder_steps("deberta", deberta_embeddings, deberta_layer(masked_lm), tail, after_embeddings=(
        Block(None, "deberta.encoder", module=encoder),
        Block(None, "deberta.encoder.rel_embeddings", called=False, when=("relative_attention", True),
              module=relative_embeddings)))
    fields.setdefault("serialized_embedding", WORD_EMBEDDINGS)
    return name, Architecture(name, ("deberta",), "deberta", steps, DEFAULTS, reads_embedding_factor=True,
                              inputs=TEXT, sizes=deberta_sizes, **fields)


DEBERTA = dict([
    _row("ForMaskedLM", (Run("cls.predictions.transform", module=prediction_transform, head=True),
                         Block("Projection", "cls.predictions.decoder", module=prediction_decoder, head=True)),
         masked_lm=True, ties=masked_lm_ties("cls.predictions", WORD_EMBEDDINGS), serialized_embedding=None),
    _row("ForSequenceClassification", (Run("pooler", module=context_pooler, head=True),
                                       head("Classifier Output", "classifier", sequence_classifier))),
    _row("ForTokenClassification", (head("Classifier Output", "classifier", token_classifier),)),
    _row("ForQuestionAnswering", (head("QA Outputs", "qa_outputs", span_classifier),)),
])
