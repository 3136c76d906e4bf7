"""The cost tables: what each step of optimum-graphcore 0.7.1's pipelined models keeps for the backward pass and
computes, for one training micro-batch, in the vocabulary of cost_ops.py.

Sizes, as the formulas name them (`dims` of each family):
b sequences of the micro-batch (examples x choices), e examples, c choices, s tokens (patches, frames) of the encoder,
t tokens of the decoder, h hidden size, a attention heads, d head size, i feed-forward size, v vocabulary, n labels,
layer: the index of a layer in its group (`last`: the index of the last one).

Read off the forward passes of transformers 4.29.2 and optimum-graphcore 0.7.1's overrides (BERT and MPNet attend
with one fused query-key-value weight, concatenated in each pass and kept), and checked against them by
tests/test_costs_reference.py.
"""

from typing import Any, Callable, Dict, Mapping, NamedTuple

from .cost_ops import (
    BOOL,
    INTEGER,
    Kept,
    Table,
    attention,
    conv,
    cross_entropy,
    elementwise,
    embedding,
    keep,
    layer_norm,
    linear,
    rms_norm,
    table,
)

TEXT = "text"
ENCODER_DECODER = "encoder-decoder"
IMAGE = "image"
AUDIO = "audio"
SPEECH_RECOGNITION = "speech recognition"


class ArchitectureCosts(NamedTuple):
    """An architecture's cost tables: `kind` (TEXT, ...: how its input is sized), `dims(config, shape)`: the sizes its
    formulas name, `tables`: `{step path: Table}`, a layer's path as its row writes it (`{i}`, `{stage}`)."""

    kind: str
    dims: Callable[[Any, Any], Dict[str, int]]
    tables: Mapping[str, Table]


def read(config: Any, field: str, default: Any = None) -> Any:
    """A config field the placement rules give no default: `default` where config.json leaves it out."""
    value = config.values.get(field)
    return default if value is None else value


HIDDEN = (Kept("hidden", "b*s*h"),)
DECODER_HIDDEN = (Kept("hidden", "b*t*h"),)
EMPTY = table()


def _post_norm_layer(fused: bool) -> Table:
    """A BERT layer: attention, add and norm, feed-forward, add and norm."""
    return table(
        keep("query-key-value weight", "3*h*h", when=str(fused)),
        linear("input", "b*s", "h", "3*h"),
        attention("self", "b", "a", "s", "s", "d"),
        linear("context", "b*s", "h", "h"),
        layer_norm("attention sum", "b*s", "h"),
        linear("attention output", "b*s", "h", "i"),
        elementwise("intermediate", "b*s*i"),
        linear("activated", "b*s", "i", "h"),
        layer_norm("output sum", "b*s", "h"),
        enters=HIDDEN, leaves=HIDDEN,
    )


def _pre_norm_layer(gelu_keeps: int = 1) -> Table:
    """A ViT, Whisper-encoder or GPT-2 layer: norm, attention, add, norm, feed-forward, add. `gelu_keeps`: the
    tensors the activation keeps (GPT-2's tanh approximation keeps 4)."""
    return table(
        layer_norm("input", "b*s", "h"),
        linear("normalised", "b*s", "h", "3*h"),
        attention("self", "b", "a", "s", "s", "d"),
        linear("context", "b*s", "h", "h"),
        layer_norm("attention sum", "b*s", "h"),
        linear("normalised sum", "b*s", "h", "i"),
        *(elementwise(f"intermediate {index}", "b*s*i") for index in range(gelu_keeps)),
        linear("activated", "b*s", "i", "h"),
        enters=HIDDEN, leaves=HIDDEN,
    )


def _pooler(rows: str = "b") -> Table:
    """`tanh(dense(hidden[:, 0]))`: keeps the whole hidden state (the first token is a view of it) and its output."""
    return table(linear("hidden", rows, "h", "h", storage="b*s*h"),
                 elementwise("pooled", f"{rows}*h", "tanh"), enters=HIDDEN, leaves=(Kept("pooled", f"{rows}*h"),))


POOLED_CLASSIFIER = table(linear("pooled", "b", "h", "n"), cross_entropy("loss", "b", "n"),
                          enters=(Kept("pooled", "b*h"),))
