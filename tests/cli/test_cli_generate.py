"""`ipu-config place --generate`: the generation build, as text and JSON, with what generate() is called with and
the keyword arguments of `parallelize()`; what it refuses; its balanced split written with the kwargs upstream's
pipelines generate with."""

import json

import pytest

from optimum_ipu_ext import PlainIPUConfig, plan
from optimum_ipu_ext.placement.report.generation_plan import generation_plan_text
from support.cli_helpers import run

WHISPER = {"architectures": ["WhisperForConditionalGeneration"], "model_type": "whisper", "vocab_size": 96,
           "d_model": 64, "encoder_layers": 2, "decoder_layers": 3, "encoder_attention_heads": 4,
           "decoder_attention_heads": 4, "encoder_ffn_dim": 128, "decoder_ffn_dim": 128, "num_mel_bins": 8,
           "max_source_positions": 50, "max_target_positions": 64}


@pytest.fixture
def whisper(tmp_path):
    folder = tmp_path / "whisper"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(WHISPER))
    return str(folder)


@pytest.fixture
def config(tmp_path):
    return PlainIPUConfig(inference_ipus_per_replica=2, inference_layers_per_ipu=[2, 3]).save_pretrained(
        tmp_path / "ipu")


def test_generate_places_the_generation_build(capsys, whisper, config):
    code, out, err = run(capsys, "place", config, "--model", whisper, "--generate", "--batch-size", "2",
                         "--num-beams", "3", "--max-length", "40", "--kwarg", "on_device_generation_steps=8")
    assert (code, err) == (0, "")
    expected = PlainIPUConfig.from_json_file(config)
    expected.inference_parallelize_kwargs = {"on_device_generation_steps": 8}
    placement = expected.placement(whisper, generate={"batch_size": 2, "num_beams": 3, "max_length": 40})
    assert out == placement.text() + "\n"
    lines = out.splitlines()
    assert lines[0] == (f"{whisper}: WhisperForConditionalGeneration, inference, layers_per_ipu [2, 3], batch 2 x 3 "
                        "beams, up to 40 tokens, encoder input 100")
    assert lines[2].endswith("KV caches, MiB  Encoder, GFLOP  A token, GFLOP")
    assert lines[6] == ("Generation: the encoder on IPU 0, the decoder on IPU 1, each running its IPUs in turn; KV "
                        "caches of 40 tokens for 6 sequences, 0.2 MiB; the encoder's output sent with every call; 8 "
                        "tokens a call, generated on the device.")


def test_generate_as_json(capsys, whisper, config):
    code, out, _ = run(capsys, "place", config, "--model", whisper, "--generate", "--max-length", "40", "--json")
    data = json.loads(out)
    assert code == 0
    assert data["generation"]["max_length"] == 40 and data["generation"]["executors"] == {"encoder": [0],
                                                                                          "decoder": [1]}
    assert list(data["ipus"][1]["generation"]) == ["kv_cache_bytes", "cross_cache_bytes", "encoder_output_bytes",
                                                   "state_bytes", "working_bytes", "encoder_flops", "token_flops",
                                                   "first_token_flops"]
    assert data["ipus"][1]["generation"]["kv_cache_bytes"] == 3 * (4 + 2 * 4 * 40 * 16 * 2)


@pytest.mark.parametrize("arguments, words", [
    (["--batch-size", "2"], "argument --batch-size: is for the generation build: give --generate too"),
    (["--kwarg", "max_length=4"], "argument --kwarg: is for the generation build: give --generate too"),
    (["--generate", "--micro-batch-size", "2"], "argument --micro-batch-size: not allowed with --generate"),
    (["--generate", "--decoder-sequence-length", "2"], "argument --decoder-sequence-length: not allowed with"),
    (["--generate", "--max-length", "x"], "argument --max-length: invalid int value: 'x'"),
])
def test_generation_options_are_usage_errors_where_they_mean_nothing(capsys, whisper, config, arguments, words):
    code, out, err = run(capsys, "place", config, "--model", whisper, *arguments)
    assert (code, out) == (2, "") and words in err


def test_a_refused_generation_build_is_one_line_naming_the_setting(capsys, whisper, config):
    code, out, err = run(capsys, "place", config, "--model", whisper, "--generate", "--kwarg", "max_lenght=4")
    assert (code, out) == (1, "")
    assert err == (f"ipu-config: error: {config}: Cannot place {whisper} with `inference_parallelize_kwargs`: "
                   "WhisperForConditionalGeneration's parallelize() reads `for_generation`, `use_cache`, "
                   "`use_cross_cache`, `batch_size`, `num_beams`, `max_length`, `encoder_max_length`, "
                   "`use_cond_encoder`, `use_encoder_output_buffer`, `on_device_generation_steps`, "
                   "`batch_serialization_factor`, `sequence_serialization_factor`, `use_group_quantized_linears`, and "
                   "ignores any other: `max_lenght`.\n")


