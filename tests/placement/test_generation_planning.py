"""`plan(generate=...)`: the builds that serve a model's generation, each placed and timed as `placement(generate=...)`
places and times its config; the ranking with and without `max_latency`; the frontier of latency against
throughput; what the search chooses and leaves out; what it refuses."""

import dataclasses
from typing import NamedTuple

import pytest

from optimum_ipu_ext import InvalidSettingError, PlacementError, PlainIPUConfig, plan
from optimum_ipu_ext.placement.estimate.calibration_file import shipped_calibration
from optimum_ipu_ext.placement.estimate.memory import Verdict
from optimum_ipu_ext.placement.generation_planning import frontier, ranked
from optimum_ipu_ext.placement.report.generation_plan import generation_plan_text

WHISPER = {"architectures": ["WhisperForConditionalGeneration"], "model_type": "whisper", "vocab_size": 96,
           "d_model": 64, "encoder_layers": 2, "decoder_layers": 3, "encoder_attention_heads": 4,
           "decoder_attention_heads": 4, "encoder_ffn_dim": 128, "decoder_ffn_dim": 128, "num_mel_bins": 8,
           "max_source_positions": 50, "max_target_positions": 64}
MT5 = {"architectures": ["MT5ForConditionalGeneration"], "model_type": "mt5", "vocab_size": 96, "d_model": 64,
       "d_kv": 8, "d_ff": 128, "num_layers": 2, "num_decoder_layers": 2, "num_heads": 4}
