"""`placement/estimate/timing.py`: a step's time by part, in closed forms, with constants chosen for the test: a
cycle's seconds from the operations an IPU runs (a fixed time each, its matrix products' cycles, its elementwise
elements) and the bytes it receives; the weight update (the optimizer's arithmetic, the off-chip state read and
written back) and the ring sum of the gradients within and between Pods; the host's part, a call's cost shared by the
steps of a call in training, PopTorch's call in inference, and the inputs over the host link; the pipeline paced by
its slowest IPU, or not pipelined each micro-batch through every IPU; the steps a call a plan takes; the samples a
second within the model's error band; where a build is outside the runs of its calibration.
Then a placement timed end to end with the shipped constants."""


import pytest

from optimum_ipu_ext import InvalidSettingError, PlainIPUConfig
from optimum_ipu_ext.placement.estimate.calibration_file import shipped_calibration
from optimum_ipu_ext.placement.estimate.pipeline import PipelineWork
from optimum_ipu_ext.placement.estimate.timing import (
    CALL_SHARE,
    UPDATE_ELEMENTS,
    Calibration,
    IPUTime,
    Job,
    StepTime,
    TimeModel,
    product_rows,
    reduction_seconds,
)
from optimum_ipu_ext.placement.hardware import (
    BOW,
    GATEWAY_LINK_BYTES_PER_SECOND,
    GC200,
    HOST_LINK_BYTES_PER_SECOND,
    IPU_LINK_BYTES_PER_SECOND,
    IPU_TYPES,
    POPTORCH_CALL_SECONDS,
    STREAMING_BYTES_PER_SECOND,
)
from optimum_ipu_ext.placement.models.blocks import Operations
from optimum_ipu_ext.placement.models.rules import (
    AUDIO,
    ENCODER_DECODER,
    IMAGE,
    SPEECH_RECOGNITION,
    TEXT,
    InputShape,
)
from support.placement_fixtures import bert_base, tiny_bert

# constants chosen for the test: 1,000 cycles an operation, half a cycle an element, 50 ms a host call; measured runs
# 20 % slower to 50 % faster than the model's figure
CONSTANTS = Calibration(operation_cycles=1000.0, elementwise_cycles=0.5, call_seconds=0.05, band=(-0.2, 0.5), runs=10,
                        coverage={"model_types": ["bert", "gpt2"], "rows": [256, 4096]}, name="test")
TRAINING = Job(training=True, micro_batches=16, replicas=1, ipus_per_replica=2, samples_per_micro_batch=4)


def model(job=TRAINING, ipu=GC200, calibration=CONSTANTS, weight_bytes=2):
    return TimeModel(ipu, job, weight_bytes, calibration)


def running(count=0, matmul_cycles=0.0, elements=0, exchange_bytes=0):
    """The work of an IPU running these operations and receiving these bytes each cycle."""
    return PipelineWork(0, 0, 0, 0, 0, 0, Operations(count, matmul_cycles, elements), exchange_bytes)


# --- a cycle ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("work, seconds", [
    # each operation 1,000 cycles at the GC200's 1.33 GHz
    (running(count=133), 133 * 1000 / 1.33e9),
    # the products' cycles, as the sweep gives them
    (running(matmul_cycles=2.66e6), 2.66e6 / 1.33e9),
    # half a cycle an element
    (running(elements=4 * 10**6), 2 * 10**6 / 1.33e9),
    # what it receives, over the IPU-Links' 64 GB/s
    (running(exchange_bytes=64 * 10**6), 1e-3),
    (running(100, 2e6, 4 * 10**6, 64 * 10**6), (100 * 1000 + 2e6 + 2e6) / 1.33e9 + 1e-3),
    (running(), 0.0),
])
def test_a_cycle_is_its_operations_cycles_at_the_clock_and_what_it_receives_over_the_ipu_links(work, seconds):
    assert model().cycle_seconds(work) == pytest.approx(seconds, rel=1e-12, abs=1e-18)


