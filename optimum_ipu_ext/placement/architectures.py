"""Where optimum-graphcore 0.7.1's `parallelize()` puts each part of a model: one row per class it registers a
pipelined version of (45), built from the templates of a few families, in the vocabulary of rules.py.

Read off `optimum/graphcore/models/*/modeling_*.py` (the `poptorch.BeginBlock` calls and `get_layer_ipu` lists of
each `parallelize()`) and the forward passes of transformers 4.29.2, which order the modules outside every block.
A test runs upstream's own `parallelize()` on a tiny model of every row and compares.
"""

from functools import partial
from typing import Any, Dict, Mapping, Tuple

from .bodies import (
    CONVNEXT_DEFAULTS,
    GPT2_DEFAULTS,
    HUBERT_DEFAULTS,
    VIT_DEFAULTS,
    WAV2VEC2_DEFAULTS,
    Body,
    convnext_body,
    gpt2_body,
    linear as _linear,
    speech_body,
    vit_body,
)
from .models.bart import BART
from .models.bert import BERT, GROUPBERT, ROBERTA
from .models.deberta import DEBERTA
from .models.distilbert import DISTILBERT
from .models.lxmert import LXMERT
from .models.mpnet import MPNET
from .models.rules import (
    LAST,
    Architecture,
    Block,
    Layers,
    ModelConfig,
    Run,
    Step,
)
from .models.t5 import T5
from .models.whisper import WHISPER

# --- GPT-2 ---------------------------------------------------------------------------------------------------------

def _gpt2(suffix: str, head: Block, shapes: Any, **fields: Any) -> Architecture:
    """GPT-2: token and position embeddings on IPU 0, the layers, the final norm after the last layer; with
    `embedding_serialization_factor` > 1 the vocabulary is padded to a multiple of it."""
    steps = (
        Block("Token embedding", "transformer.wte"),
        Block("Position embedding", "transformer.wpe"),
        Layers("layers", "Layer{i}", "transformer.h.{i}", "n_layer"),
        Run("transformer.ln_f"),
        head,
    )
    return Architecture(f"GPT2{suffix}", ("gpt2",), "transformer", steps, GPT2_DEFAULTS, gpt2_body,
                        heads={head.path: shapes},
                        padded_embedding="transformer.wte.weight", reads_embedding_factor=True, **fields)


GPT2 = {
    "GPT2LMHeadModel": _gpt2(
        "LMHeadModel", Block("LM head", "lm_head"),
        lambda c: {} if c.tie_word_embeddings else _linear("lm_head", c.vocab_size, c.n_embd, bias=False),
        ties={"lm_head.weight": ("transformer.wte.weight", "tie_word_embeddings")}, kwargs=("for_generation",)),
    "GPT2ForSequenceClassification": _gpt2(
        "ForSequenceClassification", Block("Score", "score", LAST),
        lambda c: _linear("score", c.num_labels, c.n_embd, bias=False)),
    "GPT2ForTokenClassification": _gpt2(
        "ForTokenClassification", Block("Classifier", "classifier", LAST),
        lambda c: _linear("classifier", c.num_labels, c.n_embd)),
}

# --- vision: ViT, ConvNeXt -------------------------------------------------------------------------------------------

# transformers 5 renamed ViT's layers; a checkpoint it saves is read with the names of 4.29.2
VIT_RENAMES = (
    (r"^vit\.layers\.(\d+)\.attention\.([qkv])_proj\.",
     lambda match: "vit.encoder.layer.{}.attention.attention.{}.".format(
         match.group(1), {"q": "query", "k": "key", "v": "value"}[match.group(2)])),
    (r"^vit\.layers\.(\d+)\.attention\.o_proj\.", r"vit.encoder.layer.\1.attention.output.dense."),
    (r"^vit\.layers\.(\d+)\.mlp\.fc1\.", r"vit.encoder.layer.\1.intermediate.dense."),
    (r"^vit\.layers\.(\d+)\.mlp\.fc2\.", r"vit.encoder.layer.\1.output.dense."),
    (r"^vit\.layers\.(\d+)\.", r"vit.encoder.layer.\1."),
)

VISION = {
    "ViTForImageClassification": Architecture(
        "ViTForImageClassification", ("vit",), "vit",
        (Block("Embedding", "vit.embeddings"),
         Layers("encoder", "Encoder{i}", "vit.encoder.layer.{i}", "num_hidden_layers"),
         Block("LayerNorm", "vit.layernorm", LAST), Block("Classifier", "classifier", LAST)),
        VIT_DEFAULTS, vit_body,
        heads={"classifier": lambda c: _linear("classifier", c.num_labels, c.hidden_size) if c.num_labels else {}},
        renames=VIT_RENAMES),
    "ConvNextForImageClassification": Architecture(
        "ConvNextForImageClassification", ("convnext",), "convnext",
        (Block("Embedding", "convnext.embeddings"),
         Layers("encoder", "Encoder_stage_{stage}_layer_{i}", "convnext.encoder.stages.{stage}.layers.{i}", "depths",
                stage_prelude="convnext.encoder.stages.{stage}.downsampling_layer"),
         Block("LayerNorm", "convnext.layernorm", LAST), Block("Classifier", "classifier", LAST)),
        CONVNEXT_DEFAULTS, convnext_body,
        heads={"classifier": lambda c: _linear("classifier", c.num_labels, c.hidden_sizes[-1])
               if c.num_labels else {}}),
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
    **VISION,
    **SPEECH,
    **LXMERT,
}.items()))

# Tensors checkpoints hold that are buffers, not parameters: position and token type ids, GPT-2's attention masks,
# BART's logits bias.
BUFFER_PATTERN = r"(^|\.)(position_ids|token_type_ids|final_logits_bias)$|(^|\.)attn\.(bias|masked_bias)$"
