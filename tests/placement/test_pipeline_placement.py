"""A placement with its activations counted: each IPU's weights, accumulators, optimizer state, stash and
recomputation, its FLOPs, the operations it runs and what it receives each cycle, and its cycle's seconds; the
pipeline's stages and cycles, the step's time, what poptorch refuses; as data and as text."""

import dataclasses

import pytest

from optimum_ipu_ext import PlacementError, PlainIPUConfig
from optimum_ipu_ext.placement.estimate.costs import StepCost, block_costs
from optimum_ipu_ext.placement.estimate.timing import shipped_calibration
from optimum_ipu_ext.placement.hardware import GC200, IPU_LINK_BYTES_PER_SECOND
from optimum_ipu_ext.placement.models import ARCHITECTURES, resolve_shape
from optimum_ipu_ext.placement.models.blocks import Operations
from optimum_ipu_ext.placement.models.rules import InputShape
from optimum_ipu_ext.placement.placer import parameter_shapes, placer_of
from optimum_ipu_ext.placement.report.text import comparison_text, stacked_bar
from optimum_ipu_ext.placement.source.model import read_model
from support.placement_fixtures import TINY_BERT, bert_shapes, write_checkpoint

# activation, input, output bytes and forward FLOPs of each step, and the operations of its forward and backward
# passes (count, matmul cycles, elementwise elements), as data
COSTS = {"bert.embeddings": StepCost(1000, 64, 128, 0, Operations(2, 0.0, 1000), Operations(2, 0.0, 2000)),
         "cls": StepCost(2000, 128, 4, 2 * 10**9, Operations(4, 1e6, 8000), Operations(8, 2e6, 16000)),
         **{f"bert.encoder.layer.{i}": StepCost(4000, 128, 128, 10**9, Operations(10, 5e5, 20000),
                                                Operations(20, 1e6, 40000)) for i in range(3)}}
RECOMPUTING = {"gradient_accumulation_steps": 8, "recomputation_mode": "pipeline",
               "recompute_checkpoint_every_layer": True}


def cycle_seconds(count, matmul_cycles, elements, exchange_bytes):
    """A GC200's cycle running these operations and receiving these bytes, with the shipped constants."""
    constants = shipped_calibration()
    cycles = count * constants.operation_cycles + matmul_cycles + elements * constants.elementwise_cycles
    return cycles / GC200.clock_hz + exchange_bytes / IPU_LINK_BYTES_PER_SECOND


@pytest.fixture
def bert(tmp_path):
    return write_checkpoint(tmp_path / "bert", bert_shapes(TINY_BERT), TINY_BERT)


def placed(folder, split=(1, 2), for_inference=False, **values):
    """The placement of the tiny BERT with the costs above, for micro-batches of 2 x 16 tokens."""
    settings = vars(PlainIPUConfig(layers_per_ipu=list(split), **values))
    source = read_model(folder)
    return placer_of(source.name, ARCHITECTURES["BertForMaskedLM"], source.config, settings, parameter_shapes(source),
                     for_inference, False, lambda architecture, config: (InputShape(2, 16, 16), COSTS)).place()


