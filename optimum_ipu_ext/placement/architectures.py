"""Where optimum-graphcore 0.7.1's `parallelize()` puts each part of a model: one row per class it registers a
pipelined version of (45), built from the templates of a few families, in the vocabulary of rules.py.

Read off `optimum/graphcore/models/*/modeling_*.py` (the `poptorch.BeginBlock` calls and `get_layer_ipu` lists of
each `parallelize()`) and the forward passes of transformers 4.29.2, which order the modules outside every block.
A test runs upstream's own `parallelize()` on a tiny model of every row and compares.
"""

from functools import partial
from typing import Any, Dict, Mapping, Optional, Tuple

from .bodies import (
    BART_DEFAULTS,
    DEBERTA_DEFAULTS,
    DISTILBERT_DEFAULTS,
    HUBERT_DEFAULTS,
    LXMERT_DEFAULTS,
    MPNET_DEFAULTS,
    MT5_DEFAULTS,
    T5_DEFAULTS,
    WAV2VEC2_DEFAULTS,
    WHISPER_DEFAULTS,
    Body,
    bart_body,
    deberta_body,
    distilbert_body,
    linear as _linear,
    lxmert_body,
    mpnet_body,
    norm as _norm,
    speech_body,
    t5_body,
    under as _under,
    whisper_body,
)
from .models.bert import BERT, GROUPBERT, ROBERTA
from .models.convnext import CONVNEXT
from .models.gpt2 import GPT2
from .models.rules import (
    LAST,
    Architecture,
    Block,
    FirstSplitIPU,
    LayerIPU,
    Layers,
    ModelConfig,
    Run,
    Split,
    Step,
    WhenConfig,
)
from .models.vit import VIT


def _head(block: str, path: str, outputs, width: str) -> Tuple[Tuple[Step, ...], Dict[str, Any]]:
    """A head of one linear layer (`outputs(config)` by the config's `width` field) in a block of its own on the last
    IPU: (its steps, its formula)."""
    return (Block(block, path, LAST),), {path: lambda c: _linear(path, outputs(c), getattr(c, width))}


def _labels(c: ModelConfig) -> int:
    return c.num_labels


# --- BERT-like encoders: BERT, GroupBERT, RoBERTa, MPNet ------------------------------------------------------------

def _pooler(base: str):
    return lambda c: _linear(_under(base, "pooler.dense"), c.hidden_size, c.hidden_size)


def _prediction_head(head: str, word_embeddings: str, transform: str = "transform.dense",
                     norm: str = "transform.LayerNorm", bias: str = "bias", decoder: str = "decoder"):
    """An MLM head: a dense layer and a norm, then a decoder tied to the word embeddings, with a bias of its own."""

    def shapes(c: ModelConfig) -> Dict[str, Tuple[int, ...]]:
        found = {**_linear(f"{head}.{transform}", c.hidden_size, c.hidden_size),
                 **_norm(f"{head}.{norm}", c.hidden_size), f"{head}.{bias}": (c.vocab_size,)}
        if not c.tie_word_embeddings:
            found[f"{head}.{decoder}.weight"] = (c.vocab_size, c.hidden_size)
        return found

    ties = {f"{head}.{decoder}.weight": (word_embeddings, "tie_word_embeddings"),
            f"{head}.{decoder}.bias": (f"{head}.{bias}", None)}
    return shapes, ties


