"""What optimum-graphcore 0.7.1's own pipelined models keep and compute for one training micro-batch, step by step:
the reference `block_costs()` is tested against (IPU-host stack only, like upstream_placement.py).

`upstream_costs()` builds the harness's tiny model, converts it with upstream's `to_pipelined`, calls its real
`parallelize()`, then runs one training forward pass of a micro-batch on CPU with dropout off (probability 0: torch
keeps no mask), under

- `torch.autograd.graph.saved_tensors_hooks`: `pack` sees each tensor autograd keeps for the backward pass;
- `torch.utils.flop_counter.FlopCounterMode`: its total before and after each step gives the step's FLOPs.

A step is a module of the placement's row (a block or a module run outside every block, each layer its own): a
forward pre-hook on each says when it starts, and everything until the next step starts is its own (ops before the
first step go to the first). Each step counts each storage it keeps once; parameters' and buffers' storages are not
counted; a storage counts its elements at 2 bytes if floating (4 with `fp32`), 4 if integer, 1 if bool.
"""
import contextlib
import json
from typing import Any, Dict, List, NamedTuple, Optional, Tuple
from unittest import mock

import torch
from torch.nn import functional
from torch.utils.flop_counter import FlopCounterMode

from optimum_ipu_ext.placement.models import ARCHITECTURES, MULTIPLE_CHOICES
from optimum_ipu_ext.placement.models.lxmert import OBJECTS as LXMERT_OBJECTS
from optimum_ipu_ext.placement.models.rules import Block, expand
from optimum_ipu_ext.placement.models.speech import CTC_FRAMES_PER_LABEL

from .doubles import installed
from .placement_models import TINY_MODELS, _classes, _text, _tokens
from .upstream_placement import _ipu_config, _one_thread, _original_model, _Trace, _tracing, upstream_modules

AUDIO_MASK_EVERY = 3
# the models whose tokenizer gives token types with the ids (BertTokenizer's, DebertaTokenizer's)
GIVEN_TOKEN_TYPES = ("Bert", "GroupBert", "Deberta")


class Measured(NamedTuple):
    """One step's measure: the bytes it keeps, its FLOPs, and the tensors it keeps (dtype, shape as first kept,
    elements of its storage), to read."""

    activation_bytes: int
    forward_flops: int
    tensors: Tuple[Tuple[str, Tuple[int, ...], int], ...]


def _bytes_per_element(dtype: torch.dtype, fp32: bool) -> int:
    if dtype == torch.bool:
        return 1
    if dtype.is_floating_point:
        return 4 if fp32 else 2
    return 4


def step_paths(architecture: str, model_config: Dict[str, Any]) -> List[str]:
    """The module paths of the row's steps that run, in order (each once)."""
    row = ARCHITECTURES[architecture]
    config = row.config(model_config)
    paths: List[str] = []
    for step, _, _ in expand(row, config):
        if (not isinstance(step, Block) or step.called) and step.path not in paths:
            paths.append(step.path)
    return paths


# --- inputs of one training micro-batch of `batch` sequences of `length` -------------------------------------------


def cost_inputs(architecture: str, config: Any, batch: int, length: int,
                decoder_length: int) -> Dict[str, torch.Tensor]:
    """A training batch: text of `length` tokens (decoders: the same length; multiple choice: `MULTIPLE_CHOICES`
    sequences an example), images of the config's size (a side, or a height and a width), audio of
    `length` samples (Whisper: the frames its config takes), encoder-decoders' decoders `decoder_length` tokens,
    with the labels `IPUTrainer` feeds."""
    generator = torch.Generator().manual_seed(0)
    if architecture.startswith(("Wav2Vec2", "Hubert")):
        return _audio_inputs(architecture, config, batch, length, generator)
    if architecture.startswith("Whisper"):
        frames = 2 * config.max_source_positions  # the encoder takes no other length
        return {"input_features": torch.randn(batch, config.num_mel_bins, frames, generator=generator),
                "labels": _tokens(config, generator, batch, decoder_length)}
    if architecture.startswith(("ViT", "ConvNext")):
        size = config.image_size  # pixels on a side, or (height, width)
        height, width = size if isinstance(size, (list, tuple)) else (size, size)
        return {"pixel_values": torch.randn(batch, config.num_channels, height, width, generator=generator),
                "labels": _classes(config.num_labels, generator, batch)}
    if architecture.startswith("Lxmert"):
        boxes = LXMERT_OBJECTS
        return {**_text(config, generator, batch, length),
                "visual_feats": torch.randn(batch, boxes, config.visual_feat_dim, generator=generator),
                "visual_pos": torch.rand(batch, boxes, config.visual_pos_dim, generator=generator),
                "labels": _classes(config.num_qa_labels, generator, batch)}
    if architecture.endswith("ForMultipleChoice"):
        inputs = _text(config, generator, batch, MULTIPLE_CHOICES, length)
        return {**inputs, **_token_types(architecture, config, generator, inputs["input_ids"].shape),
                "labels": _classes(MULTIPLE_CHOICES, generator, batch)}
    inputs = _text(config, generator, batch, length)
    inputs.update(_token_types(architecture, config, generator, inputs["input_ids"].shape))
    if architecture.endswith(("ForMaskedLM", "LMHeadModel")):
        inputs["labels"] = _tokens(config, generator, batch, length)
    elif architecture.endswith("ForPreTraining"):
        inputs.update(labels=_tokens(config, generator, batch, length),
                      next_sentence_label=_classes(2, generator, batch))
    elif architecture.endswith("ForSequenceClassification"):
        if architecture.startswith("Bart"):
            inputs["input_ids"][:, -1] = config.eos_token_id
        inputs["labels"] = _classes(config.num_labels, generator, batch)
    elif architecture.endswith("ForTokenClassification"):
        inputs["labels"] = _classes(config.num_labels, generator, batch, length)
    elif architecture.endswith("ForQuestionAnswering"):
        inputs.update(start_positions=_classes(length, generator, batch),
                      end_positions=_classes(length, generator, batch))
    elif architecture.endswith("ForConditionalGeneration"):
        labels = _tokens(config, generator, batch, decoder_length)
        start = torch.full((batch, 1), config.decoder_start_token_id, dtype=torch.long)
        inputs.update(labels=labels, decoder_input_ids=torch.cat([start, labels[:, :-1]], dim=1))
    return inputs


