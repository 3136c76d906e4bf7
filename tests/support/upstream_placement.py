"""Where optimum-graphcore 0.7.1's own `parallelize()` puts a model: the reference placements are tested against.

Runs on the IPU-host test stack only (`OPTIMUM_IPU_EXT_TEST_BASE=upstream`, where conftest makes the real
`optimum.graphcore` submodules importable against the poptorch doubles). `upstream_placement()` builds a
transformers model, converts it with upstream's `to_pipelined`, calls its real `parallelize()` as
`IPUTrainer` (training) or upstream's pipelines and `IPUSeq2SeqTrainer` (inference, generation) do, then
runs it once on CPU and watches where each parameter is used:

- every `poptorch.BeginBlock` call is recorded; the doubles' block hooks report each block that begins
  to a trace standing in for poptorch's tracer (`Block._stages_manager`), so an op runs on the IPU of
  the block that began last (IPU 0 before the first one), as when poptorch traces the model;
- a `TorchFunctionMode` sees every torch function and tensor method call; the first call that is given a
  parameter and returns a tensor is where that parameter is used, on the IPU of the block running then;
- parameters are named as the original transformers model's `named_parameters()` names them (a tied weight
  once). Before `parallelize()` each element of each parameter holds its own number, so a parameter that
  `parallelize()` creates (a serialized embedding's splits, a padded vocabulary) is traced back to the
  elements it took; then every parameter gets its real values back and the model runs.

A generation build runs as generate() runs it: the encoder and the decoder are separate executors, each
numbering its IPUs from 0, so the result then holds one placement per executor.
"""
import contextlib
import copy
import importlib
import importlib.metadata
import json
import sys
from functools import lru_cache
from types import SimpleNamespace
from typing import Any, Dict, List, Optional, Tuple
from unittest import mock

import torch
from torch import nn
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_flatten
from transformers.modeling_outputs import BaseModelOutput
from transformers.utils import versions

from .doubles import installed, poptorch
from .placement_models import TINY_MODELS

# optimum-graphcore's model packages; `models/__init__.py` leaves out distilbert and mpnet
_MODEL_PACKAGES = [
    "bart", "bert", "convnext", "deberta", "distilbert", "gpt2", "groupbert", "hubert", "lxmert", "mpnet", "mt5",
    "roberta", "t5", "vit", "wav2vec2", "whisper",
]  # fmt: skip
# Parameter values are replaced by their element's number plus this offset while `parallelize()` runs:
# exactly representable in float32 and far from any value an initialiser draws.
_FIRST_NUMBER = 1 << 20
_LAST_NUMBER = 1 << 24


class HarnessError(Exception):
    """The harness cannot run this case (not a refusal by optimum-graphcore)."""


@lru_cache(maxsize=None)
def upstream_modules() -> Tuple[Any, Any]:
    """optimum-graphcore's real `modeling_utils` and `generation.utils`, every model module imported (once)."""
    package = sys.modules.get("optimum.graphcore")
    if package is None or not getattr(package, "__path__", None):
        raise HarnessError("optimum.graphcore is not stood in: run on the upstream stack (OPTIMUM_IPU_EXT_TEST_BASE)")
    with installed():
        modeling_utils = importlib.import_module("optimum.graphcore.modeling_utils")
        for name in _MODEL_PACKAGES:
            importlib.import_module(f"optimum.graphcore.models.{name}")
        generation = importlib.import_module("optimum.graphcore.generation.utils")
    return modeling_utils, generation


def architectures() -> Dict[str, type]:
    """The classes optimum-graphcore registers a pipelined version of, by name."""
    registry = upstream_modules()[0]._PRETRAINED_TO_PIPELINED_REGISTRY
    return {cls.__name__: cls for cls in registry}


@lru_cache(maxsize=None)
def _original_model(architecture: str, config_json: str) -> nn.Module:
    """The transformers model, random weights seeded: built once per architecture and config."""
    cls = architectures()[architecture]
    torch.manual_seed(0)
    return cls(cls.config_class(**json.loads(config_json)))


def _ipu_config(ipu_settings: Any):
    """An `IPUConfig` of upstream's class (or a subclass) from a dict of settings or a config."""
    upstream_class = upstream_modules()[0].IPUConfig
    if isinstance(ipu_settings, upstream_class):
        return copy.deepcopy(ipu_settings)
    if isinstance(ipu_settings, dict):
        return upstream_class(**ipu_settings)
    raise HarnessError(f"ipu_settings must be a dict or an upstream IPUConfig, got {type(ipu_settings).__name__}")


