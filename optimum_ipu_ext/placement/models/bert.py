"""BERT-like encoders: BERT, RoBERTa, and optimum-graphcore's GroupBERT.

`parallelize()` puts the embeddings on IPU 0, the encoder's layers as `get_layer_ipu` places them, and the heads on
the last IPU, but the masked LM's, tied to the word embeddings, which goes back to IPU 0 (with BERT's pooler in
pre-training). The pipelined BERT and GroupBERT attend with one query-key-value weight, concatenated in each pass
and kept. Read off transformers 4.29.2's `modeling_bert.py` / `modeling_roberta.py` and optimum-graphcore 0.7.1's
`models/bert`, `models/roberta` and `models/groupbert`.
"""

from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Tuple

from .blocks import Activation, Convolution, CrossEntropy, Embedding, Keeps, LayerNorm, Linear, Sequential, Unused
from .rules import TEXT, Architecture, Block, InputShape, ModelConfig, Position, Run, Step
from .transformer import (
    LAYER_NAMES,
    LayerNames,
    Sizes,
    choice_classifier,
    config_sizes,
    embeddings,
    encoder_steps,
    final_norm,
    head,
    hidden,
    masked_lm_head,
    masked_lm_ties,
    pooled,
    pooler,
    post_norm_layer,
    self_attention,
    sequence_classifier,
    span_classifier,
    token_classifier,
    under,
)

DEFAULTS = {"vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
            "intermediate_size": 3072, "max_position_embeddings": 512, "tie_word_embeddings": True,
            "type_vocab_size": 2, "position_embedding_type": "absolute", "add_cross_attention": False}
# 4.29.2's RobertaConfig keeps BERT's vocabulary size (roberta-base's config.json gives its own)
ROBERTA_DEFAULTS = DEFAULTS
GROUPBERT_DEFAULTS = {**DEFAULTS, "ffn_groups": 4, "conv_group_size": 16, "conv_kernel_size": 7}
RELATIVE_POSITIONS = ("relative_key", "relative_key_query")


@dataclass(frozen=True)
class BertSizes(Sizes):
    """A transformer's sizes, and the config's: `positions` learned, `types` of token, `relative` positions (their
    distance embedding, which this pass does not size), `cross`: a cross-attention (which runs only on an encoder's
    states, not given here), `tied` word embeddings; GroupBERT's `groups` of its grouped feed-forward, `group_size`
    and `kernel` of its convolution."""

    positions: int
    types: int
    relative: bool
    cross: bool
    tied: bool
    groups: int = 0
    group_size: int = 0
    kernel: int = 0


def bert_sizes(config: ModelConfig, shape: InputShape) -> BertSizes:
    base = config_sizes(config, shape)
    return BertSizes(**vars(base), positions=config.max_position_embeddings, types=config.type_vocab_size,
                     relative=config.position_embedding_type in RELATIVE_POSITIONS, cross=config.add_cross_attention,
                     tied=config.tie_word_embeddings)


def groupbert_sizes(config: ModelConfig, shape: InputShape) -> BertSizes:
    return BertSizes(**{**vars(bert_sizes(config, shape)), "groups": config.ffn_groups,
                        "group_size": config.conv_group_size, "kernel": config.conv_kernel_size})


# --- the modules ----------------------------------------------------------------------------------------------------

def bert_embeddings(sizes: BertSizes) -> Sequential:
    """The tokenizer gives the token types, which the lookup keeps."""
    return embeddings(sizes, "word_embeddings", ("position_embeddings", sizes.positions),
                      ("token_type_embeddings", sizes.types), "LayerNorm", given_types=True)


def roberta_embeddings(sizes: BertSizes) -> Sequential:
    """RoBERTa works out each token's position from the ids, and looks it up; its tokenizer gives no token types."""
    return embeddings(sizes, "word_embeddings", ("position_embeddings", sizes.positions),
                      ("token_type_embeddings", sizes.types), "LayerNorm", computed_positions=True)


def _distance_embedding(path: str, sizes: BertSizes) -> Optional[Embedding]:
    """The distance embedding of a self-attention with relative positions (a cross-attention never has one)."""
    if not sizes.relative:
        return None
    return Embedding(f"{path}.distance_embedding", 2 * sizes.positions - 1, sizes.d)


def _cross_attention(sizes: BertSizes) -> Tuple:
    """A `BertAttention` at `crossattention`, held where the config adds it."""
    if not sizes.cross:
        return ()
    rows = sizes.b * sizes.s
    return (tuple(Linear(f"crossattention.self.{name}", sizes.h, sizes.h, rows, "")
                  for name in ("query", "key", "value")),
            Linear("crossattention.output.dense", sizes.h, sizes.h, rows, ""),
            LayerNorm("crossattention.output.LayerNorm", sizes.h, rows, ""))