def test_each_ipu_s_figures_and_the_pipeline_s(bert):
    data = placed(bert, **RECOMPUTING).to_dict()
    # IPU 0 runs stage 0 (the embedding and layer 0, stashed for 5 micro-batches) and stage 2 (the head, for 1):
    # it stashes their inputs and layer 0's checkpoint, and recomputes at most the embedding and layer 0 at once
    # each cycle it runs the forward pass of its steps twice (the recomputation) and their backward once, and
    # receives each stage's input and its output's gradient: (64 + 128) + (128 + 4) bytes
    ipu0 = {"weights_bytes": 2 * 4192, "gradient_accumulator_bytes": 2 * 4192, "optimizer_state_bytes": 6 * 4192,
            "activation_bytes": 1000 + 4000 + 2000, "stash_bytes": 5 * (64 + 128) + 1 * 128,
            "recompute_bytes": 1000 + 4000, "forward_flops": 3 * 10**9, "backward_flops": 6 * 10**9,
            "recompute_flops": 3 * 10**9,
            "operations": {"count": 2 * (2 + 10 + 4) + (2 + 20 + 8), "matmul_cycles": 2 * 1.5e6 + 3e6,
                           "elementwise_elements": 2 * 29000 + 58000},
            "exchange_bytes": (64 + 128) + (128 + 4)}
    ipu1 = {"weights_bytes": 2 * 4448, "gradient_accumulator_bytes": 2 * 4448, "optimizer_state_bytes": 6 * 4448,
            "activation_bytes": 2 * 4000, "stash_bytes": 3 * (128 + 128 + 128), "recompute_bytes": 4000,
            "forward_flops": 2 * 10**9, "backward_flops": 4 * 10**9, "recompute_flops": 2 * 10**9,
            "operations": {"count": 2 * 20 + 40, "matmul_cycles": 2 * 1e6 + 2e6, "elementwise_elements": 2 * 40000
                           + 80000},
            "exchange_bytes": 128 + 128}
    for found, expected in zip(data["ipus"], [ipu0, ipu1]):
        assert {key: found[key] for key in expected} == expected
        assert found["cycle_seconds"] == pytest.approx(cycle_seconds(*expected["operations"].values(),
                                                                     expected["exchange_bytes"]), rel=1e-12)
        assert found["on_chip_bytes"] == sum(expected[key] for key in (
            "weights_bytes", "gradient_accumulator_bytes", "optimizer_state_bytes", "stash_bytes", "recompute_bytes"))
    assert {key: data[key] for key in ("micro_batch_size", "sequence_length", "decoder_sequence_length", "fits",
                                       "problems", "pipeline_cycles", "pipeline_efficiency", "bottleneck_ipu")} == {
        "micro_batch_size": 2, "sequence_length": 16, "decoder_sequence_length": None, "fits": True, "problems": [],
        "pipeline_cycles": 8 + 2 * 3 - 2, "pipeline_efficiency": 8 / 12, "bottleneck_ipu": 0}
    # IPU 0's cycle is the longer: 12 of them; its update's arithmetic on 4 elements of each of the larger IPU's
    # 4,448 parameters; a host call a step and 8 micro-batches' 64 bytes of inputs over half a host link
    slowest, constants = cycle_seconds(62, 6e6, 116000, 324), shipped_calibration()
    assert [round(1e3 * ipu["cycle_seconds"], 4) for ipu in data["ipus"]] == [4.9252, 3.5416]
    assert data["step_parts"] == pytest.approx({
        "pipeline": 12 * slowest, "weight_update": 4 * 4448 * constants.elementwise_cycles / GC200.clock_hz,
        "reduction": 0.0, "host": constants.call_seconds + 8 * 64 / (100e9 / 8 / 2)}, rel=1e-12)
    assert data["samples_per_step"] == 16
    assert data["stages"] == [{"ipu": 0, "blocks": ["Embedding", "Encoder0"], "stash_depth": 5},
                              {"ipu": 1, "blocks": ["Encoder1", "Encoder2"], "stash_depth": 3},
                              {"ipu": 0, "blocks": ["Classifier"], "stash_depth": 1}]


def test_the_text_stacks_each_ipu_s_memory_and_shows_its_flops_its_pace_and_the_pipeline(bert):
    """IPU 1's cycle is 3.54 ms, 72 % of IPU 0's 4.93 ms; a step, 12 of IPU 0's cycles and a host call, 0.112 s;
    the samples a second a run would measure are 142.7 over 1.916 and over 0.849; a BERT of 2 x 16 tokens runs
    products of 32 rows, below the measured runs'."""
    placement = dataclasses.replace(placed(bert, **RECOMPUTING), ipu_memory_bytes=100_000, reserve_bytes=20_000)
    assert str(placement) == f"""\
{bert}: BertForMaskedLM, training, layers_per_ipu [1, 2], micro-batch 2, sequence length 16

IPU  Blocks                           Parameters  On chip, MiB of 0.1                    Streaming, MiB  \
Forward, GFLOP  Backward, GFLOP  Pace
  0  Embedding, Encoder0, Classifier       4,192        0.0 [WWAOOOOOSR..........]  48%             0.0  \
           3.0              9.0  100%
  1  Encoder1-2                            4,448        0.0 [WWAAOOOOOR..........]  50%             0.0  \
           2.0              6.0   72%

Pipeline: 3 stages (IPUs 0, 1, 0), 12 cycles a step, 66.7% of them with every stage busy; IPU 0 takes the longest \
and sets the pace.
Time: 0.112 s a step on GC200 IPUs (pipeline 0.0591 s, weight update 4.33e-08 s, reduction 0 s, host 0.053 s): 16 \
samples, 142.7 a second, 74-168 by the model's error on 16 measured runs (data loading not counted). Outside the \
runs it is fitted on: 32 rows a matrix product, where they had 384 to 4,096.
Fits: every IPU's on-chip figure is within the 0.1 MiB a reserve of 0.0 MiB leaves of an IPU's 0.1 MiB.
Bars: W weights, A gradient accumulators, O optimizer state, S stash, R recomputation, U optimizer state brought in \
for the update; backward FLOPs count the recomputation; pace: the IPU's cycle, as a share of the slowest IPU's.
Assumes training: weights fp16, gradient accumulators fp16, AdamW/LAMB state 6 bytes a parameter; code, exchange \
buffers and the temporaries matmul_proportion allows are the reserve's."""


