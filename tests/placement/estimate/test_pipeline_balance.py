"""`--balance memory|time` with the activations counted: the split a brute force over every split finds best, for
both objectives, on the tiny models of the architectures whose costs are known (the search itself: test_balance.py)."""

import dataclasses

import pytest

from optimum_ipu_ext import InvalidSettingError, PlacementError, PlainIPUConfig
from optimum_ipu_ext.placement.estimate import balance
from optimum_ipu_ext.placement.estimate.layer_runs import LayerRunCosts
from optimum_ipu_ext.placement.hardware import IPU_MEMORY_BYTES
from optimum_ipu_ext.placement.placer import Placer
from support.placement_fixtures import tiny_model
from support.splits import compositions

# --- real placements, activations counted ----------------------------------------------------------------------------

TRAINING = {"gradient_accumulation_steps": 16}


def placer(architecture, model_config, ipu_settings, for_inference=False, fitting_bytes=None):
    """The placer of a tiny model, activations counted for micro-batches of 2 x 16 tokens (Whisper: the frames its
    encoder takes); where `fitting_bytes` is given, each IPU's reserve leaves it exactly that many bytes."""
    config = dict(tiny_model(architecture).config.to_dict(), **model_config)
    length = None if architecture.startswith("Whisper") else 16
    found = PlainIPUConfig(**ipu_settings).placer(config, architecture=architecture, for_inference=for_inference,
                                                  micro_batch_size=2, sequence_length=length)
    if fitting_bytes is None:
        return found
    return Placer(dataclasses.replace(found.configured, reserve_bytes=IPU_MEMORY_BYTES - fitting_bytes))


def same_stages(placement, other):
    """Whether `other` runs its stages on the IPUs `placement` runs them on, in the same order: every IPU of a
    pipelined training build runs a stage (an IPU without a layer where a block of its own is on it)."""
    return [stage.ipu for stage in other.stages] == [stage.ipu for stage in placement.stages]


def best_by_brute_force(placer, placement, objective, every_stage=True):
    """The split a brute force over every split upstream accepts (`every_stage`: keeping the even split's stages)
    finds best for `objective` (time: among those whose every IPU keeps its reserve)."""
    layers = sum(len(ipu.layers) for ipu in placement.ipus)
    found = []
    even = placer.place([-1] * len(placement.ipus)) if every_stage else None
    for split in compositions(layers, len(placement.ipus)):
        try:
            other = placer.place(split)
        except PlacementError:
            continue  # an encoder-decoder cut upstream refuses
        if every_stage and not same_stages(even, other):
            continue
        memory = max(ipu.on_chip_bytes for ipu in other.ipus)
        cycle = max(ipu.cycle_seconds for ipu in other.ipus)
        if objective == "time":
            if memory <= other.ipu_memory_bytes - other.reserve_bytes:
                found.append((split, (cycle, memory)))
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
    found = placer(architecture, model_config, ipu_settings)
    placement = found.place()
    balanced = found.balanced(placement, objective)
    best = best_by_brute_force(found, placement, objective)
    memory = max(ipu.on_chip_bytes for ipu in balanced.ipus)
    cycle = max(ipu.cycle_seconds for ipu in balanced.ipus)
    assert (list(balanced.layers_per_ipu), (cycle, memory) if objective == "time" else (memory,)) == best
    assert balanced.to_dict() == found.place(best[0]).to_dict()


SHARDED = ("BertForMaskedLM", {"num_hidden_layers": 2},
           {"layers_per_ipu": [-1, -1, -1], "execution_strategy": "sharded", **TRAINING})
INFERENCE = ("BertForMaskedLM", {"num_hidden_layers": 4}, {"inference_layers_per_ipu": [-1, -1, -1]}, True)


@pytest.mark.parametrize("case, every_stage", [*((case, True) for case in BALANCED_CASES), (SHARDED, False),
                                               (INFERENCE, False)])
def test_the_costs_the_balance_weighs_are_those_of_each_split_s_placement(case, every_stage):
    """Each IPU's on-chip bytes and cycle for a run of layers, as the balance works them out from the even split's
    stages, are those of the placement of every split it weighs (a pipelined training build keeps the even split's
    stages: an IPU takes a layer unless a block of its own runs a stage there; a sharded one, whose even split leaves
    an IPU without, stashes nothing; an inference one neither), and it weighs exactly those."""
    found = placer(*case)
    placement = found.place()
    costs = LayerRunCosts(found.configured, None)
    least = costs.least_layers()
    layers = sum(len(ipu.layers) for ipu in placement.ipus)
    for split in compositions(layers, len(placement.ipus)):
        other = found.place(split)
        weighed = all(count >= minimum for count, minimum in zip(split, least))
        assert weighed == (not every_stage or same_stages(placement, other)), split
        if not weighed:
            continue
        firsts = [sum(split[:ipu]) for ipu in range(len(split))]
        weighed = [(costs.on_chip_bytes(ipu, first, first + count), costs.cycle_load(ipu, first, first + count))
                   for ipu, (first, count) in enumerate(zip(firsts, split))]
        placed_ = [(ipu.on_chip_bytes, ipu.cycle_seconds) for ipu in other.ipus]
        assert weighed == placed_, split