def bert_layer(fused: bool):
    """A `BertLayer` (RoBERTa's is the same); the pipelined BERT fuses its query, key and value."""
    def layer(sizes: BertSizes, at: Position) -> Sequential:
        return post_norm_layer(LAYER_NAMES, sizes, fused,
                               extra=Unused(_distance_embedding("attention.self", sizes), _cross_attention(sizes)))

    return layer


def bert_pooler(sizes: BertSizes) -> Sequential:
    return pooler(sizes)


def _grouped_feed_forward(sizes: BertSizes, intermediate: str, output: str, name: str) -> Tuple:
    """Norm, dense, gelu, a grouped matmul back to h (a convolution of kernel 1 in `groups` groups, on a transposed
    copy) and a projection."""
    rows = sizes.b * sizes.s
    return (
        LayerNorm(f"{intermediate}.LayerNorm", sizes.h, rows, f"{name}: input"),
        Linear(f"{intermediate}.dense", sizes.h, sizes.i, rows, f"{name}: normalised"),
        Activation(f"{name}: intermediate", rows * sizes.i),
        Convolution(f"{output}.grouped_matmul", sizes.i, sizes.h, (1,), sizes.b, sizes.s, f"{name}: transposed",
                    sizes.b * sizes.i * sizes.s, groups=sizes.groups),
        Linear(f"{output}.dense_output_projection", sizes.h, sizes.h, rows, f"{name}: grouped"),
    )


GROUPBERT_ATTENTION = LayerNames(("attention.self.query", "attention.self.key", "attention.self.value"),
                                 "attention.output.dense", "", "", "", "")


