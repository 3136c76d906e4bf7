"""A generation build (`placement(..., generate=...)`): the kwargs it reads and their defaults, what upstream refuses,
the buffers and the encoder's output each IPU holds, the on-device state, and the batch or length that fits.
(Each step's FLOPs and each IPU's buffers against upstream's own: test_upstream_generation.py.)"""

import pytest

from optimum_ipu_ext import InvalidSettingError, PlacementError, PlainIPUConfig
from optimum_ipu_ext.placement.estimate.layout import layer_counts
from optimum_ipu_ext.placement.models import ARCHITECTURES
from optimum_ipu_ext.placement.models.generation import Decoding
from optimum_ipu_ext.placement.models.rules import InputShape, Layers, Position, expand, module_of
from support.corpus import FULL_SIZE
from support.placement_models import TINY_MODELS

WHISPER = {"architectures": ["WhisperForConditionalGeneration"], "model_type": "whisper", "vocab_size": 96,
           "d_model": 64, "encoder_layers": 2, "decoder_layers": 3, "encoder_attention_heads": 4,
           "decoder_attention_heads": 4, "encoder_ffn_dim": 128, "decoder_ffn_dim": 128, "num_mel_bins": 8,
           "max_source_positions": 50, "max_target_positions": 64}
T5 = {"architectures": ["T5ForConditionalGeneration"], "model_type": "t5", "vocab_size": 96, "d_model": 64, "d_kv": 8,
      "d_ff": 128, "num_layers": 2, "num_decoder_layers": 3, "num_heads": 4, "max_length": 12, "num_beams": 2}
MT5 = dict(T5, architectures=["MT5ForConditionalGeneration"], model_type="mt5")
BART = {"architectures": ["BartForConditionalGeneration"], "model_type": "bart", "vocab_size": 96, "d_model": 64,
        "encoder_layers": 2, "decoder_layers": 3, "encoder_attention_heads": 4, "decoder_attention_heads": 4,
        "encoder_ffn_dim": 128, "decoder_ffn_dim": 128, "max_position_embeddings": 64}