def test_a_layer_like_the_others_but_for_its_steps_costs_is_weighed_as_its_own():
    """Layer 2 of a BERT, its parameters as every layer's but its steps computing and keeping twice as much: a kind
    of its own, and each run holding it weighed as the placement of its split costs it."""
    found = placer(*BALANCED_CASES[0])
    configured = found.configured
    doubled = {step.path for step in configured.layout().forward if step.layer == 2}
    costs = {path: cost._replace(activation_bytes=2 * cost.activation_bytes, forward_flops=2 * cost.forward_flops,
                                 forward=cost.forward._replace(count=2 * cost.forward.count),
                                 backward=cost.backward._replace(count=2 * cost.backward.count))
             if path in doubled else cost for path, cost in configured.step_costs.items()}
    changed = Placer(dataclasses.replace(configured, step_costs=costs))
    runs = LayerRunCosts(changed.configured, None)
    # the last layer is of its own kind too: no layer's step follows its last
    assert runs.kinds == (0, 0, 1, 0, 0, 2)
    for split in ([2, 2, 2], [1, 3, 2], [3, 1, 2]):
        placement = changed.place(split)
        firsts = [sum(split[:ipu]) for ipu in range(3)]
        assert [(runs.on_chip_bytes(ipu, first, first + count), runs.cycle_load(ipu, first, first + count))
                for ipu, (first, count) in enumerate(zip(firsts, split))] == [
            (ipu.on_chip_bytes, ipu.cycle_seconds) for ipu in placement.ipus], split


@pytest.mark.parametrize("case", [
    *BALANCED_CASES, SHARDED, INFERENCE,
    ("BertForMaskedLM", {"num_hidden_layers": 2},  # IPUs without a layer; the update and the reduction timed
     {"layers_per_ipu": [-1, -1, -1, -1], "replication_factor": 2, "replicated_tensor_sharding": True,
      "optimizer_state_offchip": True, **TRAINING}),
    ("LxmertForQuestionAnswering", {}, {"ipus_per_replica": 4, "layers_per_ipu": [-1, -1, -1, -1], **TRAINING}),
])
def test_the_step_of_the_even_split_timed_from_its_runs_is_its_placement_s(case):
    """The plan times a build's even split from the costs of its runs (for the steps a host call runs): the step
    `place` times, to the bit."""
    found = placer(*case)
    placement = found.place()
    runs = LayerRunCosts(found.configured, None)
    assert runs.step(placement.layers_per_ipu, placement.schedule.cycles) == placement.time
    assert found.schedule() == placement.schedule


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
    found = placer(architecture, model_config, ipu_settings, for_inference=True)
    placement = found.place()
    balanced = found.balanced(placement, objective)
    best = best_by_brute_force(found, placement, objective, every_stage=False)
    memory = max(ipu.on_chip_bytes for ipu in balanced.ipus)
    cycle = max(ipu.cycle_seconds for ipu in balanced.ipus)
    assert (list(balanced.layers_per_ipu), (cycle, memory) if objective == "time" else (memory,)) == best