def groupbert_layer(sizes: BertSizes, at: Position) -> Sequential:
    """optimum-graphcore's `GroupBertLayer`: a convolution module (norm, gated linear unit, masked grouped
    convolution, norm, swish, projection), a grouped feed-forward, pre-norm attention with the fused weight, a
    grouped feed-forward."""
    rows = sizes.b * sizes.s
    cross = () if not sizes.cross else (
        LayerNorm("crossattention.LayerNorm", sizes.h, rows, ""),
        tuple(Linear(f"crossattention.self.{name}", sizes.h, sizes.h, rows, "") for name in ("query", "key", "value")),
        Linear("crossattention.output.dense", sizes.h, sizes.h, rows, ""))
    return Sequential(
        LayerNorm("convolution.prenorm", sizes.h, rows, "convolution: input"),
        Linear("convolution.glu", sizes.h, 2 * sizes.h, rows, "convolution: normalised"),
        # the values are a view of the unit's output
        Keeps("gates", rows * sizes.h), Keeps("values", 2 * rows * sizes.h),
        Keeps("mask", rows),
        Convolution("convolution.groupconv", sizes.h, sizes.h, (sizes.kernel,), sizes.b, sizes.s,
                    "convolution: transposed", sizes.b * sizes.h * sizes.s, groups=sizes.h // sizes.group_size),
        LayerNorm("convolution.conv_norm", sizes.h, rows, "convolved"),
        Activation("convolution: normalised output", rows * sizes.h),
        Linear("convolution.output_projection", sizes.h, sizes.h, rows, "activated"),
        _grouped_feed_forward(sizes, "intermediate_first", "output_first", "first feed-forward"),
        LayerNorm("attention.LayerNorm", sizes.h, rows, "attention: input"),
        self_attention(GROUPBERT_ATTENTION, sizes, "attention: normalised", keep_fused_weight=True),
        _grouped_feed_forward(sizes, "intermediate_second", "output_second", "second feed-forward"),
        Unused(_distance_embedding("attention.self", sizes), cross),
        enters=hidden(sizes), leaves=hidden(sizes))


def bert_mlm(sizes: BertSizes) -> Sequential:
    return masked_lm_head(sizes, "predictions.transform.dense", "predictions.transform.LayerNorm",
                          "predictions.decoder", "predictions.bias", sizes.tied)


def bert_pretraining_heads(sizes: BertSizes) -> Sequential:
    """The masked LM, and whether the second sentence follows the first, from the pooled state."""
    mlm = bert_mlm(sizes)
    return Sequential(*mlm.modules, Linear("seq_relationship", sizes.h, 2, sizes.b, "pooled"),
                      CrossEntropy("next sentence", sizes.b, 2), enters=(*hidden(sizes), *pooled(sizes)))


def roberta_mlm(sizes: BertSizes) -> Sequential:
    return masked_lm_head(sizes, "dense", "layer_norm", "decoder", "bias", sizes.tied)


def roberta_classifier(sizes: BertSizes) -> Sequential:
    """`RobertaClassificationHead`: dense and tanh on the first token, then the projection."""
    return Sequential(Linear("dense", sizes.h, sizes.h, sizes.b, "hidden", storage=sizes.b * sizes.s * sizes.h),
                      Activation("pooled", sizes.b * sizes.h), Linear("out_proj", sizes.h, sizes.n, sizes.b, "pooled"),
                      CrossEntropy("loss", sizes.b, sizes.n), enters=hidden(sizes))


# --- the rows -------------------------------------------------------------------------------------------------------


class _Family:
    """What a BERT-like family's rows share."""

    def __init__(self, family: str, model_type: str, prefix: str, defaults: Mapping[str, Any], sizes_of,
                 embedding, layer, after_layers: Tuple[Step, ...] = ()):
        self.family, self.model_type, self.prefix = family, model_type, prefix
        self.defaults, self.sizes_of = defaults, sizes_of
        self.embedding, self.layer, self.after_layers = embedding, layer, after_layers

    def row(self, suffix: str, tail: Tuple[Step, ...], pooled_head: bool = False, base: Optional[str] = None,
            serializes_embedding: bool = True, **fields: Any) -> Tuple[str, Architecture]:
        """`pooled_head`: the model keeps the pooler, which runs after the last layer."""
        base = self.prefix if base is None else base
        if pooled_head:
            tail = (Run(under(base, "pooler"), module=bert_pooler, head=True), *tail)
        name = f"{self.family}{suffix}"
        steps = encoder_steps(base, self.embedding, self.layer, tail, self.after_layers)
        fields.setdefault("reads_embedding_factor", True)
        word_embeddings = under(base, "embeddings.word_embeddings.weight")
        return name, Architecture(
            name, (self.model_type,), self.prefix, steps, self.defaults,
            serialized_embedding=word_embeddings if serializes_embedding else None, inputs=TEXT,
            sizes=self.sizes_of, **fields)

    def task_rows(self, pooled_heads: Tuple[str, ...], sequence_classifier_head: Block) -> Dict[str, Architecture]:
        """The classification and question-answering rows."""
        rows = {
            "ForSequenceClassification": (sequence_classifier_head,),
            "ForMultipleChoice": (head("Classifier Output", "classifier", choice_classifier),),
            "ForTokenClassification": (head("Classifier Output", "classifier", token_classifier),),
            "ForQuestionAnswering": (head("QA Outputs", "qa_outputs", span_classifier),),
        }
        return dict(self.row(suffix, tail, suffix in pooled_heads) for suffix, tail in rows.items())


_BERT = _Family("Bert", "bert", "bert", DEFAULTS, bert_sizes, bert_embeddings, bert_layer(fused=True))
_MLM_TIES = masked_lm_ties("cls.predictions", "bert.embeddings.word_embeddings.weight")
_CLASSIFIER = head("Classifier Output", "classifier", sequence_classifier)


def _bert_like(family: _Family, pooled_heads: Tuple[str, ...]) -> Dict[str, Architecture]:
    """BERT's and GroupBERT's rows: the task heads, the masked LM and pre-training (the pooler and the heads back on
    IPU 0, with the word embeddings)."""
    mlm = family.row("ForMaskedLM", (Block("Classifier", "cls", module=bert_mlm, head=True),),
                     "ForMaskedLM" in pooled_heads, ties=_MLM_TIES, serializes_embedding=False)
    pretraining = family.row("ForPreTraining", (Block("Pooler", "bert.pooler", module=bert_pooler, head=True),
                                                Block("Classifier", "cls", module=bert_pretraining_heads, head=True)),
                             ties=_MLM_TIES, serializes_embedding=False)
    return {**family.task_rows(pooled_heads, _CLASSIFIER), **dict([mlm, pretraining])}


BERT = {
    **_bert_like(_BERT, ("ForSequenceClassification", "ForMultipleChoice")),
    **dict([_BERT.row("Model", (Block("Pooler", "pooler", module=bert_pooler, head=True),), base="")]),
}

_GROUPBERT = _Family("GroupBert", "groupbert", "bert", GROUPBERT_DEFAULTS, groupbert_sizes, bert_embeddings,
                     groupbert_layer, after_layers=(Run("bert.encoder.LayerNorm", module=final_norm),))
GROUPBERT = _bert_like(_GROUPBERT, ("ForSequenceClassification", "ForMultipleChoice", "ForTokenClassification",
                                    "ForQuestionAnswering", "ForMaskedLM"))

_ROBERTA = _Family("Roberta", "roberta", "roberta", ROBERTA_DEFAULTS, bert_sizes, roberta_embeddings,
                   bert_layer(fused=False))
ROBERTA = {
    **_ROBERTA.task_rows(("ForMultipleChoice",), head("Classifier Output", "classifier", roberta_classifier)),
    **dict([_ROBERTA.row("ForMaskedLM", (Block("LM Head", "lm_head", module=roberta_mlm, head=True),),
                         ties=masked_lm_ties("lm_head", "roberta.embeddings.word_embeddings.weight"),
                         serializes_embedding=False)]),
}