def _encoder(name: str, model_type: str, prefix: str, tail: Tuple[Step, ...], defaults: Mapping[str, Any],
             body: Body, heads: Mapping[str, Any] = {}, ties: Mapping[str, Any] = {}, base: Optional[str] = None,
             after_embeddings: Tuple[Step, ...] = (), after_layers: Tuple[Step, ...] = (),
             serializes_embedding: bool = True, **fields: Any) -> Architecture:
    """A BERT-like row: an embedding block on IPU 0, the encoder layers as `get_layer_ipu` places them, then `tail`.
    `base`: where the encoder sits (the prefix, or "" for the bare model)."""
    base = prefix if base is None else base
    steps = (
        Block("Embedding", _under(base, "embeddings")),
        *after_embeddings,
        Layers("encoder", "Encoder{i}", _under(base, "encoder.layer.{i}"), "num_hidden_layers"),
        *after_layers,
        *tail,
    )
    word_embeddings = _under(base, "embeddings.word_embeddings.weight")
    fields.setdefault("reads_embedding_factor", True)
    return Architecture(name, (model_type,), prefix, steps, defaults, body, heads=heads, ties=ties,
                        serialized_embedding=word_embeddings if serializes_embedding else None, **fields)


def _encoder_family(family: str, model_type: str, prefix: str, defaults: Mapping[str, Any], body: Body, *,
                    pooled: Tuple[str, ...], after_layers: Tuple[Step, ...] = (),
                    masked_lm: Optional[Tuple[str, str, Tuple[Step, ...], Any, Any]] = None,
                    sequence_classifier: Any = None) -> Dict[str, Architecture]:
    """The heads a BERT-like family has: `{architecture: row}`. `pooled`: the heads whose model keeps the pooler,
    which runs after the last layer; `masked_lm`: (class suffix, head path, steps, shapes, ties)."""
    def row(suffix: str, tail: Tuple[Step, ...], heads: Mapping[str, Any], **fields: Any) -> Tuple[str, Architecture]:
        name = f"{family}{suffix}"
        if suffix in pooled:
            tail = (Run(f"{prefix}.pooler"), *tail)
            heads = {**heads, f"{prefix}.pooler": _pooler(prefix)}
        return name, _encoder(name, model_type, prefix, tail, defaults, body, heads=heads,
                              after_layers=after_layers, **fields)

    classifier, labels = _head("Classifier Output", "classifier", _labels, "hidden_size")
    rows = dict([
        row("ForSequenceClassification", classifier, sequence_classifier or labels),
        row("ForMultipleChoice", *_head("Classifier Output", "classifier", lambda c: 1, "hidden_size")),
        row("ForTokenClassification", classifier, labels),
        row("ForQuestionAnswering", *_head("QA Outputs", "qa_outputs", _labels, "hidden_size")),
    ])
    if masked_lm is not None:
        suffix, head, steps, shapes, ties = masked_lm
        rows.update([row(suffix, steps, {head: shapes}, ties=ties, serializes_embedding=False)])
    return rows


_MPNET_MLM_SHAPES, _MPNET_MLM_TIES = _prediction_head(
    "lm_head", "mpnet.embeddings.word_embeddings.weight", transform="dense", norm="layer_norm")


def _unserialized(settings: Mapping[str, Any]) -> bool:
    return (settings["embedding_serialization_factor"] or 1) <= 1


MPNET = {
    "MPNetModel": _encoder(
        "MPNetModel", "mpnet", "mpnet", (Block("Pooler", "pooler"),), MPNET_DEFAULTS, partial(mpnet_body, ""),
        heads={"pooler": _pooler("")},
        base="", after_embeddings=(Run("encoder.relative_attention_bias"),), serializes_embedding=False,
        reads_embedding_factor=False),
    # its __init__ builds a new encoder after the head is tied: the decoder keeps a copy of the word embeddings,
    # tied again only where `parallelize()` serializes it
    "MPNetForMaskedLM": _encoder(
        "MPNetForMaskedLM", "mpnet", "mpnet", (Block("Classifier", "lm_head"),), MPNET_DEFAULTS,
        partial(mpnet_body, "mpnet"),
        heads={"lm_head": _MPNET_MLM_SHAPES}, ties=_MPNET_MLM_TIES,
        after_embeddings=(Run("mpnet.encoder.relative_attention_bias"),), serializes_embedding=False,
        copies={"lm_head.decoder.weight": ("mpnet.embeddings.word_embeddings.weight", _unserialized)}),
}

