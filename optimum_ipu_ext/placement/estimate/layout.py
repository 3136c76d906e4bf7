"""Where each block, layer and parameter of a model goes, from its architecture's row, its config and the IPU
config's settings: optimum-graphcore 0.7.1's `parallelize()` worked out without running it.

`lay_out()` needs no parameter: it expands `layers_per_ipu` as upstream does (refusing what upstream refuses, before
any weight is read), places every block and layer, and lists, per executor, where each module path runs. `assign()`
then puts each parameter on the IPU of the step that first uses it.
"""

import functools
import itertools
from typing import AbstractSet, Any, Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

from ...errors import PlacementError, as_json
from ...settings.mode import Mode
from ..models.rules import (
    DECODER,
    ENCODER,
    MODEL,
    Architecture,
    Block,
    ExecutorRole,
    Expanded,
    FirstSplitIPU,
    LastIPU,
    LayerIPU,
    Layers,
    ModelConfig,
    Run,
    Split,
    WhenConfig,
    expand,
)


def expand_layers_per_ipu(model: str, layers_per_ipu: Sequence[int], ipus: int, layers: int,
                          setting: str) -> List[int]:
    """The layers on each IPU, `-1` wildcards spread as optimum-graphcore's `_expand_layers_per_ipu_wildcard`
    spreads them (the remainder to the last wildcard IPU); one IPU takes every layer, whatever `layers_per_ipu`.

    Raises:
        PlacementError: where upstream refuses the setting, and where its wildcards would get fewer than no layers.
    """
    if ipus == 1:
        return [layers]
    expanded = list(layers_per_ipu)
    if expanded == [-1]:  # one wildcard for every IPU
        expanded = [-1] * ipus
    ipus_setting = setting.replace("layers_per_ipu", "ipus_per_replica")
    if len(expanded) != ipus:
        raise PlacementError(model, f"{as_json(list(layers_per_ipu))} has {len(expanded)} entries, and "
                             f"`{ipus_setting}` is {ipus}", setting)
    wildcards = [index for index, count in enumerate(expanded) if count == -1]
    given = sum(count for count in expanded if count != -1)
    if not wildcards:
        if given != layers:
            raise PlacementError(model, f"{as_json(expanded)} places {given} layers and the model has {layers}",
                                 setting)
        return expanded
    if given > layers:
        raise PlacementError(model, f"{as_json(expanded)} places {given} layers besides its wildcards, and the model "
                             f"has {layers}", setting)
    quotient, remainder = divmod(layers - given, len(wildcards))
    for index in wildcards:
        expanded[index] = quotient
    expanded[wildcards[-1]] += remainder
    return expanded


def encoder_decoder_cut(model: str, expanded: Sequence[int], encoder_layers: int, setting: str) -> int:
    """The number of IPUs the encoder takes when `split_encoder_decoder_ipu_config` splits the pipeline for a
    generation build: the largest power of two after which exactly the encoder's layers are placed.

    Raises:
        PlacementError: where no such cut exists, as upstream refuses it.
    """
    if len(expanded) < 2:
        raise PlacementError(model, "a generation build runs the encoder and the decoder on IPUs of their own, so "
                             "it needs at least 2 IPUs", setting.replace("layers_per_ipu", "ipus_per_replica"))
    cuts = [ipu + 1 for ipu, placed in enumerate(itertools.accumulate(expanded)) if placed == encoder_layers]
    powers = [cut for cut in cuts if cut & (cut - 1) == 0]
    if not powers:
        raise PlacementError(
            model, f"{as_json(list(expanded))} does not end the encoder's {encoder_layers} layers on IPU 1, 2, 4, 8, "
            "... : a generation build runs the encoder on its own IPUs, a power of two of them, and the decoder on "
            "the others",
            setting)
    return max(powers)


class Executor(NamedTuple):
    """One poptorch executor: the whole model, or in a generation build the encoder or the decoder, on
    `ipus` IPUs numbered from `first_ipu` in the pipeline."""

    name: ExecutorRole
    first_ipu: int
    ipus: int


class OnIPU(NamedTuple):
    """Why a step runs where it does: a block placed on `ipu` whatever the layers do (an embedding on IPU 0, a head
    on the last IPU)."""

    ipu: int


class WithLayer(NamedTuple):
    """Why a step runs where it does: it runs on the IPU of layer `layer` of the layer list (its block, or the last
    one that began before the step)."""

    layer: int


Origin = Union[OnIPU, WithLayer]