def test_the_operations_are_counted_in_cycles_of_the_ipu_s_clock_what_it_receives_in_seconds():
    compute, exchange = running(100, 2e6, 4 * 10**6), running(exchange_bytes=64 * 10**6)
    assert model(ipu=GC200).cycle_seconds(compute) / model(ipu=BOW).cycle_seconds(compute) == pytest.approx(
        1.85 / 1.33)
    assert model(ipu=BOW).cycle_seconds(exchange) == model(ipu=GC200).cycle_seconds(exchange) == 1e-3
    assert sorted(IPU_TYPES) == ["bow", "gc200"] and (GC200.clock_hz, BOW.clock_hz) == (1.33e9, 1.85e9)


def test_a_cycle_s_constants_are_the_calibration_s():
    work = running(100, 2e6, 4 * 10**6)
    doubled = CONSTANTS._replace(operation_cycles=2000.0, elementwise_cycles=1.0)
    assert model(calibration=doubled).cycle_seconds(work) - model().cycle_seconds(work) == pytest.approx(
        (100 * 1000 + 4 * 10**6 * 0.5) / 1.33e9)
    assert model().cycle_scale(22) == 22.0 and isinstance(model().cycle_scale(22), float)


# --- an IPU's share: its cycle, its update, its reduction ------------------------------------------------------------


def test_an_ipu_s_update_is_the_optimizer_s_arithmetic_and_its_off_chip_state_read_and_written_back():
    """2 x 10^8 trained parameters, each 4 elements (weight, gradient, two moments) at half a cycle; 6 x 10^8 bytes of
    optimizer state read from Streaming Memory and written back."""
    work = running(100, 2e6, 4 * 10**6, 64 * 10**6)
    time = model().ipu_time(work, 2 * 10**8, 6 * 10**8)
    assert UPDATE_ELEMENTS == 4
    assert time == IPUTime(model().cycle_seconds(work), pytest.approx(4 * 2 * 10**8 * 0.5 / 1.33e9 + 2 * 6 * 10**8
                                                                      / STREAMING_BYTES_PER_SECOND), 0.0)
    assert time.after_pipeline_seconds == time.update_seconds  # one replica: nothing to sum


def test_an_ipu_s_gradients_are_summed_over_the_replicas_in_its_weights_precision():
    replicated = TRAINING._replace(replicas=4)
    assert model(replicated).ipu_time(running(), 2 * 10**8, 0).reduction_seconds == pytest.approx(
        reduction_seconds(2 * 2 * 10**8, 4, 2))
    assert model(replicated, weight_bytes=4).ipu_time(running(), 2 * 10**8, 0).reduction_seconds == pytest.approx(
        reduction_seconds(4 * 2 * 10**8, 4, 2))


def test_an_inference_ipu_has_its_cycle_alone():
    work = running(100, 2e6, 4 * 10**6, 64 * 10**6)
    inference = Job(False, 4, 2, 2, 3)
    assert model(inference).ipu_time(work, 2 * 10**8, 6 * 10**8) == IPUTime(model().cycle_seconds(work), 0.0, 0.0)


