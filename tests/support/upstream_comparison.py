"""Comparing a placement with the one optimum-graphcore 0.7.1's own `parallelize()` makes (support.upstream_placement
runs it): the harness's model saved as a checkpoint (or a tiny one with a full-size model's layer counts), upstream's
placement of it and our placer of it, and the assertions that they agree block for block and parameter for
parameter (each IPU's share of a weight split over IPUs included, and the parameters frozen)."""

import json
import math
from functools import lru_cache
from typing import Any, Dict, List, Mapping

from optimum_ipu_ext import PlainIPUConfig
from support.meta_models import model_config
from support.placement_models import TINY_MODELS
from support.upstream_placement import _original_model, upstream_modules, upstream_placement

# the parameters of the audio models that mask no frame in inference: no op uses them
UNUSED_IN_INFERENCE = {"masked_spec_embed"}
# the fields of each model type's config that count the layers `parallelize()` places
LAYER_COUNTS = {
    "bert": ("num_hidden_layers",), "roberta": ("num_hidden_layers",), "vit": ("num_hidden_layers",),
    "gpt2": ("n_layer",), "t5": ("num_layers", "num_decoder_layers"), "mt5": ("num_layers", "num_decoder_layers"),
    "bart": ("encoder_layers", "decoder_layers"), "whisper": ("encoder_layers", "decoder_layers"),
    "hubert": ("num_hidden_layers",), "wav2vec2": ("num_hidden_layers",),
}
# the settings that cut the vocabulary into parts: the tiny vocabulary is a multiple of each
PARTS = ("embedding_serialization_factor", "projection_serialization_factor", "serialized_embedding_splits_per_ipu",
         "serialized_projection_splits_per_ipu")
TINY_VOCABULARY = 64


def parts(settings: Mapping[str, Any]) -> List[int]:
    """The numbers of parts the settings cut a vocabulary into (both builds)."""
    found = []
    for key in PARTS:
        for value in (settings.get(key), settings.get(f"inference_{key}")):
            if isinstance(value, list):
                found.append(sum(value))
            elif value:
                found.append(value)
    return found


def tiny_with_layers_of(architecture: str, full_size: Mapping[str, Any],
                        settings: Mapping[str, Any]) -> Dict[str, Any]:
    """The tiny model of `architecture` with the layer counts of the full-size model whose config.json is `full_size`
    (convolutions included), its vocabulary divided by every number of parts `settings` cut it into, as the full-size
    one is."""
    full = model_config(architecture, full_size)
    tiny = dict(TINY_MODELS[architecture].config)
    tiny.update({field: getattr(full, field) for field in LAYER_COUNTS[full.model_type]})
    if "conv_dim" in tiny:
        convolutions = len(full.conv_dim)
        tiny.update(conv_dim=(8,) * convolutions, conv_kernel=(4, 3, 3) + (2,) * (convolutions - 3),
                    conv_stride=(2, 2, 2) + (1,) * (convolutions - 3))
    elif "vocab_size" in tiny:
        multiple = math.lcm(*parts(settings), 1)
        tiny["vocab_size"] = math.ceil(TINY_VOCABULARY / multiple) * multiple
    return tiny


@lru_cache(maxsize=None)
def checkpoint(architecture: str, model_config: str, folder: str) -> str:
    """A folder holding the harness's model of `architecture`, saved as transformers saves it."""
    model = _original_model(architecture, model_config)
    model.save_pretrained(folder, safe_serialization=True)
    if architecture.startswith("GroupBert"):  # optimum-graphcore's own classes are not named in their config
        with open(f"{folder}/config.json") as reader:
            config = json.load(reader)
        with open(f"{folder}/config.json", "w") as writer:
            json.dump(dict(config, architectures=[architecture]), writer)
    return folder


def ours(architecture, tmp_path_factory, ipu_settings, for_inference=False, for_generation=False, model_config=None):
    """`placer()` of the harness's model, saved to a folder, with these settings (its `place()` is `placement()`); a
    generation build as upstream's pipelines ask for it, with `for_generation` in the inference keyword arguments."""
    model_config = dict(TINY_MODELS[architecture].config, **(model_config or {}))
    folder = checkpoint(architecture, json.dumps(model_config, sort_keys=True),
                        str(tmp_path_factory.mktemp(architecture)))
    config = PlainIPUConfig(**ipu_settings)
    if for_generation:
        config.inference_parallelize_kwargs = {**config.inference_parallelize_kwargs, "for_generation": True}
    return config.placer(folder, for_inference=for_inference)


def reference_and_ours(architecture, tmp_path_factory, ipu_settings, for_inference=False, for_generation=False,
                       model_config=None):
    model = dict(TINY_MODELS[architecture].config, **(model_config or {}))
    reference = upstream_placement(architecture, model, ipu_settings, for_inference, for_generation)
    if for_generation:
        reference["encoder_ipus"] = encoder_ipus(architecture, ipu_settings, model)
    return reference, ours(architecture, tmp_path_factory, ipu_settings, for_inference, for_generation, model_config)