CHOICE_CLASSIFIER = table(linear("pooled", "b", "h", "1"), cross_entropy("loss", "e", "c"),
                          enters=(Kept("pooled", "b*h"),))
TOKEN_CLASSIFIER = table(linear("hidden", "b*s", "h", "n"), cross_entropy("loss", "b*s", "n"), enters=HIDDEN)
QA_OUTPUTS = table(linear("hidden", "b*s", "h", "2"), cross_entropy("start", "b", "s"), cross_entropy("end", "b", "s"),
                   enters=HIDDEN)
MLM_HEAD = (
    linear("hidden", "b*s", "h", "h"),
    elementwise("transformed", "b*s*h"),
    layer_norm("activated", "b*s", "h"),
    linear("normalised", "b*s", "h", "v"),
    cross_entropy("masked tokens", "b*s", "v"),
)
BERT_EMBEDDINGS = table(embedding("ids", "b*s"), layer_norm("sum", "b*s", "h"), leaves=HIDDEN,
                        enters=(Kept("ids", "b*s", INTEGER),))
# RoBERTa and MPNet work out each token's position from the ids, and look it up
POSITION_EMBEDDINGS = table(embedding("ids", "b*s"), embedding("positions", "b*s"), layer_norm("sum", "b*s", "h"),
                            leaves=HIDDEN, enters=(Kept("ids", "b*s", INTEGER),))


def _encoder_dims(config: Any, shape: Any, hidden: str = "hidden_size", heads: str = "num_attention_heads",
                  intermediate: str = "intermediate_size") -> Dict[str, int]:
    h = getattr(config, hidden)
    a = getattr(config, heads)
    return {"e": shape.micro_batch_size, "c": shape.choices, "b": shape.micro_batch_size * shape.choices,
            "s": shape.sequence_length, "h": h, "a": a, "d": h // a, "i": getattr(config, intermediate),
            "v": config.vocab_size, "n": config.num_labels}


def _encoder_family(prefix: str, embeddings: Table, layer: Table, mlm: Any,
                    sequence_classifier: Table) -> Dict[str, Dict[str, Table]]:
    """`{architecture: {path: table}}` of a BERT-like family's heads."""
    base = prefix.lower()
    body = {f"{base}.embeddings": embeddings, f"{base}.encoder.layer.{{i}}": layer,
            f"{base}.pooler": _pooler()}
    rows = {
        f"{prefix}ForSequenceClassification": {**body, "classifier": sequence_classifier},
        f"{prefix}ForMultipleChoice": {**body, "classifier": CHOICE_CLASSIFIER},
        f"{prefix}ForTokenClassification": {**body, "classifier": TOKEN_CLASSIFIER},
        f"{prefix}ForQuestionAnswering": {**body, "qa_outputs": QA_OUTPUTS},
    }
    if mlm is not None:
        path, head = mlm
        rows[f"{prefix}ForMaskedLM"] = {**body, path: head}
    return rows


BERT_LAYER = _post_norm_layer(fused=True)
UNFUSED_LAYER = _post_norm_layer(fused=False)

BERT = _encoder_family("Bert", BERT_EMBEDDINGS, BERT_LAYER, ("cls", table(*MLM_HEAD, enters=HIDDEN)),
                       POOLED_CLASSIFIER)
BERT["BertForPreTraining"] = {
    **BERT["BertForMaskedLM"],
    "cls": table(*MLM_HEAD, linear("pooled", "b", "h", "2"), cross_entropy("next sentence", "b", "2"),
                 enters=(*HIDDEN, Kept("pooled", "b*h"))),
}
BERT["BertModel"] = {"embeddings": BERT_EMBEDDINGS, "encoder.layer.{i}": BERT_LAYER, "pooler": _pooler()}

ROBERTA = _encoder_family(
    "Roberta", POSITION_EMBEDDINGS, UNFUSED_LAYER, ("lm_head", table(*MLM_HEAD, enters=HIDDEN)),
    # RobertaClassificationHead: dense and tanh on the first token, then the projection
    table(linear("hidden", "b", "h", "h", storage="b*s*h"), elementwise("pooled", "b*h", "tanh"),
          linear("pooled", "b", "h", "n"), cross_entropy("loss", "b", "n"), enters=HIDDEN))