@pytest.mark.parametrize("replicas, ipus_per_replica, expected", [
    (1, 4, 0.0),
    (2, 4, 2 * 1 / 2 * 10**9 / IPU_LINK_BYTES_PER_SECOND),
    (16, 4, 2 * 15 / 16 * 10**9 / IPU_LINK_BYTES_PER_SECOND),  # 64 IPUs: one Pod
    # 128 IPUs: two Pods of 8 replicas, each sending its share of its Pod's sum over the Gateway-Links
    (16, 8, 2 * 7 / 8 * 10**9 / IPU_LINK_BYTES_PER_SECOND + 2 * 1 / 2 * 10**9 / 8 / GATEWAY_LINK_BYTES_PER_SECOND),
    (32, 8, 2 * 7 / 8 * 10**9 / IPU_LINK_BYTES_PER_SECOND + 2 * 3 / 4 * 10**9 / 8 / GATEWAY_LINK_BYTES_PER_SECOND),
    # replicas of 3 IPUs (auto_round_num_ipus): a Pod holds 21 whole ones (64 // 3), so 32 take ceil(32 / 21) = 2 Pods
    (32, 3, 2 * 20 / 21 * 10**9 / IPU_LINK_BYTES_PER_SECOND + 2 * 1 / 2 * 10**9 / 21 / GATEWAY_LINK_BYTES_PER_SECOND),
    # a replica wider than a Pod: one replica a Pod
    (2, 128, 2 * 1 / 2 * 10**9 / GATEWAY_LINK_BYTES_PER_SECOND),
])
def test_the_gradients_are_summed_in_a_ring_within_each_pod_then_between_pods(replicas, ipus_per_replica, expected):
    assert reduction_seconds(10**9, replicas, ipus_per_replica) == pytest.approx(expected)


# --- the host --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("steps_per_call", [1, 4])
def test_a_training_step_takes_its_share_of_a_host_call_and_its_inputs_over_the_host_link(steps_per_call):
    """A call runs `device_iterations` optimizer steps; each step's 16 micro-batches of 10^6 bytes cross to the
    replica's first IPU, whose machine's host link its 4 IPUs share (a replica of 2 IPUs: half of it)."""
    job = TRAINING._replace(steps_per_call=steps_per_call, input_bytes=10**6)
    assert model(job).host_seconds() == pytest.approx(0.05 / steps_per_call + 16 * 10**6 / (12.5e9 / 2))
    assert model(TRAINING).host_seconds() == 0.05  # no inputs given
    wide = job._replace(ipus_per_replica=8)  # a replica of 2 machines still reads through one IPU's link
    assert model(wide).host_seconds() == pytest.approx(0.05 / steps_per_call + 16 * 10**6 / 12.5e9)


def test_an_inference_step_is_one_poptorch_call_whatever_the_calibration():
    job = Job(False, 4, 2, 1, 3, input_bytes=10**6)
    assert POPTORCH_CALL_SECONDS == 0.5e-3
    assert model(job).host_seconds() == pytest.approx(0.5e-3 + 4 * 10**6 / (12.5e9 / 4))
    assert model(job, calibration=CONSTANTS._replace(call_seconds=9.0)).host_seconds() == model(job).host_seconds()


# --- a step ----------------------------------------------------------------------------------------------------------


def two_ipus(time_model):
    """A pipeline of two IPUs: one running 2 x 10^6 cycles of operations and receiving 64 x 10^6 bytes each cycle,
    with 2 x 10^8 trained parameters and 6 x 10^8 bytes of optimizer state off chip; the other 3 x 10^6 cycles and
    nothing received, with 10^8 parameters and its state on chip."""
    return [time_model.ipu_time(running(matmul_cycles=2e6, exchange_bytes=64 * 10**6), 2 * 10**8, 6 * 10**8),
            time_model.ipu_time(running(matmul_cycles=3e6), 10**8, 0)]


def test_a_pipelined_step_is_its_cycles_paced_by_the_slowest_ipu_then_its_update_reduction_and_host():
    """The first IPU's cycle: 2 x 10^6 / 1.33 x 10^9 + 1 ms = 2.504 ms; the second's 2.256 ms: 22 of the first's."""
    time_model = model()
    time = time_model.step(two_ipus(time_model), 22)
    first = 2e6 / 1.33e9 + 1e-3
    assert time.pipeline_seconds == pytest.approx(22 * first)
    assert time.weight_update_seconds == pytest.approx(4 * 2 * 10**8 * 0.5 / 1.33e9 + 2 * 6 * 10**8 / 9.6e9)
    assert (time.reduction_seconds, time.host_seconds, time.samples_per_step) == (0.0, 0.05, 16 * 4)
    assert time.step_seconds == pytest.approx(time.pipeline_seconds + time.weight_update_seconds + 0.05)
    assert time.samples_per_second == pytest.approx(64 / time.step_seconds)
    assert (time.ipu, time.calibration, time.outside) == ("gc200", CONSTANTS, ())