# --- DistilBERT and DeBERTa -------------------------------------------------------------------------------------

def _distilbert(suffix: str, tail: Tuple[Step, ...], heads: Mapping[str, Any], **fields: Any) -> Architecture:
    name = f"DistilBert{suffix}"
    steps = (Block("Embedding", "distilbert.embeddings"),
             Layers("encoder", "Encoder{i}", "distilbert.transformer.layer.{i}", "n_layers"), *tail)
    fields.setdefault("serialized_embedding", "distilbert.embeddings.word_embeddings.weight")
    return Architecture(name, ("distilbert",), "distilbert", steps, DISTILBERT_DEFAULTS, distilbert_body, heads=heads,
                        reads_embedding_factor=True,
                        frozen={"distilbert.embeddings.position_embeddings": ("sinusoidal_pos_embds", True)}, **fields)


def _distilbert_mlm_shapes(c: ModelConfig) -> Dict[str, Tuple[int, ...]]:
    found = {**_linear("vocab_transform", c.dim, c.dim), **_norm("vocab_layer_norm", c.dim),
             "vocab_projector.bias": (c.vocab_size,)}
    if not c.tie_word_embeddings:
        found["vocab_projector.weight"] = (c.vocab_size, c.dim)
    return found


def _distilbert_classifier(outputs):
    return {"pre_classifier": lambda c: _linear("pre_classifier", c.dim, c.dim),
            "classifier": lambda c: _linear("classifier", outputs(c), c.dim)}


DISTILBERT_CLASSIFIER = (Block("Classifier", "pre_classifier", LAST), Block("Classifier", "classifier", LAST))

DISTILBERT = {
    "DistilBertForMaskedLM": _distilbert(
        "ForMaskedLM", (Block("LM Head", "vocab_transform"), Block("LM Head", "vocab_layer_norm"),
                        Block("LM Head", "vocab_projector")),
        {"vocab_transform": _distilbert_mlm_shapes},
        ties={"vocab_projector.weight": ("distilbert.embeddings.word_embeddings.weight", "tie_word_embeddings")},
        serialized_embedding=None),
    "DistilBertForSequenceClassification": _distilbert(
        "ForSequenceClassification", DISTILBERT_CLASSIFIER, _distilbert_classifier(lambda c: c.num_labels)),
    "DistilBertForMultipleChoice": _distilbert(
        "ForMultipleChoice", DISTILBERT_CLASSIFIER, _distilbert_classifier(lambda c: 1)),
    "DistilBertForTokenClassification": _distilbert(
        "ForTokenClassification", *_head("Classifier", "classifier", _labels, "dim")),
    "DistilBertForQuestionAnswering": _distilbert(
        "ForQuestionAnswering", *_head("QA Outputs", "qa_outputs", _labels, "dim")),
}

_DEBERTA_MLM_SHAPES, _DEBERTA_MLM_TIES = _prediction_head("cls.predictions",
                                                          "deberta.embeddings.word_embeddings.weight")


def _deberta(suffix: str, tail: Tuple[Step, ...], heads: Mapping[str, Any], **fields: Any) -> Architecture:
    """DeBERTa: the encoder and its relative embeddings are unnamed blocks on IPU 0; `parallelize()` reads the
    relative embeddings' weight in the encoder, before the first layer."""
    name = f"Deberta{suffix}"
    steps = (
        Block("Embedding", "deberta.embeddings"),
        Block(None, "deberta.encoder"),
        Block(None, "deberta.encoder.rel_embeddings", called=False, when=("relative_attention", True)),
        Layers("encoder", "Encoder{i}", "deberta.encoder.layer.{i}", "num_hidden_layers"),
        *tail,
    )
    fields.setdefault("serialized_embedding", "deberta.embeddings.word_embeddings.weight")
    return Architecture(name, ("deberta",), "deberta", steps, DEBERTA_DEFAULTS, deberta_body, heads=heads,
                        reads_embedding_factor=True, **fields)


