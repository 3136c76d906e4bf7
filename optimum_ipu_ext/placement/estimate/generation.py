"""A generation build as optimum-graphcore 0.7.1 runs it: `parallelize(for_generation=True, **kwargs)`, then
`generate()`, the encoder and the decoder each an executor on IPUs of its own. `generation_build()` reads the keyword
arguments the model's `parallelize()` reads (`GenerationBuild`), refusing what upstream refuses; `GenerationModel`
gives each IPU's part of it (`GenerationLoad`):

- KV caches (`generation/attention_mixin.py`): each decoder self-attention of a class that `supports_kv_cache`,
  built with `use_cache`, registers `_k_cache` and `_v_cache` of (batch x beams, heads, max_length, head size), an
  int32 `_generation_step` and, with beams, an int32 `_beam_idx` of batch x beams; with `use_cross_cache` its
  attention on the encoder's output registers `_cross_k_cache` and `_cross_v_cache` of (batch x beams, heads,
  encoder_max_length, head size) and its own step and beam index. They are made in the weights' type and follow
  `.half()`: 2 bytes an element, 4 with fp32.
- the encoder's output: generate() expands it to batch x beams rows and hands it to the decoder's executor, every
  call (or once, into a buffer, with `use_encoder_output_buffer`), with the encoder's attention mask where the
  model reads one (fp16 in the buffer, int32 as an input); every IPU holding a decoder layer reads it. With
  `use_cond_encoder` (one IPU for both) the encoder runs under `poptorch.cond` at the first step into a buffer of
  (batch, max_source_positions, hidden), expanded to the beams each step.
- on-device generation (`on_device_generation_steps`, `generation/on_device_generation.py`), on the IPU of the head:
  greedy search keeps the tokens of (batch, max_length), beam search the sequences and running sequences of (batch,
  beams, max_length) and four tensors of batch x beams, all float32.
- working: the activations of the IPU's largest step (what it computes and keeps through the step), of the
  encoder's forward of `batch` rows or of one decoder step of batch x beams rows.
- FLOPs (as `torch.utils.flop_counter` counts them): the encoder's forward; one decoder step, one token a row with
  a KV cache, else the whole sequence padded to `max_length` (`_IndexedInputLinear` projecting the step's position
  alone); the first step, which fills the cross cache.
"""

from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from ...errors import PlacementError, as_json
from ...settings.mode import INFERENCE
from ..models import ARCHITECTURES, resolve_shape
from ..models.blocks import NO_OPERATIONS, Operations, Sequential, StepCost
from ..models.generation import Decoding
from ..models.rules import (
    DECODER,
    ENCODER,
    ENCODER_DECODER,
    Architecture,
    Block,
    ExecutorRole,
    InputShape,
    Layers,
    ModelConfig,
    Position,
    Split,
    expand,
    module_of,
)
from .layout import ForwardStep, layer_counts
from .pipeline import PipelineWork
from .timing import Calibration, Job, StepTime, TimeModel

KWARGS = "inference_parallelize_kwargs"
# what generate() is called with, which a generation build's caches must match
GENERATE_ARGUMENTS = ("batch_size", "num_beams", "max_length")
# the generation config transformers 4.29.2 makes of a model's config.json (`GenerationConfig.from_model_config`):
# its `max_length` and `num_beams`, `PretrainedConfig`'s defaults where the file leaves them out
GENERATION_CONFIG = {"max_length": 20, "num_beams": 1}
# the generation keyword arguments that are switches, and those that count
_SWITCHES = ("use_cache", "use_cross_cache", "use_cond_encoder", "use_encoder_output_buffer",
             "use_group_quantized_linears")
_STEPS = "on_device_generation_steps"
# on-device beam search's float32 tensors of batch x beams: log_probs, running_log_probs, is_finished, the beam index
_BEAM_VECTORS = 4
_INT32 = 4
_FLOAT32 = 4