def test_a_build_that_is_not_pipelined_runs_each_micro_batch_through_every_ipu():
    time_model = model()
    assert time_model.step(two_ipus(time_model), None).pipeline_seconds == pytest.approx(
        16 * ((2e6 + 3e6) / 1.33e9 + 1e-3))


def test_the_step_s_update_and_reduction_are_its_slowest_ipu_s():
    """The first IPU's update is the longer (twice the parameters, and its state off chip); its reduction too."""
    time_model = model(TRAINING._replace(replicas=4))
    times = two_ipus(time_model)
    time = time_model.step(times, 22)
    assert time.weight_update_seconds == times[0].update_seconds > times[1].update_seconds
    assert time.reduction_seconds == pytest.approx(reduction_seconds(2 * 2 * 10**8, 4, 2))
    assert time.samples_per_step == 4 * 16 * 4


def test_an_inference_step_is_its_pipeline_and_a_poptorch_call():
    """On Bow IPUs the first IPU's cycle is 2 x 10^6 / 1.85 x 10^9 + 1 ms = 2.081 ms, the second's 1.622 ms."""
    job = Job(False, 4, 2, 2, 3)
    time_model = model(job, BOW)
    time = time_model.step(two_ipus(time_model), 5)
    assert time == StepTime("bow", pytest.approx(5 * (2e6 / 1.85e9 + 1e-3)), 0.0, 0.0, POPTORCH_CALL_SECONDS, 24,
                            CONSTANTS)


@pytest.mark.parametrize("job", [TRAINING, Job(False, 4, 2, 2, 3)], ids=["training", "inference"])
def test_a_step_says_how_its_build_is_outside_the_runs_of_its_calibration(job):
    notes = ("no t5 model among them", "16 rows a matrix product, where they had 256 to 4,096")
    time_model = model(job)._replace(outside=notes)
    assert time_model.step(two_ipus(time_model), 5).outside == notes
    assert time_model.step(two_ipus(time_model), None).outside == notes


def test_a_job_is_one_step_a_call_and_no_inputs_unless_told():
    assert (TRAINING.steps_per_call, TRAINING.input_bytes) == (1, 0)


# --- the steps of a call ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("rest, steps", [
    # the call's 50 ms within 5 % of the step: 50 / s <= 0.05 x (rest + 50 / s), s >= 19 x 50 ms / rest
    (1.0, 1),  # 0.95 steps: one
    (0.5, 2),  # 1.9
    (0.2, 8),  # 4.75: the next power of two
    (0.1, 16),  # 9.5
    (0.01, 128),  # 95
])
def test_a_plan_runs_the_fewest_steps_a_call_keeping_the_calls_within_a_twentieth_of_the_step(rest, steps):
    assert CALL_SHARE == 0.05
    for timed_at in (1, 4):  # the step as it was timed, at any steps a call, gives the same answer
        time_model = model(TRAINING._replace(steps_per_call=timed_at))
        step = StepTime("gc200", rest, 0.0, 0.0, 0.05 / timed_at, 64, CONSTANTS)
        assert time_model.fewest_steps_per_call(step) == steps
    share = 0.05 / steps / (rest + 0.05 / steps)
    assert share <= CALL_SHARE and (steps == 1 or 0.05 / (steps / 2) / (rest + 0.05 / (steps / 2)) > CALL_SHARE)


# --- the model's error -----------------------------------------------------------------------------------------------