# --- the trace: which block runs, which parameter is used where ------------------------------------


class _Trace:
    """Stands in for poptorch's stages manager while one executor is traced: follows the current block."""

    def __init__(self) -> None:
        self.ipu = 0  # ops before the first block run on IPU 0
        self.started: List[List[Any]] = []
        self.first_use: Dict[int, Tuple[int, int]] = {}  # id(parameter) -> (order of first use, IPU)
        self.ipus_used: Dict[int, set] = {}
        self._next_auto_id = 0

    # the interface of poptorch's IStageManager that the block hooks call
    def nextAutoId(self) -> str:
        auto_id = str(self._next_auto_id)
        self._next_auto_id += 1
        return auto_id

    def resetAutoId(self) -> None:
        self._next_auto_id = 0

    def beginStage(self, user_id: str, ipu_id_from_block: Optional[int]) -> None:
        if ipu_id_from_block is None:
            raise HarnessError(f"block {user_id!r} begins with no ipu_id: the harness follows explicit IPUs only")
        self.ipu = ipu_id_from_block
        self.started.append([user_id, ipu_id_from_block])

    def use(self, parameter: nn.Parameter) -> None:
        key = id(parameter)
        self.first_use.setdefault(key, (len(self.first_use), self.ipu))
        self.ipus_used.setdefault(key, set()).add(self.ipu)


class _ParameterUses(TorchFunctionMode):
    """Reports to the trace every parameter given to a torch call that returns a tensor."""

    def __init__(self, trace: _Trace) -> None:
        super().__init__()
        self._trace = trace

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        if any(isinstance(leaf, torch.Tensor) for leaf in tree_flatten(result)[0]):
            for leaf in tree_flatten((args, kwargs))[0]:
                if isinstance(leaf, nn.Parameter):
                    self._trace.use(leaf)
        return result


