"""`placement/timing.py`: a step's time by part, in closed forms: the pipeline paced by its slowest IPU (or, not
pipelined, each micro-batch through every IPU), the off-chip optimizer state read and written back, the ring sum of
the gradients within and between Pods, the overhead; inference without the last three; the samples a step takes."""

import pytest

from optimum_ipu_ext import InvalidSettingError, PlainIPUConfig
from optimum_ipu_ext.placement.estimate.pipeline import PipelineWork
from optimum_ipu_ext.placement.estimate.timing import Job, StepTime, TimeModel, reduction_seconds
from optimum_ipu_ext.placement.hardware import (
    BOW,
    COMPUTE_EFFICIENCY,
    GATEWAY_LINK_BYTES_PER_SECOND,
    GC200,
    IPU_LINK_BYTES_PER_SECOND,
    IPU_TYPES,
    STEP_OVERHEAD_SECONDS,
    STREAMING_BYTES_PER_SECOND,
)
from support.placement_fixtures import bert_base


def step_time(job, ipu, cycles):
    """The step of `job` on IPUs of type `ipu`, in `cycles` (None: not pipelined), of a pipeline of two IPUs: 3 and 5
    x 10^12 FLOPs a micro-batch, 4 and 2 x 10^8 bytes of gradients (2 and 1 x 10^8 fp16 parameters trained), 6 x 10^8
    and no bytes of optimizer state in Streaming Memory."""
    model = TimeModel(ipu, job, weight_bytes=2)
    times = [model.ipu_time(flops(3 * 10**12), 2 * 10**8, 6 * 10**8), model.ipu_time(flops(5 * 10**12), 10**8, 0)]
    return model.step(times, cycles)


def flops(count):
    """The work of an IPU computing `count` FLOPs a micro-batch: a quarter forward, half backward, a quarter
    recomputed."""
    return PipelineWork(0, 0, 0, count // 4, count // 2, count // 4)


def test_a_pipelined_step_is_its_cycles_paced_by_the_slowest_ipu_plus_its_update_reduction_and_overhead():
    job = Job(training=True, micro_batches=16, replicas=1, ipus_per_replica=2, samples_per_micro_batch=4)
    time = step_time(job, GC200, 22)
    assert time.pipeline_seconds == pytest.approx(22 * 5 * 10**12 / (250e12 * COMPUTE_EFFICIENCY))
    assert time.pipeline_seconds == pytest.approx(TimeModel(GC200, job, 2).cycle_scale(22) * 5 * 10**12)
    assert time.weight_update_seconds == pytest.approx(2 * 6 * 10**8 / STREAMING_BYTES_PER_SECOND)
    assert (time.reduction_seconds, time.overhead_seconds, time.samples_per_step) == (0, STEP_OVERHEAD_SECONDS, 64)
    assert time.step_seconds == pytest.approx(time.pipeline_seconds + time.weight_update_seconds
                                              + STEP_OVERHEAD_SECONDS)
    assert time.samples_per_second == pytest.approx(64 / time.step_seconds)


def test_a_build_that_is_not_pipelined_runs_each_micro_batch_through_every_ipu():
    job = Job(True, 16, 1, 2, 1)
    assert step_time(job, GC200, None).pipeline_seconds == pytest.approx(
        16 * 8 * 10**12 / (250e12 * COMPUTE_EFFICIENCY))


def test_an_inference_step_is_its_pipeline_alone():
    time = step_time(Job(False, 4, 2, 2, 3), BOW, 5)
    assert time == StepTime("bow", pytest.approx(5 * 5 * 10**12 / (350e12 * COMPUTE_EFFICIENCY)), 0, 0, 0, 24)


def test_bow_ipus_are_faster_by_their_peak():
    job = Job(True, 16, 1, 2, 1)
    ratio = step_time(job, GC200, 22).pipeline_seconds / step_time(job, BOW, 22).pipeline_seconds
    assert ratio == pytest.approx(350 / 250)
    assert sorted(IPU_TYPES) == ["bow", "gc200"] and (GC200.clock_hz, BOW.clock_hz) == (1.33e9, 1.85e9)


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


def test_the_step_s_reduction_is_its_slowest_ipu_s():
    time = step_time(Job(True, 16, 4, 2, 1), GC200, 22)
    assert time.reduction_seconds == pytest.approx(reduction_seconds(4 * 10**8, 4, 2))


def test_the_hardware_s_figures():
    assert (IPU_LINK_BYTES_PER_SECOND, GATEWAY_LINK_BYTES_PER_SECOND, STREAMING_BYTES_PER_SECOND) == (
        64e9, 6.25e9, 9.6e9)


# --- in a placement ----------------------------------------------------------------------------------------------


def test_a_placement_with_its_activations_counted_is_timed_on_the_ipus_asked_for(tmp_path):
    config = PlainIPUConfig(layers_per_ipu=[6, 6], gradient_accumulation_steps=8, replication_factor=2)
    model = bert_base(tmp_path / "bert")
    assert config.placement(model).time is None
    gc200 = config.placement(model, micro_batch_size=2)
    bow = config.placement(model, micro_batch_size=2, ipu="bow")
    assert (gc200.time.ipu, bow.time.ipu) == ("gc200", "bow")
    slowest = max(ipu.work.flops for ipu in gc200.ipus)
    assert gc200.time.pipeline_seconds == pytest.approx(gc200.schedule.cycles * slowest / (250e12 * 0.382))
    trained = max(ipu.weights_bytes for ipu in gc200.ipus)  # gradients in the weights' fp16
    assert gc200.time.reduction_seconds == pytest.approx(reduction_seconds(trained, 2, 2))
    assert gc200.time.samples_per_step == 2 * 8 * 2
    data = gc200.to_dict()
    assert {key: data[key] for key in ("ipu", "step_seconds", "samples_per_step", "samples_per_second")} == {
        "ipu": "gc200", "step_seconds": gc200.time.step_seconds, "samples_per_step": 32,
        "samples_per_second": gc200.time.samples_per_second}
    assert data["step_parts"] == {"pipeline": gc200.time.pipeline_seconds, "weight_update": 0.0,
                                  "reduction": gc200.time.reduction_seconds, "overhead": STEP_OVERHEAD_SECONDS}
    assert [line for line in str(gc200).splitlines() if line.startswith("Time: ")] == [
        f"Time: {gc200.time.step_seconds:.3g} s a step on GC200 IPUs (pipeline {gc200.time.pipeline_seconds:.3g} s, "
        f"weight update 0 s, reduction {gc200.time.reduction_seconds:.3g} s, overhead 0.121 s): 32 samples, "
        f"{gc200.time.samples_per_second:,.1f} a second."]


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