def test_the_samples_a_second_a_run_would_measure_are_the_model_s_within_its_band():
    """Runs measured 20 % slower to 50 % faster than modelled (modelled over measured, less one: -0.2 to 0.5): a
    figure of 100 samples a second is 66.7 to 125 measured."""
    time = StepTime("gc200", 0.5, 0.1, 0.1, 0.3, 100, CONSTANTS, ("a note",))
    assert time.samples_per_second == pytest.approx(100.0)
    assert time.samples_per_second_range == pytest.approx((100 / 1.5, 100 / 0.8))
    assert time.to_dict() == {
        "ipu": "gc200", "step_seconds": time.step_seconds, "samples_per_step": 100,
        "samples_per_second": time.samples_per_second, "samples_per_second_range": list(time.samples_per_second_range),
        "step_parts": {"pipeline": 0.5, "weight_update": 0.1, "reduction": 0.1, "host": 0.3},
        "time_model": {"calibration": "test", "runs": 10, "band": [-0.2, 0.5], "outside": ["a note"]}}
    exact = time._replace(calibration=CONSTANTS._replace(band=(0.0, 0.0)))
    assert exact.samples_per_second_range == (exact.samples_per_second, exact.samples_per_second)


@pytest.mark.parametrize("model_type, rows, notes", [
    ("bert", 256, ()),
    ("gpt2", 4096, ()),
    # within twice the rows measured
    ("bert", 128, ()),
    ("bert", 8192, ()),
    ("bert", None, ()),  # not a text model: its rows are not compared
    ("bert", 127, ("127 rows a matrix product, where they had 256 to 4,096",)),
    ("bert", 1, ("1 row a matrix product, where they had 256 to 4,096",)),
    ("bert", 8193, ("8,193 rows a matrix product, where they had 256 to 4,096",)),
    ("t5", 512, ("no t5 model among them",)),
    ("vit", None, ("no vit model among them",)),
    ("t5", 16, ("no t5 model among them",
                "16 rows a matrix product, where they had 256 to 4,096")),
])
def test_a_build_outside_the_measured_runs_is_told(model_type, rows, notes):
    assert CONSTANTS.outside(model_type, rows) == notes


@pytest.mark.parametrize("inputs, shape, rows", [
    (TEXT, InputShape(2, 128, 128), 256),
    (ENCODER_DECODER, InputShape(2, 128, 32), 256),  # the encoder's tokens
    (TEXT, InputShape(2, 128, 128, choices=4), 1024),  # a multiple-choice model: each example's 4 sequences
    (IMAGE, InputShape(2, 224, 224), None),
    (AUDIO, InputShape(2, 16000, 16000), None),
    (SPEECH_RECOGNITION, InputShape(2, 3000, 448), None),
])
def test_a_text_model_s_products_take_a_micro_batch_s_tokens_as_rows(inputs, shape, rows):
    assert product_rows(inputs, shape) == rows


def test_a_multiple_choice_model_s_rows_are_its_choices_tokens(tmp_path):
    """2 examples of 4 choices of 32 tokens: products of 256 rows, within the 384 to 4,096 the shipped runs had
    (not 64, half of the fewest)."""
    model_ = tiny_bert(tmp_path, architecture="BertForMultipleChoice")
    config = PlainIPUConfig(layers_per_ipu=[1, 2], gradient_accumulation_steps=8)
    assert config.placement(model_, micro_batch_size=2, sequence_length=32).time.outside == ()
    assert config.placement(model_, micro_batch_size=1, sequence_length=32).time.outside == (
        "128 rows a matrix product, where they had 384 to 4,096",)


def test_a_calibration_covering_nothing_tells_nothing():
    assert Calibration(1.0, 1.0, 1.0).outside("t5", 1) == ()


def test_an_ipu_s_peak_is_128_flops_a_tile_and_a_cycle():
    from optimum_ipu_ext.placement.hardware import peak_flops

    assert (peak_flops(GC200), peak_flops(BOW)) == (1472 * 128 * 1.33e9, 1472 * 128 * 1.85e9)
    assert (round(peak_flops(GC200) / 1e12), round(peak_flops(BOW) / 1e12)) == (251, 349)