BERT = {"architectures": ["BertForMaskedLM"], "model_type": "bert", "hidden_size": 64, "num_hidden_layers": 2,
        "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 96}
TWO = {"inference_ipus_per_replica": 2, "inference_layers_per_ipu": [-1, -1]}
THREE = {"inference_ipus_per_replica": 3, "inference_layers_per_ipu": [2, 1, 2]}


def placed(model, settings=TWO, kwargs=None, **generate):
    config = PlainIPUConfig(**settings, inference_parallelize_kwargs=kwargs or {})
    return config.placement(model, generate=generate or True)


def cache_bytes(rows, heads, length, head_size, element=2, beams=1):
    """One attention module's buffers: its step, its keys and values, its beam index."""
    return 4 + 2 * rows * heads * length * head_size * element + (4 * rows if beams > 1 else 0)


# --- the kwargs read, and their defaults ----------------------------------------------------------------------------


def test_the_pipelines_add_for_generation_and_the_kv_cache_where_the_model_has_one():
    generation = placed(WHISPER).generation
    assert generation.kwargs == {"for_generation": True, "use_cache": True}
    assert generation.kv_cache and (generation.batch_size, generation.num_beams) == (1, 1)
    # the caches' length, as upstream fills it: the generation config's, config.json's max_length, else 20
    assert generation.max_length == 20
    assert placed(dict(WHISPER, max_length=44, num_beams=3)).generation[1:3] == (3, 44)


def test_what_generate_is_called_with_sizes_the_caches_and_is_written_into_the_kwargs():
    generation = placed(WHISPER, batch_size=4, num_beams=2, max_length=30).generation
    assert generation.kwargs == {"for_generation": True, "use_cache": True, "batch_size": 4, "num_beams": 2,
                                 "max_length": 30}
    assert (generation.rows, generation.max_length) == (8, 30)


def test_a_model_without_a_kv_cache_generates_without_one_and_says_what_upstream_does():
    generation = placed(MT5, max_length=16).generation
    assert generation.kwargs == {"for_generation": True}
    assert not generation.kv_cache and (generation.max_length, generation.num_beams) == (16, 2)
    assert generation.notes == ("MT5ForConditionalGeneration does not support a KV cache: generate() falls back to "
                                "use_cache=False, with a warning, and each step recomputes the whole sequence, padded "
                                "to max_length",)
    no_cache = placed(T5, kwargs={"use_cache": False}).generation
    # no cache is made for what generate() is called with
    assert placed(T5, kwargs={"use_cache": False}, max_length=12, batch_size=2).generation.kwargs == {
        "use_cache": False, "for_generation": True}
    assert not no_cache.kv_cache and no_cache.notes == (
        "no KV cache (`use_cache` is not true): generate() must be called with use_cache=False, and each step "
        "recomputes the whole sequence, padded to max_length",)


def test_the_encoder_s_input_is_whisper_s_frames_and_text_s_tokens():
    assert placed(WHISPER).generation[3:5] == (100, 50)
    assert placed(T5).generation[3:5] == (128, 128)
    # the cross cache copies the encoder's output whole: the text is as long, unless given
    assert placed(T5, {**TWO}, {"use_cross_cache": True, "encoder_max_length": 40}).generation[3:5] == (40, 40)


def test_a_config_whose_inference_kwargs_generate_is_placed_as_they_are():
    config = PlainIPUConfig(**TWO, inference_parallelize_kwargs={"for_generation": True})
    placement = config.placement(T5, for_inference=True, micro_batch_size=3, sequence_length=16,
                                 decoder_sequence_length=10)
    assert placement.generation.kwargs == {"for_generation": True}
    assert not placement.generation.kv_cache
    assert placement.generation[:5] == (3, 2, 10, 16, 16)
    assert placement.shape == InputShape(3, 16, 10)
    # in training, the flag splits the executors and nothing else, and the inference kwargs' are not read
    training = PlainIPUConfig(ipus_per_replica=2, layers_per_ipu=[-1, -1], parallelize_kwargs={"for_generation": True})
    assert training.placement(T5).generation is None
    both = PlainIPUConfig(ipus_per_replica=2, layers_per_ipu=[-1, -1], **TWO,
                          inference_parallelize_kwargs={"for_generation": True})
    assert both.placement(T5).generation is None
    # nor is an inference build one unless asked or its kwargs say so
    assert PlainIPUConfig(**TWO).placement(WHISPER, for_inference=True).generation is None


# --- what upstream refuses ------------------------------------------------------------------------------------------

KWARGS = "inference_parallelize_kwargs"


@pytest.mark.parametrize("model, settings, kwargs, generate, setting, words", [
    (WHISPER, TWO, {"for_generation": True}, {}, KWARGS, "it gives `for_generation`, which upstream's pipelines"
     " and IPUSeq2SeqTrainer pass themselves to generate (a second value is a TypeError): leave it out"),
    (WHISPER, TWO, {"use_cache": "yes"}, {}, KWARGS, '`use_cache` is "yes": true or false'),
    (WHISPER, TWO, {"max_length": 0}, {}, KWARGS, "`max_length` is 0: a positive whole number"),
    (WHISPER, TWO, {"on_device_generation_steps": -1}, {}, KWARGS,
     "`on_device_generation_steps` is -1: a whole number from 0"),
    (WHISPER, TWO, {"max_length": 65}, {}, KWARGS,
     "`max_length` is 65, and the decoder's learned positions (max_target_positions) index 64 tokens"),
    (WHISPER, TWO, {"use_cond_encoder": True, "use_encoder_output_buffer": True}, {}, KWARGS,
     "`use_cond_encoder` and `use_encoder_output_buffer` are both true: upstream takes one of them"),
    (WHISPER, TWO, {"use_cond_encoder": True}, {}, "inference_ipus_per_replica",
     "it is 2, and `use_cond_encoder` runs the encoder and the decoder on one IPU: 1"),
    (WHISPER, TWO, {"batch_serialization_factor": 2, "sequence_serialization_factor": 2}, {}, KWARGS,
     "`batch_serialization_factor` and `sequence_serialization_factor` are both above 1: upstream serializes the "
     "encoder's attention along one of them"),
    (WHISPER, TWO, {"use_cache": False, "on_device_generation_steps": 4}, {}, KWARGS,
     "`on_device_generation_steps` is 4, and on-device generation needs a KV cache (`use_cache` true, on a model "
     "that supports one)"),
    (WHISPER, dict(TWO, inference_device_iterations=2), {}, {}, "inference_device_iterations",
     "it is 2: the decoder of a generation build runs a token a device iteration, 1"),
    (WHISPER, TWO, {"max_length": True}, {}, KWARGS, "`max_length` is true: a positive whole number"),
    (WHISPER, TWO, {"batch_serialization_factor": 0}, {}, KWARGS,
     "`batch_serialization_factor` is 0: a positive whole number"),
    (WHISPER, TWO, {"use_cross_cache": True, "encoder_max_length": 0}, {}, KWARGS,
     "`encoder_max_length` is 0: a positive whole number"),
    (WHISPER, TWO, {"use_cross_cache": True, "encoder_max_length": 1}, {}, KWARGS,
     "`encoder_max_length` is 1, and the encoder's output has 50 positions: the cross cache copies it whole, so "
     "the two must be the same"),
    (dict(WHISPER, max_length="long"), TWO, {}, {}, None,
     'its config.json gives `max_length` "long", and the placement needs a whole number'),
    (WHISPER, dict(TWO, inference_device_iterations=2), {"on_device_generation_steps": 4}, {},
     "inference_device_iterations", "it is 2: the decoder of a generation build runs a token a device iteration, "
     "1 or 4 (`on_device_generation_steps`)"),
    (WHISPER, dict(TWO, inference_replication_factor=2), {"use_encoder_output_buffer": True}, {},
     "inference_replication_factor", "it is 2, and upstream refuses replication with `use_encoder_output_buffer`"),
    (WHISPER, TWO, {"use_cross_cache": True, "encoder_max_length": 64}, {}, KWARGS,
     "`encoder_max_length` is 64, and the encoder's output has 50 positions: the cross cache copies it whole, so "
     "the two must be the same"),
    (WHISPER, TWO, {"max_length": 30}, {"max_length": 40}, KWARGS,
     "the KV caches are made for max_length 30, and generate() is called with max_length=40: upstream refuses "
     "it"),
    (WHISPER, TWO, {"max_lenght": 30}, {}, KWARGS,
     "WhisperForConditionalGeneration's parallelize() reads `for_generation`, `use_cache`, `use_cross_cache`, "
     "`batch_size`, `num_beams`, `max_length`, `encoder_max_length`, `use_cond_encoder`, `use_encoder_output_buffer`, "
     "`on_device_generation_steps`, `batch_serialization_factor`, `sequence_serialization_factor`, "
     "`use_group_quantized_linears`, and ignores any other: `max_lenght`"),
    (BART, TWO, {"use_cross_cache": True}, {}, KWARGS,
     "BartForConditionalGeneration's parallelize() reads `for_generation`, `use_cache`, `batch_size`, `num_beams`, "
     "`max_length`, `use_encoder_output_buffer`, `on_device_generation_steps`, and ignores any other: "
     "`use_cross_cache`"),
    (BERT, {}, {}, {}, None, "BertForMaskedLM does not generate in optimum-graphcore 0.7.1: "
     "BartForConditionalGeneration, GPT2LMHeadModel, MT5ForConditionalGeneration, T5ForConditionalGeneration, "
     "WhisperForConditionalGeneration do"),
])
def test_what_upstream_refuses_is_refused_naming_the_setting(model, settings, kwargs, generate, setting, words):
    with pytest.raises(PlacementError) as refused:
        placed(model, settings, kwargs, **generate)
    assert refused.value.setting == setting
    named = "Cannot place the model config" + (f" with `{setting}`" if setting else "") + ": "
    assert str(refused.value) == f"{named}{words}."


@pytest.mark.parametrize("generate, field", [("yes", "generate"), ({"beams": 2}, "generate"),
                                             ({"max_length": 0}, "max_length")])
def test_what_generate_is_called_with_is_checked(generate, field):
    with pytest.raises(InvalidSettingError) as refused:
        PlainIPUConfig(**TWO).placement(WHISPER, generate=generate)
    assert refused.value.field == field


@pytest.mark.parametrize("given, field", [({"micro_batch_size": 2}, "micro_batch_size"),
                                          ({"decoder_sequence_length": 8}, "decoder_sequence_length")])
def test_a_micro_batch_is_not_a_generation_build_s_batch(given, field):
    with pytest.raises(PlacementError) as refused:
        PlainIPUConfig(**TWO).placement(WHISPER, generate=True, **given)
    assert refused.value.setting == field


# --- each IPU's part ------------------------------------------------------------------------------------------------


def test_each_decoder_layer_holds_its_kv_cache_on_its_ipu():
    placement = placed(WHISPER, THREE, batch_size=2, num_beams=3, max_length=20)
    one = cache_bytes(6, 4, 20, 16, beams=3)
    assert [ipu.generation.kv_cache_bytes for ipu in placement.ipus] == [0, one, 2 * one]
    assert [ipu.generation.cross_cache_bytes for ipu in placement.ipus] == [0, 0, 0]
    fp32 = PlainIPUConfig(**THREE).placement(WHISPER, generate={"max_length": 20}, fp32=True)
    assert fp32.ipus[2].generation.kv_cache_bytes == 2 * cache_bytes(1, 4, 20, 16, element=4)


def test_a_cross_cache_holds_the_encoder_s_keys_and_values_on_each_decoder_layer():
    placement = placed(WHISPER, THREE, {"use_cross_cache": True, "encoder_max_length": 50}, max_length=20)
    assert [ipu.generation.cross_cache_bytes for ipu in placement.ipus] == [0, cache_bytes(1, 4, 50, 16),
                                                                          2 * cache_bytes(1, 4, 50, 16)]


@pytest.mark.parametrize("model, kwargs, per_row", [
    (WHISPER, {}, 50 * 64 * 2),  # fp16 hidden states, no mask
    (BART, {}, 128 * (64 * 2 + 4)),  # and the mask, an int32 input
    (BART, {"use_encoder_output_buffer": True}, 128 * (64 * 2 + 2)),  # the mask in fp16, in the buffer
])
def test_each_decoder_ipu_reads_the_encoder_s_output_of_every_row(model, kwargs, per_row):
    placement = placed(model, THREE, kwargs, batch_size=2, num_beams=2, max_length=20)
    assert [ipu.generation.encoder_output_bytes for ipu in placement.ipus] == [0, 4 * per_row, 4 * per_row]


def test_the_encoder_on_the_decoder_s_ipu_fills_a_buffer_expanded_to_the_beams():
    one = {"inference_ipus_per_replica": 1, "inference_layers_per_ipu": [-1]}
    placement = placed(WHISPER, one, {"use_cond_encoder": True}, batch_size=2, num_beams=3, max_length=20)
    assert placement.generation.cond_encoder and len(placement.ipus) == 1
    assert placement.ipus[0].generation.encoder_output_bytes == (2 + 6) * 50 * 64 * 2
    assert placement.ipus[0].generation.encoder.flops and placement.ipus[0].generation.token.flops


@pytest.mark.parametrize("beams, state", [(1, 3 * 20 * 4), (2, (2 * 6 * 20 + 4 * 6) * 4)])
def test_on_device_generation_keeps_its_state_on_the_head_s_ipu(beams, state):
    placement = placed(WHISPER, THREE, {"on_device_generation_steps": 4}, batch_size=3, num_beams=beams,
                       max_length=20)
    assert [ipu.generation.state_bytes for ipu in placement.ipus] == [0, state, 0]
    host = placed(WHISPER, THREE, batch_size=3, num_beams=beams, max_length=20)
    assert [ipu.generation.state_bytes for ipu in host.ipus] == [0, 0, 0]


def test_the_on_chip_figure_adds_what_generating_keeps_to_the_weights():
    placement = placed(WHISPER, THREE, max_length=20)
    for ipu in placement.ipus:
        part = ipu.generation
        assert ipu.on_chip_bytes == ipu.weights_bytes + sum(part[:5])
        assert part.working_bytes > 0


def test_a_kv_cache_step_computes_less_than_recomputing_the_whole_sequence():
    cached = placed(WHISPER, THREE, max_length=40).ipus[2].generation
    recomputed = placed(WHISPER, THREE, {"use_cache": False}, max_length=40).ipus[2].generation
    assert 0 < cached.token.flops < recomputed.token.flops
    assert cached.kv_cache_bytes and not recomputed.kv_cache_bytes


# --- what fits ------------------------------------------------------------------------------------------------------

LARGE = dict(WHISPER, d_model=1024, decoder_layers=8, decoder_attention_heads=16, encoder_attention_heads=16,
             encoder_ffn_dim=4096, decoder_ffn_dim=4096, max_target_positions=448)


CUT = {"inference_ipus_per_replica": 2, "inference_layers_per_ipu": [2, 8]}


def test_a_build_that_does_not_fit_says_the_largest_batch_and_length_that_do():
    placement = placed(LARGE, CUT, batch_size=64, max_length=448)
    assert not placement.fits
    batch, length = placement.fitting["batch_size"], placement.fitting["max_length"]
    assert 1 <= batch < 64 and 1 <= length < 448
    assert placed(LARGE, CUT, batch_size=batch, max_length=448).fits
    assert not placed(LARGE, CUT, batch_size=batch + 1, max_length=448).fits
    assert placed(LARGE, CUT, batch_size=64, max_length=length).fits
    assert not placed(LARGE, CUT, batch_size=64, max_length=length + 1).fits
    assert placed(LARGE, CUT, batch_size=1, max_length=448).fitting is None


def test_a_build_nothing_smaller_fits_says_so():
    placement = placed(dict(LARGE, decoder_layers=100), {"inference_ipus_per_replica": 2,
                                                         "inference_layers_per_ipu": [2, 100]},
                       batch_size=2, max_length=10)
    assert placement.fitting == {"batch_size": None, "max_length": None}


# --- its time -------------------------------------------------------------------------------------------------------


def _timed(placement):
    """The placement's time model, and its IPUs' parts."""
    return placement.generation_time, [ipu.generation for ipu in placement.ipus]


def test_each_pass_runs_its_executor_s_ipus_in_turn_on_the_time_model(tmp_path):
    config = PlainIPUConfig(**THREE)
    placer = config.placer(WHISPER, generate={"max_length": 20, "batch_size": 2})
    placement = placer.place()
    time, parts = _timed(placement)
    model = placer.configured.cost_model.time
    assert time.step_seconds == sum(model.cycle_seconds(part.token.work) for part in parts)
    assert time.first_step_seconds == sum(model.cycle_seconds(part.first_token.work) for part in parts)
    assert time.encoder_seconds > sum(model.cycle_seconds(part.encoder.work) for part in parts)  # and its call
    assert parts[0].token.flops == 0 and parts[1].encoder.flops == parts[2].encoder.flops == 0
    # the decoder's second IPU receives its first layer's input from the first: the hidden state and the encoder's
    # output; the first takes its ids from the host, and the last hidden state back for the head
    assert parts[2].token.exchange_bytes == 2 * 1 * 64 * 2 + 2 * 50 * 64 * 2
    assert parts[1].token.exchange_bytes == 2 * 1 * 64 * 2
    assert time.first_token_seconds == time.encoder_seconds + time.first_step_seconds + time.call_seconds
    assert time.token_seconds == time.step_seconds + time.call_seconds
    assert time.job_tokens_per_second == 2 / time.token_seconds


def test_tokens_generated_on_the_device_share_a_call():
    host = placed(WHISPER, THREE, max_length=20).generation_time
    device = placed(WHISPER, THREE, {"on_device_generation_steps": 8}, max_length=20).generation_time
    assert device.tokens_per_call == 8 and host.tokens_per_call == 1
    assert device.token_seconds == device.step_seconds + device.call_seconds / 8
    assert device.token_seconds < host.token_seconds
    # the first token comes back with the call's last
    assert device.first_token_seconds == (device.encoder_seconds + device.first_step_seconds
                                          + 7 * device.step_seconds + device.call_seconds)


def test_an_encoder_output_kept_on_the_ipus_is_not_sent_with_every_call():
    sent = placed(BART, THREE, max_length=20, batch_size=4).generation_time
    kept = placed(BART, THREE, {"use_encoder_output_buffer": True}, max_length=20, batch_size=4).generation_time
    assert kept.call_seconds < sent.call_seconds
    assert kept.step_seconds == sent.step_seconds


def test_a_cross_cache_saves_the_projections_of_each_step_but_the_first():
    cached = placed(WHISPER, THREE, {"use_cross_cache": True, "encoder_max_length": 50}, max_length=20)
    projected = placed(WHISPER, THREE, max_length=20)
    assert cached.generation_time.step_seconds < projected.generation_time.step_seconds
    assert cached.generation_time.first_step_seconds == pytest.approx(projected.generation_time.first_step_seconds,
                                                                      rel=0.05)


def test_replicas_multiply_the_job_s_tokens_a_second():
    one = placed(WHISPER, THREE, max_length=20).generation_time
    four = placed(WHISPER, dict(THREE, inference_replication_factor=4), max_length=20).generation_time
    assert four.replicas == 4 and four.job_tokens_per_second == pytest.approx(4 * one.job_tokens_per_second,
                                                                              rel=0.02)


def test_the_time_says_what_the_measured_runs_did_not_cover():
    time = placed(WHISPER, THREE, max_length=20).generation_time
    assert "no whisper model among them" in time.outside
    assert any(note.startswith("1 row a matrix product,") for note in time.outside)
    low, high = time.job_tokens_per_second_range
    assert low < time.job_tokens_per_second < high


def test_a_token_s_products_of_a_row_a_sequence_run_far_below_the_encoder_s_rate():
    # whisper-small with its cross cache: a decoder step's products take one row a sequence, the encoder's 1,500;
    # each product runs at the speed its shape reaches on the IPU (hardware.matmul_cycles), so a token costs about the
    # same for 1 sequence or 8, and a FLOP of it much more than one of the encoder
    settings = {"inference_ipus_per_replica": 2, "inference_layers_per_ipu": [-1, -1]}
    kwargs = {"use_cross_cache": True, "encoder_max_length": 1500}

    def rates(batch_size):
        placement = placed(str(FULL_SIZE / "whisper-small"), settings, kwargs, max_length=448, batch_size=batch_size)
        time, parts = _timed(placement)
        return (time, sum(part.encoder.flops for part in parts) / time.encoder_seconds,
                sum(part.token.flops for part in parts) / time.step_seconds)

    one, encoder_rate, token_rate = rates(1)
    eight, _, eight_rate = rates(8)
    assert token_rate < encoder_rate / 50
    assert eight.step_seconds < 1.1 * one.step_seconds and eight_rate > 7 * token_rate
    # generated on the host, each token's logits cross back: 8 sequences' take 8 times as long
    assert eight.call_seconds > 2 * one.call_seconds


def test_the_time_s_json_gives_each_figure_under_its_name():
    time = placed(WHISPER, THREE, {"on_device_generation_steps": 4}, max_length=20).generation_time
    assert time.to_dict() == {
        "ipu": "gc200", "first_token_seconds": time.first_token_seconds, "token_seconds": time.token_seconds,
        "tokens_per_second": time.tokens_per_second, "job_tokens_per_second": time.job_tokens_per_second,
        "job_tokens_per_second_range": list(time.job_tokens_per_second_range),
        "sequence_seconds": time.sequence_seconds,
        "parts": {"encoder": time.encoder_seconds, "first_step": time.first_step_seconds, "step": time.step_seconds,
                  "call": time.call_seconds},
        "tokens_per_call": 4, "replicas": 1, "time_model": time.calibration.report(time.outside)}


@pytest.mark.parametrize("tied", [True, False])
@pytest.mark.parametrize("name", [name for name, row in ARCHITECTURES.items() if row.generates is not None])
def test_a_decoder_step_of_the_generation_build_declares_the_parameters_of_the_model_s_step(name, tied):
    """A step the generation build runs on a token a row (its KV cache, its cross cache) is the model's module: the
    same parameters, under the names torch gives them (a head of its own where the word embeddings are not tied)."""
    architecture = ARCHITECTURES[name]
    config = architecture.config(dict(TINY_MODELS[name].config, tie_word_embeddings=tied))
    sizes = architecture.sizes(config, InputShape(2, 8, 1))
    overrides = architecture.generates.steps
    compared = 0
    counts = layer_counts(architecture, config)
    for decoding in (Decoding(sizes, None), Decoding(sizes, 16), Decoding(sizes, 16, cross_cached=True),
                     Decoding(sizes, 16, cross_cached=True, first=True)):
        for step, group, index in expand(architecture, config):
            pattern = next((each.path for each in architecture.steps
                            if isinstance(each, Layers) and each.path.format(i=index) == step.path), step.path)
            if pattern not in overrides:
                continue
            at = None if group is None else Position(index, counts[group] - 1)
            generating = overrides[pattern](decoding, *([at] if at else []))
            assert generating.parameters(step.path) == module_of(step)(sizes).parameters(step.path), step.path
            compared += 1
    assert compared >= 4


def test_each_ipu_receives_from_the_one_before_what_its_first_step_of_each_pass_takes():
    """The encoder over IPUs 0 and 1, the decoder over 2 and 3 (with a cross cache): an IPU whose first step of a
    pass follows a step on the IPU before receives that step's output, in the encoder's pass, in the first decoder
    step (which fills the cross cache) and in every later one; one whose first step is its executor's first takes
    it from the host."""
    four = {"inference_ipus_per_replica": 4, "inference_layers_per_ipu": [1, 1, 1, 2]}
    placement = placed(WHISPER, four, {"use_cross_cache": True, "encoder_max_length": 50}, max_length=20,
                       batch_size=2)
    parts = [ipu.generation for ipu in placement.ipus]
    hidden, encoder_output = 2 * 1 * 64 * 2, 2 * 50 * 64 * 2  # a token's state of each row; the encoder's output
    assert [part.encoder.exchange_bytes for part in parts] == [0, encoder_output, 0, 0]
    assert [part.token.exchange_bytes for part in parts] == [0, 0, hidden, hidden + encoder_output]
    assert [part.first_token.exchange_bytes for part in parts] == [0, 0, hidden, hidden + encoder_output]


def test_an_ipu_s_working_activations_are_its_largest_step_s_in_any_pass():
    """The first decoder step also projects the encoder's output into the cross caches: IPU 3's decoder layers
    keep the most then."""
    four = {"inference_ipus_per_replica": 4, "inference_layers_per_ipu": [1, 1, 1, 2]}
    placer = PlainIPUConfig(**dict(four, inference_parallelize_kwargs={"use_cross_cache": True,
                                                                       "encoder_max_length": 50})).placer(
        WHISPER, generate={"max_length": 20, "batch_size": 2})
    generation = placer.configured.generation
    working = [ipu.generation.working_bytes for ipu in placer.place().ipus]
    first, later = (step["model.decoder.layers.1"].activation_bytes for step in (generation.first, generation.token))
    assert first > later
    # add_to_kv_cache writes a key and a value each into a tensor the size of its cache
    assert later > cache_bytes(2, 4, 20, 16) - 4
    assert working[3] == first == generation.first["model.decoder.layers.2"].activation_bytes
    assert working[0] == working[1] == generation.encoder["model.encoder.layers.0"].activation_bytes


def test_an_encoder_run_in_the_decoder_s_call_costs_no_call_of_its_own():
    placement = placed(WHISPER, {"inference_ipus_per_replica": 1, "inference_layers_per_ipu": [5]},
                       {"use_cond_encoder": True}, max_length=20)
    time = placement.generation_time
    model = PlainIPUConfig(inference_ipus_per_replica=1, inference_layers_per_ipu=[5], inference_parallelize_kwargs={
        "use_cond_encoder": True}).placer(WHISPER, generate={"max_length": 20}).configured.cost_model.time
    assert time.encoder_seconds == model.cycle_seconds(placement.ipus[0].generation.encoder.work)


ONE = {"inference_ipus_per_replica": 1, "inference_layers_per_ipu": [5]}


@pytest.mark.parametrize("model, settings, kwargs, generate, encoder_call, step_call", [
    # Whisper's features (batch 2 x 8 bins x 100 frames, fp16) and its output back (2 x 50 positions x 64, fp16);
    # a step sends each row's token (int32) and the encoder's output, and receives each row's logits (96, fp16)
    (WHISPER, THREE, {}, {"batch_size": 2}, 2 * 8 * 100 * 2 + 2 * 50 * 64 * 2,
     2 * 4 + 2 * 50 * 64 * 2 + 2 * 96 * 2),
    # on the device, the encoder's output in a buffer: a step sends the tokens and receives each sequence's token
    (WHISPER, THREE, {"on_device_generation_steps": 4, "use_encoder_output_buffer": True}, {"batch_size": 2},
     2 * 8 * 100 * 2 + 2 * 50 * 64 * 2, 2 * 4 + 2 * 4),
    # beams: 4 rows, and each sequence's tokens so far back
    (WHISPER, THREE, {"on_device_generation_steps": 4}, {"batch_size": 2, "num_beams": 2},
     2 * 8 * 100 * 2 + 2 * 50 * 64 * 2, 4 * 4 + 4 * 50 * 64 * 2 + 2 * 20 * 4),
    # the encoder in the decoder's call: no call of its own, its features sent with each step
    (WHISPER, ONE, {"use_cond_encoder": True}, {"batch_size": 2}, 0, 2 * 4 + 2 * 8 * 100 * 2 + 2 * 96 * 2),
    # BART's ids and their mask (int32, 128 tokens) and the output; the mask sent beside the output with each step
    (BART, THREE, {}, {"batch_size": 2}, 2 * 128 * 4 * 2 + 2 * 128 * 64 * 2,
     2 * 4 + 2 * 128 * (64 * 2 + 4) + 2 * 96 * 2),
    # MT5 has no KV cache: each step sends the whole sequence of max_length 12 (2 beams from its config)
    (MT5, THREE, {}, {"batch_size": 2, "max_length": 12}, 2 * 128 * 4 * 2 + 2 * 128 * 64 * 2,
     4 * 12 * 4 + 4 * 128 * (64 * 2 + 4) + 4 * 96 * 2),
])
def test_what_each_call_sends_and_receives(model, settings, kwargs, generate, encoder_call, step_call):
    config = PlainIPUConfig(**dict(settings, inference_parallelize_kwargs=kwargs))
    generation = config.placer(model, generate=dict(generate, max_length=generate.get("max_length", 20))
                               ).configured.generation
    assert (generation.encoder_call_bytes(), generation.step_call_bytes()) == (encoder_call, step_call)


@pytest.mark.parametrize("settings, kwargs", [(THREE, {}), (THREE, {"on_device_generation_steps": 4}),
                                              (ONE, {"use_cond_encoder": True})])
def test_a_call_costs_poptorch_s_call_and_its_bytes_over_the_host_link_its_ipus_share(settings, kwargs):
    """An IPU-M2000's four IPUs share its host link: an executor on fewer has that share of it."""
    from optimum_ipu_ext.placement.hardware import HOST_LINK_BYTES_PER_SECOND, POPTORCH_CALL_SECONDS

    config = PlainIPUConfig(**dict(settings, inference_parallelize_kwargs=kwargs))
    placer = config.placer(WHISPER, generate={"max_length": 20, "batch_size": 2})
    placement, generation = placer.place(), placer.configured.generation
    model = placer.configured.cost_model.time
    parts = [ipu.generation for ipu in placement.ipus]
    encoder_ipus = [part.encoder for part in parts if part.encoder.operations.count]
    decoder_ipus = [part.token for part in parts if part.token.operations.count]
    assert (len(encoder_ipus), len(decoder_ipus)) == ((1, 2) if settings is THREE else (1, 1))
    time, steps = placement.generation_time, max(1, kwargs.get("on_device_generation_steps", 0))
    link = HOST_LINK_BYTES_PER_SECOND * len(decoder_ipus) / 4
    assert time.call_seconds == pytest.approx(POPTORCH_CALL_SECONDS + steps * generation.step_call_bytes() / link,
                                              rel=1e-12)
    encoder = sum(model.cycle_seconds(work.work) for work in encoder_ipus)
    if generation.encoder_call_bytes():
        encoder += POPTORCH_CALL_SECONDS + generation.encoder_call_bytes() / (HOST_LINK_BYTES_PER_SECOND / 4)
    assert time.encoder_seconds == pytest.approx(encoder, rel=1e-12)


def test_a_decoder_alone_generates_with_no_encoder_pass():
    gpt2 = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": 96, "n_embd": 64, "n_layer": 2,
            "n_head": 4, "n_positions": 64}
    placement = placed(gpt2, {"inference_ipus_per_replica": 2, "inference_layers_per_ipu": [1, 1]}, max_length=16)
    assert [ipu.generation.encoder.flops for ipu in placement.ipus] == [0, 0]
    assert all(ipu.generation.token.flops for ipu in placement.ipus)
    assert placement.generation_time.encoder_seconds == 0