@contextlib.contextmanager
def _one_thread():
    """Tiny models run several times faster on one thread than on a pool (on a 2-core machine: 6 times)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


@contextlib.contextmanager
def _tracing(trace: _Trace):
    """The block hooks report to `trace` and every torch call is watched, for the duration of the block."""
    previous = poptorch.Block._stages_manager
    poptorch.Block._stages_manager = trace
    try:
        with _ParameterUses(trace):
            yield
    finally:
        poptorch.Block._stages_manager = previous


class _Executor:
    """Stands in for a `poptorch.inferenceModel` of `module`: each call is traced as that executor."""

    def __init__(self, module: nn.Module, trace: _Trace) -> None:
        self._module = module
        self._trace = trace

    def __call__(self, *args, **kwargs):
        self._trace.ipu = 0  # each run starts on IPU 0, as each run of the compiled graph does
        with _tracing(self._trace):
            return self._module(*args, **kwargs)


@contextlib.contextmanager
def _poptorch_distribution():
    """The poptorch double installed as a distribution of its version, as transformers' `require_version` (which
    upstream calls before `poptorch.cond`) reads one."""

    def version(name: str) -> str:
        return poptorch.__version__ if name == "poptorch" else importlib.metadata.version(name)

    shim = SimpleNamespace(version=version, PackageNotFoundError=importlib.metadata.PackageNotFoundError)
    with mock.patch.object(versions, "importlib_metadata", shim):
        yield


# --- calls of parallelize() recorded ------------------------------------------------------------------


@contextlib.contextmanager
def _recording_parallelize_calls(blocks: List[List[Any]], layer_ipus: List[List[int]]):
    """Records each `poptorch.BeginBlock` call and each `get_layer_ipu` result while `parallelize()` runs."""
    real_begin_block = poptorch.BeginBlock
    real_get_layer_ipu = upstream_modules()[0].get_layer_ipu

    def begin_block(layer_to_call, user_id=None, ipu_id=None):
        blocks.append([user_id, ipu_id])
        return real_begin_block(layer_to_call, user_id, ipu_id)

    def get_layer_ipu(ipu_config, target_number_of_layers=None):
        result = real_get_layer_ipu(ipu_config, target_number_of_layers)
        layer_ipus.append(list(result))
        return result

    users = [
        module
        for name, module in list(sys.modules.items())
        if name.startswith("optimum.graphcore.") and getattr(module, "get_layer_ipu", None) is real_get_layer_ipu
    ]
    with contextlib.ExitStack() as stack:
        stack.enter_context(mock.patch.object(poptorch, "BeginBlock", begin_block))
        for module in users:
            stack.enter_context(mock.patch.object(module, "get_layer_ipu", get_layer_ipu))
        yield


# --- parameters traced back to the original model's ---------------------------------------------------


class _Numbering:
    """Numbers every element of the original parameters, to trace the parameters `parallelize()` leaves."""

    def __init__(self, named_parameters: List[Tuple[str, nn.Parameter]]) -> None:
        self.names = [name for name, _ in named_parameters]
        self.counts = {name: parameter.numel() for name, parameter in named_parameters}
        self.offsets: Dict[str, int] = {}
        total = 0
        for name in self.names:
            self.offsets[name] = total
            total += self.counts[name]
        if _FIRST_NUMBER + total > _LAST_NUMBER:
            raise HarnessError(f"{total} parameter elements: too many to number exactly in float32")
        self.total = total
        self._starts = torch.tensor([self.offsets[name] for name in self.names])
        self.real_values = torch.cat([parameter.detach().reshape(-1).double() for _, parameter in named_parameters])

    def numbers(self, name: str) -> torch.Tensor:
        return torch.arange(self.offsets[name], self.offsets[name] + self.counts[name])

    def number_in_place(self, named_parameters: List[Tuple[str, nn.Parameter]]) -> None:
        with torch.no_grad():
            for name, parameter in named_parameters:
                parameter.copy_((self.numbers(name) + _FIRST_NUMBER).view_as(parameter))

    def origin(self, parameter: nn.Parameter) -> torch.Tensor:
        """The element numbers `parameter` holds (-1 where it holds no original element)."""
        values = parameter.detach().reshape(-1).double()
        numbered = (values == values.round()) & (values >= _FIRST_NUMBER) & (values < _FIRST_NUMBER + self.total)
        return torch.where(numbered, values - _FIRST_NUMBER, torch.full_like(values, -1)).long()

    def restore(self, parameter: nn.Parameter, origin: torch.Tensor) -> None:
        """Gives the elements `parameter` took from the original model their real values back."""
        known = origin >= 0
        with torch.no_grad():
            flat = parameter.data.view(-1)
            flat[known] = self.real_values[origin[known]].to(flat.dtype)

    def names_holding(self, numbers: torch.Tensor) -> List[str]:
        """The names of the parameters the element `numbers` belong to, in the original order."""
        indices = torch.unique(torch.searchsorted(self._starts, numbers, right=True) - 1)
        return [self.names[index] for index in indices.tolist()]


def _original_names(original: nn.Module, pipelined: nn.Module) -> Dict[int, Tuple[nn.Parameter, str]]:
    """`{id(parameter): (parameter, original name)}` for the pipelined model's parameters, before `parallelize()`.

    The parameter is kept so that its id is not given to a parameter `parallelize()` creates. A name the
    original model ties to another parameter maps to that parameter's name: the pipelined model may hold
    it as a parameter of its own (PipelinedMPNetForMaskedLM unties its decoder).
    """
    canonical: Dict[int, str] = {}
    alias = {}
    for name, parameter in original.named_parameters(remove_duplicate=False):
        alias[name] = canonical.setdefault(id(parameter), name)
    names = {}
    for name, parameter in pipelined.named_parameters():
        if name not in alias:
            raise HarnessError(f"{type(pipelined).__name__} has a parameter {name!r} the original model lacks")
        names[id(parameter)] = (parameter, alias[name])
    return names


def _holders(
    model: nn.Module, numbering: _Numbering, original_of: Dict[int, Tuple[nn.Parameter, str]]
) -> List[Dict[str, Any]]:
    """Each parameter of the parallelized model with the original elements it holds."""
    holders = []
    for name, parameter in model.named_parameters():
        kept, original = original_of.get(id(parameter), (None, None))
        origin = numbering.numbers(original) if kept is parameter else numbering.origin(parameter)
        numbering.restore(parameter, origin)
        holders.append({"name": name, "parameter": parameter, "origin": origin})
    return holders


def _frozen(holders: List[Dict[str, Any]], numbering: _Numbering) -> List[str]:
    """The original parameters that `parallelize()` left with no gradient: each holder of them is frozen."""
    trained = set()
    for holder in holders:
        if holder["parameter"].requires_grad:
            trained.update(numbering.names_holding(holder["origin"][holder["origin"] >= 0]))
    return [name for name in numbering.names if name not in trained]


def _placement(trace: _Trace, holders: List[Dict[str, Any]], numbering: _Numbering) -> Dict[str, Any]:
    """Where one executor used the original parameters' elements: the IPU of the first use of each."""
    used = [holder for holder in holders if id(holder["parameter"]) in trace.first_use]
    used.sort(key=lambda holder: trace.first_use[id(holder["parameter"])])
    element_ipu = torch.full((numbering.total,), -1, dtype=torch.long)
    element_holders = torch.zeros(numbering.total, dtype=torch.long)
    holders_of: Dict[str, Dict[str, int]] = {}
    several_ipus: Dict[str, set] = {}
    for holder in used:
        key = id(holder["parameter"])
        ipu = trace.first_use[key][1]
        origin = holder["origin"][holder["origin"] >= 0]
        element_ipu[origin[element_ipu[origin] == -1]] = ipu
        element_holders[origin] += 1
        for name in numbering.names_holding(origin):
            holders_of.setdefault(name, {})[holder["name"]] = ipu
            if len(trace.ipus_used[key]) > 1:
                several_ipus.setdefault(name, set()).update(trace.ipus_used[key])
    parameters, spread, unused = {}, {}, []
    for name in numbering.names:
        ipus, counts = torch.unique(element_ipu[numbering.numbers(name)], return_counts=True)
        if ipus.tolist() == [-1]:
            unused.append(name)
        elif len(ipus) == 1:
            parameters[name] = int(ipus[0])
        else:
            spread[name] = {(None if ipu == -1 else ipu): count for ipu, count in zip(ipus.tolist(), counts.tolist())}
    copied = set(numbering.names_holding(torch.nonzero(element_holders > 1).reshape(-1)))
    return {
        "started": trace.started,
        "parameters": parameters,
        "spread": spread,
        "unused": unused,
        "several_ipus": {name: sorted(ipus) for name, ipus in several_ipus.items()},
        "copies": {name: holders_of[name] for name in sorted(copied)},
        "created": {
            holder["name"]: {
                "ipu": trace.first_use.get(id(holder["parameter"]), (None, None))[1],
                "elements": int((holder["origin"] < 0).sum()),
            }
            for holder in holders
            if (holder["origin"] < 0).any()
        },
    }


