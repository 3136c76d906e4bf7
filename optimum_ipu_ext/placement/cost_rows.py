"""The cost tables: what each step of optimum-graphcore 0.7.1's pipelined models keeps for the backward pass and
computes, for one training micro-batch, in the vocabulary of cost_ops.py.

Sizes, as the formulas name them (`dims` of each family):
b sequences of the micro-batch (examples x choices), e examples, c choices, s tokens (patches, frames) of the encoder,
t tokens of the decoder, h hidden size, a attention heads, d head size, i feed-forward size, v vocabulary, n labels,
layer: the index of a layer in its group (`last`: the index of the last one).

Read off the forward passes of transformers 4.29.2 and optimum-graphcore 0.7.1's overrides (BERT, GroupBERT and
MPNet attend with one fused query-key-value weight, concatenated in each pass and kept), and checked against them by
tests/placement/test_upstream_costs.py.
"""

import re
from typing import Any, Callable, Dict, Mapping, NamedTuple

from .cost_ops import (
    BOOL,
    INTEGER,
    Kept,
    Op,
    Table,
    attention,
    conv,
    cross_entropy,
    elementwise,
    embedding,
    keep,
    layer_norm,
    linear,
    matmul,
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


WHISPER_SOURCE_POSITIONS = 1500  # WhisperConfig's defaults: 3000 frames of features, 448 tokens
WHISPER_TARGET_POSITIONS = 448


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
    """BERT-like sizes; the defaults are BertConfig's and DistilBertConfig's (12 heads, 3072 wide)."""
    h = getattr(config, hidden)
    a = read(config, heads, 12)
    return {"e": shape.micro_batch_size, "c": shape.choices, "b": shape.micro_batch_size * shape.choices,
            "s": shape.sequence_length, "h": h, "a": a, "d": h // a, "i": read(config, intermediate, 3072),
            "v": read(config, "vocab_size", 0), "n": config.num_labels}


BERT_LAYER = _post_norm_layer(fused=True)
UNFUSED_LAYER = _post_norm_layer(fused=False)

# MPNet's relative position buckets, computed once for all layers
MPNET_BUCKETS = table(embedding("buckets", "s*s"), enters=HIDDEN, leaves=HIDDEN)
MPNET = {
    "MPNetModel": {"embeddings": POSITION_EMBEDDINGS, "encoder.relative_attention_bias": MPNET_BUCKETS,
                   "encoder.layer.{i}": BERT_LAYER, "pooler": _pooler()},
    "MPNetForMaskedLM": {
        "mpnet.embeddings": POSITION_EMBEDDINGS, "mpnet.encoder.relative_attention_bias": MPNET_BUCKETS,
        "mpnet.encoder.layer.{i}": BERT_LAYER, "lm_head": table(*MLM_HEAD, enters=HIDDEN)},
}

DISTILBERT_BODY = {"distilbert.embeddings": BERT_EMBEDDINGS, "distilbert.transformer.layer.{i}": UNFUSED_LAYER}
PRE_CLASSIFIER = table(linear("hidden", "b", "h", "h", storage="b*s*h"),
                       elementwise("pre-classified", "b*h", "relu"), enters=HIDDEN, leaves=(Kept("pooled", "b*h"),))
DISTILBERT = {
    "DistilBertForMaskedLM": {
        **DISTILBERT_BODY,
        "vocab_transform": table(linear("hidden", "b*s", "h", "h"), elementwise("transformed", "b*s*h"),
                                 enters=HIDDEN),
        "vocab_layer_norm": table(layer_norm("activated", "b*s", "h"), enters=HIDDEN, leaves=HIDDEN),
        "vocab_projector": table(linear("normalised", "b*s", "h", "v"), cross_entropy("masked tokens", "b*s", "v"),
                                 enters=HIDDEN),
    },
    "DistilBertForSequenceClassification": {**DISTILBERT_BODY, "pre_classifier": PRE_CLASSIFIER,
                                            "classifier": POOLED_CLASSIFIER},
    "DistilBertForMultipleChoice": {**DISTILBERT_BODY, "pre_classifier": PRE_CLASSIFIER,
                                    "classifier": CHOICE_CLASSIFIER},
    "DistilBertForTokenClassification": {**DISTILBERT_BODY, "classifier": TOKEN_CLASSIFIER},
    "DistilBertForQuestionAnswering": {**DISTILBERT_BODY, "qa_outputs": QA_OUTPUTS},
}

# --- T5, MT5 ---------------------------------------------------------------------------------------------------------


def _t5_attention(prefix: str, queries: str, keys: str, relative: bool, buckets: str) -> tuple:
    """T5's attention on normalised inputs: the query, key and value projections (keys and values of `keys`
    positions, from the encoder in a cross-attention), and in the first layer the relative position buckets."""
    normalised = f"{prefix}: normalised"
    projections = (linear(normalised, f"b*{queries}", "h", "3*a*d"),) if queries == keys else (
        linear(normalised, f"b*{queries}", "h", "a*d"), linear("encoder output", f"b*{keys}", "h", "2*a*d"))
    return (
        *projections,
        embedding(f"{prefix}: buckets", buckets, when=f"{relative} and layer == 0"),
        attention(prefix, "b", "a", queries, keys, "d"),
        linear(f"{prefix}: context", f"b*{queries}", "a*d", "h"),
    )


def _t5_feed_forward(length: str, gated: bool) -> tuple:
    """ReLU (T5), or gelu gating (MT5: the tanh approximation keeps 4 tensors, the gate and its product 3 more, and
    a mask of the values clamped)."""
    rows = f"b*{length}"
    if not gated:
        return (linear("feed-forward: normalised", rows, "h", "i"), elementwise("activated", f"{rows}*i", "relu"),
                linear("activated", rows, "i", "h"))
    return (linear("feed-forward: normalised", rows, "h", "2*i"),
            *(elementwise(f"gated {index}", f"{rows}*i") for index in range(7)),
            keep("clamped", f"{rows}*i", BOOL), linear("activated", rows, "i", "h"))


def _t5_block(decoder: bool, gated: bool) -> Table:
    length = "t" if decoder else "s"
    rows = f"b*{length}"
    cross = (rms_norm("cross: input", rows, "h"), *_t5_attention("cross", "t", "s", False, "")) if decoder else ()
    hidden = DECODER_HIDDEN if decoder else HIDDEN
    return table(
        rms_norm("self: input", rows, "h"),
        # the first layer's input is a view of the one lookup of the encoder's and the decoder's ids together
        keep("the other stack's embeddings", "b*t*h" if length == "s" else "b*s*h", when="joint and layer == 0"),
        *_t5_attention("self", length, length, True, f"{length}*{length}"),
        *cross,
        rms_norm("feed-forward: input", rows, "h"),
        *_t5_feed_forward(length, gated),
        enters=(*hidden, *((Kept("encoder output", "b*s*h"),) if decoder else ())), leaves=hidden)


def _t5_rows(gated: bool) -> Dict[str, Table]:
    return {
        "shared": table(embedding("ids", "b*s + b*t"), enters=(Kept("ids", "b*s + b*t", INTEGER),), leaves=HIDDEN),
        "encoder.block.{i}": _t5_block(False, gated),
        "encoder.final_layer_norm": table(rms_norm("hidden", "b*s", "h"), enters=HIDDEN, leaves=HIDDEN),
        "decoder.block.{i}": _t5_block(True, gated),
        "decoder.final_layer_norm": table(rms_norm("hidden", "b*t", "h"), enters=DECODER_HIDDEN,
                                          leaves=DECODER_HIDDEN),
        # tied to the embedding, the hidden state is scaled by d_model ** -0.5 first: a new tensor either way
        "lm_head": table(linear("hidden", "b*t", "h", "v"), cross_entropy("next tokens", "b*t", "v"),
                         enters=DECODER_HIDDEN),
    }


T5 = {
    "T5ForConditionalGeneration": _t5_rows(gated=False),
    "MT5ForConditionalGeneration": _t5_rows(gated=True),
    "T5EncoderModel": {**_t5_rows(gated=False), "shared": table(embedding("ids", "b*s"), leaves=HIDDEN,
                                                                 enters=(Kept("ids", "b*s", INTEGER),))},
}


def _t5_dims(config: Any, shape: Any) -> Dict[str, int]:
    return {"b": shape.micro_batch_size, "s": shape.sequence_length, "t": shape.decoder_sequence_length,
            "h": config.d_model, "a": read(config, "num_heads", 8), "d": read(config, "d_kv", 64),
            "i": read(config, "d_ff", 2048), "v": config.vocab_size,
            "joint": True}


def _t5_encoder_dims(config: Any, shape: Any) -> Dict[str, int]:
    """T5EncoderModel embeds its ids alone."""
    return {**_t5_dims(config, shape), "joint": False}


# --- BART, Whisper ---------------------------------------------------------------------------------------------------


def _decoder_layer(pre_norm: bool, classifying: bool = False) -> Table:
    """A BART (post-norm) or Whisper (pre-norm) decoder layer: self-attention, cross-attention on the encoder's
    output, feed-forward. `classifying`: the last layer of BartForSequenceClassification picks each sequence's last
    end-of-sequence token after it."""
    def norm(name: str) -> tuple:
        return (layer_norm(name, "b*t", "h"),)

    def block(name: str, ops: tuple) -> tuple:
        return (*norm(f"{name}: residual"), *ops) if pre_norm else (*ops, *norm(f"{name}: sum"))

    return table(
        *block("self", (linear("self: input", "b*t", "h", "3*h"), attention("self", "b", "a", "t", "t", "d"),
                        linear("self: context", "b*t", "h", "h"))),
        *block("cross", (linear("cross: input", "b*t", "h", "h"), linear("encoder output", "b*s", "h", "2*h"),
                         attention("cross", "b", "a", "t", "s", "d"), linear("cross: context", "b*t", "h", "h"))),
        *block("feed-forward", (linear("feed-forward: input", "b*t", "h", "j"), elementwise("intermediate", "b*t*j"),
                                linear("activated", "b*t", "j", "h"))),
        keep("end-of-sequence positions", "b", INTEGER, when=f"{classifying} and layer == last"),
        enters=(*DECODER_HIDDEN, Kept("encoder output", "b*s*h")), leaves=DECODER_HIDDEN)


def _renamed(step: Table, **names: str) -> Table:
    """`step` with its sizes renamed in its formulas (`s="o"`: its sequence is LXMERT's objects)."""
    def rename(formula: str) -> str:
        return re.sub(r"\b(" + "|".join(names) + r")\b", lambda match: names[match.group(1)], formula)

    def kept(tensors: tuple) -> tuple:
        return tuple(tensor._replace(elements=rename(tensor.elements)) for tensor in tensors)

    ops = tuple(op._replace(keeps=kept(op.keeps), flops=rename(op.flops), when=rename(op.when)) for op in step.ops)
    return Table(ops, kept(step.enters), kept(step.leaves))


LM_HEAD = table(linear("hidden", "b*t", "h", "v"), cross_entropy("next tokens", "b*t", "v"), enters=DECODER_HIDDEN)
BART_BODY = {
    "model.shared": table(embedding("ids", "b*s + b*t"), enters=(Kept("ids", "b*s + b*t", INTEGER),)),
    "model.encoder.embed_positions": table(embedding("positions", "b*s"), enters=HIDDEN, leaves=HIDDEN),
    "model.encoder.layernorm_embedding": table(layer_norm("sum", "b*s", "h"), enters=HIDDEN, leaves=HIDDEN),
    "model.encoder.layers.{i}": UNFUSED_LAYER,
    "model.decoder.embed_positions": table(embedding("positions", "b*t"), enters=DECODER_HIDDEN,
                                           leaves=DECODER_HIDDEN),
    "model.decoder.layernorm_embedding": table(layer_norm("sum", "b*t", "h"), enters=DECODER_HIDDEN,
                                               leaves=DECODER_HIDDEN),
    "model.decoder.layers.{i}": _decoder_layer(pre_norm=False),
}
BART = {
    "BartForConditionalGeneration": {**BART_BODY, "lm_head": LM_HEAD},
    "BartForSequenceClassification": {
        **BART_BODY, "model.decoder.layers.{i}": _decoder_layer(pre_norm=False, classifying=True),
        "classification_head": table(linear("end-of-sequence hidden", "b", "h", "h"),
                                     elementwise("pooled", "b*h", "tanh"),
                                     linear("pooled", "b", "h", "n"), cross_entropy("loss", "b", "n"),
                                     enters=(Kept("end-of-sequence hidden", "b*h"),))},
}


def _bart_dims(config: Any, shape: Any, heads: int = 16, width: int = 4096) -> Dict[str, int]:
    """BART's sizes (the defaults are BartConfig's: 16 heads, feed-forward 4096 wide)."""
    h, a = config.d_model, read(config, "encoder_attention_heads", heads)
    return {"b": shape.micro_batch_size, "s": shape.sequence_length, "t": shape.decoder_sequence_length, "h": h,
            "a": a, "d": h // a, "i": read(config, "encoder_ffn_dim", width),
            "j": read(config, "decoder_ffn_dim", width), "v": config.vocab_size, "n": config.num_labels}


def _bart_classifier_dims(config: Any, shape: Any) -> Dict[str, int]:
    """BartForSequenceClassification's decoder reads the encoder's tokens, shifted."""
    return {**_bart_dims(config, shape), "t": shape.sequence_length}


WHISPER = {"WhisperForConditionalGeneration": {
    # the features' f frames, then s = f / 2 positions after the second convolution (stride 2)
    "model.encoder.conv1": table(conv("features", "b*m*f", "2*b*h*f*m*3"), elementwise("convolved", "b*h*f"),
                                 enters=(Kept("features", "b*m*f"),), leaves=(Kept("activated", "b*h*f"),)),
    "model.encoder.conv2": table(conv("activated", "b*h*f", "2*b*h*s*h*3"), elementwise("convolved", "b*h*s"),
                                 enters=(Kept("activated", "b*h*f"),), leaves=HIDDEN),
    "model.encoder.layers.{i}": _pre_norm_layer(),
    "model.encoder.layer_norm": table(layer_norm("hidden", "b*s", "h"), enters=HIDDEN, leaves=HIDDEN),
    "model.decoder.embed_tokens": table(embedding("ids", "b*t"), enters=(Kept("ids", "b*t", INTEGER),),
                                        leaves=DECODER_HIDDEN),
    "model.decoder.embed_positions": EMPTY,  # a slice of its weight
    "model.decoder.layers.{i}": _decoder_layer(pre_norm=True),
    "model.decoder.layer_norm": table(layer_norm("hidden", "b*t", "h"), enters=DECODER_HIDDEN,
                                      leaves=DECODER_HIDDEN),
    "proj_out": LM_HEAD,
}}


def _whisper_dims(config: Any, shape: Any) -> Dict[str, int]:
    return {**_bart_dims(config, shape, heads=4, width=1536), "f": shape.sequence_length,
            "s": shape.sequence_length // 2,
            "m": read(config, "num_mel_bins", 80)}


# --- HuBERT, Wav2Vec2 ------------------------------------------------------------------------------------------------

CTC_FRAMES_PER_LABEL = 4  # a transcript of one label (character) every 4 frames, 80 ms, for the CTC loss's sizes

# the feature extractor's convolution `layer`: its input, and the output of its convolution (the first one's
# group norm keeps its output and two statistics per channel too); CTC models freeze it, so it keeps nothing
_CONVOLUTION = (
    Op("conv", (), "conv_flops[layer]"),
    keep("input", "b*inputs[layer]*lengths[layer]", when="trained"),
    keep("convolved", "b*channels[layer]*lengths[layer + 1]", when="trained"),
    keep("normalised", "b*channels[0]*lengths[1] + 2*b*channels[0]", when="trained and group_norm and layer == 0"),
)
FEATURE_PROJECTION = table(
    layer_norm("features", "b*s", "channels[-1]"), linear("normalised", "b*s", "channels[-1]", "h"),
    keep("time mask", "b*s", BOOL, when="masks"),  # the frames masked (SpecAugment): a bool per frame
    enters=(Kept("features", "b*s*channels[-1]"),), leaves=HIDDEN)
POSITIONAL_CONVOLUTION = table(
    keep("weight norm", "positions_kernel"),  # the grouped convolution's weight, computed from its weight norm
    keep("weight", "h*(h//position_groups)*positions_kernel"),
    conv("transposed", "b*h*s", "2*b*h*positions_length*(h//position_groups)*positions_kernel"),
    elementwise("convolved", "b*h*positions_length"), enters=HIDDEN, leaves=HIDDEN)
ENCODER_NORM = table(layer_norm("hidden", "b*s", "h"), enters=HIDDEN, leaves=HIDDEN)


def _either(when: str, then: Table, otherwise: Table) -> Table:
    """`then`'s operations where `when` holds, else `otherwise`'s."""
    def only(step: Table, condition: str) -> tuple:
        return tuple(op._replace(when=f"({condition}) and ({op.when})") for op in step.ops)

    return Table((*only(then, when), *only(otherwise, f"not ({when})")), then.enters, then.leaves)


def _speech_body(prefix: str, pipelined: bool) -> Dict[str, Table]:
    encoder = f"{prefix}.encoder"
    extractor = {f"{prefix}.feature_extractor.conv_layers.{{i}}": table(*_CONVOLUTION)} if pipelined else {
        f"{prefix}.feature_extractor": table(Op("conv", (), "sum(conv_flops)"), keep("convolutions", "conv_kept"))}
    return {
        **extractor,
        f"{prefix}.feature_projection": FEATURE_PROJECTION,
        f"{prefix}.masked_spec_embed": EMPTY,
        encoder: table(enters=HIDDEN, leaves=HIDDEN),
        f"{encoder}.pos_conv_embed": POSITIONAL_CONVOLUTION,
        f"{encoder}.layer_norm": ENCODER_NORM,
        f"{encoder}.layers.{{i}}": _either("stable", _pre_norm_layer(), UNFUSED_LAYER),
        f"{prefix}.adapter": EMPTY,
    }


CTC_HEAD = table(
    linear("hidden", "b*s", "h", "v"), keep("log-probabilities", "b*s*v"),
    keep("lengths and targets", "2*b + b*labels", INTEGER), keep("alignments", "b*s*(2*labels + 1) + b"),
    enters=HIDDEN)
# Wav2Vec2's pre-training: the targets are the features quantised by G groups of V codevectors (Gumbel softmax,
# with the perplexity of the codevectors used over the masked frames), compared by cosine similarity with the
# projected hidden states, and with K negatives drawn from other frames (a contrastive loss over K + 1 candidates)
WAV2VEC2_PRETRAINING_HEADS = {
    "project_hid": table(linear("hidden", "b*s", "h", "projected"), enters=HIDDEN),
    "quantizer": table(
        linear("features", "b*s", "channels[-1]", "groups*codevectors"),
        keep("distributions", "3*b*s*groups*codevectors"), keep("masked frames", "b*s"),
        keep("perplexity", "3*groups*codevectors + groups + 1"), keep("picked", "b*s*groups + 1", INTEGER),
        matmul("b*s*groups", "1", "codevectors", "codevector_dim//groups"),
        enters=(Kept("features", "b*s*channels[-1]"),)),
    "project_q": table(
        linear("quantised", "b*s", "codevector_dim", "projected"),
        keep("negatives' indices", "b*s*negatives + b*s + 1", INTEGER),
        keep("targets", "b*s*projected"),
        keep("candidates", "3*(negatives + 1)*b*s*projected + 5*(negatives + 1)*b*s + 1"),
        keep("negatives equal to their target", "(negatives + 1)*b*s", BOOL),
        enters=(Kept("quantised", "b*s*codevector_dim"), Kept("projected", "b*s*projected"))),
}
SPEECH = {
    "Wav2Vec2ForPreTraining": {**_speech_body("wav2vec2", True), **WAV2VEC2_PRETRAINING_HEADS},
    "HubertForCTC": {**_speech_body("hubert", True), "lm_head": CTC_HEAD},
    "Wav2Vec2ForCTC": {**_speech_body("wav2vec2", True), "lm_head": CTC_HEAD},
    "HubertForSequenceClassification": {
        **_speech_body("hubert", False),
        "projector": table(linear("hidden", "b*s", "h", "p"), enters=HIDDEN),
        "classifier": table(linear("pooled", "b", "p", "n"), cross_entropy("loss", "b", "n"),
                            enters=(Kept("pooled", "b*p"),)),
    },
}


def _speech_dims(config: Any, shape: Any, trained: bool = True) -> Dict[str, Any]:
    channels = list(read(config, "conv_dim", [512] * 7))
    kernels = list(read(config, "conv_kernel", [10, 3, 3, 3, 3, 2, 2]))
    strides = list(read(config, "conv_stride", [5, 2, 2, 2, 2, 2, 2]))
    inputs = [1, *channels[:-1]]
    lengths = [shape.sequence_length]
    for kernel, stride in zip(kernels, strides):
        lengths.append((lengths[-1] - kernel) // stride + 1)
    b, frames, h = shape.micro_batch_size, lengths[-1], config.hidden_size
    group_norm = read(config, "feat_extract_norm", "group") == "group"
    conv_kept = sum(b * inputs[k] * lengths[k] + b * channels[k] * lengths[k + 1] for k in range(len(kernels)))
    conv_kept += (b * channels[0] * lengths[1] + 2 * b * channels[0]) if group_norm else 0
    positions_kernel = read(config, "num_conv_pos_embeddings", 128)
    a = read(config, "num_attention_heads", 12)
    return {
        "b": b, "s": frames, "h": h, "a": a, "d": h // a, "i": read(config, "intermediate_size", 3072),
        "v": read(config, "vocab_size", 32), "n": config.num_labels, "p": config.classifier_proj_size,
        "channels": channels, "inputs": inputs, "lengths": lengths, "trained": trained, "group_norm": group_norm,
        "conv_flops": [2 * b * channels[k] * lengths[k + 1] * inputs[k] * kernels[k] for k in range(len(kernels))],
        "conv_kept": conv_kept if trained else 0,
        "masks": read(config, "mask_time_prob", 0.05) > 0, "stable": config.do_stable_layer_norm,
        "positions_kernel": positions_kernel, "position_groups": read(config, "num_conv_pos_embedding_groups", 16),
        "positions_length": frames + 1 - positions_kernel % 2,  # an even kernel pads one frame too many
        "labels": max(1, frames // CTC_FRAMES_PER_LABEL),
    }


def _frozen_extractor_dims(config: Any, shape: Any) -> Dict[str, Any]:
    return _speech_dims(config, shape, trained=False)


def _pretraining_dims(config: Any, shape: Any) -> Dict[str, Any]:
    """Pre-training always masks frames (the data collator gives the mask)."""
    return {**_speech_dims(config, shape), "masks": True,
            "groups": read(config, "num_codevector_groups", 2), "codevectors": config.num_codevectors_per_group,
            "codevector_dim": config.codevector_dim, "projected": config.proj_codevector_dim,
            "negatives": read(config, "num_negatives", 100)}


# --- DeBERTa ---------------------------------------------------------------------------------------------------------


def _deberta_norm(x: str, rows: str, width: str) -> tuple:
    """DebertaLayerNorm, written out in float32 ops: keeps its input, two centred copies and the deviation."""
    return (keep(x, f"({rows})*({width})"), keep(f"{x}: centred", f"2*({rows})*({width})"),
            keep(f"{x}: deviation", rows))


def _disentangled(name: str, when: str) -> tuple:
    """Content-to-position or position-to-content scores: the projected relative embeddings and the queries (or keys),
    copied for their product, the gather's index (one per pair of tokens) over the r relative distances, and the
    gathered scores."""
    return (
        matmul("b*a", "s", "d", "r", (Kept(f"{name}: positions", "b*a*d*r"), Kept(f"{name}: content", "b*a*s*d")),
               when),
        keep(f"{name}: index", "s*s", INTEGER, when), keep(f"{name}: scores", "b*a*s*r", when=when),
    )


DEBERTA_LAYER = table(
    linear("input", "b*s", "h", "3*h"),
    keep("scale", "1"),
    matmul("b*a", "s", "d", "s", (Kept("queries", "b*a*s*d"), Kept("keys", "b*a*s*d"))),
    # the r relative embeddings the sequence spans, a slice of all 2P of them (normalised: a tensor of its own)
    linear("relative embeddings", "r", "h", "2*h", when="relative", storage="2*positions*h"),
    keep("position scale", "1", when="relative"),
    *_disentangled("content to position", "relative and c2p"),
    *_disentangled("position to content", "relative and p2c"),
    keep("probabilities", "2*b*a*s*s"),  # XSoftmax masks its output: two tensors
    matmul("b*a", "s", "s", "d", (Kept("values", "b*a*s*d"),)),
    linear("context", "b*s", "h", "h"),
    *_deberta_norm("attention sum", "b*s", "h"),
    linear("attention output", "b*s", "h", "i"),
    elementwise("intermediate", "b*s*i"),
    linear("activated", "b*s", "i", "h"),
    *_deberta_norm("output sum", "b*s", "h"),
    # the masked LM picks its m masked tokens after the last layer, multiplying by their one-hot positions
    matmul("b", "m", "s", "h", (Kept("one-hot positions", "b*m*s"),), when="masked_lm and layer == last"),
    enters=HIDDEN, leaves=HIDDEN)
DEBERTA_BODY = {
    "deberta.embeddings": table(embedding("ids", "b*s"), *_deberta_norm("sum", "b*s", "h"), keep("mask", "b*s"),
                                enters=(Kept("ids", "b*s", INTEGER),), leaves=HIDDEN),
    "deberta.encoder": table(enters=HIDDEN, leaves=HIDDEN),
    "deberta.encoder.layer.{i}": DEBERTA_LAYER,
}
DEBERTA = {
    "DebertaForMaskedLM": {
        **DEBERTA_BODY,
        "cls.predictions.transform": table(linear("masked", "b*m", "h", "h"), elementwise("transformed", "b*m*h"),
                                           layer_norm("activated", "b*m", "h"), enters=(Kept("masked", "b*m*h"),)),
        "cls.predictions.decoder": table(linear("normalised", "b*m", "h", "v"),
                                         cross_entropy("masked tokens", "b*m", "v"),
                                         enters=(Kept("normalised", "b*m*h"),)),
    },
    "DebertaForSequenceClassification": {
        **DEBERTA_BODY,
        "pooler": _pooler(),
        "classifier": table(linear("pooled", "b", "h", "n"), keep("label index", "b", INTEGER),
                            keep("picked logits", "b*n"), cross_entropy("loss", "b", "n"),
                            enters=(Kept("pooled", "b*h"),)),
    },
    "DebertaForTokenClassification": {**DEBERTA_BODY, "classifier": TOKEN_CLASSIFIER},
    "DebertaForQuestionAnswering": {**DEBERTA_BODY, "qa_outputs": QA_OUTPUTS},
}


def _deberta_dims(config: Any, shape: Any, masked_lm: bool = False) -> Dict[str, Any]:
    dims = _encoder_dims(config, shape)
    positions = read(config, "max_relative_positions", -1)
    if positions < 1:
        positions = read(config, "max_position_embeddings", 512)
    kinds = read(config, "pos_att_type", None) or []
    return {**dims, "r": 2 * min(dims["s"], positions), "positions": positions,
            "relative": bool(read(config, "relative_attention", False)),
            "c2p": "c2p" in kinds, "p2c": "p2c" in kinds, "m": int(dims["s"] * 0.25), "masked_lm": masked_lm}


def _deberta_masked_lm_dims(config: Any, shape: Any) -> Dict[str, Any]:
    """Upstream's DebertaForMaskedLM predicts a quarter of the tokens (m), those its labels rank first."""
    return _deberta_dims(config, shape, masked_lm=True)


# --- LXMERT ----------------------------------------------------------------------------------------------------------

LXMERT_OBJECTS = 36  # the regions of interest of each image, as LXMERT's pre-training and fine-tuning detect them


def _attention_block(name: str, queries: str, keys: str, query_input: str, key_input: str) -> tuple:
    """Post-norm attention of `queries` positions of `query_input` on `keys` positions of `key_input`, then add and
    norm (`queries` == `keys` and one input: self-attention)."""
    projections = (linear(query_input, f"b*{queries}", "h", "3*h"),) if query_input == key_input else (
        linear(query_input, f"b*{queries}", "h", "h"), linear(key_input, f"b*{keys}", "h", "2*h"))
    return (*projections, attention(name, "b", "a", queries, keys, "d"),
            linear(f"{name}: context", f"b*{queries}", "h", "h"), layer_norm(f"{name}: sum", f"b*{queries}", "h"))


def _feed_forward_block(name: str, length: str, source: str) -> tuple:
    rows = f"b*{length}"
    return (linear(source, rows, "h", "i"), elementwise(f"{name}: intermediate", f"{rows}*i"),
            linear(f"{name}: activated", rows, "i", "h"), layer_norm(f"{name}: output sum", rows, "h"))


LXMERT = {"LxmertForQuestionAnswering": {
    # the ids, their token types, and the positions (one row, broadcast)
    "lxmert.embeddings": table(keep("ids", "2*b*s + s", INTEGER), layer_norm("sum", "b*s", "h"),
                               enters=(Kept("ids", "b*s", INTEGER),), leaves=HIDDEN),
    "lxmert.encoder.visn_fc": table(
        linear("features", "b*o", "features", "h"), layer_norm("projected features", "b*o", "h"),
        linear("boxes", "b*o", "boxes", "h"), layer_norm("projected boxes", "b*o", "h"),
        enters=(Kept("features", "b*o*(features + boxes)"),), leaves=(Kept("objects", "b*o*h"),)),
    "lxmert.encoder.layer.{i}": UNFUSED_LAYER,
    "lxmert.encoder.r_layers.{i}": _renamed(UNFUSED_LAYER, s="o"),
    # each modality attends to the other (one module both ways), then to itself, then its feed-forward
    "lxmert.encoder.x_layers.{i}": table(
        *_attention_block("language to vision", "s", "o", "language", "vision"),
        *_attention_block("vision to language", "o", "s", "vision", "language"),
        *_attention_block("language", "s", "s", "language: attended", "language: attended"),
        *_attention_block("vision", "o", "o", "vision: attended", "vision: attended"),
        *_feed_forward_block("language", "s", "language: self-attended"),
        *_feed_forward_block("vision", "o", "vision: self-attended"),
        enters=(*HIDDEN, Kept("objects", "b*o*h")), leaves=(*HIDDEN, Kept("objects", "b*o*h"))),
    "lxmert.pooler": _pooler(),
    "answer_head": table(
        linear("pooled", "b", "h", "2*h"), elementwise("expanded", "b*2*h"), layer_norm("activated", "b", "2*h"),
        linear("normalised", "b", "2*h", "answers"), cross_entropy("loss", "b", "answers"),
        enters=(Kept("pooled", "b*h"),)),
}}


def _lxmert_dims(config: Any, shape: Any) -> Dict[str, Any]:
    return {**_encoder_dims(config, shape), "o": LXMERT_OBJECTS, "features": read(config, "visual_feat_dim", 2048),
            "boxes": read(config, "visual_pos_dim", 4), "answers": read(config, "num_qa_labels", 9500)}


def _with(kind: str, dims: Callable[[Any, Any], Dict[str, int]],
          rows: Mapping[str, Mapping[str, Table]]) -> Dict[str, ArchitectureCosts]:
    return {name: ArchitectureCosts(kind, dims, tables) for name, tables in rows.items()}


def _distilbert_dims(config: Any, shape: Any) -> Dict[str, int]:
    return _encoder_dims(config, shape, "dim", "n_heads", "hidden_dim")


COSTS: Dict[str, ArchitectureCosts] = {
    **_with(TEXT, _encoder_dims, MPNET),
    **_with(TEXT, _distilbert_dims, DISTILBERT),
    **_with(ENCODER_DECODER, _t5_dims, {name: rows for name, rows in T5.items() if name != "T5EncoderModel"}),
    **_with(TEXT, _t5_encoder_dims, {"T5EncoderModel": T5["T5EncoderModel"]}),
    **_with(ENCODER_DECODER, _bart_dims, {"BartForConditionalGeneration": BART["BartForConditionalGeneration"]}),
    **_with(TEXT, _bart_classifier_dims, {"BartForSequenceClassification": BART["BartForSequenceClassification"]}),
    **_with(SPEECH_RECOGNITION, _whisper_dims, WHISPER),
    **_with(TEXT, _lxmert_dims, LXMERT),
    **_with(AUDIO, _frozen_extractor_dims, {name: SPEECH[name] for name in ("HubertForCTC", "Wav2Vec2ForCTC")}),
    **_with(TEXT, _deberta_dims, {name: rows for name, rows in DEBERTA.items() if name != "DebertaForMaskedLM"}),
    **_with(TEXT, _deberta_masked_lm_dims, {"DebertaForMaskedLM": DEBERTA["DebertaForMaskedLM"]}),
    **_with(AUDIO, _speech_dims, {"HubertForSequenceClassification": SPEECH["HubertForSequenceClassification"]}),
    **_with(AUDIO, _pretraining_dims, {"Wav2Vec2ForPreTraining": SPEECH["Wav2Vec2ForPreTraining"]}),
}
