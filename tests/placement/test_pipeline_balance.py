"""`--balance memory|time` with the activations counted: the split a brute force over every split finds best, for
both objectives, on the tiny models of the architectures whose costs are known; and the search itself against a
brute force over random costs, several objectives, bounds and parts (an encoder-decoder cut) included."""

import itertools
import random

import pytest

from optimum_ipu_ext import InvalidSettingError, PlacementError, PlainIPUConfig
from optimum_ipu_ext.placement import balance, placement as placement_module
from support.placement_fixtures import tiny_model


def compositions(layers, ipus):
    """Every split of `layers` over `ipus` IPUs, each taking 0 or more."""
    return [[b - a for a, b in zip((0, *cut), (*cut, layers))]
            for cut in itertools.combinations_with_replacement(range(layers + 1), ipus - 1)]


def figures(cost, split):
    return [cost(ipu, sum(split[:ipu]), sum(split[:ipu + 1])) for ipu in range(len(split))]


# --- the search, against a brute force ----------------------------------------------------------------------------


def random_cost(generator, ipus, layers):
    fixed = [generator.choice([0, 0, 5, 30]) for _ in range(ipus)]
    weights = [generator.choice([1, 2, 10]) for _ in range(layers)]
    return lambda ipu, first, end: fixed[ipu] + sum(weights[first:end])


def brute_force(shapes, costs, limit):
    """Of every combination of each part's splits (`shapes`: (layers, ipus, some_layer_within, every_ipu, current,
    its costs)), those keeping each IPU's `limit` cost within its bound: the best by the largest of each cost in
    turn, then the distance to the config's split, then the split."""
    choices = [[split for split in compositions(layers, ipus) if (not every_ipu or all(split))
                and (not within or sum(split[:within]))] for layers, ipus, within, every_ipu, _, _ in shapes]
    found = []
    for combination in itertools.product(*choices):
        parts = list(zip(shapes, combination))
        if limit is not None and any(value > limit[1] for (*_, own), split in parts
                                     for value in figures(own[limit[0]], split)):
            continue
        largest = tuple(max(value for (*_, own), split in parts for value in figures(own[index], split))
                        for index in range(len(costs)))
        split = [count for each in combination for count in each]
        current = [count for shape in shapes for count in shape[4]]
        found.append((largest, balance.distance(split, current), split))
    return min(found, default=None)


@pytest.mark.parametrize("seed", range(60))
def test_the_best_of_several_costs_parts_and_bounds_is_the_brute_force_s(seed):
    generator = random.Random(seed)
    objectives = generator.randint(1, 2)
    shapes = []
    for part in range(generator.randint(1, 2)):
        layers, ipus = generator.randint(1, 6), generator.randint(1, 3)
        every_ipu = generator.random() < 0.4
        within = generator.choice([0, 0, 1, 2]) if part else 0
        costs = tuple(random_cost(generator, ipus, layers) for _ in range(objectives + 1))  # the last: a bound's
        shapes.append((layers, ipus, within, every_ipu, generator.choice(compositions(layers, ipus)), costs))
    bound = generator.choice([None, 20, 40, 60])
    parts = []
    for layers, ipus, within, every_ipu, current, costs in shapes:
        splits = balance.Splits(layers, ipus, within, every_ipu)
        if bound is not None:
            splits = splits.within(costs[-1], bound)
        parts.append(balance.Part(splits, costs[:objectives], current))
    split, largest = balance.best_of(parts)
    expected = brute_force(shapes, range(objectives), None if bound is None else (objectives, bound))
    if expected is None:
        assert split is None
    else:
        assert (largest, split) == (expected[0], expected[2])


def test_a_split_beyond_every_bound_is_none():
    splits = balance.Splits(2, 2).within(lambda ipu, first, end: 10 * (end - first), 5)
    assert splits.counts(0, 0) == [0] and splits.counts(1, 0) == []
    assert balance.best_of([balance.Part(splits, (lambda ipu, first, end: 0,), [1, 1])]) == (None,
                                                                                            (balance.UNREACHABLE,))


