"""The vocabulary of a family's rows: how an architecture's row describes what its `parallelize()` in
optimum-graphcore 0.7.1 does, how its forward pass runs, and what each of its modules is.

A row's `steps` are the model's modules in the order its forward pass runs them:

- `Block(name, path, ipu)`: `poptorch.BeginBlock(module at path, name, ipu_id=ipu)`; when the module runs, every
  operation until the next block begins runs on that IPU. `called=False`: the module is wrapped but never called
  (its weight is read directly), so it begins no block and its parameters go where the model is running then.
- `Run(path)`: a module outside every block: it runs on the IPU of the block that began last (IPU 0 before the
  first block).
- `Layers(...)`: one `Block` per layer of a group of the layer list upstream passes to `get_layer_ipu`.
- `Split(...)`: a module `parallelize()` may split into parts spread over IPUs (`SerializedEmbedding`,
  `SplitProjection`), else a `Block`.

Each step's `module` says what the module at its path is: a function of the row's sizes (`Architecture.sizes`: the
`config.json` and the micro-batch, as numbers), and for a layer of where it is (`Position`: its index), giving the
blocks of blocks.py that hold its parameters and keep and compute its share of a micro-batch. `head`: the step's
parameters are a head's, which a checkpoint of another class may lack (they are then added from the module).

A parameter belongs to the step with the longest path that holds it (a tied weight: to the first such step of any
of its names), and goes to the IPU that step runs on. Paths are as transformers 4.29.2 names modules.

Nothing here imports torch or transformers.
"""

from enum import Enum
from typing import Any, Callable, Dict, Iterator, Mapping, NamedTuple, Optional, Tuple, Union

from ...errors import PlacementError, as_json
from .blocks import Sequential

# --- the IPU a block is placed on --------------------------------------------------------------------------------


class LastIPU(NamedTuple):
    """`ipu_config._ipus_per_replica - 1`: the last IPU of the pipeline (of its executor, in a generation build)."""


class LayerIPU(NamedTuple):
    """The IPU of layer `index` of the layer group `group` (negative: from the end), as `get_layer_ipu` places it."""

    group: str
    index: int


class FirstSplitIPU(NamedTuple):
    """The first IPU `setting` (a per-IPU list of splits) gives splits to, else `otherwise`. Upstream refuses
    splits on more than one IPU."""

    setting: str
    otherwise: Any


class WhenConfig(NamedTuple):
    """`then` where the config's `field` is true, else `otherwise`."""

    field: str
    then: Any
    otherwise: Any


LAST = LastIPU()

IPURule = Union[int, LastIPU, LayerIPU, FirstSplitIPU, WhenConfig]


# --- the steps of a forward pass ----------------------------------------------------------------------------------


class Position(NamedTuple):
    """Where a step is: a layer's index in its group as its path numbers it (`{i}`), the last such index, the stage
    (`{stage}`, where layers are counted per stage) of a layer or of a stage's first module. 0, 0 and None for other
    steps."""

    layer: int = 0
    last: int = 0
    stage: Optional[int] = None


# `module(sizes)`: the blocks of the module at a step's path (blocks.Sequential), `sizes` the row's; a layer's
# `module(sizes, at)`, where the layer is
Module = Callable[[Any], Sequential]
LayerModule = Callable[[Any, Position], Sequential]

# `when`: (config field, value) the step needs, or None: the step is always there.
Condition = Optional[Tuple[str, Any]]

class Word(str, Enum):
    """A value that is one of a few words: it equals its word, and prints as it (`f"{ENCODER}"` is "encoder")."""

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


class ExecutorRole(Word):
    """A poptorch executor of a pipelined model: the whole `MODEL`, or in a generation build the `ENCODER` or the
    `DECODER`, each compiled on IPUs of its own."""

    MODEL = "model"
    ENCODER = "encoder"
    DECODER = "decoder"


MODEL, ENCODER, DECODER = ExecutorRole

# In a generation build the encoder and the decoder run as separate executors: `executor` says which one runs the
# step ("encoder", "decoder"), None: both (a shared embedding), or the only one of a model that is not split.


