"""The pipeline a placement runs: how the build runs it read off its options, PopART's independent stages and their
stash depths, what each IPU stashes, recomputes, runs and receives each cycle, the cycles of a step and what poptorch
refuses."""

import pytest

from optimum_ipu_ext import PlainIPUConfig
from optimum_ipu_ext.placement.estimate.costs import StepCost
from optimum_ipu_ext.placement.estimate.layout import ForwardStep, OnIPU, lay_out
from optimum_ipu_ext.placement.estimate.pipeline import (
    Execution,
    PipelineWork,
    Schedule,
    Stage,
    execution_of,
    ipu_work,
    schedule,
    stages_of,
    stash_depth,
    work,
)
from optimum_ipu_ext.placement.models import ARCHITECTURES
from optimum_ipu_ext.placement.models.blocks import NO_OPERATIONS, Operations
from optimum_ipu_ext.placement.models.rules import DECODER, ENCODER, MODEL

TRAINING = Execution(True, True, False, False, 8, "gradient_accumulation_steps")
RECOMPUTING = TRAINING._replace(recomputes=True)
CHECKPOINTING = RECOMPUTING._replace(checkpoints_every_layer=True)
SHARDED = TRAINING._replace(pipelined=False)
INFERENCE = Execution(False, True, False, False, 4, "inference_device_iterations")


# --- how the build runs its pipeline, read off its options -----------------------------------------------------------


@pytest.mark.parametrize("values, for_inference, execution", [
    ({"gradient_accumulation_steps": 8}, False, TRAINING),
    # poptorch's default: the pipeline's recomputation, with more than one IPU
    ({"gradient_accumulation_steps": 8, "ipus_per_replica": 2}, False, RECOMPUTING),
    ({"gradient_accumulation_steps": 8, "ipus_per_replica": 2, "recomputation_mode": "none"}, False, TRAINING),
    ({"gradient_accumulation_steps": 8, "recomputation_mode": "pipeline"}, False, RECOMPUTING),
    ({"gradient_accumulation_steps": 8, "recomputation_mode": "pipeline", "recompute_checkpoint_every_layer": True},
     False, CHECKPOINTING),
    ({"gradient_accumulation_steps": 8, "recompute_checkpoint_every_layer": True}, False,
     TRAINING._replace(checkpoints_every_layer=True)),
    # only the pipeline's recomputation (or all of it) recomputes every stage
    ({"gradient_accumulation_steps": 8, "recomputation_mode": "standard"}, False, TRAINING),
    ({"gradient_accumulation_steps": 8, "recomputation_mode": "recompute_all"}, False, RECOMPUTING),
    ({"gradient_accumulation_steps": 8, "execution_strategy": None}, False, TRAINING),
    ({"gradient_accumulation_steps": 8, "execution_strategy": "sharded", "recomputation_mode": "pipeline",
      "ipus_per_replica": 2}, False, SHARDED),
    # upstream's inference build is sharded; a pipelined one runs `inference_device_iterations` micro-batches a step
    ({"inference_device_iterations": 4, "ipus_per_replica": 2}, True, INFERENCE._replace(pipelined=False)),
    ({"inference_device_iterations": 4, "inference_execution_strategy": "pipelined", "recomputation_mode": "pipeline",
      "recompute_checkpoint_every_layer": True, "ipus_per_replica": 2}, True, INFERENCE),
])
def test_how_the_build_runs_its_pipeline_is_read_off_its_options(values, for_inference, execution):
    assert execution_of(vars(PlainIPUConfig(**values)), for_inference) == execution


# --- stages ----------------------------------------------------------------------------------------------------------

TINY_BERT = {"num_hidden_layers": 3}


def stages(architecture, split, execution=TRAINING, for_inference=False, config=TINY_BERT, **values):
    row = ARCHITECTURES[architecture]
    setting = "inference_layers_per_ipu" if for_inference else "layers_per_ipu"
    layout = lay_out("m", row, row.config(config), vars(PlainIPUConfig(**{setting: split}, **values)), for_inference)
    return [(stage.ipu, stage.blocks, stage.stash_depth) for stage in stages_of(layout, execution)]


@pytest.mark.parametrize("architecture, split, expected", [
    # the masked-LM head, tied to the word embeddings, goes back to IPU 0: a stage of its own
    ("BertForMaskedLM", [1, 2], [(0, ("Embedding", "Encoder0"), 5), (1, ("Encoder1", "Encoder2"), 3),
                                 (0, ("Classifier",), 1)]),
    ("BertForMaskedLM", [3, 0], [(0, ("Embedding", "Encoder0", "Encoder1", "Encoder2", "Classifier"), 1)]),
    ("BertForMaskedLM", [0, 3], [(0, ("Embedding",), 5), (1, ("Encoder0", "Encoder1", "Encoder2"), 3),
                                 (0, ("Classifier",), 1)]),
    ("BertForQuestionAnswering", [1, 2], [(0, ("Embedding", "Encoder0"), 3),
                                          (1, ("Encoder1", "Encoder2", "QA Outputs"), 1)]),
    # an IPU with no block runs no stage
    ("BertForQuestionAnswering", [1, 0, 2], [(0, ("Embedding", "Encoder0"), 3),
                                             (2, ("Encoder1", "Encoder2", "QA Outputs"), 1)]),
])
def test_consecutive_blocks_on_one_ipu_run_as_one_stage_stashing_for_2_s_minus_k_minus_1(architecture, split,
                                                                                          expected):
    assert stages(architecture, split) == expected