DEBERTA = {
    "DebertaForMaskedLM": _deberta(
        "ForMaskedLM", (Run("cls.predictions.transform"), Block("Projection", "cls.predictions.decoder")),
        {"cls": _DEBERTA_MLM_SHAPES}, ties=_DEBERTA_MLM_TIES, serialized_embedding=None),
    "DebertaForSequenceClassification": _deberta(
        "ForSequenceClassification", (Run("pooler"), Block("Classifier Output", "classifier", LAST)),
        {"pooler": lambda c: _linear("pooler.dense", c.pooler_hidden_size, c.pooler_hidden_size),
         "classifier": lambda c: _linear("classifier", c.num_labels, c.pooler_hidden_size)}),
    "DebertaForTokenClassification": _deberta(
        "ForTokenClassification", *_head("Classifier Output", "classifier", _labels, "hidden_size")),
    "DebertaForQuestionAnswering": _deberta(
        "ForQuestionAnswering", *_head("QA Outputs", "qa_outputs", _labels, "hidden_size")),
}

# --- encoder-decoders: BART, T5, MT5, Whisper ---------------------------------------------------------------------

GENERATION_KWARGS = ("for_generation", "use_cache", "*")


def _bart(name: str, head: Block, shapes: Any, ties: Mapping[str, Any], **fields: Any) -> Architecture:
    """BART: one embedding shared by the encoder and the decoder, computed once on IPU 0; each stack's positions
    and embedding norm are blocks named "Embedding" on IPU 0 too."""
    steps = (
        Block("Embedding", "model.shared"),
        Block("Embedding", "model.encoder.embed_positions", executor="encoder"),
        Block("Embedding", "model.encoder.layernorm_embedding", executor="encoder"),
        Layers("encoder", "Encoder{i}", "model.encoder.layers.{i}", "encoder_layers", executor="encoder"),
        Block("Embedding", "model.decoder.embed_positions", executor="decoder"),
        Block("Embedding", "model.decoder.layernorm_embedding", executor="decoder"),
        Layers("decoder", "Decoder{i}", "model.decoder.layers.{i}", "decoder_layers", executor="decoder"),
        head,
    )
    shared = {f"model.{stack}.embed_tokens.weight": ("model.shared.weight", None) for stack in ("encoder", "decoder")}
    return Architecture(name, ("bart",), "model", steps, BART_DEFAULTS, bart_body, heads={head.path: shapes},
                        ties={**shared, **ties}, **fields)


BART = {
    "BartForConditionalGeneration": _bart(
        "BartForConditionalGeneration", Block("LM Head Output", "lm_head", executor="decoder"),
        lambda c: {} if c.tie_word_embeddings else _linear("lm_head", c.vocab_size, c.d_model, bias=False),
        {"lm_head.weight": ("model.shared.weight", "tie_word_embeddings")},
        kwargs=GENERATION_KWARGS, generation=("encoder", "decoder"), reads_embedding_factor=True),
    "BartForSequenceClassification": _bart(
        "BartForSequenceClassification",
        Block("Classification Head Output", "classification_head", LayerIPU("decoder", -1)),
        lambda c: {**_linear("classification_head.dense", c.d_model, c.d_model),
                   **_linear("classification_head.out_proj", c.num_labels, c.d_model)}, {}),
}

T5_ENCODER = (
    Block("Embedding", "shared"),
    Layers("encoder", "Encoder{i}", "encoder.block.{i}", "num_layers", executor="encoder"),
    Block("Encoder Stack Final LayerNorm", "encoder.final_layer_norm", LayerIPU("encoder", -1), executor="encoder"),
)
T5_DECODER = (
    Layers("decoder", "Decoder{i}", "decoder.block.{i}", "num_decoder_layers", executor="decoder"),
    Block("Decoder Stack Final LayerNorm", "decoder.final_layer_norm", LayerIPU("decoder", -1), executor="decoder"),
)
T5_TIES = {f"{stack}.embed_tokens.weight": ("shared.weight", None) for stack in ("encoder", "decoder")}


