"""Tiny random models of every architecture optimum-graphcore 0.7.1 pipelines, and inputs for one forward pass.

`TINY_MODELS[architecture]` is a `TinyModel`: `config`, the keyword arguments of the architecture's
config class (few layers, hidden size 16, vocabulary 64: transformers 4.29.2 builds each in
milliseconds), and `inputs(config, training)`, a batch for one forward pass of that model. In
training the batch carries the labels `IPUTrainer` feeds (several pipelined models compute only
their loss when training); in inference it carries none. Every builder reads the sizes it needs
from the config it is given, so a test may change the config (more layers, another vocabulary).
Random inputs come from a generator seeded for each call: the same config gives the same batch.

The keys are the 45 classes optimum-graphcore registers a pipelined version of; `GroupBert*` are
optimum-graphcore's own (`optimum.graphcore.models.groupbert`), built from its `GroupBertConfig`.
Layer drop is off where a model has it: a layer skipped at random would make the placement depend on
the draw; time masks are 2 frames long, to fit the tiny sequences. Models that generate stop at 4 tokens
(`max_length`), which also sizes their KV caches.
"""
from dataclasses import dataclass
from typing import Any, Callable, Dict

import torch

BATCH = 2
SEQUENCE = 8
CHOICES = 2
AUDIO_SAMPLES = 400  # 99 frames after the tiny feature extractor below
IMAGE_SIZE = 16

Inputs = Dict[str, torch.Tensor]


@dataclass(frozen=True)
class TinyModel:
    config: Dict[str, Any]
    inputs: Callable[[Any, bool], Inputs]


def _generator() -> torch.Generator:
    return torch.Generator().manual_seed(0)


def _tokens(config, generator, *shape: int) -> torch.Tensor:
    """Token ids in 3 .. vocab_size - 1: clear of the pad/bos/eos ids the tiny configs use."""
    return torch.randint(3, config.vocab_size, shape, generator=generator)


def _classes(count: int, generator, *shape: int) -> torch.Tensor:
    return torch.randint(0, count, shape, generator=generator)


def _text(config, generator, *shape: int) -> Inputs:
    return {"input_ids": _tokens(config, generator, *shape), "attention_mask": torch.ones(shape, dtype=torch.long)}


def _with_labels(labels: Callable[[Any, torch.Generator], Inputs], *shape: int) -> Callable[[Any, bool], Inputs]:
    """A text batch of `shape`, with `labels(config, generator)` added in training."""

    def inputs(config, training: bool) -> Inputs:
        generator = _generator()
        batch = _text(config, generator, *shape)
        return {**batch, **labels(config, generator)} if training else batch

    return inputs


def _no_labels(config, generator) -> Inputs:
    return {}


def _masked_lm_labels(config, generator) -> Inputs:
    return {"labels": _tokens(config, generator, BATCH, SEQUENCE)}


def _pretraining_labels(config, generator) -> Inputs:
    return {**_masked_lm_labels(config, generator), "next_sentence_label": _classes(2, generator, BATCH)}


def _sequence_labels(config, generator) -> Inputs:
    return {"labels": _classes(config.num_labels, generator, BATCH)}


def _token_labels(config, generator) -> Inputs:
    return {"labels": _classes(config.num_labels, generator, BATCH, SEQUENCE)}


def _span_labels(config, generator) -> Inputs:
    return {
        "start_positions": _classes(SEQUENCE, generator, BATCH),
        "end_positions": _classes(SEQUENCE, generator, BATCH),
    }


def _choice_labels(config, generator) -> Inputs:
    return {"labels": _classes(CHOICES, generator, BATCH)}


def _causal_lm_inputs(config, training: bool) -> Inputs:
    batch = _text(config, _generator(), BATCH, SEQUENCE)
    return {**batch, "labels": batch["input_ids"]} if training else batch


def _sequence_classification_with_eos(config, training: bool) -> Inputs:
    """BART classifies from the last end-of-sequence token: every sentence ends with one."""
    generator = _generator()
    batch = _text(config, generator, BATCH, SEQUENCE)
    batch["input_ids"][:, -1] = config.eos_token_id
    return {**batch, **_sequence_labels(config, generator)} if training else batch


def _seq2seq_inputs(config, training: bool) -> Inputs:
    """Encoder tokens and decoder tokens; in training the targets as labels, the decoder tokens being the
    targets shifted right, as transformers' `DataCollatorForSeq2Seq` gives them (T5 embeds the decoder
    tokens elsewhere when it has to shift them itself)."""
    generator = _generator()
    batch = _text(config, generator, BATCH, SEQUENCE)
    start = torch.full((BATCH, 1), config.decoder_start_token_id, dtype=torch.long)
    if training:
        labels = _tokens(config, generator, BATCH, SEQUENCE)
        return {**batch, "labels": labels, "decoder_input_ids": torch.cat([start, labels[:, :-1]], dim=1)}
    return {**batch, "decoder_input_ids": start.expand(BATCH, SEQUENCE)}