def test_gpt2_s_final_norm_runs_in_the_last_layer_s_stage():
    found = stages_of(lay_out("m", ARCHITECTURES["GPT2LMHeadModel"], ARCHITECTURES["GPT2LMHeadModel"].config(
        {"n_layer": 2}), vars(PlainIPUConfig(layers_per_ipu=[1, 1])), False), TRAINING)
    assert [step.path for step in found[1].steps] == ["transformer.h.1", "transformer.ln_f"]
    assert [(stage.ipu, stage.blocks) for stage in found] == [(0, ("Token embedding", "Position embedding", "Layer0")),
                                                               (1, ("Layer1",)), (0, ("LM head",))]


def test_a_generation_build_s_encoder_and_decoder_run_stages_of_their_own():
    found = stages("T5ForConditionalGeneration", [1, 1, 1, 1], INFERENCE, True, {"num_layers": 2},
                   inference_parallelize_kwargs={"for_generation": True})
    # the decoder's LM head, tied to the shared embedding, goes back to the decoder's first IPU
    assert found == [(0, ("Embedding", "Encoder0"), 0), (1, ("Encoder1", "Encoder Stack Final LayerNorm"), 0),
                     (2, ("Embedding", "Decoder0"), 0), (3, ("Decoder1", "Decoder Stack Final LayerNorm"), 0),
                     (2, ("LM Head Output",), 0)]


@pytest.mark.parametrize("stage, count, execution, depth", [
    (0, 1, TRAINING, 1), (0, 5, TRAINING, 9), (2, 5, TRAINING, 5), (4, 5, TRAINING, 1), (0, 9, TRAINING, 17),
    (0, 5, SHARDED, 0), (0, 5, INFERENCE, 0),
])
def test_the_stash_depth_of_each_stage(stage, count, execution, depth):
    assert stash_depth(stage, count, execution) == depth


# --- what an IPU stashes, recomputes and computes --------------------------------------------------------------------


def step(path, layer=None):
    return ForwardStep(MODEL, path, True, path, 0, layer, OnIPU(0))


EMBEDDING, LAYER0, LAYER1, HEAD = step("embedding"), step("layer0", 0), step("layer1", 1), step("head")
# activation, input (from the step before), output, forward FLOPs; the operations of the forward and the backward
# pass: (count, matmul cycles, elementwise elements)
COSTS = {"embedding": StepCost(100, 4, 10, 0, Operations(1, 0.0, 40), Operations(1, 0.0, 80)),
         "layer0": StepCost(300, 10, 10, 1000, Operations(10, 500.0, 60), Operations(20, 1000.0, 120)),
         "layer1": StepCost(200, 10, 10, 1000, Operations(10, 400.0, 50), Operations(20, 800.0, 100)),
         "head": StepCost(250, 10, 1, 3000, Operations(2, 1500.0, 30), Operations(3, 3000.0, 60))}
# the four steps' forward operations (23, 2400.0, 180) and backward ones (44, 4800.0, 360); a training cycle runs
# one forward, one backward and, recomputing, the forward again; it receives the stage's input (4 bytes) and, in
# training, the gradient of its output (1 byte)
FORWARD, BACKWARD = Operations(23, 2400.0, 180), Operations(44, 4800.0, 360)


@pytest.mark.parametrize("execution, expected", [
    # stash: 3 x the stage's input; recomputed at once: the whole stage
    (RECOMPUTING, PipelineWork(850, 3 * 4, 850, 5000, 10000, 5000, Operations(2 * 23 + 44, 9600.0, 720), 4 + 1)),
    # stash: 3 x (the input and each layer's checkpointed output); recomputed at once: the embedding and the first
    # layer, the second layer, the head
    (CHECKPOINTING, PipelineWork(850, 3 * (4 + 10 + 10), 100 + 300, 5000, 10000, 5000,
                                 Operations(2 * 23 + 44, 9600.0, 720), 4 + 1)),
    # every activation stashed, and those of the micro-batch run backward kept
    (TRAINING, PipelineWork(850, 3 * 850, 850, 5000, 10000, 0, Operations(23 + 44, 7200.0, 540), 4 + 1)),
    (SHARDED, PipelineWork(850, 0, 850, 5000, 10000, 0, Operations(23 + 44, 7200.0, 540), 4 + 1)),
    # inference keeps nothing for a backward pass, runs the forward once and receives the input alone
    (INFERENCE, PipelineWork(0, 0, 0, 5000, 0, 0, FORWARD, 4)),
])
def test_what_one_stage_stashes_and_recomputes(execution, expected):
    depth = stash_depth(0, 2, execution)
    found = work([(depth, [EMBEDDING, LAYER0, LAYER1, HEAD])], COSTS, execution)
    assert found == expected
    passes = (2 if execution.recomputes else 1, 1 if execution.training else 0)
    assert found.operations == FORWARD.plus(FORWARD, passes[0] - 1).plus(BACKWARD, passes[1])