def _t5_lm_head(c: ModelConfig) -> Dict[str, Tuple[int, ...]]:
    return {} if c.tie_word_embeddings else _linear("lm_head", c.vocab_size, c.d_model, bias=False)


T5 = {
    "T5ForConditionalGeneration": Architecture(
        "T5ForConditionalGeneration", ("t5",), "transformer",
        (*T5_ENCODER, *T5_DECODER, Block("LM Head Output", "lm_head", executor="decoder")), T5_DEFAULTS,
        partial(t5_body, True),
        heads={"lm_head": _t5_lm_head}, ties={**T5_TIES, "lm_head.weight": ("shared.weight", "tie_word_embeddings")},
        kwargs=("for_generation", "use_cache", "use_cross_cache", "*"), generation=("encoder", "decoder"),
        reads_embedding_factor=True),
    "T5EncoderModel": Architecture(
        "T5EncoderModel", ("t5",), "transformer", T5_ENCODER, T5_DEFAULTS, partial(t5_body, False),
        ties={"encoder.embed_tokens.weight": ("shared.weight", None)}),
    # the LM head goes with the embedding it is tied to, else to the last IPU; untied, the embedding and the head
    # may be split over IPUs
    "MT5ForConditionalGeneration": Architecture(
        "MT5ForConditionalGeneration", ("mt5",), "transformer",
        (Split("Embedding", "shared", "split_embeddings", "serialized_embedding_splits_per_ipu",
               "embedding_serialization_factor", T5_ENCODER[0], own_share=False, factor_divides=True),
         *T5_ENCODER[1:], *T5_DECODER,
         Split("Linear", "lm_head", "split_linear_layers", "serialized_projection_splits_per_ipu",
               "projection_serialization_factor",
               Block("LM Head Output", "lm_head", WhenConfig("tie_word_embeddings", 0, LAST), executor="decoder"),
               own_share=True, factor_divides=False)),
        MT5_DEFAULTS, partial(t5_body, True), heads={"lm_head": _t5_lm_head},
        ties={**T5_TIES, "lm_head.weight": ("shared.weight", "tie_word_embeddings")},
        kwargs=("for_generation",), generation=("encoder", "decoder"), untied_splits=True),
}

# the decoder's embedding and the output projection tied to it go where the decoder starts, or where
# `serialized_projection_splits_per_ipu` puts the projection
WHISPER_PROJECTION_IPU = FirstSplitIPU("serialized_projection_splits_per_ipu", LayerIPU("decoder", 0))

WHISPER = {
    "WhisperForConditionalGeneration": Architecture(
        "WhisperForConditionalGeneration", ("whisper",), "model",
        (
            Block("Conv1", "model.encoder.conv1", executor="encoder"),
            Block("Conv2", "model.encoder.conv2", executor="encoder"),
            Block("Embed Positions", "model.encoder.embed_positions", called=False, executor="encoder"),
            Layers("encoder", "Encoder{i}", "model.encoder.layers.{i}", "encoder_layers", executor="encoder"),
            Block("Encoder Layer Norm", "model.encoder.layer_norm", LayerIPU("encoder", -1), executor="encoder"),
            Block("Decoder Embedding", "model.decoder.embed_tokens", WHISPER_PROJECTION_IPU, executor="decoder"),
            Run("model.decoder.embed_positions", executor="decoder"),
            Layers("decoder", "Decoder{i}", "model.decoder.layers.{i}", "decoder_layers", executor="decoder"),
            Block("Decoder Layer Norm", "model.decoder.layer_norm", LayerIPU("decoder", -1), executor="decoder"),
            Block("Output Projection", "proj_out", WHISPER_PROJECTION_IPU, executor="decoder"),
        ),
        WHISPER_DEFAULTS, whisper_body,
        heads={"proj_out": lambda c: {} if c.tie_word_embeddings else _linear("proj_out", c.vocab_size, c.d_model,
                                                                               bias=False)},
        ties={"proj_out.weight": ("model.decoder.embed_tokens.weight", "tie_word_embeddings")},
        kwargs=("for_generation", "use_cache", "use_cross_cache", "*"), generation=("encoder", "decoder")),
}

