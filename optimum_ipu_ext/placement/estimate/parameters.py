"""The parameters of an architecture as transformers builds it, from the tensors of a checkpoint: named as
transformers names them when it loads the checkpoint (its base-model prefix added or taken off, old names
renamed), buffers and the tensors of modules the architecture lacks left out, a tied weight counted once, and the
heads the checkpoint lacks added from the config; or, without a checkpoint, from the formulas of its config alone.
Then what `parallelize()` changes: a padded vocabulary, the copies some pipelined models hold."""

import math
import re
from typing import Any, Dict, List, Mapping, NamedTuple, Tuple

from ...errors import PlacementError
from ...settings.mode import Mode
from ..models import BUFFER_PATTERN, resolve_shape
from ..models.rules import Architecture, ModelConfig, Split, expand, module_of
from .layout import split_shares

_BUFFERS = re.compile(BUFFER_PATTERN)
# transformers' old names of a norm's weight and bias
_LEGACY_NAMES = ((re.compile(r"\.gamma$"), ".weight"), (re.compile(r"\.beta$"), ".bias"))

Shapes = Dict[str, Tuple[int, ...]]


class Parameters(NamedTuple):
    """`shapes`: `{parameter: shape}`, by the name `named_parameters()` gives it; `aliases`: `{parameter: its other
    names}`, of the weights tied to it."""

    shapes: Shapes
    aliases: Dict[str, List[str]]

    def elements(self, name: str) -> int:
        return math.prod(self.shapes[name])


def _top_modules(architecture: Architecture) -> Tuple[str, ...]:
    return tuple({step.path.split(".")[0] for step in architecture.steps})


def loaded_names(architecture: Architecture, names: List[str]) -> Dict[str, str]:
    """`{checkpoint name: the name transformers loads it as}`: renamed, and its base-model prefix added (a
    checkpoint of the bare model into a model with a head) or taken off (the other way), as `from_pretrained` does."""
    renamed = {}
    for name in names:
        new = name
        for pattern, replacement in _LEGACY_NAMES:
            new = pattern.sub(replacement, new)
        for pattern, replacement in architecture.renames:
            new = re.sub(pattern, replacement, new)
        renamed[name] = new
    prefix = architecture.prefix + "."
    tops = _top_modules(architecture)
    expects_prefix = architecture.prefix in tops
    has_prefix = any(name.startswith(prefix) for name in renamed.values())
    if expects_prefix and not has_prefix:
        return {name: new if new.split(".")[0] in tops else prefix + new for name, new in renamed.items()}
    if has_prefix and not expects_prefix:
        return {name: new[len(prefix):] if new.startswith(prefix) else new for name, new in renamed.items()}
    return renamed


def from_checkpoint(architecture: Architecture, config: ModelConfig,
                    tensors: Mapping[str, Tuple[int, ...]]) -> Parameters:
    """The parameters of `architecture` from a checkpoint's `{tensor name: shape}`, heads it lacks added."""
    ties = architecture.tied(config)
    shapes: Shapes = {}
    for name, new in loaded_names(architecture, list(tensors)).items():
        if _BUFFERS.search(new):
            continue
        target = ties.get(new, new)
        shapes.setdefault(target, tuple(tensors[name]))
    for path, head in _described(architecture, config)[1].items():
        if not any(name == path or name.startswith(path + ".") for name in shapes):
            shapes.update(head)
    return Parameters(shapes, _aliases(ties))


def from_config(architecture: Architecture, config: ModelConfig) -> Parameters:
    """The parameters of `architecture` from its config alone: its body's and its heads' formulas."""
    body, heads = _described(architecture, config)
    shapes = dict(body)
    for head in heads.values():
        shapes.update(head)
    return Parameters(shapes, _aliases(architecture.tied(config)))


def _described(architecture: Architecture, config: ModelConfig) -> Tuple[Shapes, Dict[str, Shapes]]:
    """The parameters the modules of the row's steps hold: (those of the body, `{path: those of each head}`), a
    tied weight a module names by another of its names (a decoder's bias, the head's own) by its own."""
    sizes = architecture.sizes(config, resolve_shape(config.model, architecture.name, config))
    ties = architecture.tied(config)
    body: Shapes = {}
    heads: Dict[str, Shapes] = {}
    for step, _, _ in expand(architecture, config):
        module = module_of(step)
        if module is None:
            continue
        shapes = {ties.get(name, name): shape for name, shape in module(sizes).parameters(step.path).items()}
        if (step.whole if isinstance(step, Split) else step).head:
            heads.setdefault(step.path, {}).update(shapes)
        else:
            body.update(shapes)
    return body, heads


