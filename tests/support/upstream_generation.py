"""What optimum-graphcore 0.7.1's own generation build holds and computes: the reference `GenerationModel` is
tested against (IPU-host stack only, like upstream_placement.py).

`upstream_generation()` builds the harness's tiny model, converts it with upstream's `to_pipelined`, calls its real
`parallelize(for_generation=True, **kwargs)` in inference, then runs, as generate() runs them, the encoder's
executor once and the decoder's twice (its first step and its second), each on CPU under

- a `TorchFunctionMode` that sees the last call given each buffer (its module's), on the IPU of the block running
  then (the block hooks report to a trace, as in upstream_placement.py): where each buffer is;
- `torch.utils.flop_counter.FlopCounterMode`, whose total before and after each step of the row (a forward
  pre-hook on each says when it starts) gives the step's FLOPs.

A buffer is counted as `.half()` leaves it: a floating element at 2 bytes, an integer at its own size.
"""
import importlib
import json
from typing import Any, Dict, List, Mapping, Optional

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten
from torch.utils.flop_counter import FlopCounterMode
from transformers.modeling_outputs import BaseModelOutput

from optimum_ipu_ext.placement.models import ARCHITECTURES
from optimum_ipu_ext.placement.models.rules import Block, Split, expand

from .doubles import installed
from .placement_models import SEQUENCE, TINY_MODELS, _generator, _tokens
from .upstream_costs import _Meter
from .upstream_placement import (
    _ipu_config,
    _one_thread,
    _original_model,
    _poptorch_distribution,
    _Trace,
    _tracing,
    upstream_modules,
)


class _BufferUses(TorchFunctionMode):
    """Records, for each buffer of `names` (by id), the IPU of the last torch call given it: that of its module (the
    decoder's wrapper sets every generation step and beam index before the first block begins)."""

    def __init__(self, trace: _Trace, names: Mapping[int, str], found: Dict[str, int]) -> None:
        super().__init__()
        self._trace = trace
        self._names = names
        self._found = found

    def __torch_function__(self, func, types, args=(), kwargs=None):
        for leaf in tree_flatten((args, kwargs or {}))[0]:
            name = self._names.get(id(leaf))
            if name is not None:
                self._found[name] = self._trace.ipu
        return func(*args, **(kwargs or {}))


def _half_bytes(tensor: torch.Tensor) -> int:
    return tensor.numel() * (2 if tensor.is_floating_point() else tensor.element_size())


def _paths(architecture: str, model_config: Mapping[str, Any], roles: tuple) -> List[str]:
    """The module paths of the row's steps of those executors that run (each once, a split module's as a whole)."""
    row = ARCHITECTURES[architecture]
    found: List[str] = []
    for step, _, _ in expand(row, row.config(model_config)):
        executor = (step.whole if isinstance(step, Split) else step).executor
        if isinstance(step, Block) and not step.called or executor not in roles or step.path in found:
            continue
        found.append(step.path)
    return found


def _metered(model: torch.nn.Module, paths: List[str], trace: _Trace, run) -> Dict[str, Any]:
    """`run()` on the executor `trace` follows: `{path: FLOPs}`, each op counted to the step of `paths` that began
    last, and `{path: IPU}` where each step began."""
    counter = FlopCounterMode(display=False)
    meter = _Meter(paths, set(), counter, False)
    ipus: Dict[str, int] = {}

    def started(path: str) -> None:
        meter.start(path)
        ipus.setdefault(path, trace.ipu)

    handles = [model.get_submodule(path).register_forward_pre_hook(lambda *_, path=path: started(path))
               for path in paths]
    try:
        with counter:
            run()
    finally:
        for handle in handles:
            handle.remove()
    return {"flops": {path: measured.forward_flops for path, measured in meter.result().items()}, "ipus": ipus}


def _encoder_inputs(architecture: str, config: Any, batch: int, sequence: int) -> Dict[str, torch.Tensor]:
    generator = _generator()
    if architecture.startswith("Whisper"):
        frames = 2 * config.max_source_positions
        return {"input_features": torch.randn(batch, config.num_mel_bins, frames, generator=generator)}
    return {"input_ids": _tokens(config, generator, batch, sequence),
            "attention_mask": torch.ones(batch, sequence, dtype=torch.long)}


