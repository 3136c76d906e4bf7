"""The reports of a generation build: its bars stack the caches, the encoder's output, the state and the working
activations on the weights, in every format; its lines say where the executors run, what the caches hold, and where
it does not fit, by how much and with which batch or length it does."""

import shutil

import pytest

from optimum_ipu_ext import PlainIPUConfig
from optimum_ipu_ext.placement.estimate.calibration_file import SHIPPED_FILE
from optimum_ipu_ext.placement.estimate.memory import Verdict
from optimum_ipu_ext.placement.report.card import card_markdown
from optimum_ipu_ext.placement.report.generation_plan import candidate_label, plan_title
from optimum_ipu_ext.placement.report.page import placement_page
from optimum_ipu_ext.placement.report.placement_picture import placement_svg
from optimum_ipu_ext.placement.report.sentences import generation_lines, summary_lines
from optimum_ipu_ext.placement.report.view import (
    GENERATION_BAR_PARTS,
    GenerationCandidateView,
    generation_plan_view,
    placement_view,
)

WHISPER = {"architectures": ["WhisperForConditionalGeneration"], "model_type": "whisper", "vocab_size": 96,
           "d_model": 1024, "encoder_layers": 2, "decoder_layers": 8, "encoder_attention_heads": 16,
           "decoder_attention_heads": 16, "encoder_ffn_dim": 4096, "decoder_ffn_dim": 4096, "num_mel_bins": 8,
           "max_source_positions": 50, "max_target_positions": 448}
CONFIG = PlainIPUConfig(inference_ipus_per_replica=2, inference_layers_per_ipu=[2, 8],
                        inference_parallelize_kwargs={"use_cross_cache": True, "encoder_max_length": 50,
                                                      "on_device_generation_steps": 4})


def placed(**generate):
    return CONFIG.placement(WHISPER, generate=generate).to_dict()


def test_a_generation_build_s_bars_stack_what_generating_keeps_on_the_weights():
    data = placed(batch_size=2, max_length=100)
    view = placement_view(data)
    assert view.bar_parts == GENERATION_BAR_PARTS
    decoder = view.ipus[1]
    generation = data["ipus"][1]["generation"]
    assert decoder.parts == (decoder.weights_bytes, generation["kv_cache_bytes"], generation["cross_cache_bytes"],
                             generation["encoder_output_bytes"], generation["state_bytes"],
                             generation["working_bytes"])
    assert sum(decoder.parts) == decoder.on_chip_bytes
    svg = placement_svg(data)
    for letter in "WKCEGX":
        assert f'data-part="{letter}"' in svg
    assert "K KV caches" in svg and "A gradient accumulators" not in svg
    assert "K: KV caches" in placement_page(data) and "K: KV caches" in card_markdown(data, "p.svg")


def test_a_generation_build_says_where_it_runs_what_its_caches_hold_and_its_time():
    data = placed(batch_size=2, num_beams=2, max_length=100)
    lines = generation_lines(placement_view(data))
    assert lines[0] == (
        "Generation: the encoder on IPU 0, the decoder on IPU 1, each running its IPUs in turn; KV caches of 100 "
        "tokens for 4 sequences, 12.5 MiB; cross caches of 50 positions, 6.3 MiB; the encoder's output sent with "
        "every call; 4 tokens a call, generated on the device.")
    time = data["generation"]["time"]
    assert lines[1].startswith(f"Time on GC200 IPUs: {time['first_token_seconds']:.3g} s to the first token (the "
                               f"encoder {time['parts']['encoder']:.3g} s), {1000 * time['token_seconds']:,.2f} ms a "
                               f"token: {time['tokens_per_second']:,.1f} tokens a second for a replica's batch")
    assert len(lines) == 2


def test_a_build_that_does_not_fit_says_by_how_much_and_what_fits():
    data = placed(batch_size=64, max_length=448)
    lines = generation_lines(placement_view(data))
    fitting = data["generation"]["fitting"]
    over = data["ipus"][1]["on_chip_bytes"] - (data["ipu_memory_bytes"] - data["reserve_bytes"])
    assert lines[-1] == (f"IPU 1 needs {over / (1 << 20):,.1f} MiB more than its reserve leaves; it fits with "
                         f"batch_size {fitting['batch_size']} (max_length 448) or max_length "
                         f"{fitting['max_length']} (batch_size 64).")
    assert "K KV caches" in placement_svg(data)