def test_the_time_names_the_model_type_of_a_config_that_gives_none():
    untyped = {key: value for key, value in T5.items() if key != "model_type"}
    assert "no t5 model among them" in placed(untyped, THREE, max_length=12).generation_time.outside


def test_device_iterations_may_be_the_tokens_generated_on_the_device_a_call():
    placement = placed(WHISPER, dict(TWO, inference_device_iterations=4), {"on_device_generation_steps": 4})
    assert placement.generation.on_device_steps == 4


def test_the_encoder_s_input_is_checked_naming_the_model():
    with pytest.raises(PlacementError) as refused:
        PlainIPUConfig(**TWO).placement(WHISPER, generate=True, sequence_length=40)
    assert str(refused.value) == (
        "Cannot place the model config with `sequence_length`: WhisperForConditionalGeneration's encoder takes 100 "
        "frames of features (twice max_source_positions), not 40.")


def test_in_fp32_every_pass_keeps_and_sends_its_floats_at_four_bytes():
    config = PlainIPUConfig(**THREE)
    half, full = (config.placement(WHISPER, generate={"max_length": 20}, fp32=fp32).ipus for fp32 in (False, True))
    for ipu in range(3):
        assert full[ipu].generation.working_bytes > half[ipu].generation.working_bytes
    assert full[0].generation.encoder.flops == half[0].generation.encoder.flops
    assert full[2].generation.token.exchange_bytes == 2 * half[2].generation.token.exchange_bytes