def test_every_ipu_takes_a_layer_if_asked():
    assert balance.Splits(3, 2, every_ipu=True).counts(0, 0) == [1, 2]
    assert balance.Splits(3, 2, every_ipu=True).counts(1, 3) == []
    assert balance.Splits(3, 2).counts(0, 0) == [0, 1, 2, 3]


# --- real placements, activations counted ----------------------------------------------------------------------------

TRAINING = {"gradient_accumulation_steps": 16}


def placed(architecture, model_config, ipu_settings, for_inference=False):
    """The placement of a tiny model, activations counted for micro-batches of 2 x 16 tokens (Whisper: the frames
    its encoder takes)."""
    config = dict(tiny_model(architecture).config.to_dict(), **model_config)
    length = None if architecture.startswith("Whisper") else 16
    return PlainIPUConfig(**ipu_settings).placement(config, architecture=architecture, for_inference=for_inference,
                                                    micro_batch_size=2, sequence_length=length)


def best_by_brute_force(placement, objective, every_ipu=True):
    """The split a brute force over every split upstream accepts (`every_ipu`: giving each IPU a layer) finds best
    for `objective`."""
    layers = sum(len(ipu.layers) for ipu in placement.ipus)
    found = []
    for split in compositions(layers, len(placement.ipus)):
        if every_ipu and not all(split):
            continue
        try:
            other = placement.with_layers_per_ipu(split)
        except PlacementError:
            continue  # an encoder-decoder cut upstream refuses
        memory = max(ipu.on_chip_bytes for ipu in other.ipus)
        flops = max(ipu.work.flops for ipu in other.ipus)
        if objective == "time":
            if memory <= other.ipu_memory_bytes:
                found.append((split, (flops, memory)))
        else:
            found.append((split, (memory,)))
    return balance.chosen(found, placement.layers_per_ipu)


BALANCED_CASES = [
    ("BertForMaskedLM", {"num_hidden_layers": 6}, {"layers_per_ipu": [-1, -1, -1], **TRAINING}),
    ("BertForQuestionAnswering", {"num_hidden_layers": 5},
     {"layers_per_ipu": [1, -1], "recomputation_mode": "pipeline", **TRAINING}),
    ("BertForPreTraining", {"num_hidden_layers": 5}, {"layers_per_ipu": [-1, -1, -1], "recomputation_mode": "pipeline",
                                                      "recompute_checkpoint_every_layer": True, **TRAINING}),
    ("GPT2LMHeadModel", {"n_layer": 5},
     {"layers_per_ipu": [-1, -1, -1], "recomputation_mode": "pipeline", **TRAINING}),
    ("DistilBertForSequenceClassification", {"n_layers": 4}, {"layers_per_ipu": [-1, -1], **TRAINING}),
]


@pytest.mark.parametrize("objective", ["memory", "time"])
@pytest.mark.parametrize("architecture, model_config, ipu_settings", BALANCED_CASES)
def test_the_balanced_split_is_the_best_a_brute_force_finds(architecture, model_config, ipu_settings, objective):
    placement = placed(architecture, model_config, ipu_settings)
    balanced = placement.balanced(objective)
    best = best_by_brute_force(placement, objective)
    memory = max(ipu.on_chip_bytes for ipu in balanced.ipus)
    flops = max(ipu.work.flops for ipu in balanced.ipus)
    assert (list(balanced.layers_per_ipu), (flops, memory) if objective == "time" else (memory,)) == best
    assert balanced.to_dict() == placement.with_layers_per_ipu(best[0]).to_dict()