class FirstUse(NamedTuple):
    """Where a module path's parameters, where no longer path holds them, are first used: at `order` of the forward
    pass, on `ipu` (of the pipeline), for the reason `origin`."""

    order: int
    ipu: int
    origin: Origin


class ForwardStep(NamedTuple):
    """One step of an executor's forward pass, in order: its module path, the block it begins (`begins`: a called
    `BeginBlock`; `name`: its name), the IPU it runs on, its index in the layer list (None: not a layer) and the
    origin of that IPU (see `FirstUse`)."""

    executor: ExecutorRole
    path: str
    begins: bool
    name: Optional[str]
    ipu: int
    layer: Optional[int]
    origin: Origin


class Layout(NamedTuple):
    """The placement of a model, before its parameters are known; `forward`: every step, in the order each executor
    runs them."""

    ipus: int
    layers_per_ipu: List[int]
    layer_ipus: List[int]
    blocks: List[List[Optional[str]]]
    uses: Dict[ExecutorRole, Dict[str, FirstUse]]
    executors: Tuple[Executor, ...]
    forward: Tuple[ForwardStep, ...] = ()


def layer_counts(architecture: Architecture, config: ModelConfig) -> Dict[str, int]:
    """`{layer group: layers}`, in the order of the layer list."""
    return _group_counts(expand(architecture, config))


def _group_counts(steps: Iterable[Expanded]) -> Dict[str, int]:
    """`{layer group: layers}` of the expanded `steps`."""
    counts: Dict[str, int] = {}
    for _, group, _ in steps:
        if group is not None:
            counts[group] = counts.get(group, 0) + 1
    return counts


def layer_paths(architecture: Architecture, config: ModelConfig) -> List[str]:
    """The module path of each layer of the layer list."""
    return [step.path for step, group, _ in expand(architecture, config) if group is not None]


def fixed_layer_groups(architecture: Architecture) -> Tuple[str, ...]:
    """The layer groups `parallelize()` places on IPUs of its own choosing, whatever `layers_per_ipu` says."""
    return tuple(step.group for step in architecture.steps if isinstance(step, Layers) and step.ipu is not None)


def generation_split(architecture: Architecture, kwargs: Mapping[str, Any]) -> bool:
    """Whether `parallelize(**kwargs)` runs the encoder and the decoder as executors of their own."""
    return bool(architecture.generation and kwargs.get("for_generation") and not kwargs.get("use_cond_encoder"))


def lay_out(model: str, architecture: Architecture, config: ModelConfig, settings: Mapping[str, Any],
            for_inference: bool, layers_per_ipu: Optional[Sequence[int]] = None) -> Layout:
    """The blocks and layers of `architecture` on the IPUs of the config's `settings` (its `vars()`), in training
    or in inference (the inference settings, as upstream's `eval()` mode reads them). `layers_per_ipu` replaces
    the setting's value (what `--balance` tries).

    Raises:
        PlacementError: naming the setting, where upstream's `parallelize()` refuses the config for this model.
    """
    mode = Mode.of(for_inference)
    setting = mode.setting("layers_per_ipu")
    ipus = settings[mode.setting("ipus_per_replica")]
    given = list(settings[setting] if layers_per_ipu is None else layers_per_ipu)
    kwargs = settings[mode.setting("parallelize_kwargs")] or {}
    _check_kwargs(model, architecture, kwargs, mode.setting("parallelize_kwargs"))
    _check_settings(model, architecture, config, settings, mode)
    steps = list(expand(architecture, config))
    counts = _group_counts(steps)
    group_ipus, executors = _layers_on_ipus(model, architecture, counts, given, ipus, setting, kwargs)
    offsets = dict(zip(counts, itertools.accumulate([0, *counts.values()])))
    blocks: List[List[Optional[str]]] = [[] for _ in range(ipus)]
    uses: Dict[ExecutorRole, Dict[str, FirstUse]] = {executor.name: {} for executor in executors}
    order = itertools.count()
    forward: List[ForwardStep] = []
    with_blocks = architecture.blocks_on_one_ipu or ipus > 1
    _check_split_shares(model, architecture, settings, mode, executors)
    for executor in executors:
        ipu, origin = executor.first_ipu, OnIPU(executor.first_ipu)  # before the first block: the first IPU
        for step, group, index in _with_splits(steps, settings, mode, executor):
            if len(executors) > 1 and step.executor not in (None, executor.name):
                continue
            if isinstance(step, Block):
                if group is None:
                    block_ipu, block_origin = _resolve(model, step.ipu, executor, group_ipus, offsets, config,
                                                       settings, mode)
                else:
                    block_ipu = group_ipus[group][index]
                    block_origin = OnIPU(block_ipu) if step.ipu is not None else WithLayer(offsets[group] + index)
                if block_ipu >= ipus:
                    raise PlacementError(
                        model, f"{architecture.name}'s parallelize() places its block "
                        f"{as_json(step.name or step.path)} on IPU {block_ipu}, and the pipeline has {ipus} IPUs",
                        mode.setting("ipus_per_replica"))
                if with_blocks:
                    _add_block(blocks[block_ipu], step.name)
                    if step.called:
                        ipu, origin = block_ipu, block_origin
            begins = isinstance(step, Block) and step.called and with_blocks
            layer = None if group is None else offsets[group] + index
            forward.append(ForwardStep(executor.name, step.path, begins, step.name if begins else None, ipu, layer,
                                       origin))
            uses[executor.name].setdefault(step.path, FirstUse(next(order), ipu, origin))
    layer_ipus_list = [ipu for group in counts for ipu in group_ipus[group]]
    expanded = [layer_ipus_list.count(ipu) for ipu in range(ipus)]
    return Layout(ipus, expanded, layer_ipus_list, blocks, uses, executors, tuple(forward))