class GenerationBuild(NamedTuple):
    """What a generation build runs, as its `parallelize()` kwargs and generate() give it: `batch_size` sequences a
    replica, `num_beams` each, up to `max_length` tokens; the encoder's input of `sequence_length` (tokens, or
    frames) and its output of `encoder_length` positions (None: a decoder alone); a KV cache (`kv_cache`), a cross
    cache of `encoder_max_length` positions (`cross_cache`), the encoder's output kept in a buffer
    (`encoder_output_buffer`) or the encoder run on the decoder's IPU (`cond_encoder`), `on_device_steps` tokens a
    host call (0: each token from the host); `kwargs`, the `parallelize()` kwargs; `notes`, what upstream does
    besides, in words."""

    batch_size: int
    num_beams: int
    max_length: int
    sequence_length: Optional[int]
    encoder_length: Optional[int]
    kv_cache: bool
    cross_cache: bool
    encoder_max_length: Optional[int]
    encoder_output_buffer: bool
    cond_encoder: bool
    on_device_steps: int
    kwargs: Mapping[str, Any]
    notes: Tuple[str, ...] = ()

    @property
    def rows(self) -> int:
        """The sequences the decoder runs a step: batch x beams."""
        return self.batch_size * self.num_beams

    def to_dict(self) -> Dict[str, Any]:
        return {"batch_size": self.batch_size, "num_beams": self.num_beams, "max_length": self.max_length,
                "sequence_length": self.sequence_length, "encoder_length": self.encoder_length,
                "use_cache": self.kv_cache, "use_cross_cache": self.cross_cache,
                "encoder_max_length": self.encoder_max_length,
                "use_encoder_output_buffer": self.encoder_output_buffer, "use_cond_encoder": self.cond_encoder,
                "on_device_generation_steps": self.on_device_steps, "notes": list(self.notes)}


def generation_kwargs(model: str, architecture: Architecture, settings: Mapping[str, Any],
                      generate: Mapping[str, Any]) -> Dict[str, Any]:
    """The `parallelize()` kwargs upstream's pipelines generate with: the config's `inference_parallelize_kwargs`,
    `for_generation=True`, `use_cache=True` where the class supports a KV cache and the kwargs leave it out, and
    what generate() is called with (`generate`: `batch_size`, `num_beams`, `max_length`) where the kwargs leave out
    what its KV caches are made for.

    Raises:
        PlacementError: for a model that does not generate, and where the config's kwargs give `for_generation`
            (the pipelines pass it: a second value is a `TypeError`).
    """
    kwargs = dict(settings[KWARGS] or {})
    if "for_generation" in kwargs:
        raise PlacementError(model, "it gives `for_generation`, which upstream's pipelines and IPUSeq2SeqTrainer "
                             "pass themselves to generate (a second value is a TypeError): leave it out", KWARGS)
    row = architecture.generates
    if row is None:
        raise not_generating(model, architecture)
    kwargs["for_generation"] = True
    if row.kv_cache:
        kwargs.setdefault("use_cache", True)
    if kwargs.get("use_cache") and row.kv_cache:
        kwargs.update({name: generate[name] for name in GENERATE_ARGUMENTS
                       if generate.get(name) is not None and name not in kwargs})
    return kwargs


def not_generating(model: str, architecture: Architecture) -> PlacementError:
    """The refusal of a model that does not generate."""
    generating = ", ".join(name for name, row in ARCHITECTURES.items() if row.generates is not None)
    return PlacementError(model, f"{architecture.name} does not generate in optimum-graphcore 0.7.1: {generating} do")