class Block(NamedTuple):
    name: Optional[str]
    path: str
    ipu: IPURule = 0
    called: bool = True
    when: Condition = None
    executor: Optional[ExecutorRole] = None
    module: Optional[Module] = None
    head: bool = False


class Run(NamedTuple):
    path: str
    when: Condition = None
    executor: Optional[ExecutorRole] = None
    module: Optional[Module] = None
    head: bool = False


class Layers(NamedTuple):
    """A group of the layer list: `count` layers (a config field, or a number), each a block named `name` on the
    module `path` (`{i}`: its index in the group). A field holding a list counts layers per stage (a list of
    depths): `{stage}` is then the stage, and `stage_prelude` the module each stage runs first.

    `ipu`: None, as `get_layer_ipu` places the layers; a number: every layer on that IPU, whatever the config.
    """

    group: str
    name: str
    path: str
    count: Union[str, int, Callable[["ModelConfig"], int]]
    ipu: Optional[int] = None
    stage_prelude: Optional[str] = None
    executor: Optional[ExecutorRole] = None
    module: Optional[LayerModule] = None
    head: bool = False
    prelude_module: Optional[LayerModule] = None


class Split(NamedTuple):
    """A module whose weight `parallelize()` splits along its rows into parts `{path}.{parts}.{i}` where the
    per-IPU list `setting` is given and sums to more than 1 (the config then leaves the `factor` setting null), as
    `SerializedEmbedding.parallelize` / `SplitProjection.parallelize` place them: the first part of each IPU's share
    begins a block `{label}-{first part}[-{last part}]` there, the others run after it. Otherwise: `whole`.

    `own_share`: in a generation build each executor takes its own IPUs' share of the list (the projection);
    else the whole list, numbered from the executor's first IPU, as upstream reads it (the embedding).
    `factor_divides`: with no split, a `factor` above 1 still cuts the whole module into that many parts, whose rows
    it must divide (`SerializedEmbedding` asserts it; `SerializedLinear` does not)."""

    label: str
    path: str
    parts: str
    setting: str
    factor: str
    whole: Block
    own_share: bool
    factor_divides: bool


Step = Union[Block, Run, Layers, Split]

# what a micro-batch is made of, and so how its shape is given
TEXT = "text"
ENCODER_DECODER = "encoder-decoder"
IMAGE = "image"
AUDIO = "audio"
SPEECH_RECOGNITION = "speech recognition"


class InputShape(NamedTuple):
    """One micro-batch: `micro_batch_size` examples of `sequence_length` (text: tokens; audio: samples at 16 kHz;
    speech recognition: the feature extractor's frames; images: pixels on a side, or a pair (height, width), the
    config's `image_size`); an encoder-decoder model's decoder takes `decoder_sequence_length` tokens; `choices`: the
    sequences of each example of a multiple-choice model (1 for others)."""

    micro_batch_size: int
    sequence_length: int
    decoder_sequence_length: int
    choices: int = 1


# --- the model's config.json ----------------------------------------------------------------------------------------


class ModelConfig:
    """A model's `config.json`, each field read with the default of its config class in transformers 4.29.2 (the
    release optimum-graphcore 0.7.1 runs on) where the file leaves it out or gives null, as `save_pretrained` does
    for defaults.

    `defaults` values may be callables of the config (a `num_decoder_layers` that defaults to `num_layers`). A value
    given must be of its default's kind (a whole number, a number, a string, a list of whole numbers); `model` names
    the model in the error that says it is not.
    """

    def __init__(self, values: Mapping[str, Any], defaults: Mapping[str, Any], model: str = "the model"):
        self.values = dict(values)
        self.defaults = defaults
        self.model = model

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if name == "num_labels":  # transformers keeps the labels' names; their number is a property
            labels = self.values.get("id2label")
            return len(labels) if labels else self._given(name, self.defaults.get(name, 2))
        default = self.defaults.get(name)
        if default is not None:
            return self._given(name, default(self) if callable(default) else default)
        if self.values.get(name) is None:
            raise AttributeError(f"config field {name!r} has no default in the placement rules")
        return self.values[name]

    def _given(self, name: str, default: Any) -> Any:
        """The config's value of `name`, checked against the kind of its default; the default where it has none."""
        value = self.values.get(name)
        if value is None:
            return default
        allowed = _allowed(name, default, value)
        if allowed:
            raise PlacementError(self.model, f"its config.json gives `{name}` {as_json(value)}, and the placement "
                                 f"needs {allowed}")
        return value

    def holds(self, condition: Condition) -> bool:
        """Whether the config meets a step's `when`."""
        if condition is None:
            return True
        field, value = condition
        return getattr(self, field) == value