def upstream_generation(architecture: str, model_config: Optional[Dict[str, Any]] = None, ipu_settings: Any = None,
                        kwargs: Optional[Dict[str, Any]] = None, sequence: int = SEQUENCE,
                        max_length: Optional[int] = None) -> Dict[str, Any]:
    """What upstream's generation build of `architecture` (the tiny model, `model_config` changing its config)
    under `ipu_settings` (a dict of `IPUConfig` arguments) with `parallelize(for_generation=True, **kwargs)` holds
    and computes, for `sequence` tokens of encoder input (Whisper: the frames its config takes), the kwargs'
    `batch_size` and `num_beams`; without a KV cache the decoder runs the sequence padded to `max_length` (default:
    the generation config's).

    With `use_cond_encoder`, the encoder runs in the decoder's executor, at its first step (`encoder` is then
    empty).

    Returns plain data:
    - `buffers`: `{executor: {IPU: bytes}}` of the buffers of upstream's attention classes (`_k_cache`,
      `_v_cache`, `_cross_k_cache`, `_cross_v_cache`, `_generation_step`, `_beam_idx`), where their module uses them;
    - `buffer_names`: `{name: bytes}` of those buffers;
    - `encoder`, `first`, `token`: `{step path: FLOPs}` of the encoder's forward, of the decoder's first step and of
      its second; `ipus`: `{executor: {step path: the IPU it runs on}}`.
    """
    kwargs = dict(kwargs or {})
    model_config = dict(TINY_MODELS[architecture].config, **(model_config or {}))
    modeling_utils, generation = upstream_modules()
    with installed(), _poptorch_distribution(), _one_thread():
        original = _original_model(architecture, json.dumps(model_config, sort_keys=True))
        model = modeling_utils.to_pipelined(original, _ipu_config(ipu_settings or {}))
        model.eval()
        model.requires_grad_(False)  # inference: no tensor needs a gradient (FlopCounterMode's hooks ask)
        model.ipu_config.eval()
        model.parallelize(for_generation=True, **kwargs)
        config = model.config
        attention = importlib.import_module("optimum.graphcore.generation.attention_mixin").IPUAttentionMixin
        held = {name: buffer for name, buffer in model.named_buffers()
                if isinstance(model.get_submodule(name.rpartition(".")[0]), attention)}
        names = {id(buffer): name for name, buffer in held.items()}
        sizes = {name: _half_bytes(buffer) for name, buffer in held.items()}
        batch, beams = kwargs.get("batch_size", 1), kwargs.get("num_beams", 1)
        rows = batch * beams
        encoder_inputs = _encoder_inputs(architecture, config, batch, sequence)
        traces = {"encoder": _Trace(), "decoder": _Trace()}
        found: Dict[str, Dict[str, int]] = {"encoder": {}, "decoder": {}}
        encoder_paths = _paths(architecture, model_config, ("encoder", None))
        encoder = model.get_encoder()

        def run_encoder():
            with _tracing(traces["encoder"]), _BufferUses(traces["encoder"], names, found["encoder"]):
                hidden.append(encoder(**encoder_inputs, return_dict=True).last_hidden_state)

        hidden: List[torch.Tensor] = []
        cond = model.cond_encoder_enabled  # the encoder runs in the decoder's executor, at its first step
        if cond:
            encoded: Dict[str, Any] = {"flops": {}, "ipus": {}}
            encoder_output = torch.zeros(rows, 1)
        else:
            encoded = _metered(model, encoder_paths, traces["encoder"], run_encoder)
            encoder_output = hidden[0].repeat_interleave(beams, dim=0)
        wrapper = generation.DecoderWrapper(model)
        decoder_paths = _paths(architecture, model_config, ("decoder", None))
        use_cache = bool(kwargs.get("use_cache"))
        length = max_length or config.max_length
        start = config.decoder_start_token_id
        mask = encoder_inputs.get("attention_mask")
        mask = None if mask is None else mask.repeat_interleave(beams, dim=0)

        def step(t: int):
            ids = torch.full((rows, 1 if use_cache else length), start, dtype=torch.long)
            features = {"input_features": encoder_inputs["input_features"]} if cond else {}
            inputs = model.prepare_inputs_for_generation(
                ids, use_cache=use_cache, encoder_outputs=BaseModelOutput(last_hidden_state=encoder_output),
                attention_mask=mask, **features)
            with _tracing(traces["decoder"]), _BufferUses(traces["decoder"], names, found["decoder"]):
                traces["decoder"].ipu = 0  # each run of the executor starts on its IPU 0
                wrapper(t=torch.tensor([t]), **inputs)

        first = _metered(model, decoder_paths, traces["decoder"], lambda: step(0))
        token = _metered(model, decoder_paths, traces["decoder"], lambda: step(1))
    buffers: Dict[str, Dict[int, int]] = {}
    for executor, used in found.items():
        for name, ipu in used.items():
            placed = buffers.setdefault(executor, {})
            placed[ipu] = placed.get(ipu, 0) + sizes[name]
    return {"buffers": buffers, "buffer_names": sizes, "encoder": encoded["flops"], "first": first["flops"],
            "token": token["flops"], "ipus": {"encoder": encoded["ipus"], "decoder": token["ipus"]}}