def _layers_on_ipus(model: str, architecture: Architecture, counts: Mapping[str, int], given: Sequence[int],
                    ipus: int, setting: str,
                    kwargs: Mapping[str, Any]) -> Tuple[Dict[str, List[int]], Tuple[Executor, ...]]:
    """`{layer group: the IPU of each of its layers}` and the executors: one, or in a generation build the encoder's
    and the decoder's, each with its part of the split."""
    fixed = fixed_layer_groups(architecture)
    if fixed:
        return ({group: [_fixed_ipu(architecture, group)] * count for group, count in counts.items()},
                (Executor(MODEL, 0, ipus),))
    expanded = expand_layers_per_ipu(model, given, ipus, sum(counts.values()), setting)
    if not generation_split(architecture, kwargs):
        layer_ipus = iter(_layer_ipus(expanded))
        return ({group: [next(layer_ipus) for _ in range(count)] for group, count in counts.items()},
                (Executor(MODEL, 0, ipus),))
    encoder, decoder = architecture.generation
    cut = encoder_decoder_cut(model, expanded, counts[encoder], setting)  # the encoder's layers on IPUs 0 to cut - 1
    return ({encoder: _layer_ipus(expanded[:cut]), decoder: [cut + ipu for ipu in _layer_ipus(expanded[cut:])]},
            (Executor(ENCODER, 0, cut), Executor(DECODER, cut, ipus - cut)))


class SplitShares(NamedTuple):
    """How `parallelize()` splits a `Split` step's module: into `factor` parts, `per_ipu[i]` of them on IPU i."""

    factor: int
    per_ipu: List[int]


def split_shares(step: Split, settings: Mapping[str, Any], mode: Mode) -> Optional[SplitShares]:
    """The split of `step`'s module under these settings, or None where `parallelize()` keeps it whole."""
    per_ipu = settings[mode.setting(step.setting)]
    if per_ipu is None:
        return None
    factor = sum(per_ipu)  # the config gives no factor with the splits
    return SplitShares(factor, list(per_ipu)) if factor > 1 else None


def _with_splits(steps, settings: Mapping[str, Any], mode: Mode, executor: Executor):
    """The steps with each `Split` replaced by its parts, as its settings place them for this executor, or by its
    whole module's block."""
    for step, group, index in steps:
        if not isinstance(step, Split):
            yield step, group, index
            continue
        shares = split_shares(step, settings, mode)
        if shares is None:
            yield step.whole, None, None
            continue
        per_ipu = shares.per_ipu
        if step.own_share:
            per_ipu = per_ipu[executor.first_ipu:executor.first_ipu + executor.ipus]
        for ipu, count in enumerate(per_ipu):
            first = sum(per_ipu[:ipu])
            for part in range(first, first + count):
                path = f"{step.path}.{step.parts}.{part}"
                if part == first:
                    parts = f"{first}-{first + count - 1}" if count > 1 else f"{first}"
                    yield Block(f"{step.label}-{parts}", path, ipu, executor=step.whole.executor), None, None
                else:
                    yield Run(path, executor=step.whole.executor), None, None
        yield Run(step.path, executor=step.whole.executor), None, None  # what follows the parts: a bias


