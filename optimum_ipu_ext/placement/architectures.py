"""The registry of the architectures the placement knows: one row per class optimum-graphcore 0.7.1 registers a
pipelined version of (45), each described by its family's module in models/."""

from typing import Dict

from .models.bart import BART
from .models.bert import BERT, GROUPBERT, ROBERTA
from .models.convnext import CONVNEXT
from .models.deberta import DEBERTA
from .models.distilbert import DISTILBERT
from .models.gpt2 import GPT2
from .models.lxmert import LXMERT
from .models.mpnet import MPNET
from .models.rules import Architecture
from .models.speech import SPEECH
from .models.t5 import T5
from .models.vit import VIT
from .models.whisper import WHISPER

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
