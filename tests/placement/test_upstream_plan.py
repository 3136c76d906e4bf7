"""A plan's best config is right by construction in optimum-graphcore 0.7.1: it loads in upstream's own `IPUConfig`
(from its dict and from the file it saves), and upstream's `parallelize()` (run by the reference harness,
upstream_placement.py) puts the model's layers on the IPUs the plan's placement gives them, and every block and
parameter where `place` puts them.

The plans are of full-size models (tests/full_size), as a plan is asked for; upstream's `parallelize()` runs on a tiny
model with the full-size model's layer counts (`tiny_with_layers_of`), which places its layers as the full-size one.
A plan of the tiny model itself would tell little: every build of it takes the step's overhead and nothing else, and
its best is a tie broken by memory (most often every layer on one IPU). The four cover an even split on replicas of
4 IPUs, an uneven one with IPU 0 holding fewer layers, a split counting convolutions as layers, and an encoder-decoder
with its vocabulary serialized.

Collected on the IPU-host stack only (conftest: `collect_ignore_glob`).
"""

import functools
import json

import pytest
from optimum.graphcore import IPUConfig as UpstreamIPUConfig

from optimum_ipu_ext import plan
from optimum_ipu_ext.placement.planning import TRAINING_BUILD
from support.corpus import FULL_SIZE, full_size_config
from support.upstream_comparison import assert_same_placement, checkpoint, tiny_with_layers_of
from support.upstream_placement import upstream_placement

# (full-size model, architecture, IPUs, global batch, sequence length, decoder length), with the best each plan finds
PLANS = [
    # 4 replicas of 4 IPUs, 6 layers on each, micro-batch 2 (BERT-large on SQuAD, as the measured run of the dataset)
    ("bert-large-uncased", "BertForQuestionAnswering", 16, 256, 384, None),
    # 4 replicas of [3, 7, 7, 7]: IPU 0 keeps the embedding and the tied head
    ("gpt2-medium", "GPT2LMHeadModel", 16, 64, 1024, None),
    # 8 replicas of [12, 11]: the feature extractor's 7 convolutions are layers of the split
    ("wav2vec2-base", "Wav2Vec2ForPreTraining", 16, 128, 249600, None),
    # 2 replicas of [12, 4], the embedding and the head serialized in 8
    ("mt5-small", "MT5ForConditionalGeneration", 4, 128, 128, 128),
]
SPLITS = [[6] * 4, [3, 7, 7, 7], [12, 11], [12, 4]]


@functools.lru_cache(maxsize=None)
def best_of(model, architecture, ipus, global_batch, length, decoder_length):
    found = plan(str(FULL_SIZE / model), ipus, global_batch_size=global_batch, sequence_length=length,
                 decoder_sequence_length=decoder_length, architecture=architecture)
    assert found.best is not None
    return found.best


def layer_ipus(placement):
    """The IPU of each layer, in the order of the layer list."""
    return [ipu for _, ipu in sorted((layer, ipu.ipu) for ipu in placement.ipus for layer in ipu.layers)]


def test_the_plans_find_the_splits_these_tests_are_chosen_for():
    assert [list(best_of(*case).placement.layers_per_ipu) for case in PLANS] == SPLITS


@pytest.mark.parametrize("case", PLANS, ids=lambda case: case[1])
def test_the_best_config_loads_in_upstream_s_ipu_config_as_planned(case, tmp_path):
    best = best_of(*case)
    best.ipu_config.save_pretrained(tmp_path)
    from_file = UpstreamIPUConfig.from_pretrained(tmp_path)
    for loaded in (UpstreamIPUConfig.from_dict(best.ipu_config.to_dict()), from_file):
        assert type(loaded) is UpstreamIPUConfig
        assert {name: getattr(loaded, name) for name in TRAINING_BUILD} == best.build
        assert loaded.ipus_per_replica * loaded.replication_factor == case[2]
        assert best.micro_batch_size * loaded.gradient_accumulation_steps * loaded.replication_factor == case[3]


@pytest.mark.parametrize("case", PLANS, ids=lambda case: case[1])
def test_upstream_s_parallelize_places_the_layers_as_the_plan_says(case, tmp_path_factory):
    model, architecture = case[:2]
    best = best_of(*case)
    config = UpstreamIPUConfig.from_dict(best.ipu_config.to_dict())
    tiny = tiny_with_layers_of(architecture, full_size_config(model), config.to_dict())
    reference = upstream_placement(architecture, tiny, config)
    assert [ipu for call in reference["layer_ipus"] for ipu in call] == layer_ipus(best.placement)
    folder = checkpoint(architecture, json.dumps(tiny, sort_keys=True), str(tmp_path_factory.mktemp(architecture)))
    placer = best.ipu_config.placer(folder)
    assert layer_ipus(placer.place()) == layer_ipus(best.placement)
    assert_same_placement(reference, placer)