def test_a_balanced_generation_build_is_written_with_the_kwargs_the_pipelines_generate_with(capsys, whisper, config,
                                                                                              tmp_path):
    code, _, err = run(capsys, "place", config, "--model", whisper, "--generate", "--max-length", "40", "--kwarg",
                       "use_encoder_output_buffer=true", "--balance", "--write", tmp_path / "out")
    assert code == 0 and "with inference_layers_per_ipu [" in err
    written = PlainIPUConfig.from_json_file(tmp_path / "out" / "ipu_config.json")
    assert written.inference_parallelize_kwargs == {"use_encoder_output_buffer": True, "use_cache": True,
                                                    "max_length": 40}
    # placed again as it was written: the same build
    code, out, _ = run(capsys, "place", tmp_path / "out", "--model", whisper, "--generate", "--json")
    assert code == 0 and json.loads(out)["generation"]["max_length"] == 40


# --- plan --generate ---------------------------------------------------------------------------------------------


def test_plan_generate_prints_the_builds_best_first_and_writes_the_best(capsys, whisper, tmp_path):
    code, out, err = run(capsys, "plan", "--model", whisper, "--ipus", "2", "--generate", "--max-length", "8",
                         "--write", tmp_path / "best", "--top", "3")
    found = plan(whisper, 2, generate={"max_length": 8})
    assert code == 0
    assert out == generation_plan_text(found.to_dict(), 3) + "\n"
    lines = out.splitlines()
    assert lines[0] == f"{whisper}: WhisperForConditionalGeneration generating on 2 GC200 IPUs, max_length 8"
    assert lines[3].startswith("Best: ")
    assert err == f"Wrote {tmp_path / 'best' / 'ipu_config.json'}: the best build, rank 1\n"
    written = PlainIPUConfig.from_json_file(tmp_path / "best" / "ipu_config.json")
    assert written.placement(whisper, generate={"max_length": 8}).to_dict() == found.best.placement.to_dict()


def test_plan_generate_as_json_and_pictures(capsys, whisper, tmp_path):
    code, out, err = run(capsys, "plan", "--model", whisper, "--ipus", "2", "--generate", "--max-length", "8",
                         "--json", "--svg", tmp_path / "plan.svg", "--html", tmp_path / "plan.html")
    data = json.loads(out)
    assert code == 0 and data["build"] == "generation" and data["frontier"]
    assert set(data["candidates"][0]) >= {"ipus_per_replica", "replication_factor", "layers_per_ipu", "batch_size",
                                          "on_device_generation_steps", "token_seconds", "job_tokens_per_second"}
    svg = (tmp_path / "plan.svg").read_text()
    assert 'data-kind="generation plan"' in svg and 'data-role="frontier"' in svg
    assert "<h2>Candidates</h2>" in (tmp_path / "plan.html").read_text()
    assert err.splitlines() == [f"Wrote {tmp_path / 'plan.svg'}", f"Wrote {tmp_path / 'plan.html'}"]


@pytest.mark.parametrize("arguments, words", [
    (["--max-latency", "0.01"], "argument --max-latency: is for the generation build: give --generate too"),
    (["--generate", "--global-batch-size", "8"], "argument --global-batch-size: not allowed with --generate"),
    (["--generate", "--trials", "2"], "argument --trials: not allowed with --generate"),
    (["--generate", "--max-latency", "0"], "argument --max-latency: expected seconds above 0"),
    (["--inference", "--num-beams", "2"], "argument --num-beams: is for the generation build: give --generate too"),
])
def test_plan_s_generation_options_are_usage_errors_where_they_mean_nothing(capsys, whisper, arguments, words):
    code, out, err = run(capsys, "plan", "--model", whisper, "--ipus", "2", *arguments)
    assert (code, out) == (2, "") and words in err


def test_plan_generate_exits_1_where_no_build_meets_the_latency(capsys, whisper, tmp_path):
    code, out, err = run(capsys, "plan", "--model", whisper, "--ipus", "2", "--generate", "--max-length", "8",
                         "--max-latency", "1e-12", "--write", tmp_path / "best")
    assert code == 1
    assert out.splitlines()[3].startswith("No build that fits makes a token in ")
    assert "no build fits and meets --max-latency" in err and not (tmp_path / "best").exists()