def _t5_encoder_inputs(config, training: bool) -> Inputs:
    return _text(config, _generator(), BATCH, SEQUENCE)


def _whisper_inputs(config, training: bool) -> Inputs:
    generator = _generator()
    frames = 2 * config.max_source_positions
    batch = {"input_features": torch.randn(BATCH, config.num_mel_bins, frames, generator=generator)}
    if training:
        return {**batch, "labels": _tokens(config, generator, BATCH, SEQUENCE)}
    start = torch.full((BATCH, SEQUENCE), config.decoder_start_token_id, dtype=torch.long)
    return {**batch, "decoder_input_ids": start}


def _image_inputs(config, training: bool) -> Inputs:
    generator = _generator()
    batch = {"pixel_values": torch.randn(BATCH, config.num_channels, IMAGE_SIZE, IMAGE_SIZE, generator=generator)}
    return {**batch, **_sequence_labels(config, generator)} if training else batch


def _audio(generator) -> Inputs:
    return {"input_values": torch.randn(BATCH, AUDIO_SAMPLES, generator=generator)}


def _audio_classification_inputs(config, training: bool) -> Inputs:
    generator = _generator()
    batch = _audio(generator)
    return {**batch, **_sequence_labels(config, generator)} if training else batch


def _ctc_inputs(config, training: bool) -> Inputs:
    generator = _generator()
    batch = _audio(generator)
    return {**batch, "labels": _classes(config.vocab_size - 1, generator, BATCH, 4) + 1} if training else batch


def _audio_frames(config) -> int:
    length = AUDIO_SAMPLES
    for kernel, stride in zip(config.conv_kernel, config.conv_stride):
        length = (length - kernel) // stride + 1
    return length


def _wav2vec2_pretraining_inputs(config, training: bool) -> Inputs:
    """In training, the masked frames and the negatives sampled for each frame, as the pre-training collator gives."""
    generator = _generator()
    batch = _audio(generator)
    if not training:
        return batch
    frames = _audio_frames(config)
    mask = torch.zeros(BATCH, frames, dtype=torch.bool)
    mask[:, ::3] = True
    negatives = torch.randint(0, frames, (BATCH, frames, config.num_negatives), generator=generator)
    return {**batch, "mask_time_indices": mask, "sampled_negative_indices": negatives}


def _lxmert_inputs(config, training: bool) -> Inputs:
    generator = _generator()
    boxes = 3
    batch = {
        **_text(config, generator, BATCH, SEQUENCE),
        "visual_feats": torch.randn(BATCH, boxes, config.visual_feat_dim, generator=generator),
        "visual_pos": torch.rand(BATCH, boxes, config.visual_pos_dim, generator=generator),
    }
    return {**batch, "labels": _classes(config.num_qa_labels, generator, BATCH)} if training else batch


_BERT = dict(
    vocab_size=64,
    hidden_size=16,
    num_hidden_layers=3,
    num_attention_heads=2,
    intermediate_size=32,
    max_position_embeddings=32,
)
_ROBERTA = dict(_BERT, max_position_embeddings=34, pad_token_id=1, bos_token_id=0, eos_token_id=2)
_GROUPBERT = dict(_BERT, hidden_size=32, intermediate_size=64, ffn_groups=2, conv_group_size=16, conv_kernel_size=3)
_DEBERTA = dict(_BERT, relative_attention=True, pos_att_type=["c2p", "p2c"], position_biased_input=False)
_DISTILBERT = dict(vocab_size=64, dim=16, n_layers=3, n_heads=2, hidden_dim=32, max_position_embeddings=32)
_MPNET = dict(_BERT, max_position_embeddings=34)
_GPT2 = dict(vocab_size=64, n_positions=32, n_embd=16, n_layer=3, n_head=2, pad_token_id=0)
_ENCODER_DECODER = dict(
    vocab_size=64,
    d_model=16,
    encoder_layers=2,
    decoder_layers=2,
    encoder_attention_heads=2,
    decoder_attention_heads=2,
    encoder_ffn_dim=32,
    decoder_ffn_dim=32,
    max_length=4,
)
_BART = dict(_ENCODER_DECODER, max_position_embeddings=32)
_WHISPER = dict(
    _ENCODER_DECODER,
    num_mel_bins=8,
    max_source_positions=16,
    max_target_positions=32,
    pad_token_id=1,
    bos_token_id=2,
    eos_token_id=2,
    decoder_start_token_id=2,
    suppress_tokens=[],
    begin_suppress_tokens=[],
)
_T5 = dict(
    vocab_size=64,
    d_model=16,
    d_kv=8,
    d_ff=32,
    num_layers=2,
    num_decoder_layers=2,
    num_heads=2,
    relative_attention_num_buckets=8,
    relative_attention_max_distance=16,
    pad_token_id=0,
    eos_token_id=1,
    decoder_start_token_id=0,
    max_length=4,
)
_AUDIO = dict(
    vocab_size=16,
    hidden_size=16,
    num_hidden_layers=2,
    num_attention_heads=2,
    intermediate_size=32,
    conv_dim=(8, 8, 8),
    conv_stride=(2, 2, 2),
    conv_kernel=(4, 3, 3),
    num_conv_pos_embeddings=4,
    num_conv_pos_embedding_groups=2,
    layerdrop=0.0,
    mask_time_length=2,
    classifier_proj_size=8,
)
_WAV2VEC2_PRETRAINING = dict(
    _AUDIO,
    num_codevectors_per_group=4,
    num_codevector_groups=2,
    codevector_dim=8,
    proj_codevector_dim=8,
    num_negatives=3,
)
_VIT = dict(
    image_size=IMAGE_SIZE,
    patch_size=4,
    num_channels=3,
    hidden_size=16,
    num_hidden_layers=3,
    num_attention_heads=2,
    intermediate_size=32,
)
_CONVNEXT = dict(
    num_channels=3, patch_size=2, num_stages=2, hidden_sizes=[8, 16], depths=[1, 2], image_size=IMAGE_SIZE
)
_LXMERT = dict(
    vocab_size=64,
    hidden_size=16,
    num_attention_heads=2,
    intermediate_size=32,
    l_layers=2,
    x_layers=1,
    r_layers=1,
    visual_feat_dim=8,
    visual_pos_dim=4,
    num_qa_labels=4,
    max_position_embeddings=32,
)