# --- the forward passes ----------------------------------------------------------------------------------


def _run_model(model: nn.Module, inputs: Dict[str, torch.Tensor]) -> Dict[str, _Trace]:
    trace = _Trace()
    with torch.no_grad() if not model.training else contextlib.nullcontext():
        _Executor(model, trace)(**inputs)
    return {"model": trace}


def _generate(model: nn.Module, inputs: Dict[str, torch.Tensor], kwargs: Dict[str, Any]) -> Dict[str, _Trace]:
    """Runs a generation build as generate() runs it, the encoder and the decoder each in an executor of its own
    (with `use_cond_encoder`, the decoder's alone, the encoder in it): the encoder's once, then the decoder's wrapper
    (`DecoderWrapper`, as `_call_generate` makes it) for the first step, on the inputs `prepare_inputs_for_generation`
    makes: one prompt for each sequence of the kwargs' `batch_size`, each of its beams a row of the decoder's; with
    a KV cache, the step's token, else the sequence so far. The device's own generation loop
    (`on_device_generation_steps`) runs the same wrapper."""
    generation = upstream_modules()[1]
    batch = kwargs.get("batch_size", 1)
    beams = kwargs.get("num_beams", model.generation_config.num_beams)
    cached = any(getattr(module, "kv_cache_initialized", False) for module in model.modules())
    prompt = {name: value[:1].repeat_interleave(batch, dim=0) for name, value in inputs.items()
              if not name.startswith("decoder_")}
    traces = {"decoder": _Trace()} if model.cond_encoder_enabled else {"encoder": _Trace(), "decoder": _Trace()}
    with torch.no_grad():
        if model.cond_encoder_enabled:
            encoded = {"encoder_outputs": BaseModelOutput(last_hidden_state=torch.zeros(batch, 1)),
                       model.main_input_name: prompt[model.main_input_name]}
        else:
            encoder = _Executor(model.get_encoder().eval(), traces["encoder"])
            hidden = encoder(**prompt, return_dict=True).last_hidden_state
            encoded = {"encoder_outputs": BaseModelOutput(last_hidden_state=hidden.repeat_interleave(beams, dim=0))}
            if "attention_mask" in prompt:
                encoded["attention_mask"] = prompt["attention_mask"].repeat_interleave(beams, dim=0)
        ids = torch.full((batch * beams, 1 if cached else 2), model.config.decoder_start_token_id)
        step = model.prepare_inputs_for_generation(ids, use_cache=cached, **encoded)
        _Executor(generation.DecoderWrapper(model.eval()), traces["decoder"])(t=torch.tensor([0]), **step)
    return {"model": traces["decoder"]} if model.cond_encoder_enabled else traces


# --- the reference ---------------------------------------------------------------------------------------