def _whole(model: str, name: str, value: Any, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        allowed = "a positive whole number" if least else "a whole number from 0"
        raise PlacementError(model, f"`{name}` is {as_json(value)}: {allowed}", KWARGS)
    return value


def generation_build(model: str, architecture: Architecture, config: ModelConfig, settings: Mapping[str, Any],
                     generate: Mapping[str, Any]) -> Optional[GenerationBuild]:
    """The generation build of a config's inference build (None where its `inference_parallelize_kwargs` do not
    give `for_generation`): its kwargs read as the model's `parallelize()` reads them, with their defaults there;
    `generate`: what generate() is called with, where given (`batch_size` sequences a replica, `num_beams`,
    `max_length`; `sequence_length`, the encoder's input as `placement()` takes it). A KV cache is made for
    `batch_size` (default 1), `num_beams` and `max_length` (default: the model's generation config's, as upstream
    fills them), and generate() must be called with the same; without one, generate()'s values are the build's (the
    generation config's where not given).

    Raises:
        PlacementError: naming the kwarg or the setting, where upstream refuses the build or its generate().
    """
    kwargs = settings[KWARGS] or {}
    row = architecture.generates
    if row is None or not kwargs.get("for_generation"):
        return None
    for name in _SWITCHES:
        if name in kwargs and not isinstance(kwargs[name], bool):
            raise PlacementError(model, f"`{name}` is {as_json(kwargs[name])}: true or false", KWARGS)
    read = {**row.kwargs, **kwargs}
    kv_cache = bool(kwargs.get("use_cache")) and row.kv_cache
    generation_config = ModelConfig(config.values, GENERATION_CONFIG, model)
    values = {}
    for name in GENERATE_ARGUMENTS:
        default = 1 if name == "batch_size" else getattr(generation_config, name)
        asked = generate.get(name)
        if kv_cache:
            values[name] = kwargs.get(name, default)  # `_populate_parallelize_kwargs_with_generation_config`
            if asked is not None and asked != values[name]:
                raise PlacementError(model, f"the KV caches are made for {name} {as_json(values[name])}, and "
                                     f"generate() is called with {name}={as_json(asked)}: upstream refuses it",
                                     KWARGS)
        else:
            values[name] = default if asked is None else asked
        _whole(model, name, values[name], 1)
    steps = _whole(model, _STEPS, read.get(_STEPS, 0), 0)
    cross = bool(read.get("use_cross_cache"))
    cond = bool(read.get("use_cond_encoder"))
    buffered = bool(read.get("use_encoder_output_buffer"))
    encoder_max_length = _whole(model, "encoder_max_length", read["encoder_max_length"], 1) if cross else None
    _check_build(model, architecture, config, settings, values["max_length"], kv_cache, steps, cond, buffered,
                 read)
    sequence_length = encoder_length = None
    if architecture.generation is not None:
        # a text encoder's input is as long as the cross cache unless given
        text = architecture.inputs == ENCODER_DECODER
        shape = resolve_shape(model, architecture.name, config, 1,
                              generate.get("sequence_length") or (encoder_max_length if text else None))
        sequence_length = shape.sequence_length
        encoder_length = architecture.sizes(config, shape).s
        if cross and encoder_length != encoder_max_length:
            raise PlacementError(model, f"`encoder_max_length` is {encoder_max_length}, and the encoder's output has "
                                 f"{encoder_length} positions: the cross cache copies it whole, so the two must be "
                                 "the same", KWARGS)
    return GenerationBuild(values["batch_size"], values["num_beams"], values["max_length"], sequence_length,
                           encoder_length, kv_cache,
                           cross, encoder_max_length, buffered, cond, steps, dict(kwargs),
                           _notes(architecture, kv_cache))


def _check_build(model: str, architecture: Architecture, config: ModelConfig, settings: Mapping[str, Any],
                 max_length: int, kv_cache: bool, steps: int, cond: bool, buffered: bool,
                 read: Mapping[str, Any]) -> None:
    """What upstream's `parallelize()` and generate() refuse of a generation build."""
    row = architecture.generates
    view = INFERENCE.view(settings)
    if row.positions is not None and max_length > getattr(config, row.positions):
        raise PlacementError(model, f"`max_length` is {max_length}, and the decoder's learned positions "
                             f"({row.positions}) index {getattr(config, row.positions)} tokens", KWARGS)
    if cond and buffered:
        raise PlacementError(model, "`use_cond_encoder` and `use_encoder_output_buffer` are both true: upstream "
                             "takes one of them", KWARGS)
    if cond and view["ipus_per_replica"] > 1:
        raise PlacementError(model, f"it is {view['ipus_per_replica']}, and `use_cond_encoder` runs the encoder and "
                             "the decoder on one IPU: 1", INFERENCE.setting("ipus_per_replica"))
    factors = [_whole(model, name, read.get(name, 1), 1)
               for name in ("batch_serialization_factor", "sequence_serialization_factor")]
    if min(factors) > 1:
        raise PlacementError(model, "`batch_serialization_factor` and `sequence_serialization_factor` are both above "
                             "1: upstream serializes the encoder's attention along one of them", KWARGS)
    if steps and not kv_cache:
        raise PlacementError(model, f"`{_STEPS}` is {steps}, and on-device generation needs a KV cache "
                             "(`use_cache` true, on a model that supports one)", KWARGS)
    iterations = view["device_iterations"]
    if iterations not in (1, steps or 1):
        allowed = f"1 or {steps} (`{_STEPS}`)" if steps else "1"
        raise PlacementError(model, f"it is {iterations}: the decoder of a generation build runs a token a device "
                             f"iteration, {allowed}", INFERENCE.setting("device_iterations"))
    if buffered and view["replication_factor"] > 1:
        raise PlacementError(model, f"it is {view['replication_factor']}, and upstream refuses replication with "
                             "`use_encoder_output_buffer`", INFERENCE.setting("replication_factor"))


def _notes(architecture: Architecture, kv_cache: bool) -> Tuple[str, ...]:
    """What upstream does with the build besides, in words."""
    if kv_cache:
        return ()
    if not architecture.generates.kv_cache:
        return (f"{architecture.name} does not support a KV cache: generate() falls back to use_cache=False, with a "
                "warning, and each step recomputes the whole sequence, padded to max_length",)
    return ("no KV cache (`use_cache` is not true): generate() must be called with use_cache=False, and each step "
            "recomputes the whole sequence, padded to max_length",)


# --- each IPU's part ---------------------------------------------------------------------------------------------


class PassWork(NamedTuple):
    """What an IPU runs in one pass (the encoder's forward, a decoder step): its FLOPs, its operations, and the
    bytes it receives from the IPU before it in its executor."""

    flops: int = 0
    operations: Operations = NO_OPERATIONS
    exchange_bytes: int = 0

    def plus(self, cost: StepCost, received: int) -> "PassWork":
        return PassWork(self.flops + cost.forward_flops, self.operations.plus(cost.forward),
                        self.exchange_bytes + received)

    @property
    def work(self) -> PipelineWork:
        """As the time model takes an IPU's cycle."""
        return PipelineWork(0, 0, 0, self.flops, 0, 0, self.operations, self.exchange_bytes)


class GenerationLoad(NamedTuple):
    """One IPU's part of a generation build: in bytes, the buffers of its decoder layers' self-attentions (KV
    caches) and of their attentions on the encoder's output (cross caches), the encoder's output it reads, the
    on-device generation state, the activations of its largest step; what it runs in the encoder's forward, in a
    decoder step and in the first decoder step."""

    kv_cache_bytes: int
    cross_cache_bytes: int
    encoder_output_bytes: int
    state_bytes: int
    working_bytes: int
    encoder: PassWork = PassWork()
    token: PassWork = PassWork()
    first_token: PassWork = PassWork()

    @property
    def on_chip_bytes(self) -> int:
        return (self.kv_cache_bytes + self.cross_cache_bytes + self.encoder_output_bytes + self.state_bytes
                + self.working_bytes)

    @property
    def work(self) -> PipelineWork:
        """What paces the IPU: its part of a decoder step, the step a generation build repeats."""
        return self.token.work

    def to_dict(self) -> Dict[str, Any]:
        return {"kv_cache_bytes": self.kv_cache_bytes, "cross_cache_bytes": self.cross_cache_bytes,
                "encoder_output_bytes": self.encoder_output_bytes, "state_bytes": self.state_bytes,
                "working_bytes": self.working_bytes, "encoder_flops": self.encoder.flops,
                "token_flops": self.token.flops, "first_token_flops": self.first_token.flops}


class GenerationModel:
    """The costs of a generation build of `architecture` under `config`, by step: each step's cost in the encoder's
    forward, in a decoder step and in the first one, and the buffers each decoder layer holds; `load(steps)`, those
    of an IPU running `steps`. `weight_bytes`: 2 (fp16), or 4 (fp32)."""

    def __init__(self, architecture: Architecture, config: ModelConfig, build: GenerationBuild, weight_bytes: int):
        self.architecture = architecture
        self.build = build
        self.weight_bytes = weight_bytes
        decoder_only = architecture.generation is None
        tokens = 1 if build.kv_cache else build.max_length
        steady = Decoding(architecture.sizes(config, InputShape(build.rows, build.sequence_length or tokens, tokens)),
                          build.max_length if build.kv_cache else None, build.cross_cache)
        first = Decoding(steady.sizes, steady.cache_length, build.cross_cache, first=True)
        encoder_sizes = (None if decoder_only
                         else architecture.sizes(config, InputShape(build.batch_size, build.sequence_length, 0)))
        self.hidden_size, self.vocabulary = steady.decoder.h, steady.decoder.v
        self.model_type = config.values.get("model_type") or architecture.model_types[0]
        self.roles: Dict[str, Optional[ExecutorRole]] = {}
        # the paths of each pass, in the order its executor runs them
        self.order: Dict[ExecutorRole, List[str]] = {ENCODER: [], DECODER: []}
        self.encoder: Dict[str, StepCost] = {}
        self.token: Dict[str, StepCost] = {}
        self.first: Dict[str, StepCost] = {}
        self.caches: Dict[str, Tuple[int, int]] = {}
        counts = layer_counts(architecture, config)
        fp32 = weight_bytes == 4
        for step, group, index in expand(architecture, config):
            if isinstance(step, Block) and not step.called:
                continue
            role = (step.whole if isinstance(step, Split) else step).executor or (DECODER if decoder_only else None)
            self.roles[step.path] = role
            for each in ((ENCODER, DECODER) if role is None else (role,)):
                self.order[each].append(step.path)
            if role != DECODER:
                self.encoder[step.path] = module_of(step)(encoder_sizes).cost(fp32)
            if role == ENCODER:
                continue
            at = None if group is None else Position(index, counts[group] - 1)
            self.token[step.path], self.first[step.path] = (self._decoding(step, at, decoding).cost(fp32)
                                                            for decoding in (steady, first))
            if group is not None:
                self.caches[step.path] = self._cache_bytes(steady)
        self.head = [path for path, role in self.roles.items() if role != ENCODER][-1]

    def _decoding(self, step: Any, at: Optional[Position], decoding: Decoding) -> Sequential:
        """A decoder step's module: its family's generation module, else its row's at the step's sizes."""
        overrides = self.architecture.generates.steps
        if at is not None:
            pattern = next(each.path for each in self.architecture.steps
                           if isinstance(each, Layers) and each.path.format(i=at.layer) == step.path)
            if pattern in overrides:
                return overrides[pattern](decoding, at)
        elif step.path in overrides:
            return overrides[step.path](decoding)
        return module_of(step)(decoding.sizes)

    def _cache_bytes(self, decoding: Decoding) -> Tuple[int, int]:
        """The buffers of one decoder layer's self-attention and of its attention on the encoder's output."""
        build, sizes = self.build, decoding.decoder
        rows, element = build.rows, self.weight_bytes
        beams = _INT32 * rows if build.num_beams > 1 else 0
        own = _INT32 + 2 * rows * sizes.a * build.max_length * sizes.d * element + beams if build.kv_cache else 0
        cross = (_INT32 + 2 * rows * sizes.a * build.encoder_max_length * sizes.d * element + beams
                 if build.cross_cache else 0)
        return own, cross

    @property
    def encoder_output_bytes(self) -> int:
        """The encoder's output an IPU of decoder layers reads, with its attention mask; with `use_cond_encoder`,
        the buffer the encoder fills, and its expansion to the beams."""
        build = self.build
        width = self.hidden_size * self.weight_bytes
        if build.cond_encoder:
            expanded = build.rows * build.encoder_length * width if build.num_beams > 1 else 0
            return build.batch_size * build.encoder_length * width + expanded
        mask = (2 if build.encoder_output_buffer else _INT32) if self.architecture.generates.encoder_mask else 0
        return build.rows * build.encoder_length * (width + mask)

    @property
    def state_bytes(self) -> int:
        """The on-device generation state (0: generated on the host)."""
        build = self.build
        if not build.on_device_steps:
            return 0
        if build.num_beams == 1:
            return build.batch_size * build.max_length * _FLOAT32
        return (2 * build.rows * build.max_length + _BEAM_VECTORS * build.rows) * _FLOAT32

    def load(self, steps: Sequence[ForwardStep]) -> GenerationLoad:
        """The part of an IPU running `steps` (of either executor, in the order they run)."""
        kv = cross = working = 0
        passes = {ENCODER: PassWork(), DECODER: PassWork(), None: PassWork()}  # None: the decoder's first step
        reads_encoder = holds_head = False
        before: Dict[ExecutorRole, Optional[int]] = {ENCODER: None, DECODER: None}
        for step in steps:
            if step.path not in self.roles:  # a part of a split weight: its step's path is costed
                continue
            role = ENCODER if (self.roles[step.path] or step.executor) == ENCODER else DECODER
            position = self.order[role].index(step.path)
            # what its executor hands it: from the IPU before it, unless it is the executor's first step (the host's)
            # or follows its step before on this IPU
            joined = position == 0 or before[role] == position - 1
            before[role] = position
            if role == ENCODER:
                cost = self.encoder[step.path]
                passes[ENCODER] = passes[ENCODER].plus(cost, 0 if joined else cost.input_bytes)
                working = max(working, cost.activation_bytes)
                continue
            steady, started = self.token[step.path], self.first[step.path]
            passes[DECODER] = passes[DECODER].plus(steady, 0 if joined else steady.input_bytes)
            passes[None] = passes[None].plus(started, 0 if joined else started.input_bytes)
            working = max(working, steady.activation_bytes, started.activation_bytes)
            own, other = self.caches.get(step.path, (0, 0))
            kv += own
            cross += other
            reads_encoder = reads_encoder or step.path in self.caches
            holds_head = holds_head or step.path == self.head
        encoder_output = self.encoder_output_bytes if reads_encoder and self.build.encoder_length else 0
        return GenerationLoad(kv, cross, encoder_output, self.state_bytes if holds_head else 0, working,
                              passes[ENCODER], passes[DECODER], passes[None])

    # --- what crosses between the host and the IPUs ---

    def encoder_call_bytes(self) -> int:
        """What a call of the encoder's executor sends and receives: the input (the ids and their mask, or the
        features) and the encoder's output back (none with `use_cond_encoder`, whose encoder runs in the
        decoder's)."""
        build = self.build
        if build.encoder_length is None or build.cond_encoder:
            return 0
        return self._input_bytes() + build.batch_size * build.encoder_length * self.hidden_size * self.weight_bytes

    def _input_bytes(self) -> int:
        """The encoder's input of the batch: what its first step takes (ids, features), and the ids' mask."""
        build = self.build
        mask = build.batch_size * build.sequence_length * _INT32 if self.architecture.generates.encoder_mask else 0
        return self.encoder[self.order[ENCODER][0]].input_bytes + mask

    def step_call_bytes(self) -> int:
        """What a call of the decoder's executor sends and receives for each step it runs: the step's ids (with
        a KV cache its token, else the sequence), the encoder's output with its mask (unless in a buffer), the
        features (with `use_cond_encoder`); back, the logits of each row (generated on the host) or the tokens (on
        the device; beam search, the sequences)."""
        build = self.build
        tokens = 1 if build.kv_cache else build.max_length
        sent = build.rows * tokens * _INT32
        if build.cond_encoder:
            sent += self._input_bytes()
        elif build.encoder_length is not None and not build.encoder_output_buffer:
            mask = _INT32 if self.architecture.generates.encoder_mask else 0
            sent += build.rows * build.encoder_length * (self.hidden_size * self.weight_bytes + mask)
        if not build.on_device_steps:
            return sent + build.rows * self.vocabulary * self.weight_bytes
        return sent + build.batch_size * (build.max_length if build.num_beams > 1 else 1) * _INT32

    def time(self, model: TimeModel, parts: Sequence[GenerationLoad], replicas: int) -> "GenerationTime":
        """The build's time on the time model's IPUs, its IPUs' parts `parts`: each call of an executor is a step
        that is not pipelined as `TimeModel.step` times one (each pass through its IPUs in turn) with the host's part
        of the call (its fixed part, what it sends and receives)."""
        build = self.build
        steps = build.on_device_steps or 1

        def call(work_of: Callable[[GenerationLoad], PassWork], passes: int, bytes_each: int) -> StepTime:
            """A call of the executor running `passes` passes, each IPU's work in one `work_of` its part, sending
            and receiving `bytes_each` a pass."""
            works = [work_of(part).work for part in parts if work_of(part).operations.count]
            job = Job(False, passes, replicas, max(1, len(works)), build.batch_size, 1, bytes_each)
            return model._replace(job=job).step([model.ipu_time(work, 0, 0) for work in works], None)

        encoder = call(lambda part: part.encoder, 1, self.encoder_call_bytes())
        token = call(lambda part: part.token, steps, self.step_call_bytes())
        return GenerationTime(
            model.ipu.name, encoder.step_seconds if self.encoder_call_bytes() else encoder.pipeline_seconds,
            call(lambda part: part.first_token, 1, 0).pipeline_seconds, token.pipeline_seconds / steps,
            token.host_seconds, steps, build.batch_size, replicas, build.max_length, model.calibration,
            model.calibration.outside(self.model_type, build.rows))


# --- its time ------------------------------------------------------------------------------------------------------


class GenerationTime(NamedTuple):
    """A generation build's time on IPUs of type `ipu`: the encoder's forward (with its call), the decoder's first
    step and each step after it (an executor's IPUs run in turn), and the host's part of each call of the decoder's
    executor, which runs `tokens_per_call` steps (`on_device_generation_steps`, else 1); `batch_size` sequences a
    replica, `replicas` replicas, up to `max_length` tokens; the calibration that timed it, and how the build is
    outside what its runs measured."""

    ipu: str
    encoder_seconds: float
    first_step_seconds: float
    step_seconds: float
    call_seconds: float
    tokens_per_call: int
    batch_size: int
    replicas: int
    max_length: int
    calibration: Calibration
    outside: Tuple[str, ...] = ()

    @property
    def first_token_seconds(self) -> float:
        """From the input to the first token on the host: the encoder, then the first call of the decoder's
        executor, whose tokens come back when its last step is done."""
        return (self.encoder_seconds + self.first_step_seconds + (self.tokens_per_call - 1) * self.step_seconds
                + self.call_seconds)

    @property
    def token_seconds(self) -> float:
        """Each token after the first: a decoder step, and the host's share of its call."""
        return self.step_seconds + self.call_seconds / self.tokens_per_call

    @property
    def tokens_per_second(self) -> float:
        """A replica's: a token of each of its sequences a step."""
        return self.batch_size / self.token_seconds

    @property
    def job_tokens_per_second(self) -> float:
        return self.tokens_per_second * self.replicas

    @property
    def job_tokens_per_second_range(self) -> Tuple[float, float]:
        """The job's tokens a second a run would measure, by the model's error on the runs of its calibration."""
        return self.calibration.measured_range(self.job_tokens_per_second)

    @property
    def sequence_seconds(self) -> float:
        """Generating `max_length` tokens."""
        return self.first_token_seconds + (self.max_length - 1) * self.token_seconds

    def to_dict(self) -> Dict[str, Any]:
        return {"ipu": self.ipu, "first_token_seconds": self.first_token_seconds,
                "token_seconds": self.token_seconds, "tokens_per_second": self.tokens_per_second,
                "job_tokens_per_second": self.job_tokens_per_second,
                "job_tokens_per_second_range": list(self.job_tokens_per_second_range),
                "sequence_seconds": self.sequence_seconds,
                "parts": {"encoder": self.encoder_seconds, "first_step": self.first_step_seconds,
                          "step": self.step_seconds, "call": self.call_seconds},
                "tokens_per_call": self.tokens_per_call, "replicas": self.replicas,
                "time_model": self.calibration.report(self.outside)}