# fields that are a number or a pair of numbers (an `image_size` 224 or [224, 160])
PAIRS = ("image_size", "patch_size")


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _text(value: Any) -> bool:
    return isinstance(value, str)


def _listed(value: Any, kind: Callable[[Any], bool]) -> bool:
    """Whether `value` is a list (a tuple, from a `PretrainedConfig`) of items of that kind."""
    return isinstance(value, (list, tuple)) and all(map(kind, value))


def _allowed(name: str, default: Any, value: Any) -> str:
    """What `name` allows where `value` is not of its `default`'s kind, else ""."""
    if isinstance(default, bool):
        return ""  # read as transformers reads it: for its truth
    if isinstance(default, int):
        if _whole(value) or name in PAIRS and _listed(value, _whole) and len(value) == 2:
            return ""
        return "a whole number" + (" or a list of two" if name in PAIRS else "")
    if isinstance(default, float):
        return "" if isinstance(value, (int, float)) and not isinstance(value, bool) else "a number"
    if isinstance(default, str):
        return "" if _text(value) else "a string"
    if isinstance(default, list):
        return "" if _listed(value, _whole) else "a list of whole numbers"
    if isinstance(default, tuple):
        return "" if isinstance(value, str) or _listed(value, _text) else "a string or a list of strings"
    return ""


class GenerationRow(NamedTuple):
    """What a family's `parallelize(for_generation=True, ...)` builds to generate, besides its blocks (read off its
    pipelined class in optimum-graphcore 0.7.1):

    - `kwargs`: the generation keyword arguments its `parallelize()` reads, each with its default there;
    - `kv_cache`: whether the class is `@supports_kv_cache` (`use_cache` gives each decoder self-attention a KV
      cache; generate() with a class that is not falls back to no cache, with a warning);
    - `steps`: the module of one decoding step (`generation.Decoding`) of each step of the decoder whose module is
      not its row's at the step's sizes, by path (a layer's with `{i}`, taking its `Position` too);
    - `encoder_mask`: the decoder reads the encoder's attention mask with its output;
    - `positions`: the config field of the decoder's learned positions, the most tokens it can index (None: any).
    """

    kwargs: Mapping[str, Any]
    kv_cache: bool
    steps: Mapping[str, Callable[..., Sequential]]
    encoder_mask: bool = False
    positions: Optional[str] = None