# --- speech: HuBERT, Wav2Vec2 --------------------------------------------------------------------------------------

# transformers 5 keeps a weight-normed convolution's two parameters under `parametrizations`
WEIGHT_NORM_RENAMES = (
    (r"\.parametrizations\.weight\.original0$", ".weight_g"),
    (r"\.parametrizations\.weight\.original1$", ".weight_v"),
)


def _speech_encoder(prefix: str, pipelined: bool) -> Tuple[Step, ...]:
    """The feature extractor's convolutions, the projection, the positional convolution and the layers. In CTC and
    pre-training models (`pipelined`) the convolutions and the positional convolution are layers of the list too."""
    encoder = f"{prefix}.encoder"
    if pipelined:
        convolutions = Layers("convolutions", "Conv {i:<2}", f"{prefix}.feature_extractor.conv_layers.{{i}}",
                              lambda c: len(c.conv_dim))
        positions = Layers("positions", "Positional Embedding", f"{encoder}.pos_conv_embed", 1)
        layers = Layers("encoder", "Encoder {i:<2}", f"{encoder}.layers.{{i}}", "num_hidden_layers")
        start: Tuple[Step, ...] = (convolutions, Run(f"{prefix}.feature_projection"))
    else:
        positions = Run(f"{encoder}.pos_conv_embed")
        layers = Layers("encoder", "Encoder{i}", f"{encoder}.layers.{{i}}", "num_hidden_layers")
        start = (Block(None, f"{prefix}.feature_extractor"), Block(None, f"{prefix}.feature_projection"))
    return (
        *start,
        Run(f"{prefix}.masked_spec_embed"),
        *(() if pipelined else (Block(None, encoder),)),
        positions,
        Run(f"{encoder}.layer_norm", when=("do_stable_layer_norm", False)),
        layers,
        Run(f"{encoder}.layer_norm", when=("do_stable_layer_norm", True)),
    )


HUBERT_BODY = partial(speech_body, "hubert")
WAV2VEC2_BODY = partial(speech_body, "wav2vec2")


def _ctc(family: str, prefix: str, model_type: str, defaults: Mapping[str, Any], body: Body,
         extra: Tuple[Step, ...] = ()) -> Architecture:
    """CTC: `parallelize()` freezes the feature extractor; with one IPU it places no block."""
    head = Layers("head", "Project Hidden", "lm_head", 1)
    return Architecture(
        f"{family}ForCTC", (model_type,), prefix, (*_speech_encoder(prefix, True), *extra, head), defaults,
        body, heads={"lm_head": lambda c: _linear("lm_head", c.vocab_size,
                                            c.output_hidden_size if c.add_adapter else c.hidden_size)},
        frozen={f"{prefix}.feature_extractor": None}, blocks_on_one_ipu=False, renames=WEIGHT_NORM_RENAMES)


def _hubert_classifier_shapes(c: ModelConfig) -> Dict[str, Tuple[int, ...]]:
    return {**_linear("projector", c.classifier_proj_size, c.hidden_size),
            **_linear("classifier", c.num_labels, c.classifier_proj_size)}