def _aliases(ties: Mapping[str, str]) -> Dict[str, List[str]]:
    aliases: Dict[str, List[str]] = {}
    for alias, target in ties.items():
        aliases.setdefault(target, []).append(alias)
    return aliases


def parallelized(model: str, architecture: Architecture, parameters: Parameters,
                 settings: Mapping[str, Any], for_inference: bool = False) -> Parameters:
    """The parameters after `parallelize()`: a vocabulary padded to a multiple of `embedding_serialization_factor`
    (`padded_embedding`), the copies a pipelined model holds, the parts of a weight split over IPUs; checks that a
    serialized embedding's rows divide by the factor.

    `embedding_serialization_factor` is read as upstream's models read it: the training setting, in both modes;
    the settings of a split (`Split` steps) as the models that split read them: those of the mode.
    """
    factor = settings["embedding_serialization_factor"] or 1
    shapes = dict(parameters.shapes)
    aliases = {name: list(names) for name, names in parameters.aliases.items()}
    padded = architecture.padded_embedding
    if factor > 1 and padded in shapes:
        rows, *rest = shapes[padded]
        shapes[padded] = (math.ceil(rows / factor) * factor, *rest)
    serialized = architecture.serialized_embedding
    if serialized in shapes:
        _check_factor_divides(model, architecture, factor, serialized, shapes, "embedding_serialization_factor")
    for copy, (source, applies) in architecture.copies.items():
        if applies(settings) and source in shapes:
            shapes[copy] = shapes[source]
            aliases[source] = [alias for alias in aliases.get(source, []) if alias != copy]
    mode = Mode.of(for_inference)
    for step in architecture.steps:
        if isinstance(step, Split):
            _split(model, architecture, step, settings, mode, shapes, aliases)
    return Parameters(shapes, aliases)


def _split(model: str, architecture: Architecture, step: Split, settings: Mapping[str, Any], mode: Mode,
           shapes: Shapes, aliases: Dict[str, List[str]]) -> None:
    """Replaces the weight of a module `parallelize()` splits by its parts, each a share of its rows."""
    shares = split_shares(step, settings, mode)
    weight = f"{step.path}.weight"
    if weight not in shapes:
        return
    if shares is None:
        if step.factor_divides:
            factor_setting = mode.setting(step.factor)
            _check_factor_divides(model, architecture, settings[factor_setting] or 1, weight, shapes, factor_setting)
        return
    rows, *rest = shapes.pop(weight)
    aliases.pop(weight, None)
    if rows % shares.factor:
        raise PlacementError(
            model, f"{shares.factor} parts do not divide the {rows} rows of `{weight}`, which "
            f"{architecture.name}'s parallelize() splits into that many", mode.setting(step.setting))
    for part in range(shares.factor):
        shapes[f"{step.path}.{step.parts}.{part}.weight"] = (rows // shares.factor, *rest)


def _check_factor_divides(model: str, architecture: Architecture, factor: int, weight: str, shapes: Shapes,
                          setting: str) -> None:
    """A serialization `factor` above 1 cuts `weight` into that many parts of equal rows, which upstream asserts."""
    rows = shapes[weight][0]
    if factor > 1 and rows % factor:
        dividing = ", ".join(str(each) for each in dividing_factors(rows))
        raise PlacementError(model, f"{factor} does not divide the {rows:,} rows of `{weight}`, which "
                             f"{architecture.name}'s parallelize() splits into that many parts; the factors up to "
                             f"{LARGEST_FACTOR} that do: {dividing}", setting)


# the serialization factors named where one does not divide a weight's rows, and tried by `plan`
LARGEST_FACTOR = 16


def dividing_factors(rows: int) -> List[int]:
    """The serialization factors from 1 to `LARGEST_FACTOR` that divide `rows`."""
    return [factor for factor in range(1, LARGEST_FACTOR + 1) if rows % factor == 0]