def _encoder_family(prefix: str, config: Dict[str, Any]) -> Dict[str, TinyModel]:
    """The heads BERT-like encoders share, each with its labels."""
    return {
        f"{prefix}ForMaskedLM": TinyModel(config, _with_labels(_masked_lm_labels, BATCH, SEQUENCE)),
        f"{prefix}ForSequenceClassification": TinyModel(config, _with_labels(_sequence_labels, BATCH, SEQUENCE)),
        f"{prefix}ForTokenClassification": TinyModel(config, _with_labels(_token_labels, BATCH, SEQUENCE)),
        f"{prefix}ForQuestionAnswering": TinyModel(config, _with_labels(_span_labels, BATCH, SEQUENCE)),
        f"{prefix}ForMultipleChoice": TinyModel(config, _with_labels(_choice_labels, BATCH, CHOICES, SEQUENCE)),
    }


TINY_MODELS: Dict[str, TinyModel] = {
    **_encoder_family("Bert", _BERT),
    "BertModel": TinyModel(_BERT, _with_labels(_no_labels, BATCH, SEQUENCE)),
    "BertForPreTraining": TinyModel(_BERT, _with_labels(_pretraining_labels, BATCH, SEQUENCE)),
    **_encoder_family("GroupBert", _GROUPBERT),
    "GroupBertForPreTraining": TinyModel(_GROUPBERT, _with_labels(_pretraining_labels, BATCH, SEQUENCE)),
    **_encoder_family("Roberta", _ROBERTA),
    **_encoder_family("DistilBert", _DISTILBERT),
    **{
        name: model
        for name, model in _encoder_family("Deberta", _DEBERTA).items()
        if not name.endswith("ForMultipleChoice")
    },
    "MPNetModel": TinyModel(_MPNET, _with_labels(_no_labels, BATCH, SEQUENCE)),
    "MPNetForMaskedLM": TinyModel(_MPNET, _with_labels(_masked_lm_labels, BATCH, SEQUENCE)),
    "GPT2LMHeadModel": TinyModel(_GPT2, _causal_lm_inputs),
    "GPT2ForSequenceClassification": TinyModel(_GPT2, _with_labels(_sequence_labels, BATCH, SEQUENCE)),
    "GPT2ForTokenClassification": TinyModel(_GPT2, _with_labels(_token_labels, BATCH, SEQUENCE)),
    "BartForConditionalGeneration": TinyModel(_BART, _seq2seq_inputs),
    "BartForSequenceClassification": TinyModel(_BART, _sequence_classification_with_eos),
    "T5ForConditionalGeneration": TinyModel(_T5, _seq2seq_inputs),
    "T5EncoderModel": TinyModel(_T5, _t5_encoder_inputs),
    "MT5ForConditionalGeneration": TinyModel(_T5, _seq2seq_inputs),
    "WhisperForConditionalGeneration": TinyModel(_WHISPER, _whisper_inputs),
    "ViTForImageClassification": TinyModel(_VIT, _image_inputs),
    "ConvNextForImageClassification": TinyModel(_CONVNEXT, _image_inputs),
    "HubertForSequenceClassification": TinyModel(_AUDIO, _audio_classification_inputs),
    "HubertForCTC": TinyModel(_AUDIO, _ctc_inputs),
    "Wav2Vec2ForCTC": TinyModel(_AUDIO, _ctc_inputs),
    "Wav2Vec2ForPreTraining": TinyModel(_WAV2VEC2_PRETRAINING, _wav2vec2_pretraining_inputs),
    "LxmertForQuestionAnswering": TinyModel(_LXMERT, _lxmert_inputs),
}