def _wav2vec2_pretraining_heads() -> Dict[str, Any]:
    return {
        "project_hid": lambda c: _linear("project_hid", c.proj_codevector_dim, c.hidden_size),
        "quantizer": lambda c: {
            "quantizer.codevectors": (1, c.num_codevector_groups * c.num_codevectors_per_group,
                                      c.codevector_dim // c.num_codevector_groups),
            **_linear("quantizer.weight_proj", c.num_codevector_groups * c.num_codevectors_per_group, c.conv_dim[-1]),
        },
        "project_q": lambda c: _linear("project_q", c.proj_codevector_dim, c.codevector_dim),
    }


SPEECH = {
    "HubertForSequenceClassification": Architecture(
        "HubertForSequenceClassification", ("hubert",), "hubert",
        (*_speech_encoder("hubert", False), Run("layer_weights", when=("use_weighted_layer_sum", True)),
         Block(None, "projector", LAST), Block(None, "classifier", LAST)),
        HUBERT_DEFAULTS, HUBERT_BODY,
        heads={"projector": _hubert_classifier_shapes,
               "layer_weights": lambda c: {"layer_weights": (c.num_hidden_layers + 1,)}
               if c.use_weighted_layer_sum else {}},
        renames=WEIGHT_NORM_RENAMES),
    "HubertForCTC": _ctc("Hubert", "hubert", "hubert", HUBERT_DEFAULTS, HUBERT_BODY),
    "Wav2Vec2ForCTC": _ctc("Wav2Vec2", "wav2vec2", "wav2vec2", WAV2VEC2_DEFAULTS, WAV2VEC2_BODY,
                           (Run("wav2vec2.adapter"),)),
    "Wav2Vec2ForPreTraining": Architecture(
        "Wav2Vec2ForPreTraining", ("wav2vec2",), "wav2vec2",
        (*_speech_encoder("wav2vec2", True), Run("wav2vec2.adapter"),
         Layers("project_hid", "Project Hidden", "project_hid", 1), Layers("quantizer", "Quantizer", "quantizer", 1),
         Layers("project_q", "Project Quantizer", "project_q", 1)),
        WAV2VEC2_DEFAULTS, WAV2VEC2_BODY, heads=_wav2vec2_pretraining_heads(), renames=WEIGHT_NORM_RENAMES),
}

# --- LXMERT: its blocks on IPUs 0 to 3, whatever layers_per_ipu says -------------------------------------------------

LXMERT = {
    "LxmertForQuestionAnswering": Architecture(
        "LxmertForQuestionAnswering", ("lxmert",), "lxmert",
        (Block("Embedding", "lxmert.embeddings"), Block("Image embedding", "lxmert.encoder.visn_fc"),
         Layers("language", "Language layer{i}", "lxmert.encoder.layer.{i}", "l_layers", ipu=1),
         Layers("visual", "Visual layer{i}", "lxmert.encoder.r_layers.{i}", "r_layers", ipu=2),
         Layers("cross", "Cross modality layer{i}", "lxmert.encoder.x_layers.{i}", "x_layers", ipu=3),
         Block("Pooler", "lxmert.pooler", 3), Block("Head", "answer_head", 3)),
        LXMERT_DEFAULTS, lxmert_body,
        heads={"lxmert.pooler": _pooler("lxmert"),
               "answer_head": lambda c: {**_linear("answer_head.logit_fc.0", 2 * c.hidden_size, c.hidden_size),
                                         **_norm("answer_head.logit_fc.2", 2 * c.hidden_size),
                                         **_linear("answer_head.logit_fc.3", c.num_qa_labels, 2 * c.hidden_size)}}),
}

ARCHITECTURES: Dict[str, Architecture] = dict(sorted({
    **BERT,
    **GROUPBERT,
    **ROBERTA,
    **MPNET,
    **DISTILBERT,
    **DEBERTA,
    **GPT2,
    **BART,
    **T5,
    **WHISPER,
    **VIT,
    **CONVNEXT,
    **SPEECH,
    **LXMERT,
}.items()))

# Tensors checkpoints hold that are buffers, not parameters: position and token type ids, GPT-2's attention masks,
# BART's logits bias.
BUFFER_PATTERN = r"(^|\.)(position_ids|token_type_ids|final_logits_bias)$|(^|\.)attn\.(bias|masked_bias)$"