@pytest.mark.parametrize("sizes, bar", [
    ([10, 10, 30, 10, 10], "[WWAAOOOOOOSSRR......]"),
    ([0, 0, 0, 0, 0], "[....................]"),
    ([50, 0, 0, 40, 30], "[WWWWWWWWWWSSSSSSSSRR]"),  # over the capacity: full, the last parts cut
    ([2, 2, 2, 2, 2], "[AS..................]"),  # each part ends where its running total rounds to
])
def test_a_stacked_bar_draws_each_part_with_its_letter(sizes, bar):
    assert stacked_bar(sizes, 100) == bar


def test_a_pipeline_poptorch_refuses_does_not_fit_and_says_why(bert):
    placement = placed(bert, gradient_accumulation_steps=4)
    problem = ("`gradient_accumulation_steps` is 4, and a pipeline of 3 stages needs at least 2 x 3 - 1 = 5: set it "
               "to 5 or more")
    assert (placement.fits, placement.problems, placement.to_dict()["problems"]) == (False, (problem,), [problem])
    line = f"Does not run: {problem}; memory fits: every IPU's on-chip figure is within the 672.8 MiB a reserve of " \
           "224.2 MiB leaves of an IPU's 897.0 MiB."
    assert line in str(placement).splitlines()
    assert "<red>Does not run</red>: " in placement.text(lambda text, name: f"<{name}>{text}</{name}>")
    assert placed(bert, gradient_accumulation_steps=5).fits


def test_without_activations_the_problem_is_still_said(bert):
    placement = PlainIPUConfig(layers_per_ipu=[1, 2]).placement(bert)
    assert not placement.fits and placement.shape is None and placement.bottleneck_ipu is None
    assert str(placement).splitlines()[-2].startswith(
        "Does not run: `gradient_accumulation_steps` is 1, and a pipeline of 3 stages needs at least 2 x 3 - 1 = 5: "
        "set it to 5 or more; memory fits: every IPU's on-chip figure is within ")


def test_without_recomputation_every_activation_is_stashed(bert):
    ipus = placed(bert, gradient_accumulation_steps=8, recomputation_mode="none").to_dict()["ipus"]
    assert [(ipu["stash_bytes"], ipu["recompute_bytes"], ipu["recompute_flops"]) for ipu in ipus] == [
        (5 * 5000 + 1 * 2000, 7000, 0), (3 * 8000, 8000, 0)]


def test_the_inference_build_keeps_no_activation(bert):
    placement = placed(bert, for_inference=True, inference_layers_per_ipu=[1, 2])
    data = placement.to_dict()
    assert [(ipu["activation_bytes"], ipu["stash_bytes"], ipu["recompute_bytes"], ipu["backward_flops"],
             ipu["forward_flops"], ipu["on_chip_bytes"]) for ipu in data["ipus"]] == [
        (0, 0, 0, 0, 3 * 10**9, 2 * 4192), (0, 0, 0, 0, 2 * 10**9, 2 * 4448)]
    # upstream's inference build is sharded: no pipeline cycles
    assert (data["pipeline_cycles"], data["pipeline_efficiency"], data["fits"]) == (None, None, True)
    assert str(placement).splitlines()[6] == ("Not pipelined: the 3 stages (IPUs 0, 1, 0) run one micro-batch at a "
                                              "time; IPU 0 takes the longest and sets the pace.")
    # a forward pass a cycle, receiving each stage's input alone; not pipelined, the micro-batch runs through both
    # IPUs in turn; the host's part, a PopTorch call and the inputs
    assert [ipu["operations"] for ipu in data["ipus"]] == [
        {"count": 16, "matmul_cycles": 1.5e6, "elementwise_elements": 29000},
        {"count": 20, "matmul_cycles": 1e6, "elementwise_elements": 40000}]
    assert [ipu["exchange_bytes"] for ipu in data["ipus"]] == [64 + 128, 128]
    assert data["step_parts"] == pytest.approx({
        "pipeline": cycle_seconds(16, 1.5e6, 29000, 192) + cycle_seconds(20, 1e6, 40000, 128),
        "weight_update": 0.0, "reduction": 0.0, "host": 0.5e-3 + 64 / (100e9 / 8 / 2)}, rel=1e-12)
    pipelined = placed(bert, for_inference=True, inference_layers_per_ipu=[1, 2],
                       inference_execution_strategy="pipelined", inference_device_iterations=2)
    assert pipelined.problems == ("`inference_device_iterations` is 2, and a pipeline of 3 stages needs at least 3: "
                                  "set it to 3 or more",)


# --- with the costs of the cost model ------------------------------------------------------------------------------