class Architecture(NamedTuple):
    """One row: what optimum-graphcore 0.7.1 does with one transformers class.

    - `name`, `model_types`: the class and the `model_type` values of the configs it takes;
    - `prefix`: its `base_model_prefix` (a checkpoint of the bare model loads under it, as transformers loads it);
    - `steps`: the forward pass, as above; `blocks_on_one_ipu`: False where `parallelize()` places no block at all
      when the pipeline has one IPU;
    - `defaults`: the config fields the rules and the modules read, with their config class's defaults;
    - `inputs`: what a micro-batch is made of (TEXT, ENCODER_DECODER, IMAGE, AUDIO, SPEECH_RECOGNITION), and `sizes`:
      the sizes its steps' modules are written in, read off the config and a micro-batch's `InputShape`;
    - `ties`: `{alias: parameter}`, the names transformers gives a tied weight besides its own (`named_parameters()`
      lists the parameter once, by its first name), each with the config field that ties it (None: always);
    - `copies`: `{name: parameter}` a pipelined model holds as a parameter of its own, with the same values, where
      the transformers model ties it (`PipelinedMPNetForMaskedLM`), with the condition on the settings;
    - `frozen`: paths whose parameters do not train (`requires_grad=False`), each with its condition;
    - `serialized_embedding`: the embedding `parallelize()` splits into `embedding_serialization_factor` parts,
      which must divide its rows; `padded_embedding`: the one it pads to a multiple of the factor instead;
    - `reads_embedding_factor`: whether its `parallelize()` compares `embedding_serialization_factor` with 1 (which
      fails where the factor is null, as it is with `serialized_embedding_splits_per_ipu`);
    - `untied_splits`: whether `parallelize()` refuses a split embedding or projection (`Split` steps) where the
      word embeddings are tied;
    - `kwargs`: the keyword arguments its `parallelize()` takes (`"*"`: any, of which it reads those `generates`
      names), `generation`: the encoder and decoder layer groups a `for_generation=True` build splits into two
      executors, or None; `generates`: what its generation build builds, or None where it does not generate;
    - `renames`: `(pattern, replacement)` regular expressions mapping names a newer transformers writes in
      checkpoints to the names of transformers 4.29.2.
    """

    name: str
    model_types: Tuple[str, ...]
    prefix: str
    steps: Tuple[Step, ...]
    defaults: Mapping[str, Any]
    inputs: str
    sizes: Callable[[ModelConfig, "InputShape"], Any]
    ties: Mapping[str, Tuple[str, Optional[str]]] = {}
    copies: Mapping[str, Tuple[str, Callable[[Mapping[str, Any]], bool]]] = {}
    frozen: Mapping[str, Condition] = {}
    blocks_on_one_ipu: bool = True
    serialized_embedding: Optional[str] = None
    padded_embedding: Optional[str] = None
    reads_embedding_factor: bool = False
    untied_splits: bool = False
    kwargs: Tuple[str, ...] = ()
    generation: Optional[Tuple[str, str]] = None
    generates: Optional[GenerationRow] = None
    renames: Tuple[Tuple[str, str], ...] = ()

    def config(self, values: Mapping[str, Any], model: str = "the model") -> ModelConfig:
        return ModelConfig(values, self.defaults, model)

    def tied(self, config: ModelConfig) -> Dict[str, str]:
        """`{alias: parameter}` of the weights tied under this config."""
        return {alias: target for alias, (target, field) in self.ties.items()
                if field is None or getattr(config, field)}


class Expanded(NamedTuple):
    """A row's step under a config, each layer a `Block` of its own whose module is the layer's, where it is: its
    layer group and index in the group (None but for layers)."""

    step: Step
    group: Optional[str]
    index: Optional[int]


def _placed(module: Optional[LayerModule], at: Position) -> Optional[Module]:
    """A layer's module, where the layer is."""
    if module is None:
        return None
    return lambda sizes: module(sizes, at)


def _count(step: Layers, config: ModelConfig) -> Any:
    if callable(step.count):
        return step.count(config)
    return getattr(config, step.count) if isinstance(step.count, str) else step.count


def expand(architecture: Architecture, config: ModelConfig) -> Iterator[Expanded]:
    """The row's steps under this config, in the order of the forward pass: each layer a `Block` of its own (with
    the group's module), the steps whose condition the config does not meet left out."""
    for step in architecture.steps:
        if not isinstance(step, Layers):
            if isinstance(step, Split) or config.holds(step.when):
                yield Expanded(step, None, None)
            continue
        count = _count(step, config)
        stages = list(enumerate(count)) if isinstance(count, list) else [(None, count)]
        index = 0
        for stage, layers in stages:
            if step.stage_prelude is not None:
                yield Expanded(Run(step.stage_prelude.format(stage=stage), executor=step.executor,
                                   module=_placed(step.prelude_module, Position(stage=stage))), None, None)
            for layer in range(layers):
                module = _placed(step.module, Position(layer, layers - 1, stage))
                block = Block(step.name.format(i=layer, stage=stage), step.path.format(i=layer, stage=stage),
                              step.ipu, executor=step.executor, module=module, head=step.head)
                yield Expanded(block, step.group, index)
                index += 1


def module_of(step: Step) -> Optional[Module]:
    """The module of an expanded step (a `Split`'s is its whole module's)."""
    return step.whole.module if isinstance(step, Split) else step.module