MPNET = {
    "MPNetModel": {"embeddings": POSITION_EMBEDDINGS, "encoder.relative_attention_bias": table(embedding(
        "buckets", "s*s")), "encoder.layer.{i}": BERT_LAYER, "pooler": _pooler()},
    "MPNetForMaskedLM": {"mpnet.embeddings": POSITION_EMBEDDINGS, "mpnet.encoder.relative_attention_bias": table(
        embedding("buckets", "s*s")), "mpnet.encoder.layer.{i}": BERT_LAYER, "lm_head": table(*MLM_HEAD, enters=HIDDEN)},
}

DISTILBERT_BODY = {"distilbert.embeddings": BERT_EMBEDDINGS, "distilbert.transformer.layer.{i}": UNFUSED_LAYER}
PRE_CLASSIFIER = table(linear("hidden", "b", "h", "h", storage="b*s*h"),
                       elementwise("pre-classified", "b*h", "relu"), enters=HIDDEN, leaves=(Kept("pooled", "b*h"),))
DISTILBERT = {
    "DistilBertForMaskedLM": {
        **DISTILBERT_BODY,
        "vocab_transform": table(linear("hidden", "b*s", "h", "h"), elementwise("transformed", "b*s*h"), enters=HIDDEN),
        "vocab_layer_norm": table(layer_norm("activated", "b*s", "h")),
        "vocab_projector": table(linear("normalised", "b*s", "h", "v"), cross_entropy("masked tokens", "b*s", "v")),
    },
    "DistilBertForSequenceClassification": {**DISTILBERT_BODY, "pre_classifier": PRE_CLASSIFIER,
                                            "classifier": POOLED_CLASSIFIER},
    "DistilBertForMultipleChoice": {**DISTILBERT_BODY, "pre_classifier": PRE_CLASSIFIER,
                                    "classifier": CHOICE_CLASSIFIER},
    "DistilBertForTokenClassification": {**DISTILBERT_BODY, "classifier": TOKEN_CLASSIFIER},
    "DistilBertForQuestionAnswering": {**DISTILBERT_BODY, "qa_outputs": QA_OUTPUTS},
}

# --- GPT-2 ---------------------------------------------------------------------------------------------------------

GPT2_BODY = {
    "transformer.wte": table(embedding("ids", "b*s"), enters=(Kept("ids", "b*s", INTEGER),)),
    "transformer.wpe": table(embedding("positions", "s"), leaves=HIDDEN),
    "transformer.h.{i}": _pre_norm_layer(gelu_keeps=4),
    "transformer.ln_f": table(layer_norm("hidden", "b*s", "h"), enters=HIDDEN, leaves=HIDDEN),
}
GPT2 = {
    "GPT2LMHeadModel": {**GPT2_BODY, "lm_head": table(linear("hidden", "b*s", "h", "v"),
                                                      cross_entropy("next tokens", "b*s", "v"), enters=HIDDEN)},
    # the logits of each sequence's last token, picked by two index tensors
    "GPT2ForSequenceClassification": {**GPT2_BODY, "score": table(
        linear("hidden", "b*s", "h", "n"), keep("last tokens", "2*b", INTEGER), cross_entropy("loss", "b", "n"),
        enters=HIDDEN)},
    "GPT2ForTokenClassification": {**GPT2_BODY, "classifier": TOKEN_CLASSIFIER},
}


def _gpt2_dims(config: Any, shape: Any) -> Dict[str, int]:
    h, a = config.n_embd, config.n_head
    return {"b": shape.micro_batch_size, "s": shape.sequence_length, "h": h, "a": a, "d": h // a,
            "i": read(config, "n_inner") or 4 * h, "v": config.vocab_size, "n": config.num_labels}


def _with(kind: str, dims: Callable[[Any, Any], Dict[str, int]],
          rows: Mapping[str, Mapping[str, Table]]) -> Dict[str, ArchitectureCosts]:
    return {name: ArchitectureCosts(kind, dims, tables) for name, tables in rows.items()}


def _distilbert_dims(config: Any, shape: Any) -> Dict[str, int]:
    return _encoder_dims(config, shape, "dim", "n_heads", "hidden_dim")


COSTS: Dict[str, ArchitectureCosts] = {
    **_with(TEXT, _encoder_dims, {**BERT, **ROBERTA, **MPNET}),
    **_with(TEXT, _distilbert_dims, DISTILBERT),
    **_with(TEXT, _gpt2_dims, GPT2),
}