def _check_split_shares(model: str, architecture: Architecture, settings: Mapping[str, Any], mode: Mode,
                        executors: Sequence[Executor]) -> None:
    """A generation build keeps a split embedding on the encoder's IPUs and a split projection on the decoder's,
    as `split_encoder_decoder_ipu_config` requires."""
    if len(executors) < 2:
        return
    for step in architecture.steps:
        shares = split_shares(step, settings, mode) if isinstance(step, Split) else None
        if shares is None:
            continue
        owner = executors[1] if step.own_share else executors[0]
        outside = [count for ipu, count in enumerate(shares.per_ipu)
                   if count and not owner.first_ipu <= ipu < owner.first_ipu + owner.ipus]
        if outside:
            raise PlacementError(
                model, f"{as_json(shares.per_ipu)} puts splits of `{step.path}` outside the {owner.name}'s IPUs "
                f"{owner.first_ipu}-{owner.first_ipu + owner.ipus - 1}, where a generation build keeps them all",
                mode.setting(step.setting))


def _add_block(names: List[Optional[str]], name: Optional[str]) -> None:
    """Lists a block on its IPU once (upstream gives several modules one block name)."""
    if name is None or name not in names:
        names.append(name)


def _layer_ipus(expanded: Sequence[int]) -> List[int]:
    """`get_layer_ipu`: the IPU of each layer."""
    return [ipu for ipu, count in enumerate(expanded) for _ in range(count)]


def _fixed_ipu(architecture: Architecture, group: str) -> int:
    return next(step.ipu for step in architecture.steps if isinstance(step, Layers) and step.group == group)


def _resolve(model: str, rule: Any, executor: Executor, group_ipus: Mapping[str, List[int]],
             offsets: Mapping[str, int], config: ModelConfig, settings: Mapping[str, Any],
             mode: Mode) -> Tuple[int, Origin]:
    """The IPU (of the pipeline) a block's rule gives, and its origin."""
    while isinstance(rule, (WhenConfig, FirstSplitIPU)):
        rule = _chosen_rule(model, rule, config, settings, mode)
    if isinstance(rule, LayerIPU):
        index = rule.index % len(group_ipus[rule.group])
        return group_ipus[rule.group][index], WithLayer(offsets[rule.group] + index)
    ipu = executor.first_ipu + (executor.ipus - 1 if isinstance(rule, LastIPU) else rule)
    return ipu, OnIPU(ipu)


def _chosen_rule(model: str, rule: Any, config: ModelConfig, settings: Mapping[str, Any], mode: Mode) -> Any:
    """The rule a conditional one stands for under this config and these settings."""
    if isinstance(rule, WhenConfig):
        return rule.then if getattr(config, rule.field) else rule.otherwise
    splits = settings[mode.setting(rule.setting)]
    if splits is None:
        return rule.otherwise
    used = [ipu for ipu, count in enumerate(splits) if count]
    if len(used) > 1:
        raise PlacementError(model, f"{as_json(splits)} splits it over several IPUs, and the model keeps all its "
                             "splits on one", mode.setting(rule.setting))
    return used[0]


def _check_kwargs(model: str, architecture: Architecture, kwargs: Mapping[str, Any], setting: str) -> None:
    """The keyword arguments `parallelize()` takes; of those it takes as `**kwargs`, those it reads (it passes on
    and ignores any other: a misspelt one would change nothing)."""
    read = [*architecture.kwargs, *(architecture.generates.kwargs if architecture.generates else ())]
    unknown = sorted(name for name in kwargs if name not in read)
    if unknown and "*" not in architecture.kwargs:
        takes = ", ".join(f"`{name}`" for name in architecture.kwargs) or "no keyword argument"
        raise PlacementError(model, f"{architecture.name}'s parallelize() takes {takes}, not `{unknown[0]}`", setting)
    if unknown:
        reads = ", ".join(f"`{name}`" for name in read if name != "*")
        raise PlacementError(model, f"{architecture.name}'s parallelize() reads {reads}, and ignores any other: "
                             f"`{unknown[0]}`", setting)
    if kwargs.get("use_group_quantized_linears"):
        raise PlacementError(model, "`use_group_quantized_linears` packs the weights into groups of 4-bit numbers, "
                             "which the placement does not size", setting)