def test_an_ipu_running_two_stages_stashes_for_both_and_recomputes_the_larger():
    # forward (13, 2000.0, 130), backward (24, 4000.0, 260); each stage receives its input and its output's gradient:
    # 4 + 10 bytes, then 10 + 1
    found = work([(3, [EMBEDDING, LAYER0]), (1, [HEAD])], COSTS, RECOMPUTING)
    assert found == PipelineWork(650, 3 * 4 + 1 * 10, 400, 4000, 8000, 4000, Operations(2 * 13 + 24, 8000.0, 520),
                                 (4 + 10) + (10 + 1))
    found = work([(3, [EMBEDDING, LAYER0]), (1, [HEAD])], COSTS, TRAINING)
    assert found == PipelineWork(650, 3 * 400 + 1 * 250, 650, 4000, 8000, 0, Operations(13 + 24, 6000.0, 390),
                                 (4 + 10) + (10 + 1))


def test_a_module_wrapped_but_never_called_costs_nothing():
    uncalled = ForwardStep(MODEL, "unused", False, None, 0, None, OnIPU(0))
    # the stage's input is the uncalled module's, nothing; the second layer's operations are run as ever
    assert work([(1, [uncalled, LAYER1])], COSTS, RECOMPUTING) == PipelineWork(
        200, 0, 200, 1000, 2000, 1000, Operations(2 * 10 + 20, 1600.0, 200), 0 + 10)


def test_each_ipu_does_the_work_of_its_stages():
    first = Stage(0, ("embedding",), 3, (EMBEDDING, LAYER0))
    second = Stage(1, ("layer1",), 1, (LAYER1._replace(ipu=1),))
    assert ipu_work(3, [first, second], COSTS, TRAINING) == (
        PipelineWork(400, 1200, 400, 1000, 2000, 0, Operations(11 + 21, 1500.0, 300), 4 + 10),
        PipelineWork(200, 200, 200, 1000, 2000, 0, Operations(10 + 20, 1200.0, 150), 10 + 10),
        PipelineWork(0, 0, 0, 0, 0, 0, NO_OPERATIONS, 0))
    # an IPU running no stage recomputes nothing either
    assert ipu_work(3, [first, second], COSTS, RECOMPUTING) == (
        PipelineWork(400, 3 * 4, 400, 1000, 2000, 1000, Operations(2 * 11 + 21, 2000.0, 400), 4 + 10),
        PipelineWork(200, 10, 200, 1000, 2000, 1000, Operations(2 * 10 + 20, 1600.0, 200), 10 + 10),
        PipelineWork(0, 0, 0, 0, 0, 0, NO_OPERATIONS, 0))
    assert PipelineWork(1, 2, 3, 4, 5, 6).flops == 4 + 5 + 6


# --- the cycles of a step --------------------------------------------------------------------------------------------


def pipeline_of(ipus, execution):
    return [Stage(ipu, (), 0, (ForwardStep(MODEL, "x", True, "x", ipu, None, OnIPU(ipu)),)) for ipu in ipus]


@pytest.mark.parametrize("ipus, execution, expected", [
    ([0, 1, 2, 3, 0], TRAINING._replace(micro_batches=2048), Schedule(5, 2048 + 8, 2048 / 2056, ())),
    ([0, 1, 2, 3, 4, 5, 6, 7, 0], TRAINING._replace(micro_batches=17), Schedule(9, 33, 17 / 33, ())),
    ([0, 1, 2, 3, 4, 5, 6, 7, 0], TRAINING._replace(micro_batches=16), Schedule(9, 32, 16 / 32, (
        "`gradient_accumulation_steps` is 16, and a pipeline of 9 stages needs at least 2 x 9 - 1 = 17: set it to 17 "
        "or more",))),
    ([0], TRAINING._replace(micro_batches=1), Schedule(1, 1, 1.0, ())),
    ([0, 1, 2, 3], INFERENCE, Schedule(4, 4 + 3, 4 / 7, ())),
    ([0, 1, 2, 3], INFERENCE._replace(micro_batches=3), Schedule(4, 6, 3 / 6, (
        "`inference_device_iterations` is 3, and a pipeline of 4 stages needs at least 4: set it to 4 or more",))),
    ([0, 1, 2, 3], SHARDED, Schedule(4, None, None, ())),
])
def test_a_step_takes_the_micro_batches_and_the_pipeline_s_fill_and_flush(ipus, execution, expected):
    assert schedule(pipeline_of(ipus, execution), execution) == expected


def test_a_generation_build_s_step_is_that_of_its_longest_executor():
    stages_ = [stage._replace(steps=(stage.steps[0]._replace(executor=executor),))
               for stage, executor in zip(pipeline_of([0, 1, 2], INFERENCE), [ENCODER, DECODER, DECODER])]
    assert schedule(stages_, INFERENCE) == Schedule(2, 4 + 1, 4 / 5, ())
