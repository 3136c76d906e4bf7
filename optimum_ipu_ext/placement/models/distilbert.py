"""DistilBERT: post-norm layers under names of its own, without token types or a pooler.

`parallelize()` puts the embeddings on IPU 0, the layers as `get_layer_ipu` places them, the task heads on the last
IPU, and the masked LM's three modules, each a block named "LM Head", back on IPU 0 with the word embeddings it is tied
to. Read off transformers 4.29.2's `modeling_distilbert.py` and optimum-graphcore 0.7.1's `models/distilbert`.
"""

from dataclasses import dataclass
from typing import Any, Dict, Tuple

from .blocks import Activation, CrossEntropy, LayerNorm, Linear, Sequential
from .rules import TEXT, Architecture, Block, InputShape, Layers, ModelConfig, Position, Step
from .transformer import (
    LayerNames,
    Sizes,
    choice_classifier,
    embeddings,
    head,
    hidden,
    pooler,
    post_norm_layer,
    sequence_classifier,
    sizes_of,
    span_classifier,
    token_classifier,
)

DEFAULTS = {"vocab_size": 30522, "max_position_embeddings": 512, "sinusoidal_pos_embds": False, "n_layers": 6,
            "n_heads": 12, "dim": 768, "hidden_dim": 3072, "tie_word_embeddings": True}


@dataclass(frozen=True)
class DistilBertSizes(Sizes):
    """A transformer's sizes, and the config's: `positions` embedded, `tied` word embeddings."""

    positions: int
    tied: bool


def distilbert_sizes(config: ModelConfig, shape: InputShape) -> DistilBertSizes:
    base = sizes_of(shape, config.dim, config.n_heads, config.hidden_dim, config.vocab_size, config.num_labels)
    return DistilBertSizes(**vars(base), positions=config.max_position_embeddings, tied=config.tie_word_embeddings)


# --- the modules ----------------------------------------------------------------------------------------------------

LAYER_NAMES = LayerNames(("attention.q_lin", "attention.k_lin", "attention.v_lin"), "attention.out_lin",
                         "sa_layer_norm", "ffn.lin1", "ffn.lin2", "output_layer_norm")


def distilbert_embeddings(sizes: DistilBertSizes) -> Sequential:
    """Word and position embeddings (the positions a buffer), summed and normed."""
    return embeddings(sizes, "word_embeddings", ("position_embeddings", sizes.positions), None, "LayerNorm")


def distilbert_layer(sizes: DistilBertSizes, at: Position) -> Sequential:
    """A `TransformerBlock`: attention, add and norm, feed-forward, add and norm."""
    return post_norm_layer(LAYER_NAMES, sizes)


def pre_classifier(sizes: DistilBertSizes) -> Sequential:
    """`relu(pre_classifier(hidden[:, 0]))`: it keeps what the pooler keeps (the relu its output, as tanh)."""
    return pooler(sizes, dense="")


def vocab_transform(sizes: DistilBertSizes) -> Sequential:
    """The masked LM's dense layer, and the gelu the model applies after it."""
    rows = sizes.b * sizes.s
    return Sequential(Linear("", sizes.h, sizes.h, rows, "hidden"), Activation("transformed", rows * sizes.h),
                      enters=hidden(sizes))


def vocab_layer_norm(sizes: DistilBertSizes) -> Sequential:
    return Sequential(LayerNorm("", sizes.h, sizes.b * sizes.s, "activated"), enters=hidden(sizes),
                      leaves=hidden(sizes))


def vocab_projector(sizes: DistilBertSizes) -> Sequential:
    """The projection to the vocabulary (its weight the word embeddings' where tied) and the loss over every token."""
    rows = sizes.b * sizes.s
    return Sequential(Linear("", sizes.h, sizes.v, rows, "normalised", tied=sizes.tied),
                      CrossEntropy("masked tokens", rows, sizes.v), enters=hidden(sizes))


# --- the rows -------------------------------------------------------------------------------------------------------

WORD_EMBEDDINGS = "distilbert.embeddings.word_embeddings.weight"


def _row(suffix: str, tail: Tuple[Step, ...], **fields: Any) -> Tuple[str, Architecture]:
    """The embeddings on IPU 0, the layers, then `tail`; the word embeddings serialized unless said."""
    name = f"DistilBert{suffix}"
    steps = (Block("Embedding", "distilbert.embeddings", module=distilbert_embeddings),
             Layers("encoder", "Encoder{i}", "distilbert.transformer.layer.{i}", "n_layers", module=distilbert_layer),
             *tail)
    fields.setdefault("serialized_embedding", WORD_EMBEDDINGS)
    return name, Architecture(
        name, ("distilbert",), "distilbert", steps, DEFAULTS, reads_embedding_factor=True,
        frozen={"distilbert.embeddings.position_embeddings": ("sinusoidal_pos_embds", True)}, inputs=TEXT,
        sizes=distilbert_sizes, **fields)


def _classifier(classifier) -> Tuple[Step, ...]:
    """The pre-classifier on the first token, then `classifier`, both in blocks named "Classifier"."""
    return (head("Classifier", "pre_classifier", pre_classifier), head("Classifier", "classifier", classifier))


DISTILBERT: Dict[str, Architecture] = dict([
    _row("ForMaskedLM", tuple(Block("LM Head", path, 0, module=module, head=True) for path, module in (
        ("vocab_transform", vocab_transform), ("vocab_layer_norm", vocab_layer_norm),
        ("vocab_projector", vocab_projector))),
         ties={"vocab_projector.weight": (WORD_EMBEDDINGS, "tie_word_embeddings")}, serialized_embedding=None),
    _row("ForSequenceClassification", _classifier(sequence_classifier)),
    _row("ForMultipleChoice", _classifier(choice_classifier)),
    _row("ForTokenClassification", (head("Classifier", "classifier", token_classifier),)),
    _row("ForQuestionAnswering", (head("QA Outputs", "qa_outputs", span_classifier),)),
])