def test_the_hardware_s_figures():
    assert (IPU_LINK_BYTES_PER_SECOND, GATEWAY_LINK_BYTES_PER_SECOND, STREAMING_BYTES_PER_SECOND,
            HOST_LINK_BYTES_PER_SECOND) == (64e9, 6.25e9, 9.6e9, 12.5e9)


# --- in a placement --------------------------------------------------------------------------------------------------


def cycle_of(ipu, clock_hz):
    """An IPU's cycle, from its work as the placement gives it, with the shipped constants."""
    constants, operations = shipped_calibration(), ipu.work.operations
    cycles = (operations.count * constants.operation_cycles + operations.matmul_cycles
              + operations.elementwise_elements * constants.elementwise_cycles)
    return cycles / clock_hz + ipu.work.exchange_bytes / IPU_LINK_BYTES_PER_SECOND


def test_a_placement_with_its_activations_counted_is_timed_on_the_ipus_asked_for(tmp_path):
    """BERT-base on 2 IPUs, 2 replicas, G 8, micro-batches of 2 x 128 tokens (1,024 bytes of token ids each)."""
    config = PlainIPUConfig(layers_per_ipu=[6, 6], gradient_accumulation_steps=8, replication_factor=2)
    model_ = bert_base(tmp_path / "bert")
    assert config.placement(model_).time is None
    gc200 = config.placement(model_, micro_batch_size=2)
    bow = config.placement(model_, micro_batch_size=2, ipu="bow")
    assert (gc200.time.ipu, bow.time.ipu) == ("gc200", "bow")
    assert bow.time.pipeline_seconds < gc200.time.pipeline_seconds
    constants, time = shipped_calibration(), gc200.time
    for ipu in gc200.ipus:
        assert ipu.cycle_seconds == pytest.approx(cycle_of(ipu, GC200.clock_hz), rel=1e-12)
    assert [ipu.cycle_seconds for ipu in bow.ipus] == pytest.approx([cycle_of(ipu, BOW.clock_hz) for ipu in bow.ipus])
    slowest = max(gc200.ipus, key=lambda ipu: ipu.cycle_seconds)
    assert gc200.bottleneck_ipu == slowest.ipu == 0  # the embeddings and the head besides 6 layers
    assert time.pipeline_seconds == pytest.approx(gc200.schedule.cycles * slowest.cycle_seconds)
    # the optimizer state on chip: the update is the arithmetic on the larger IPU's parameters, all trained
    assert time.weight_update_seconds == pytest.approx(
        4 * max(ipu.parameters for ipu in gc200.ipus) * constants.elementwise_cycles / GC200.clock_hz)
    trained = max(ipu.weights_bytes for ipu in gc200.ipus)  # gradients in the weights' fp16
    assert time.reduction_seconds == pytest.approx(reduction_seconds(trained, 2, 2))
    assert time.host_seconds == pytest.approx(constants.call_seconds + 8 * 2 * 128 * 4 / (12.5e9 / 2))
    assert time.samples_per_step == 2 * 8 * 2
    low, high = constants.band
    data = gc200.to_dict()
    assert {key: data[key] for key in ("ipu", "step_seconds", "samples_per_step", "samples_per_second",
                                       "samples_per_second_range", "time_model")} == {
        "ipu": "gc200", "step_seconds": time.step_seconds, "samples_per_step": 32,
        "samples_per_second": time.samples_per_second,
        "samples_per_second_range": [time.samples_per_second / (1 + high), time.samples_per_second / (1 + low)],
        "time_model": {"calibration": "shipped", "runs": constants.runs, "band": [low, high], "outside": []}}
    assert data["step_parts"] == {"pipeline": time.pipeline_seconds, "weight_update": time.weight_update_seconds,
                                  "reduction": time.reduction_seconds, "host": time.host_seconds}
    assert [ipu["cycle_seconds"] for ipu in data["ipus"]] == [ipu.cycle_seconds for ipu in gc200.ipus]
    range_ = f"{time.samples_per_second / (1 + high):,.0f}-{time.samples_per_second / (1 + low):,.0f}"
    assert [line for line in str(gc200).splitlines() if line.startswith("Time: ")] == [
        f"Time: {time.step_seconds:.3g} s a step on GC200 IPUs (pipeline {time.pipeline_seconds:.3g} s, "
        f"weight update {time.weight_update_seconds:.3g} s, reduction {time.reduction_seconds:.3g} s, host "
        f"{time.host_seconds:.3g} s): 32 samples, {time.samples_per_second:,.1f} a second, {range_} by the model's "
        f"error on {constants.runs} measured runs (data loading not counted)."]
    # the figures as they are now, worked out from the shipped constants above
    assert [line for line in str(gc200).splitlines() if line.startswith("Time: ")] == [
        "Time: 0.103 s a step on GC200 IPUs (pipeline 0.0471 s, weight update 0.000652 s, reduction 0.00209 s, host "
        "0.053 s): 32 samples, 310.9 a second, 162-366 by the model's error on 16 measured runs (data loading not "
        "counted)."]