def _token_types(architecture: str, config: Any, generator: torch.Generator,
                 shape: Tuple[int, ...]) -> Dict[str, torch.Tensor]:
    """The token types of the models whose tokenizer gives them with the ids (zeros where the model has no
    embedding of them: DeBERTa's `type_vocab_size` 0)."""
    if not architecture.startswith(GIVEN_TOKEN_TYPES):
        return {}
    return {"token_type_ids": _classes(config.type_vocab_size or 1, generator, *shape)}


def _audio_inputs(architecture: str, config: Any, batch: int, length: int,
                  generator: torch.Generator) -> Dict[str, torch.Tensor]:
    """A speech model's batch of `length` samples, with the labels or the masks of its head."""
    inputs = {"input_values": torch.randn(batch, length, generator=generator)}
    frames = length
    for kernel, stride in zip(config.conv_kernel, config.conv_stride):
        frames = (frames - kernel) // stride + 1
    if architecture.endswith("ForCTC"):
        labels = max(1, frames // CTC_FRAMES_PER_LABEL)
        inputs["labels"] = _classes(config.vocab_size - 1, generator, batch, labels) + 1
    elif architecture.endswith("ForSequenceClassification"):
        inputs["labels"] = _classes(config.num_labels, generator, batch)
    else:
        mask = torch.zeros(batch, frames, dtype=torch.bool)
        mask[:, ::AUDIO_MASK_EVERY] = True
        inputs["mask_time_indices"] = mask
        inputs["sampled_negative_indices"] = torch.randint(0, frames, (batch, frames, config.num_negatives),
                                                           generator=generator)
    return inputs


# --- the measure ----------------------------------------------------------------------------------------------------


class _Meter:
    """Follows the step running, and what each keeps and computes."""

    def __init__(self, paths: List[str], constants: set, counter: FlopCounterMode, fp32: bool) -> None:
        self.current = paths[0]
        self.constants = constants
        self.counter = counter
        self.fp32 = fp32
        self.flops = {path: 0 for path in paths}
        self.kept: Dict[str, Dict[int, Tuple[torch.dtype, Tuple[int, ...], int]]] = {path: {} for path in paths}
        self._flops_seen = 0

    def start(self, path: str) -> None:
        self._flush()
        self.current = path

    def _flush(self) -> None:
        total = self.counter.get_total_flops()
        self.flops[self.current] += total - self._flops_seen
        self._flops_seen = total

    def pack(self, tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        pointer = storage.data_ptr()
        if pointer not in self.constants and storage.nbytes():
            elements = storage.nbytes() // tensor.element_size()
            self.kept[self.current].setdefault(pointer, (tensor.dtype, tuple(tensor.shape), elements))
        return tensor

    def result(self) -> Dict[str, Measured]:
        self._flush()
        measured = {}
        for path, kept in self.kept.items():
            size = sum(elements * _bytes_per_element(dtype, self.fp32) for dtype, _, elements in kept.values())
            tensors = tuple((str(dtype).replace("torch.", ""), shape, elements)
                            for dtype, shape, elements in kept.values())
            measured[path] = Measured(size, self.flops[path], tensors)
        return measured


def _no_dropout(dropout):
    def without_mask(input, p=0.5, training=True, inplace=False):
        return dropout(input, 0.0, training, inplace)

    return without_mask


def upstream_costs(architecture: str, model_config: Dict[str, Any], batch: int, length: int,
                   fp32: bool = False, decoder_length: Optional[int] = None) -> Dict[str, Measured]:
    """`{step path: what it keeps and computes}` for one training micro-batch of upstream's pipelined model
    (`decoder_length`: the decoder's tokens, default `length`)."""
    modeling_utils, _ = upstream_modules()
    model_config = dict(TINY_MODELS[architecture].config, **model_config)
    paths = step_paths(architecture, model_config)
    with installed(), _one_thread():
        original = _original_model(architecture, json.dumps(model_config, sort_keys=True))
        model = modeling_utils.to_pipelined(original, _ipu_config({}))
        model.train()
        model.parallelize(**model.ipu_config.parallelize_kwargs)
        inputs = cost_inputs(architecture, model.config, batch, length, decoder_length or length)
        constants = {tensor.untyped_storage().data_ptr() for tensor in [*model.parameters(), *model.buffers()]}
        counter = FlopCounterMode(display=False)
        meter = _Meter(paths, constants, counter, fp32)
        handles = []
        for path in paths:
            try:
                module = model.get_submodule(path)
            except AttributeError:  # a parameter read directly (masked_spec_embed)
                continue
            handles.append(module.register_forward_pre_hook(lambda *_, path=path: meter.start(path)))
        try:
            with contextlib.ExitStack() as stack:
                stack.enter_context(mock.patch.object(functional, "dropout", _no_dropout(functional.dropout)))
                stack.enter_context(_tracing(_Trace()))
                stack.enter_context(counter)
                stack.enter_context(torch.autograd.graph.saved_tensors_hooks(meter.pack, lambda tensor: tensor))
                model(**inputs)
        finally:
            for handle in handles:
                handle.remove()
    return meter.result()