BERT = {"architectures": ["BertForMaskedLM"], "model_type": "bert", "hidden_size": 64, "num_hidden_layers": 2,
        "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 96}


@pytest.fixture
def whisper_plan():
    """Made in each test that takes it, so that mutation testing runs each test against the search's mutants."""
    return plan(WHISPER, 4, generate={"max_length": 8, "batch_size": 2})


def test_each_candidate_is_its_config_placed_for_generation(whisper_plan):
    for candidate in whisper_plan.candidates:
        again = candidate.ipu_config.placement(WHISPER, generate={"max_length": 8, "batch_size": 2})
        assert again.to_dict() == candidate.placement.to_dict()
        kwargs = candidate.ipu_config.inference_parallelize_kwargs
        assert "for_generation" not in kwargs  # upstream's pipelines pass it themselves
        assert kwargs["on_device_generation_steps"] == candidate.build["on_device_generation_steps"]


def test_the_search_covers_replicas_encoder_ipus_and_on_device_steps(whisper_plan):
    builds = {(candidate.build["ipus_per_replica"], candidate.build["replication_factor"],
               candidate.build["on_device_generation_steps"]) for candidate in whisper_plan.candidates}
    assert builds == {(ipus, 4 // ipus, steps) for ipus in (1, 2, 4) for steps in (0, 1, 2, 4)}
    for candidate in whisper_plan.candidates:
        build = candidate.build
        assert build["use_cond_encoder"] == (build["ipus_per_replica"] == 1)  # one IPU: the encoder on it
        # upstream refuses the encoder's buffer with replicas
        assert build["use_encoder_output_buffer"] == (build["replication_factor"] == 1)
        assert build["batch_size"] == 2
    splits = {tuple(candidate.build["layers_per_ipu"]) for candidate in whisper_plan.candidates
              if candidate.build["ipus_per_replica"] == 4}
    assert splits and all(sum(split) == 5 for split in splits)


def test_the_best_fits_and_makes_the_most_tokens_a_second(whisper_plan):
    best = whisper_plan.best
    assert best is whisper_plan.candidates[0] and best.fits
    assert best.job_tokens_per_second == max(candidate.job_tokens_per_second
                                             for candidate in whisper_plan.candidates if candidate.fits)


def test_the_frontier_holds_the_builds_no_other_beats_in_latency_and_throughput(whisper_plan):
    candidates = whisper_plan.candidates
    fitting = [candidate for candidate in candidates if candidate.fits]

    def beaten(candidate):
        return any(other.token_seconds <= candidate.token_seconds
                   and other.job_tokens_per_second >= candidate.job_tokens_per_second
                   and (other.token_seconds, other.job_tokens_per_second)
                   != (candidate.token_seconds, candidate.job_tokens_per_second) for other in fitting)

    on = [candidates[index] for index in whisper_plan.frontier]
    assert on and not any(beaten(candidate) for candidate in on)
    assert all(beaten(candidate) or any((other.token_seconds, other.job_tokens_per_second)
                                        == (candidate.token_seconds, candidate.job_tokens_per_second)
                                        for other in on) for candidate in fitting)


def test_a_latency_asked_for_puts_the_builds_that_meet_it_first():
    everything = plan(WHISPER, 4, generate={"max_length": 8})
    latencies = sorted({candidate.token_seconds for candidate in everything.candidates if candidate.fits})
    bound = latencies[0]
    found = plan(WHISPER, 4, generate={"max_length": 8}, max_latency=bound)
    assert found.best.token_seconds <= bound
    meeting = [candidate for candidate in found.candidates if candidate.fits and candidate.token_seconds <= bound]
    assert list(found.candidates[:len(meeting)]) == meeting
    assert plan(WHISPER, 4, generate={"max_length": 8}, max_latency=bound / 2).best is None


def test_a_model_without_a_kv_cache_generates_each_token_from_the_host():
    found = plan(MT5, 2, generate={"max_length": 6})
    assert {candidate.build["on_device_generation_steps"] for candidate in found.candidates} == {0}
    assert not found.candidates[0].placement.generation.kv_cache


def test_the_batches_searched_stop_at_the_first_none_fits():
    found = plan(dict(WHISPER, max_source_positions=1500, d_model=512, encoder_ffn_dim=2048, decoder_ffn_dim=2048),
                 2, generate={"max_length": 64})
    batches = sorted({candidate.build["batch_size"] for candidate in found.candidates})
    assert batches == [1 << power for power in range(len(batches))]
    largest = [candidate for candidate in found.candidates if candidate.build["batch_size"] == batches[-1]]
    assert not any(candidate.fits for candidate in largest)
    assert any(candidate.fits for candidate in found.candidates if candidate.build["batch_size"] == batches[-2])


@pytest.mark.parametrize("arguments, field", [
    ({"global_batch_size": 8}, "global_batch_size"),
    ({"micro_batch_size": 2}, "micro_batch_size"),
    ({"decoder_sequence_length": 8}, "decoder_sequence_length"),
    ({"max_latency": 0}, "max_latency"),
    ({"max_latency": True}, "max_latency"),
    ({"generate": {"beams": 2}}, "generate"),
    ({"trials": 2}, "trials"),
])
def test_what_a_generation_plan_refuses_names_the_argument(arguments, field):
    with pytest.raises(InvalidSettingError) as refused:
        plan(WHISPER, 4, **{"generate": True, **arguments})
    assert refused.value.field == field


def test_a_model_that_does_not_generate_is_refused_as_place_refuses_it():
    with pytest.raises(PlacementError, match="^Cannot place the model config: BertForMaskedLM does not generate in "):
        plan(BERT, 2, generate=True)


def test_a_calibration_times_the_builds_and_the_plan_names_it(whisper_plan):
    slower = shipped_calibration()._replace(operation_cycles=100_000, name="slow-host.json")
    found = plan(WHISPER, 4, generate={"max_length": 8, "batch_size": 2}, calibration=slower)
    best = found.best.placement.generation_time
    assert best.token_seconds > whisper_plan.best.token_seconds
    assert found.best.ipu_config.placement(WHISPER, generate={"max_length": 8, "batch_size": 2},
                                           calibration=slower).generation_time == best
    shipped_line = generation_plan_text(whisper_plan.to_dict()).splitlines()[-1]
    line = generation_plan_text(found.to_dict()).splitlines()[-1]
    assert shipped_line.startswith("Speeds are the model's: runs measured ")
    assert line.startswith("Speeds are the model's, with the calibration slow-host.json: runs measured ")
    assert "Outside the runs it is fitted on: no whisper model among them" in line
    placement = PlainIPUConfig(inference_ipus_per_replica=2, inference_layers_per_ipu=[2, 3]).placement(
        WHISPER, generate={"max_length": 8}, calibration=slower)
    assert placement.text().count("Timed with the calibration slow-host.json.") == 1


def test_the_plan_s_json_gives_what_it_was_asked_for_and_each_build_with_its_config():
    found = plan(WHISPER, 4, generate={"max_length": 8, "batch_size": 2, "num_beams": 2}, sequence_length=100,
                 max_latency=0.5, reserve=0.2)
    data = found.to_dict()
    assert {key: value for key, value in data.items() if key not in ("candidates", "frontier")} == {
        "model": "the model config", "architecture": "WhisperForConditionalGeneration", "build": "generation",
        "ipus": 4, "ipu": "gc200", "batch_size": 2, "num_beams": 2, "max_length": 8, "sequence_length": 100,
        "max_latency": 0.5, "ipu_memory_bytes": 940_572_672, "reserve_bytes": round(0.2 * 940_572_672)}
    assert data["frontier"] == list(found.frontier)
    for candidate, written in zip(found.candidates, data["candidates"]):
        time = candidate.placement.generation_time
        assert written == {**candidate.build, "largest_share": candidate.largest_share,
                           "verdict": candidate.verdict.value, "fits": candidate.fits,
                           "first_token_seconds": time.first_token_seconds, "token_seconds": time.token_seconds,
                           "job_tokens_per_second": time.job_tokens_per_second,
                           "ipu_config": candidate.ipu_config.to_dict(), "placement": candidate.placement.to_dict()}
    # a build the search found, before its caller made its config
    assert dataclasses.replace(found.best, ipu_config=None).to_dict()["ipu_config"] is None


def test_a_plan_prints_as_its_report(whisper_plan):
    assert str(whisper_plan) == generation_plan_text(whisper_plan.to_dict())
    assert str(whisper_plan).startswith("the model config: WhisperForConditionalGeneration generating on 4 GC200 IPUs")


class Found(NamedTuple):
    """What ranking and the frontier read of a candidate."""

    name: str
    verdict: Verdict
    token_seconds: float
    job_tokens_per_second: float
    largest_share: float = 0.5

    @property
    def fits(self) -> bool:
        return self.verdict == Verdict.FITS


def test_builds_rank_by_what_they_meet_then_by_throughput():
    builds = [Found("over", Verdict.DOES_NOT_FIT, 0.001, 9000.0, 1.2),
              Found("tight", Verdict.TIGHT, 0.001, 8000.0),
              Found("late", Verdict.FITS, 0.004, 7000.0),
              Found("later and faster", Verdict.FITS, 0.005, 7500.0),
              Found("in time", Verdict.FITS, 0.002, 1000.0),
              Found("further over", Verdict.DOES_NOT_FIT, 0.001, 9000.0, 1.5)]
    names = [found.name for found in ranked(builds, max_latency=0.003)]
    assert names == ["in time", "later and faster", "late", "tight", "over", "further over"]
    names = [found.name for found in ranked(builds, max_latency=None)]
    assert names == ["later and faster", "late", "in time", "tight", "over", "further over"]


def test_the_frontier_keeps_of_builds_as_fast_a_token_the_one_making_the_most_tokens():
    builds = [Found("slow token, most tokens", Verdict.FITS, 0.004, 4000.0),
              Found("fast token", Verdict.FITS, 0.001, 1000.0),
              Found("as fast a token, more tokens", Verdict.FITS, 0.001, 2000.0),
              Found("slower token, as many tokens", Verdict.FITS, 0.002, 2000.0),
              Found("tight", Verdict.TIGHT, 0.0005, 9000.0)]
    assert [builds[index].name for index in frontier(builds)] == ["as fast a token, more tokens",
                                                                  "slow token, most tokens"]


def test_a_base_config_keeps_its_other_kwargs_and_the_search_sets_the_build_s_own():
    base = PlainIPUConfig(inference_device_iterations=4, inference_ipus_per_replica=2, inference_layers_per_ipu=[1, 4],
                          inference_matmul_proportion=[0.1, 0.3], inference_parallelize_kwargs={
                              "for_generation": True, "use_cross_cache": True, "encoder_max_length": 50})
    found = plan(WHISPER, 4, base=base, generate={"max_length": 8, "batch_size": 2})
    assert {candidate.build["ipus_per_replica"] for candidate in found.candidates} == {1, 2, 4}
    for candidate in found.candidates:
        config = candidate.ipu_config
        assert config.inference_device_iterations == 1
        assert config.inference_matmul_proportion == candidate.build["matmul_proportion"]
        kwargs = config.inference_parallelize_kwargs
        assert "for_generation" not in kwargs  # upstream's pipelines pass it themselves
        assert (kwargs["use_cross_cache"], kwargs["encoder_max_length"]) == (True, 50)


def test_a_base_config_s_kwargs_upstream_would_ignore_are_refused_naming_the_model():
    base = PlainIPUConfig(inference_parallelize_kwargs={"max_lenght": 30})
    with pytest.raises(PlacementError) as refused:
        plan(WHISPER, 4, base=base, generate={"max_length": 8})
    assert str(refused.value).startswith("Cannot place the model config with `inference_parallelize_kwargs`: "
                                         "WhisperForConditionalGeneration's parallelize() reads `for_generation`")
    assert str(refused.value).endswith("and ignores any other: `max_lenght`.")


@pytest.mark.parametrize("asked", [{"fp32": True}, {"sequence_length": 24}])
def test_each_build_is_placed_with_the_weights_type_and_the_encoder_s_input_asked_for(asked):
    found = plan(MT5, 2, generate={"max_length": 8, "batch_size": 2}, **asked)
    default = plan(MT5, 2, generate={"max_length": 8, "batch_size": 2})
    for candidate in found.candidates:
        placed = candidate.ipu_config.placement(MT5, generate={"max_length": 8, "batch_size": 2}, **asked)
        assert candidate.placement.to_dict() == placed.to_dict()
    assert found.best.placement.to_dict() != default.best.placement.to_dict()


@pytest.mark.parametrize("ipus, splits", [(2, {(8,), (6, 2)}), (4, {(8,), (6, 2), (3, 3, 1, 1)})])
def test_an_encoder_with_more_layers_than_its_decoder_is_planned_from_a_split_upstream_takes(ipus, splits):
    """Spread over all the IPUs, 6 encoder layers and 2 decoder layers would end the encoder on none of IPUs 1, 2, 4:
    each build starts from the encoder's layers on the first half of its IPUs."""
    uneven = dict(WHISPER, encoder_layers=6, decoder_layers=2)
    found = plan(uneven, ipus, generate={"max_length": 8, "batch_size": 2})
    assert {tuple(candidate.build["layers_per_ipu"]) for candidate in found.candidates} == splits
    for candidate in found.candidates:
        placed = candidate.ipu_config.placement(uneven, generate={"max_length": 8, "batch_size": 2})
        assert placed.to_dict() == candidate.placement.to_dict()


def test_an_encoder_decoder_that_cannot_share_an_ipu_is_refused_on_one_ipu_saying_why():
    bart = {"architectures": ["BartForConditionalGeneration"], "model_type": "bart", "vocab_size": 96, "d_model": 64,
            "encoder_layers": 2, "decoder_layers": 2, "encoder_attention_heads": 4, "decoder_attention_heads": 4,
            "encoder_ffn_dim": 128, "decoder_ffn_dim": 128, "max_position_embeddings": 64}
    with pytest.raises(PlacementError) as refused:
        plan(bart, 1, generate={"max_length": 8})
    assert str(refused.value) == (
        "Cannot place the model config: BartForConditionalGeneration generates with its encoder and its decoder on "
        "IPUs of their own (its parallelize() takes no `use_cond_encoder`): plan on 2 IPUs or more.")
    assert {candidate.build["ipus_per_replica"] for candidate in plan(WHISPER, 1, generate=True).candidates} == {1}


def test_each_part_s_split_is_the_memory_balanced_one_that_makes_a_token_fastest():
    """With a vocabulary of 50,000 the decoder's last IPU holds the projection: the memory-balanced splits give it
    fewer layers than the even split. Of those (one for each number of IPUs the encoder takes), the one whose token
    is fastest is taken, where the one the encoder takes an IPU of comes first and needs no more memory."""
    wide = dict(WHISPER, encoder_layers=4, decoder_layers=4, vocab_size=50_000, d_model=512, encoder_ffn_dim=2048,
                decoder_ffn_dim=2048)
    found = plan(wide, 4, generate={"max_length": 8, "batch_size": 2})
    four = [candidate for candidate in found.candidates if candidate.build["ipus_per_replica"] == 4]
    assert {tuple(candidate.build["layers_per_ipu"]) for candidate in four} == {(2, 2, 1, 3)}
    for candidate in four:
        assert list(candidate.placement.layers_per_ipu) == [2, 2, 1, 3]
    placer = four[0].ipu_config.placer(wide, generate={"max_length": 8, "batch_size": 2})
    other, taken = (placer.place(split) for split in placer.memory_splits(4))
    assert (list(other.layers_per_ipu), list(taken.layers_per_ipu)) == ([4, 1, 1, 2], [2, 2, 1, 3])
    assert taken.fits and other.fits
    assert taken.generation_time.token_seconds < other.generation_time.token_seconds
    assert taken.largest_share == other.largest_share  # the projection's IPU is the largest in both