def test_a_build_nothing_smaller_fits_says_so():
    config = PlainIPUConfig(inference_ipus_per_replica=2, inference_layers_per_ipu=[2, 100],
                            inference_parallelize_kwargs={"encoder_max_length": 50})
    data = config.placement(dict(WHISPER, decoder_layers=100), generate={"batch_size": 2, "max_length": 10}).to_dict()
    line = generation_lines(placement_view(data))[-1]
    assert line.startswith("IPU 1 needs ")
    assert line.endswith(" MiB more than its reserve leaves; no smaller batch_size or max_length fits.")


GPT2 = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": 96, "n_embd": 64, "n_layer": 2,
        "n_head": 4, "n_positions": 64}


COND = {"inference_ipus_per_replica": 1, "inference_layers_per_ipu": [10],
        "inference_parallelize_kwargs": {"use_cond_encoder": True, "encoder_max_length": 50}}


@pytest.mark.parametrize("model, settings, generate, parts", [
    (WHISPER, COND, {"max_length": 12},
     "the encoder and the decoder on IPU 0, the encoder at the first step; KV caches of 12 tokens for 1 sequence, "),
    (WHISPER, COND, {"max_length": 12, "num_beams": 2},
     "the encoder and the decoder on IPU 0, the encoder at the first step; KV caches of 12 tokens for 2 sequences, "),
    (GPT2, {"inference_ipus_per_replica": 2, "inference_layers_per_ipu": [1, 1]}, {"max_length": 12},
     "the decoder on IPUs 0-1, in turn; "),
])
def test_a_generation_build_says_where_its_executors_run_and_the_sequences_its_caches_hold(model, settings, generate,
                                                                                           parts):
    data = PlainIPUConfig(**settings).placement(model, generate=generate).to_dict()
    line = generation_lines(placement_view(data))[0]
    assert line.startswith(f"Generation: {parts}") and line.endswith("a token a call, from the host.")
    assert "the encoder's output" not in line


def test_a_job_of_replicas_says_how_many_and_the_calibration_that_timed_it(tmp_path):
    config = PlainIPUConfig(inference_ipus_per_replica=2, inference_layers_per_ipu=[2, 8],
                            inference_replication_factor=2, inference_parallelize_kwargs={"encoder_max_length": 50})
    data = config.placement(WHISPER, generate={"max_length": 12}).to_dict()
    time = generation_lines(placement_view(data))[1]
    assert f"{data['generation']['time']['job_tokens_per_second']:,.1f} for the job's 2 replicas (" in time
    assert "Timed with" not in time
    calibration = tmp_path / "mine.json"
    shutil.copyfile(SHIPPED_FILE, calibration)
    timed = config.placement(WHISPER, generate={"max_length": 12}, calibration=str(calibration)).to_dict()
    assert generation_lines(placement_view(timed))[1].endswith(f" Timed with the calibration {calibration}.")


@pytest.mark.parametrize("asked, title", [
    ({"batch_size": 2, "num_beams": 3, "max_length": 8, "max_latency": 0.004},
     "generating on 4 GC200 IPUs, batch 2, beams 3, max_length 8, at most 4.00 ms a token"),
    ({"batch_size": None, "num_beams": None, "max_length": 8, "max_latency": None}, "generating on 4 GC200 IPUs, "
                                                                                   "max_length 8"),
])
def test_a_generation_plan_s_title_says_what_it_was_asked_for(asked, title):
    data = {"model": "whisper", "architecture": "WhisperForConditionalGeneration", "ipus": 4, "ipu": "gc200",
            "candidates": [], "frontier": [], **asked}
    assert plan_title(generation_plan_view(data)) == f"whisper: WhisperForConditionalGeneration {title}"


def test_a_generation_build_s_summary_names_its_config():
    view = placement_view(placed(batch_size=2, max_length=100))
    assert summary_lines(view, "mine.json")[0] == "config mine.json, " + summary_lines(view)[0]


@pytest.mark.parametrize("ipus, steps, label", [
    (1, 0, "1 IPU x 2, batch 4, a token a call from the host"),
    (2, 16, "2 IPUs x 2, batch 4, 16 tokens a call on the device"),
])
def test_a_generation_build_is_labelled_by_its_ipus_replicas_batch_and_tokens_a_call(ipus, steps, label):
    build = {"ipus_per_replica": ipus, "replication_factor": 2, "batch_size": 4, "on_device_generation_steps": steps}
    candidate = GenerationCandidateView(build, 0.5, Verdict.FITS, True, 0.1, 0.002, 100.0, None)
    assert candidate_label(candidate) == label