@pytest.mark.parametrize("architecture, model_config, ipu_settings", BALANCED_CASES)
def test_the_time_objective_keeps_to_the_splits_that_fit(architecture, model_config, ipu_settings):
    found = placer(architecture, model_config, ipu_settings)
    placement = found.place()
    layers = sum(len(ipu.layers) for ipu in placement.ipus)
    largest = sorted(max(ipu.on_chip_bytes for ipu in found.place(split).ipus)
                     for split in compositions(layers, len(placement.ipus)) if all(split))
    found = placer(architecture, model_config, ipu_settings, fitting_bytes=largest[len(largest) // 2])  # half fit
    placement = found.place()
    balanced = found.balanced(placement, "time")
    assert balanced.fits
    best = best_by_brute_force(found, placement, "time")
    assert list(balanced.layers_per_ipu) == best[0]


# a model whose fastest split is not the one needing the least memory: the pipeline's first IPU also runs the
# embeddings, its second the classifier, whose cycles are shorter than the embeddings' look-ups
SPLIT_APART = ("DistilBertForSequenceClassification", {"n_layers": 5}, {"layers_per_ipu": [-1, -1], **TRAINING})


def slowest_cycle(placement):
    return max(ipu.cycle_seconds for ipu in placement.ipus)


def test_the_fastest_split_is_not_always_the_one_needing_the_least_memory():
    """The DistilBERT's fastest split, [3, 2], needs 127,840 bytes on an IPU; [2, 3] needs 115,750 and is slower."""
    found = placer(*SPLIT_APART)
    fastest, smallest = found.place([3, 2]), found.place([2, 3])
    assert (found.balanced(found.place(), "time").layers_per_ipu,
            found.balanced(found.place(), "memory").layers_per_ipu) == ((3, 2), (2, 3))
    assert (max(ipu.on_chip_bytes for ipu in fastest.ipus), max(ipu.on_chip_bytes for ipu in smallest.ipus)) == (
        127_840, 115_750)
    assert slowest_cycle(fastest) < slowest_cycle(smallest)


def test_the_time_objective_passes_over_the_fastest_split_where_it_does_not_fit():
    """Where the reserve leaves a byte less than the fastest split's 127,840, the fastest split that fits is
    [2, 3]."""
    fastest = placer(*SPLIT_APART).place([3, 2])
    found = placer(*SPLIT_APART, fitting_bytes=127_839)
    balanced = found.balanced(found.place(), "time")
    assert (balanced.layers_per_ipu, balanced.fits) == ((2, 3), True)
    assert slowest_cycle(balanced) > slowest_cycle(fastest)


def test_the_time_objective_keeps_each_ipu_s_reserve():
    """Where the reserve leaves 127,840 bytes, the fastest split [3, 2] fits them exactly: a byte more of reserve,
    and the time objective takes [2, 3] (the reserve is kept, not the IPU's memory alone)."""
    exact = placer(*SPLIT_APART, fitting_bytes=127_840)
    assert exact.balanced(exact.place(), "time").layers_per_ipu == (3, 2)
    reserved = placer(*SPLIT_APART, fitting_bytes=127_839)
    placement = reserved.place()
    assert placement.ipu_memory_bytes - placement.reserve_bytes == 127_839
    assert reserved.balanced(placement, "time").layers_per_ipu == (2, 3)


def test_the_time_objective_falls_back_to_memory_where_no_split_fits():
    """The DistilBERT's fastest split is [3, 2], the one needing the least memory [2, 3]."""
    found = placer(*SPLIT_APART, fitting_bytes=1)
    placement = found.place()
    assert found.balanced(placement, "time").to_dict() == found.balanced(placement, "memory").to_dict()
    assert (found.balanced(placement, "time").layers_per_ipu, found.balanced(placement, "time").fits) == ((2, 3),
                                                                                                           False)


def test_an_ipu_running_a_block_of_its_own_may_take_no_layer_and_the_others_take_one():
    """BERT's IPU 0 runs the embeddings and the head: 2 layers go on IPUs 1 and 2; 1 layer cannot run a stage on
    both."""
    found = placer("BertForMaskedLM", {"num_hidden_layers": 2}, {"layers_per_ipu": [-1, -1, -1], **TRAINING})
    assert found.balanced(found.place()).layers_per_ipu == (0, 1, 1)
    found = placer("BertForMaskedLM", {"num_hidden_layers": 1}, {"layers_per_ipu": [-1, -1, 1], **TRAINING})
    with pytest.raises(PlacementError) as raised:
        found.balanced(found.place())
    assert str(raised.value) == "Cannot place the model config: no split gives every IPU a stage of the pipeline."


def test_the_objective_is_memory_or_time_and_time_needs_the_micro_batch():
    found = placer(*BALANCED_CASES[0])
    with pytest.raises(InvalidSettingError) as raised:
        found.balanced(found.place(), "speed")
    assert str(raised.value) == '`objective="speed"` is invalid: allowed values are "memory", "time".'
    config = dict(tiny_model("BertForMaskedLM").config.to_dict(), num_hidden_layers=6)
    uncounted = PlainIPUConfig(layers_per_ipu=[-1, -1, -1], **TRAINING).placer(config, architecture="BertForMaskedLM")
    placement = uncounted.place()
    with pytest.raises(PlacementError) as raised:
        uncounted.balanced(placement, "time")
    assert "balancing for time needs the operations of a micro-batch: give its size or its sequence length" in str(
        raised.value)
    assert uncounted.balanced(placement, "memory").layers_per_ipu == uncounted.balanced(placement).layers_per_ipu
