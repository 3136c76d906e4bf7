"""A generation plan's configs are right by construction in optimum-graphcore 0.7.1: each loads in upstream's own
`IPUConfig` with the inference settings planned, and upstream's `parallelize(for_generation=True,
**inference_parallelize_kwargs)` (run by the reference harnesses on a tiny model with the full-size model's layer
counts) puts every block and parameter where `place --generate` puts them, and each IPU holds the attention buffers
(KV caches) the plan counts, byte for byte.

The plans are of full-size models (tests/full_size): Whisper-small and BART-base on 4 IPUs; each checks one build of
each number of IPUs a replica, and the best.

Collected on the IPU-host stack only (conftest: `collect_ignore_glob`).
"""

import functools
import json

import pytest
from optimum.graphcore import IPUConfig as UpstreamIPUConfig

from optimum_ipu_ext import plan
from optimum_ipu_ext.placement.models import ARCHITECTURES
from support.corpus import FULL_SIZE, full_size_config
from support.upstream_comparison import assert_same_placement, checkpoint, encoder_ipus, tiny_with_layers_of
from support.upstream_generation import upstream_generation
from support.upstream_placement import upstream_placement

# (full-size model, architecture, IPUs, what generate() is called with)
PLANS = [
    ("whisper-small", "WhisperForConditionalGeneration", 4, {"max_length": 448}),
    ("bart-base", "BartForConditionalGeneration", 4, {"max_length": 128, "num_beams": 3}),
]


@functools.lru_cache(maxsize=None)
def planned(model, architecture, ipus, generate):
    return plan(str(FULL_SIZE / model), ipus, generate=dict(generate), architecture=architecture)


def checked(case):
    """The best build, and the first of each number of IPUs a replica."""
    found = planned(case[0], case[1], case[2], tuple(case[3].items()))
    first = {}
    for candidate in found.candidates:
        first.setdefault(candidate.build["ipus_per_replica"], candidate)
    return [found.best, *(candidate for candidate in first.values() if candidate is not found.best)]


@pytest.mark.parametrize("case", PLANS, ids=lambda case: case[1])
def test_the_planned_configs_load_in_upstream_and_place_their_model_as_planned(case, tmp_path_factory):
    for candidate in checked(case):
        _assert_as_planned(case, candidate, tmp_path_factory)


def _assert_as_planned(case, candidate, tmp_path_factory):
    model, architecture, _, generate = case
    config = UpstreamIPUConfig.from_dict(candidate.ipu_config.to_dict())
    assert type(config) is UpstreamIPUConfig
    assert {name: getattr(config, name) for name in candidate.settings} == candidate.settings
    full = full_size_config(model)
    tiny = tiny_with_layers_of(architecture, full, config.to_dict())
    positions = ARCHITECTURES[architecture].generates.positions  # as many tokens as the full-size model
    tiny[positions] = full[positions]
    asked = {**generate, "batch_size": candidate.build["batch_size"]}
    reference = upstream_placement(architecture, tiny, config, for_inference=True, for_generation=True)
    if "executors" in reference:
        reference["encoder_ipus"] = encoder_ipus(architecture, config.to_dict(), tiny)
    folder = checkpoint(architecture, json.dumps(tiny, sort_keys=True), str(tmp_path_factory.mktemp(architecture)))
    placer = candidate.ipu_config.placer(folder, generate=asked)
    assert_same_placement(reference, placer)
    placement = placer.place()
    assert placement.layers_per_ipu == candidate.placement.layers_per_ipu
    kwargs = dict(config.inference_parallelize_kwargs)
    buffers = upstream_generation(architecture, tiny, config, kwargs, max_length=generate["max_length"])["buffers"]
    first = placer.configured.layout().executors[-1].first_ipu
    ours = {ipu.ipu - first: ipu.generation.kv_cache_bytes + ipu.generation.cross_cache_bytes
            for ipu in placement.ipus if ipu.generation.kv_cache_bytes + ipu.generation.cross_cache_bytes}
    assert ours == buffers["decoder"]
