"""Where optimum-graphcore 0.7.1's `parallelize()` puts each part of a model: one row per class it registers a
pipelined version of (45), built from the templates of a few families, in the vocabulary of rules.py.

Read off `optimum/graphcore/models/*/modeling_*.py` (the `poptorch.BeginBlock` calls and `get_layer_ipu` lists of
each `parallelize()`) and the forward passes of transformers 4.29.2, which order the modules outside every block.
A test runs upstream's own `parallelize()` on a tiny model of every row and compares.
"""

from typing import Any, Dict

from .bodies import (
    CONVNEXT_DEFAULTS,
    GPT2_DEFAULTS,
    VIT_DEFAULTS,
    convnext_body,
    gpt2_body,
    linear as _linear,
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
    Run,
)
from .models.speech import SPEECH
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