GENERATION = {"inference_parallelize_kwargs": {"for_generation": True}}
GENERATION_CASES = [
    ("T5ForConditionalGeneration", {"num_layers": 3, "num_decoder_layers": 3},
     {"inference_layers_per_ipu": [1, 2, 2, 1], **GENERATION}),
    ("T5ForConditionalGeneration", {"num_layers": 2, "num_decoder_layers": 1},
     {"inference_layers_per_ipu": [2, 1, 0, 0, 0], **GENERATION}),
    ("BartForConditionalGeneration", {"encoder_layers": 2, "decoder_layers": 3},
     {"inference_layers_per_ipu": [1, 1, 1, 2], **GENERATION}),
    ("WhisperForConditionalGeneration", {"encoder_layers": 3, "decoder_layers": 2},
     {"inference_layers_per_ipu": [3, 1, 1], **GENERATION}),
]


@pytest.mark.parametrize("objective", ["memory", "time"])
@pytest.mark.parametrize("architecture, model_config, ipu_settings", GENERATION_CASES)
def test_a_generation_build_is_balanced_over_every_cut_upstream_accepts(architecture, model_config, ipu_settings,
                                                                         objective):
    placement = placed(architecture, model_config, ipu_settings, for_inference=True)
    balanced = placement.balanced(objective)
    best = best_by_brute_force(placement, objective, every_ipu=False)
    memory = max(ipu.on_chip_bytes for ipu in balanced.ipus)
    flops = max(ipu.work.flops for ipu in balanced.ipus)
    assert (list(balanced.layers_per_ipu), (flops, memory) if objective == "time" else (memory,)) == best


@pytest.mark.parametrize("architecture, model_config, ipu_settings", BALANCED_CASES)
def test_the_time_objective_keeps_to_the_splits_that_fit(monkeypatch, architecture, model_config, ipu_settings):
    placement = placed(architecture, model_config, ipu_settings)
    layers = sum(len(ipu.layers) for ipu in placement.ipus)
    largest = sorted(max(ipu.on_chip_bytes for ipu in placement.with_layers_per_ipu(split).ipus)
                     for split in compositions(layers, len(placement.ipus)) if all(split))
    monkeypatch.setattr(placement_module, "IPU_MEMORY_BYTES", largest[len(largest) // 2])  # half the splits fit
    placement = placed(architecture, model_config, ipu_settings)
    balanced = placement.balanced("time")
    assert balanced.fits
    best = best_by_brute_force(placement, "time")
    assert list(balanced.layers_per_ipu) == best[0]


def test_the_time_objective_falls_back_to_memory_where_no_split_fits(monkeypatch):
    monkeypatch.setattr(placement_module, "IPU_MEMORY_BYTES", 1)
    placement = placed(*BALANCED_CASES[0])
    assert placement.balanced("time").to_dict() == placement.balanced("memory").to_dict()
    assert not placement.balanced("time").fits


def test_a_pipeline_with_more_ipus_than_layers_cannot_give_each_a_layer():
    placement = placed("BertForMaskedLM", {"num_hidden_layers": 2}, {"layers_per_ipu": [-1, -1, -1], **TRAINING})
    with pytest.raises(PlacementError) as raised:
        placement.balanced()
    assert str(raised.value).endswith(": no split gives every IPU a layer of the pipeline.")


def test_the_objective_is_memory_or_time_and_time_needs_the_flops():
    placement = placed(*BALANCED_CASES[0])
    with pytest.raises(InvalidSettingError) as raised:
        placement.balanced("speed")
    assert str(raised.value) == '`objective="speed"` is invalid: allowed values are "memory", "time".'
    config = dict(tiny_model("BertForMaskedLM").config.to_dict(), num_hidden_layers=6)
    uncounted = PlainIPUConfig(layers_per_ipu=[-1, -1, -1], **TRAINING).placement(config,
                                                                                 architecture="BertForMaskedLM")
    with pytest.raises(PlacementError) as raised:
        uncounted.balanced("time")
    assert "balancing for time needs the FLOPs of a micro-batch: give its size or its sequence length" in str(
        raised.value)
    assert uncounted.balanced("memory").layers_per_ipu == uncounted.balanced().layers_per_ipu