def upstream_placement(
    architecture: str,
    model_config: Optional[Dict[str, Any]] = None,
    ipu_settings: Any = None,
    for_inference: bool = False,
    for_generation: bool = False,
) -> Dict[str, Any]:
    """Where optimum-graphcore 0.7.1 places `architecture` built from `model_config` under `ipu_settings`.

    `model_config`: keyword arguments of the architecture's config class (default: its `TINY_MODELS` config).
    `ipu_settings`: a dict of `IPUConfig` arguments or an `IPUConfig` (upstream's or a subclass), default `{}`.
    `for_inference`: the inference build (`ipu_config.eval()`, `model.eval()`,
    `parallelize(**inference_parallelize_kwargs)`); `for_generation` (inference only) adds `for_generation=True`
    as `IPUSeq2SeqTrainer` does and runs the build as generate() runs it (`_generate`).

    Returns plain data:
    - `blocks`: `[user_id, ipu_id]` of each `poptorch.BeginBlock` call, in call order;
    - `layer_ipus`: the IPU of each layer, one list per `get_layer_ipu` call, in call order;
    - `parameter_counts`: `{name: number of elements}` of the original model's parameters;
    - `frozen`: the names of the parameters `parallelize()` leaves without gradient (`requires_grad` off);
    - the placement (for a generation build, one under `executors["encoder"]` and `executors["decoder"]`, but with
      `use_cond_encoder`, whose one executor runs both):
      `started` (`[user_id, ipu_id]` of each block begun in the forward pass), `parameters` (`{name: IPU}`
      where first used), `spread` (`{name: {IPU or None (unused): elements}}` for a parameter that
      `parallelize()` split over several IPUs), `unused` (names no op used), `several_ipus` (`{name: IPUs}`
      of a parameter used on more than one IPU), `copies` (`{name: {name in the parallelized model: IPU}}` of a
      parameter whose elements several used parameters hold, like an untied decoder), `created` (`{name in the
      parallelized model: {"ipu": IPU or None, "elements": count}}` of the parameters holding elements of no
      original parameter, like vocabulary padding).

    optimum-graphcore's own refusals (a `layers_per_ipu` that does not fit the model, ...) propagate unchanged.
    """
    if for_generation and not for_inference:
        raise HarnessError("for_generation is an inference build: pass for_inference=True too")
    if architecture not in TINY_MODELS:
        raise HarnessError(f"{architecture!r} is not one of the pipelined architectures: {sorted(TINY_MODELS)}")
    tiny = TINY_MODELS[architecture]
    model_config = tiny.config if model_config is None else model_config
    modeling_utils, generation = upstream_modules()
    ipu_config = _ipu_config({} if ipu_settings is None else ipu_settings)
    with installed(), _poptorch_distribution(), _one_thread():
        original = _original_model(architecture, json.dumps(model_config, sort_keys=True))
        original.train(not for_inference)
        model = modeling_utils.to_pipelined(original, ipu_config)
        numbering = _Numbering(list(original.named_parameters()))
        original_of = _original_names(original, model)
        numbering.number_in_place([(name, parameter) for parameter, name in original_of.values()])
        if for_inference:
            model.ipu_config.eval()
            model.eval()
            kwargs = dict(model.ipu_config.inference_parallelize_kwargs)
        else:
            kwargs = dict(model.ipu_config.parallelize_kwargs)
        if for_generation:
            # as upstream's pipelines (`get_poplar_executor`) parallelize a model they generate with
            if not (model.config.is_encoder_decoder and isinstance(model, generation.IPUGenerationMixin)):
                raise HarnessError(f"{architecture} is not an encoder-decoder model upstream generates with")
            if "use_cache" not in kwargs and type(model) in generation.MODELS_SUPPORTING_KV_CACHE:
                kwargs["use_cache"] = True
            kwargs["for_generation"] = True
        blocks, layer_ipus = [], []
        with _recording_parallelize_calls(blocks, layer_ipus):
            model.parallelize(**kwargs)
        holders = _holders(model, numbering, original_of)
        inputs = tiny.inputs(model.config, model.training)
        traces = _generate(model, inputs, kwargs) if for_generation else _run_model(model, inputs)
    result = {
        "blocks": blocks,
        "layer_ipus": layer_ipus,
        "parameter_counts": dict(numbering.counts),
        "frozen": _frozen(holders, numbering),
    }
    placements = {name: _placement(trace, holders, numbering) for name, trace in traces.items()}
    if "encoder" in placements:
        result["executors"] = placements
    else:
        result.update(placements["model"])
    return result