def _check_settings(model: str, architecture: Architecture, config: ModelConfig, settings: Mapping[str, Any],
                    mode: Mode) -> None:
    if architecture.reads_embedding_factor and settings["embedding_serialization_factor"] is None:
        raise PlacementError(model, f"it is null, as `serialized_embedding_splits_per_ipu` is given, and "
                             f"{architecture.name}'s parallelize() compares it with 1, which fails",
                             "embedding_serialization_factor")
    if architecture.untied_splits and config.tie_word_embeddings:
        for step in architecture.steps:
            if isinstance(step, Split):
                _check_untied(model, architecture, step, settings, mode)


def _check_untied(model: str, architecture: Architecture, step: Split, settings: Mapping[str, Any],
                  mode: Mode) -> None:
    """`parallelize()` refuses to split the tied embedding (a factor, or the sum of its splits, above 1) and to
    give the tied projection splits at all."""
    given = settings[mode.setting(step.setting)]
    if step.own_share and given is not None:
        setting, value = step.setting, given
    elif not step.own_share and (settings[mode.setting(step.factor)] or sum(given or ())) > 1:
        setting, value = (step.factor, settings[mode.setting(step.factor)]) if given is None else (step.setting, given)
    else:
        return
    raise PlacementError(model, f"{as_json(value)} splits `{step.path}`, and {architecture.name}'s parallelize() "
                         "splits no weight tied to another (`tie_word_embeddings` is true)", mode.setting(setting))


def first_uses(layout: Layout, names: Sequence[str],
               aliases: Mapping[str, Sequence[str]]) -> Dict[str, List[FirstUse]]:
    """`{parameter: [where it is first used, in each executor that uses it]}`: each of its names (itself and its
    `aliases`) is held by the step with the longest path holding it, and the earliest of those steps wins.
    Parameters no step holds are left out: the architecture has no such module."""
    named = tuple((name, *aliases.get(name, ())) for name in names)
    found: Dict[int, List[FirstUse]] = {}
    for uses in layout.uses.values():
        for paths, held in _holders(tuple(uses), named):
            use = min([uses[path] for path in paths])
            for index in held:
                found.setdefault(index, []).append(use)
    return {names[index]: found[index] for index in sorted(found)}


@functools.lru_cache(maxsize=64)
def _holders(paths: Tuple[str, ...],
             named: Tuple[Tuple[str, ...], ...]) -> Tuple[Tuple[Tuple[str, ...], Tuple[int, ...]], ...]:
    """The parameters, each given by its names, that `paths` hold, grouped by the paths holding them (for each of
    its names the longest of `paths` holding it, where one does): (those paths, the parameters' indices) for each
    group. The same for every split of a build: worked out once."""
    known = set(paths)
    groups: Dict[Tuple[str, ...], List[int]] = {}
    for index, names in enumerate(named):
        held = tuple(path for path in (_longest_path(known, name) for name in names) if path is not None)
        if held:
            groups.setdefault(held, []).append(index)
    return tuple((held, tuple(indices)) for held, indices in groups.items())


def _longest_path(paths: AbstractSet[str], name: str) -> Optional[str]:
    """The longest of `paths` holding parameter `name`, if any."""
    return next((path for path in paths_holding(name) if path in paths), None)


@functools.lru_cache(maxsize=None)
def paths_holding(name: str) -> Tuple[str, ...]:
    """The module paths that may hold parameter `name`, longest first (`a.b.c`: `a.b.c`, `a.b`, `a`)."""
    parts = name.split(".")
    return tuple(".".join(parts[:end]) for end in range(len(parts), 0, -1))


def origins(reference: Layout, names: Sequence[str], aliases: Mapping[str, Sequence[str]]) -> Dict[str, List[Origin]]:
    """`{parameter: the origins of its IPUs}` for any split of the layers, from the `reference` layout of such a
    split (`reference_layout`)."""
    return {name: [use.origin for use in uses] for name, uses in first_uses(reference, names, aliases).items()}


def reference_layout(model: str, architecture: Architecture, config: ModelConfig, settings: Mapping[str, Any],
                     for_inference: bool, cut: Optional[int]) -> Layout:
    """The layout of the even split (`-1` on every IPU), or in a generation build of a split whose encoder takes
    `cut` IPUs: its steps have the origins of any such split's."""
    mode = Mode.of(for_inference)
    ipus = settings[mode.setting("ipus_per_replica")]
    split: List[int] = [-1] * ipus
    if cut is not None:
        counts = layer_counts(architecture, config)
        encoder, decoder = (counts[group] for group in architecture.generation)
        split = [encoder] + [0] * (cut - 1) + [decoder] + [0] * (ipus - cut - 1)
    return lay_out(model, architecture, config, settings, for_inference, split)