def test_the_activations_are_counted_when_any_part_of_the_micro_batch_is_given(bert):
    config = PlainIPUConfig(layers_per_ipu=[1, 2], **RECOMPUTING)
    assert config.placement(bert).shape is None
    assert config.placement(bert, micro_batch_size=3).shape == InputShape(3, 128, 128)
    assert config.placement(bert, sequence_length=64).shape == InputShape(1, 64, 64)
    with pytest.raises(PlacementError) as raised:
        config.placement(bert, decoder_sequence_length=64)
    assert raised.value.setting == "decoder_sequence_length"
    with pytest.raises(PlacementError) as raised:
        config.placement(bert, micro_batch_size=0)
    assert raised.value.setting == "micro_batch_size"


def test_each_ipu_sums_the_costs_of_its_steps(bert):
    placement = PlainIPUConfig(layers_per_ipu=[1, 2], **RECOMPUTING).placement(bert, micro_batch_size=2,
                                                                              sequence_length=16)
    row = ARCHITECTURES["BertForMaskedLM"]
    config = row.config(TINY_BERT)
    costs = block_costs(row, config, resolve_shape("m", row.name, config, 2, 16), False)
    paths = [["bert.embeddings", "bert.encoder.layer.0", "cls"], ["bert.encoder.layer.1", "bert.encoder.layer.2"]]
    for ipu, on in zip(placement.ipus, paths):
        assert ipu.work.activation_bytes == sum(costs[path].activation_bytes for path in on)
        assert ipu.work.forward_flops == sum(costs[path].forward_flops for path in on) > 0
        assert ipu.on_chip_bytes == (ipu.weights_bytes + ipu.gradient_accumulator_bytes + ipu.optimizer_state_bytes
                                     + ipu.work.stash_bytes + ipu.work.recompute_bytes)


def test_the_time_balance_shows_each_ipu_s_cycle(bert):
    placer = PlainIPUConfig(layers_per_ipu=[2, 1], **RECOMPUTING).placer(bert, micro_batch_size=2, sequence_length=16)
    placement = placer.place()
    balanced = placer.balanced(placement, "time")
    text = comparison_text(placement.to_dict(), balanced.to_dict(), objective="time")
    lines = text.splitlines()
    assert lines[1] == "IPU  Layers  Balanced  On chip, MiB  Balanced, MiB  Cycle, ms  Balanced, ms"
    slowest, before = (1e3 * max(ipu.cycle_seconds for ipu in found.ipus) for found in (balanced, placement))
    assert slowest < before
    assert lines[-1].startswith(f"The slowest IPU: {slowest:,.2f} ms a cycle instead of {before:,.2f}; ")
    assert [line.split()[-2:] for line in lines[2:4]] == [
        [f"{1e3 * now.cycle_seconds:,.2f}", f"{1e3 * then.cycle_seconds:,.2f}"]
        for now, then in zip(placement.ipus, balanced.ipus)]
    assert comparison_text(balanced.to_dict(), balanced.to_dict(), objective="time") == (
        "Balanced: the config's layers_per_ipu already makes the slowest IPU fastest among the splits that fit.")


def test_an_encoder_decoder_s_decoder_length_is_its_own(tmp_path):
    from support.placement_fixtures import tiny_model

    config = dict(tiny_model("T5ForConditionalGeneration").config.to_dict(), num_layers=2,
                  architectures=["T5ForConditionalGeneration"])
    ipu_config = PlainIPUConfig(layers_per_ipu=[2, 2], gradient_accumulation_steps=8)
    placement = ipu_config.placement(config, micro_batch_size=2, sequence_length=32, decoder_sequence_length=8)
    assert (placement.to_dict()["sequence_length"], placement.to_dict()["decoder_sequence_length"]) == (32, 8)
    assert str(placement).splitlines()[0].endswith("micro-batch 2, sequence length 32, decoder sequence length 8")
    assert ipu_config.placement(config, sequence_length=32).decoder_sequence_length == 32


def test_of_ipus_taking_alike_the_first_is_the_bottleneck(bert):
    placement = placed(bert, (0, 3), **RECOMPUTING)
    even = dataclasses.replace(placement, ipus=tuple(
        dataclasses.replace(ipu, cycle_seconds=placement.ipus[1].cycle_seconds) for ipu in placement.ipus))
    reversed_ = dataclasses.replace(placement, ipus=tuple(dataclasses.replace(ipu, cycle_seconds=other.cycle_seconds)
                                                          for ipu, other in zip(placement.ipus, placement.ipus[::-1])))
    # IPU 1 runs the 3 layers (120 operations a cycle, 6e6 cycles of products), IPU 0 the embedding and the head
    # (22, 4e6): the bottleneck is the IPU whose cycle is longest
    assert [ipu.work.operations[:2] for ipu in placement.ipus] == [(22, 4e6), (120, 6e6)]
    assert placement.ipus[1].cycle_seconds > placement.ipus[0].cycle_seconds
    assert (placement.bottleneck_ipu, even.bottleneck_ipu, reversed_.bottleneck_ipu) == (1, 0, 0)