def encoder_ipus(architecture, ipu_settings, model_config):
    """The IPUs upstream's `split_encoder_decoder_ipu_config` gives the encoder of a generation build."""
    modeling_utils = upstream_modules()[0]
    model = _original_model(architecture, json.dumps(model_config, sort_keys=True))
    encoder = model.get_encoder()
    layers = getattr(encoder, "layers", None) or encoder.block
    decoder = model.get_decoder()
    ipu_config = modeling_utils.IPUConfig(**ipu_settings).eval()
    encoder_config, _ = modeling_utils.split_encoder_decoder_ipu_config(
        ipu_config, len(layers), len(getattr(decoder, "layers", None) or decoder.block))
    return encoder_config._ipus_per_replica


def executor_placements(reference):
    """`[(placement of one executor, the pipeline's IPU its IPU 0 is)]` of the reference."""
    if "executors" not in reference:
        return [(reference, 0)]
    return [(reference["executors"]["encoder"], 0), (reference["executors"]["decoder"], reference["encoder_ipus"])]


def expected_ipus(reference, placement):
    """`{parameter: the IPUs upstream first uses it on}`, as `Placement.parameter_ipus` names them: a copy that a
    pipelined model holds by its own name; a parameter no op uses where ours puts it."""
    expected = {}
    unused = None
    for executor, first_ipu in executor_placements(reference):
        for name, ipu in executor["parameters"].items():
            expected.setdefault(name, []).append(first_ipu + ipu)
        for name, holders in executor["copies"].items():
            for holder, ipu in holders.items():
                if holder != name:
                    expected.setdefault(holder, []).append(first_ipu + ipu)
        unused = set(executor["unused"]) if unused is None else unused & set(executor["unused"])
    ours = placement.parameter_ipus
    for name in unused:
        assert name.split(".")[-1] in UNUSED_IN_INFERENCE, f"upstream uses no {name}"
        expected[name] = list(ours[name])
    return {name: tuple(sorted(ipus)) for name, ipus in expected.items()}


def blocks_per_ipu(reference, ipus):
    """The blocks of each IPU, as `Placement` lists them: in call order, each name once (unnamed ones each)."""
    found = [[] for _ in range(ipus)]
    for name, ipu in reference["blocks"]:
        if name is None or name not in found[ipu]:
            found[ipu].append(name)
    return found


def assert_same(reference, placer):
    """`placer`'s placement puts every block, layer and parameter where `reference` (upstream's) does, and freezes
    the same parameters."""
    placement = placer.place()
    assert placement.parameter_ipus == expected_ipus(reference, placement)
    if "executors" not in reference:
        assert [list(ipu.blocks) for ipu in placement.ipus] == blocks_per_ipu(reference, len(placement.ipus))
        layer_ipus = [ipu for call in reference["layer_ipus"] for ipu in call]
        assert layer_ipus in ([], [ipu.ipu for ipu in placement.ipus for _ in ipu.layers])
    counts = reference["parameter_counts"]
    created = sum(holder["elements"] for holder in reference.get("created", {}).values())
    copies = sum(counts[name] * (len(holders) - 1) for name, holders in reference.get("copies", {}).items())
    if "executors" not in reference:
        assert sum(ipu.parameters for ipu in placement.ipus) == sum(counts.values()) + created + copies
    assert sorted(placer.configured.frozen) == sorted(reference["frozen"])


def upstream_refusal():
    return (upstream_modules()[0].IncompatibleIPUConfigError, ValueError, AssertionError, TypeError)


def spread_of(placement, parameters):
    """`{original parameter: {IPU: elements}}` of the parts of each weight split over IPUs, summed over the
    executors that use them (`parameters`: the placed model's, as its build holds them)."""
    spread = {}
    for name, ipus in placement.parameter_ipus.items():
        if ".split_" in name:
            whole = spread.setdefault(name.split(".split_")[0] + ".weight", {})
            for ipu in ipus:
                whole[ipu] = whole.get(ipu, 0) + parameters.elements(name)
    return spread


def reference_spread(reference):
    """The same of the reference, its IPUs numbered in the pipeline."""
    spread = {}
    for executor, first_ipu in executor_placements(reference):
        for name, ipus in executor["spread"].items():
            whole = spread.setdefault(name, {})
            for ipu, count in ipus.items():
                whole[first_ipu + int(ipu)] = whole.get(first_ipu + int(ipu), 0) + count
    return spread


def assert_same_split(reference, placer):
    """`assert_same` for a placement that splits weights over IPUs: each IPU's share of each, the whole parameters."""
    placement = placer.place()
    assert spread_of(placement, placer.configured.parameters) == reference_spread(reference)
    whole = {name: ipus for name, ipus in placement.parameter_ipus.items() if ".split_" not in name}
    assert whole == expected_ipus(reference, placement)
    if "executors" not in reference:
        assert [list(ipu.blocks) for ipu in placement.ipus] == blocks_per_ipu(reference, len(placement.ipus))
        assert sum(ipu.parameters for ipu in placement.ipus) == sum(reference["parameter_counts"].values())


def assert_same_placement(reference, placer):
    """`assert_same`, or `assert_same_split` where the placement splits a weight over IPUs."""
    if any(".split_" in parameter for parameter in placer.place().parameter_ipus):
        assert_same_split(reference, placer)
    else:
        assert_same(reference, placer)