def test_a_training_call_runs_device_iterations_steps_and_a_build_outside_the_runs_says_so(tmp_path):
    """4 optimizer steps a call share its cost; micro-batches of 1 x 64 tokens make products of 64 rows, fewer than
    half the fewest the shipped runs measured (384)."""
    config = PlainIPUConfig(layers_per_ipu=[6, 6], gradient_accumulation_steps=8, device_iterations=4)
    placement = config.placement(bert_base(tmp_path / "bert"), micro_batch_size=1, sequence_length=64)
    constants = shipped_calibration()
    assert placement.time.host_seconds == pytest.approx(constants.call_seconds / 4 + 8 * 64 * 4 / (12.5e9 / 2))
    note = "64 rows a matrix product, where they had 384 to 4,096"
    assert (placement.time.outside, placement.to_dict()["time_model"]["outside"]) == ((note,), [note])
    assert [line for line in str(placement).splitlines() if line.startswith("Time: ")][0].endswith(
        f"(data loading not counted). Outside the runs it is fitted on: {note}.")


def test_an_inference_placement_is_timed_as_poptorch_calls_it(tmp_path):
    """Upstream's inference build is sharded: each of the 4 micro-batches through both IPUs in turn; one PopTorch
    call a step, whatever the optimizer steps a training call runs."""
    config = PlainIPUConfig(inference_layers_per_ipu=[6, 6], inference_device_iterations=4,
                            inference_replication_factor=2, device_iterations=8)
    placement = config.placement(bert_base(tmp_path / "bert"), micro_batch_size=2, for_inference=True)
    time = placement.time
    assert time.pipeline_seconds == pytest.approx(4 * sum(cycle_of(ipu, GC200.clock_hz) for ipu in placement.ipus))
    assert (time.weight_update_seconds, time.reduction_seconds, time.samples_per_step) == (0.0, 0.0, 2 * 4 * 2)
    assert time.host_seconds == pytest.approx(POPTORCH_CALL_SECONDS + 4 * 2 * 128 * 4 / (12.5e9 / 2))


@pytest.mark.parametrize("keyword, value, allowed", [
    ("ipu", "mk3", 'allowed values are "gc200", "bow"'),
    ("reserve", 1, "allowed values are shares of an IPU's memory, from 0 to less than 1"),
    ("reserve", -0.1, "allowed values are shares of an IPU's memory, from 0 to less than 1"),
    ("reserve", True, "allowed values are shares of an IPU's memory, from 0 to less than 1"),
    ("reserve", "0.2", "allowed values are shares of an IPU's memory, from 0 to less than 1"),
])
def test_an_ipu_or_a_reserve_outside_what_it_allows_is_refused(tmp_path, keyword, value, allowed):
    with pytest.raises(InvalidSettingError) as raised:
        PlainIPUConfig(layers_per_ipu=[6, 6]).placement(bert_base(tmp_path / "bert"), **{keyword: value})
    assert (raised.value.field, raised.value.value, raised.value.allowed) == (keyword, value, allowed)
