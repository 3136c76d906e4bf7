"""A generation build against optimum-graphcore 0.7.1's own (support.upstream_generation runs it on tiny random
models): each step's FLOPs in the encoder's forward, the decoder's first step and its next; and on each IPU, the
buffers of upstream's attention classes (KV caches, cross caches) byte for byte and the FLOPs of each pass, for
Whisper at the splits of its notebooks, Flan-T5 at Graphcore's, BART at its summarization notebook's, with the real
layer counts.

Collected on the IPU-host stack only (conftest: `collect_ignore_glob`).
"""

import json

import pytest

from optimum_ipu_ext import PlainIPUConfig
from support.placement_models import SEQUENCE, TINY_MODELS
from support.upstream_comparison import checkpoint
from support.upstream_generation import upstream_generation

TWO_IPUS = {"inference_layers_per_ipu": [-1, -1], "inference_ipus_per_replica": 2}
FOUR_IPUS = {"inference_layers_per_ipu": [1, 1, 1, 1], "inference_ipus_per_replica": 4}


def ours(architecture, tmp_path_factory, settings, kwargs, model_config=None, **generate):
    """Our placer of the harness's model (saved to a folder) for generation, with these settings and kwargs."""
    model_config = dict(TINY_MODELS[architecture].config, **(model_config or {}))
    folder = checkpoint(architecture, json.dumps(model_config, sort_keys=True),
                        str(tmp_path_factory.mktemp(architecture)))
    config = PlainIPUConfig(**settings, inference_parallelize_kwargs=kwargs)
    length = None if architecture.startswith("Whisper") else SEQUENCE
    return config.placer(folder, sequence_length=length, generate=generate or True)


def upstream_of(placer, architecture, settings, model_config=None):
    """Upstream's generation build of the same model with the kwargs our placement generates with."""
    build = placer.configured.generation.build
    kwargs = {name: value for name, value in build.kwargs.items() if name != "for_generation"}
    return upstream_generation(architecture, model_config, settings, kwargs, max_length=build.max_length)


CASES = [
    ("WhisperForConditionalGeneration", {}, {"max_length": 8, "num_beams": 2}),
    ("WhisperForConditionalGeneration", {"use_cross_cache": True, "encoder_max_length": 16}, {"max_length": 8}),
    ("WhisperForConditionalGeneration", {"use_cache": False}, {"max_length": 8}),
    ("T5ForConditionalGeneration", {}, {"max_length": 8, "num_beams": 2, "batch_size": 3}),
    ("T5ForConditionalGeneration", {"use_cross_cache": True, "encoder_max_length": SEQUENCE}, {"max_length": 8}),
    ("T5ForConditionalGeneration", {"use_cache": False}, {"max_length": 8}),
    ("BartForConditionalGeneration", {}, {"max_length": 8, "num_beams": 3, "batch_size": 2}),
    ("BartForConditionalGeneration", {"use_cache": False}, {"max_length": 8}),
    ("MT5ForConditionalGeneration", {}, {"max_length": 8}),
]


@pytest.mark.parametrize("architecture, kwargs, generate", CASES)
def test_each_step_computes_as_upstream_s_does(architecture, kwargs, generate, tmp_path_factory):
    placer = ours(architecture, tmp_path_factory, FOUR_IPUS, kwargs, **generate)
    reference = upstream_of(placer, architecture, FOUR_IPUS)
    model = placer.configured.generation
    for costs, measured in ((model.encoder, reference["encoder"]), (model.first, reference["first"]),
                            (model.token, reference["token"])):
        assert {path: costs[path].forward_flops for path in measured} == measured


def _per_ipu(flops, ipus, offset):
    """`{IPU: FLOPs}` of the steps that compute, each on its executor's IPU (numbered from `offset`)."""
    found = {}
    for path, count in flops.items():
        if count:
            found[ipus[path] + offset] = found.get(ipus[path] + offset, 0) + count
    return found


# the tiny model with the full-size one's layers, at the splits its users run it with
REAL = [
    # whisper-example.ipynb: tiny.en, base.en and small.en on 2 IPUs, medium on 4, large-v2 on 8
    ("WhisperForConditionalGeneration", {"encoder_layers": 4, "decoder_layers": 4}, TWO_IPUS),
    ("WhisperForConditionalGeneration", {"encoder_layers": 6, "decoder_layers": 6}, TWO_IPUS),
    ("WhisperForConditionalGeneration", {"encoder_layers": 12, "decoder_layers": 12}, TWO_IPUS),
    ("WhisperForConditionalGeneration", {"encoder_layers": 24, "decoder_layers": 24},
     {"inference_layers_per_ipu": [12, 12, 13, 11], "inference_ipus_per_replica": 4}),
    ("WhisperForConditionalGeneration", {"encoder_layers": 32, "decoder_layers": 32},
     {"inference_layers_per_ipu": [8, 8, 8, 8, 6, 9, 9, 8], "inference_ipus_per_replica": 8}),
    # Graphcore/t5-xl-ipu (Flan-T5-XL, 24 + 24 layers on 16 IPUs)
    ("T5ForConditionalGeneration", {"num_layers": 24, "num_decoder_layers": 24},
     {"inference_layers_per_ipu": [2, 4, 3, 3, 3, 3, 3, 3] * 2, "inference_ipus_per_replica": 16}),
    # text_summarization.ipynb: BART-large on [12, 12]
    ("BartForConditionalGeneration", {"encoder_layers": 12, "decoder_layers": 12},
     {"inference_layers_per_ipu": [12, 12], "inference_ipus_per_replica": 2}),
]


@pytest.mark.parametrize("architecture, model_config, settings", REAL)
@pytest.mark.parametrize("kwargs, generate", [({}, {"max_length": 6, "num_beams": 2}),
                                              ({"use_encoder_output_buffer": True}, {"max_length": 5})])
def test_each_ipu_holds_upstream_s_buffers_and_computes_its_flops(architecture, model_config, settings, kwargs,
                                                                  generate, tmp_path_factory):
    placer = ours(architecture, tmp_path_factory, settings, kwargs, model_config, **generate)
    reference = upstream_of(placer, architecture, settings, model_config)
    placement = placer.place()
    encoder, decoder = placer.configured.layout().executors
    buffers = {ipu - decoder.first_ipu: part.generation.kv_cache_bytes + part.generation.cross_cache_bytes
               for ipu, part in enumerate(placement.ipus) if ipu >= decoder.first_ipu}
    assert {ipu: count for ipu, count in buffers.items() if count} == reference["buffers"]["decoder"]
    assert "encoder" not in reference["buffers"]
    assert sum(buffers.values()) == sum(reference["buffer_names"].values())
    ipus = reference["ipus"]
    assert {ipu.ipu: ipu.generation.encoder.flops for ipu in placement.ipus if ipu.generation.encoder.flops} == \
        _per_ipu(reference["encoder"], ipus["encoder"], 0)
    for part, measured in (("token", reference["token"]), ("first_token", reference["first"])):
        assert {ipu.ipu: getattr(ipu.generation, part).flops for ipu in placement.ipus
                if getattr(ipu.generation, part).flops} == _per_ipu(measured, ipus["decoder"], decoder.first_ipu)
    assert encoder.ipus + decoder.ipus == len(placement.ipus)
