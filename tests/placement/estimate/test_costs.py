"""The cost model (placement/costs.py, over the families' modules): the closed forms it must give for a
BERT-large and a GPT-2 layer, the input shape each kind of model takes and what it refuses, and a cost for every
step of every architecture.

The comparison with optimum-graphcore's own pipelined models is in test_upstream_costs.py (IPU-host stack)."""

import pytest

from optimum_ipu_ext import PlacementError, PlainIPUConfig
from optimum_ipu_ext.placement.estimate.costs import StepCost, block_costs
from optimum_ipu_ext.placement.estimate.layout import lay_out
from optimum_ipu_ext.placement.estimate.pipeline import Execution, ipu_work, stages_of
from optimum_ipu_ext.placement.hardware import matmul_cycles
from optimum_ipu_ext.placement.models import ARCHITECTURES, resolve_shape
from optimum_ipu_ext.placement.models.blocks import MatmulOp, Operations, backward_operations, forward_operations
from optimum_ipu_ext.placement.models.rules import Block, InputShape, Run

BERT_LARGE = {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16, "intermediate_size": 4096}
GPT2_MEDIUM = {"n_embd": 1024, "n_layer": 24, "n_head": 16}


def costs_of(architecture, values, micro_batch_size=1, sequence_length=None, decoder_sequence_length=None,
             fp32=False):
    row = ARCHITECTURES[architecture]
    config = row.config(values)
    shape = resolve_shape("m", architecture, config, micro_batch_size, sequence_length, decoder_sequence_length)
    return block_costs(row, config, shape, fp32)


# --- the closed forms ---------------------------------------------------------------------------------------------


def test_a_bert_large_layer_keeps_what_korthikanti_counts_without_the_dropout_masks():
    """s = 512, b = 4: s·b·h·(34 + 5·a·s/h) bytes with dropout (Korthikanti et al. 2022, about 150 MB), less the two
    hidden-state masks (s·b·h), the attention mask (a·s²·b) and the dropout's output (2·a·s²·b, the softmax output
    itself without dropout); plus the norms' statistics (4 per token) and upstream's concatenated query-key-value
    weight (3h², kept for the backward pass)."""
    s, b, h, a = 512, 4, 1024, 16
    with_dropout = s * b * h * (34 + 5 * a * s // h)
    assert with_dropout == 155_189_248
    without_masks = with_dropout - 2 * s * b * h - 3 * a * s * s * b
    layer = costs_of("BertForPreTraining", BERT_LARGE, b, s)["bert.encoder.layer.7"]
    assert layer.activation_bytes == without_masks + 2 * 4 * b * s + 2 * 3 * h * h == 106_971_136
    assert layer.activation_bytes / without_masks == pytest.approx(1.06, abs=0.005)


@pytest.mark.parametrize("architecture, values, path", [
    ("BertForPreTraining", BERT_LARGE, "bert.encoder.layer.0"),
    ("GPT2LMHeadModel", GPT2_MEDIUM, "transformer.h.23"),
    ("RobertaForMaskedLM", BERT_LARGE, "roberta.encoder.layer.3"),
])
def test_a_layer_computes_24bsh2_plus_4bs2h(architecture, values, path):
    s, b, h = 512, 4, 1024
    assert 24 * b * s * h * h + 4 * b * s * s * h == 55_834_574_848
    assert costs_of(architecture, values, b, s)[path].forward_flops == 55_834_574_848


def test_a_layer_hands_on_its_hidden_state_and_fp32_doubles_it():
    half = costs_of("BertForPreTraining", BERT_LARGE, 2, 128)["bert.encoder.layer.0"]
    full = costs_of("BertForPreTraining", BERT_LARGE, 2, 128, fp32=True)["bert.encoder.layer.0"]
    assert (half.input_bytes, half.output_bytes) == (2 * 128 * 1024 * 2, 2 * 128 * 1024 * 2)
    assert (full.input_bytes, full.output_bytes, full.activation_bytes) == (
        2 * half.input_bytes, 2 * half.output_bytes, 2 * half.activation_bytes)
    assert full.forward_flops == half.forward_flops


def test_fp32_doubles_floating_elements_only():
    """The embeddings keep the ids and the token types the tokenizer gives (integers, 4 bytes whatever the
    precision) and a norm's input and statistics."""
    tokens, h = 2 * 128, 1024
    half = costs_of("BertForPreTraining", BERT_LARGE, 2, 128)["bert.embeddings"]
    full = costs_of("BertForPreTraining", BERT_LARGE, 2, 128, fp32=True)["bert.embeddings"]
    assert half.activation_bytes == 2 * 4 * tokens + 2 * (tokens * h + 2 * tokens)
    assert full.activation_bytes == 2 * 4 * tokens + 4 * (tokens * h + 2 * tokens)


def test_a_multiple_choice_micro_batch_counts_each_choice():
    choices = costs_of("BertForMultipleChoice", BERT_LARGE, 2, 128)
    sequences = costs_of("BertForSequenceClassification", BERT_LARGE, 8, 128)
    assert choices["bert.encoder.layer.0"] == sequences["bert.encoder.layer.0"]


def test_t5s_first_layers_keep_the_joint_embedding_of_both_stacks():
    """Upstream embeds the encoder's and the decoder's ids in one lookup; each stack's first layer keeps a view of
    it, T5EncoderModel's only its own."""
    values = {"d_model": 512, "num_heads": 8, "d_kv": 64, "d_ff": 2048}
    seq2seq = costs_of("T5ForConditionalGeneration", values, 2, 128, 32)
    encoder_only = costs_of("T5EncoderModel", values, 2, 128)
    assert seq2seq["encoder.block.0"].activation_bytes - encoder_only["encoder.block.0"].activation_bytes == (
        2 * 2 * 32 * 512)
    assert seq2seq["encoder.block.1"] == encoder_only["encoder.block.1"]
    assert seq2seq["encoder.block.0"].activation_bytes - seq2seq["encoder.block.1"].activation_bytes == (
        2 * 2 * 32 * 512 + 4 * 128 * 128)  # and the relative position buckets


def test_work_after_the_last_layer_is_the_last_layers():
    """Upstream's DeBERTa MLM picks its masked quarter of the tokens by a one-hot product after the last layer; BART's
    classifier picks each sequence's last end-of-sequence token after its last decoder layer."""
    b, s, h = 2, 128, 768
    deberta = costs_of("DebertaForMaskedLM", {"relative_attention": True, "pos_att_type": ["c2p", "p2c"]}, b, s)
    last, other = deberta["deberta.encoder.layer.11"], deberta["deberta.encoder.layer.10"]
    assert last.activation_bytes - other.activation_bytes == 2 * b * (s // 4) * s
    assert last.forward_flops - other.forward_flops == 2 * b * (s // 4) * s * h
    bart = costs_of("BartForSequenceClassification", {}, b, s)
    assert (bart["model.decoder.layers.11"].activation_bytes - bart["model.decoder.layers.10"].activation_bytes ==
            4 * b)


def test_a_decoder_layer_attends_to_the_encoder_s_positions_normed_before_or_after():
    """BART-large's decoder layer (post-norm) and Whisper's (pre-norm) of the same sizes: self-attention over the t
    tokens, the cross-attention's keys and values projected from the s positions of the encoder's output, the
    feed-forward; each keeps as much as the other."""
    b, s, t, h, j = 2, 128, 32, 1024, 4096
    sizes = {"d_model": h, "decoder_attention_heads": 16, "decoder_ffn_dim": j}
    bart = costs_of("BartForConditionalGeneration", sizes, b, s, t)["model.decoder.layers.0"]
    whisper = costs_of("WhisperForConditionalGeneration", {**sizes, "max_source_positions": s}, b, None, t)[
        "model.decoder.layers.0"]
    attention = 2 * b * t * h * 3 * h + 4 * b * t * t * h + 2 * b * t * h * h
    cross = 2 * b * t * h * h + 2 * b * s * h * 2 * h + 4 * b * t * s * h + 2 * b * t * h * h
    assert bart.forward_flops == whisper.forward_flops == attention + cross + 2 * 2 * b * t * h * j
    assert bart == whisper
    assert bart.input_bytes == 2 * (b * t * h + b * s * h)


def test_a_config_json_leaving_sizes_out_is_costed_with_its_config_class_s_defaults():
    """MT5's: 6 heads and a feed-forward 1024 wide (not T5's 8 and 2048), as its parameters are."""
    assert costs_of("MT5ForConditionalGeneration", {}, 1, 16) == costs_of(
        "MT5ForConditionalGeneration", {"num_heads": 6, "d_ff": 1024}, 1, 16)


def test_convnexts_first_stage_does_not_downsample():
    costs = costs_of("ConvNextForImageClassification", {})
    assert costs["convnext.encoder.stages.0.downsampling_layer"] == StepCost(0, 0, 0, 0)
    assert costs["convnext.encoder.stages.1.downsampling_layer"].forward_flops == 2 * 192 * 28 * 28 * 96 * 4


def test_an_image_of_a_height_and_a_width_is_cut_into_patches_of_theirs():
    """`image_size` and `patch_size` may be pairs, (height, width): a ViT's 224 x 160 pixels in patches of 16 x 8 are
    14 x 20 patches, after the class token; a ConvNeXt's maps of 224 x 160 pixels in patches of 4 are 56 x 40,
    halved on a side by each stage's downsampling."""
    b, pixels = 2, 3 * 224 * 160
    vit = costs_of("ViTForImageClassification", {"image_size": [224, 160], "patch_size": [16, 8]}, b)
    embeddings = vit["vit.embeddings"]
    assert embeddings[:4] == StepCost(2 * b * pixels, 2 * b * pixels, 2 * b * (14 * 20 + 1) * 768,
                                      2 * b * 768 * 14 * 20 * 3 * 16 * 8)[:4]
    # one product: the 768 filters of 3 x 16 x 8 weights by each image's 14 x 20 patches
    projection = MatmulOp(1, 768, 3 * 16 * 8, b * 14 * 20)
    assert (embeddings.forward, embeddings.backward) == (forward_operations(projection),
                                                         backward_operations(projection))
    assert embeddings.forward == Operations(1, matmul_cycles(1, 768, 3 * 16 * 8, b * 14 * 20), 0)
    convnext = costs_of("ConvNextForImageClassification", {"image_size": [224, 160]}, b)
    assert convnext["convnext.embeddings"].output_bytes == 2 * b * 96 * 56 * 40
    assert convnext["convnext.encoder.stages.1.downsampling_layer"].forward_flops == 2 * b * 192 * 28 * 20 * 96 * 4
    assert convnext["convnext.layernorm"].input_bytes == 2 * b * 768 * 7 * 5


def test_ctc_models_freeze_their_feature_extractor_so_it_keeps_nothing():
    ctc = costs_of("HubertForCTC", {}, 1, 16000)
    classifier = costs_of("HubertForSequenceClassification", {}, 1, 16000)
    first = ctc["hubert.feature_extractor.conv_layers.0"]
    assert first.activation_bytes == 0
    assert first.forward_flops == 2 * 512 * 3199 * 1 * 10  # 16000 samples: (16000 - 10) // 5 + 1 frames
    flops = sum(ctc[f"hubert.feature_extractor.conv_layers.{layer}"].forward_flops for layer in range(7))
    assert classifier["hubert.feature_extractor"].forward_flops == flops
    assert classifier["hubert.feature_extractor"].activation_bytes > 0


# --- every step of every architecture -------------------------------------------------------------------------------


@pytest.mark.parametrize("architecture", sorted(ARCHITECTURES))
def test_every_step_the_placement_runs_has_a_cost(architecture):
    row = ARCHITECTURES[architecture]
    config = row.config({})
    settings = vars(PlainIPUConfig(ipus_per_replica=4, layers_per_ipu=[-1] * 4))  # LXMERT takes 4 IPUs
    layout = lay_out("m", row, config, settings, False)
    called = {step.path for step in row.steps if isinstance(step, Block) and not step.called}
    costs = costs_of(architecture, {})
    assert set(costs) == set(layout.uses["model"]) - called
    assert sum(cost.forward_flops for cost in costs.values()) > 0
    assert sum(cost.activation_bytes for cost in costs.values()) > 0


def test_by_default_a_micro_batch_is_one_example_and_its_floating_elements_half_precision():
    row = ARCHITECTURES["BertForMaskedLM"]
    config = row.config({})
    shape = resolve_shape("m", "BertForMaskedLM", config)
    assert shape == InputShape(1, 128, 128, 1)
    assert block_costs(row, config, shape) == block_costs(row, config, shape, False) != block_costs(row, config, shape,
                                                                                                   True)


def test_an_architecture_is_named_or_given_as_its_row():
    row = ARCHITECTURES["GPT2LMHeadModel"]
    shape = InputShape(2, 16, 16)
    assert block_costs("GPT2LMHeadModel", row.config({}), shape, False) == block_costs(row, row.config({}), shape,
                                                                                  False)


def test_a_step_without_a_module_is_a_bug_named():
    row = ARCHITECTURES["BertModel"]
    row = row._replace(steps=(*row.steps, Run("nowhere")))
    with pytest.raises(KeyError, match="no module for BertModel's step nowhere"):
        block_costs(row, row.config({}), InputShape(1, 8, 8), False)


def ipu_totals(layout, costs):
    """Each IPU's (activation bytes, forward FLOPs): the sums of the steps it runs, as a training build that is not
    pipelined (nothing stashed, every activation kept for the backward pass) counts them."""
    execution = Execution(True, False, False, False, 1, "gradient_accumulation_steps")
    return [(work.activation_bytes, work.forward_flops)
            for work in ipu_work(layout.ipus, stages_of(layout, execution), costs, execution)]


def summed(costs):
    return (sum(cost.activation_bytes for cost in costs), sum(cost.forward_flops for cost in costs))


def test_an_ipu_costs_the_sum_of_the_steps_it_runs():
    """BERT's MLM head is tied back to IPU 0, with the embeddings; the layers 3, 7, 7, 7."""
    row = ARCHITECTURES["BertForPreTraining"]
    config = row.config(BERT_LARGE)
    costs = costs_of("BertForPreTraining", BERT_LARGE, 2, 512)
    layout = lay_out("m", row, config, vars(PlainIPUConfig(ipus_per_replica=4, layers_per_ipu=[3, 7, 7, 7])), False)
    per_ipu = ipu_totals(layout, costs)
    layer = costs["bert.encoder.layer.0"]
    first = [costs[path] for path in ("bert.embeddings", "bert.encoder.layer.0", "bert.encoder.layer.1",
                                      "bert.encoder.layer.2", "bert.pooler", "cls")]
    assert per_ipu[0] == summed(first)
    assert per_ipu[1] == per_ipu[2] == per_ipu[3] == summed([layer] * 7)


def test_a_generation_build_costs_a_shared_step_on_each_executors_ipu():
    row = ARCHITECTURES["T5ForConditionalGeneration"]
    config = row.config({"num_layers": 2})
    settings = vars(PlainIPUConfig(inference_ipus_per_replica=2, inference_layers_per_ipu=[2, 2],
                                   inference_parallelize_kwargs={"for_generation": True}))
    layout = lay_out("m", row, config, settings, True)
    costs = block_costs(row, config, InputShape(1, 8, 8), False)
    per_ipu = ipu_totals(layout, costs)
    encoder = [costs[path] for path in ("shared", "encoder.block.0", "encoder.block.1", "encoder.final_layer_norm")]
    decoder = [costs[path] for path in ("shared", "decoder.block.0", "decoder.block.1", "decoder.final_layer_norm",
                                        "lm_head")]
    assert per_ipu == [summed(encoder), summed(decoder)]


# --- the input shape ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("architecture, values, given, expected", [
    ("BertForMaskedLM", {}, (4, None, None), (4, 128, 128, 1)),
    ("BertForMaskedLM", {}, (4, 384, None), (4, 384, 384, 1)),
    ("BertForMultipleChoice", {}, (2, 64, None), (2, 64, 64, 4)),
    ("T5ForConditionalGeneration", {}, (1, 512, None), (1, 512, 512, 1)),
    ("T5ForConditionalGeneration", {}, (1, 512, 32), (1, 512, 32, 1)),
    ("BartForSequenceClassification", {}, (1, 100, None), (1, 100, 100, 1)),
    ("ViTForImageClassification", {}, (17, None, None), (17, 224, 224, 1)),
    ("ViTForImageClassification", {"image_size": 384}, (1, None, None), (1, 384, 384, 1)),
    ("ViTForImageClassification", {"image_size": [224, 160]}, (1, None, None), (1, [224, 160], [224, 160], 1)),
    ("ConvNextForImageClassification", {}, (1, None, None), (1, 224, 224, 1)),
    ("Wav2Vec2ForCTC", {}, (1, None, None), (1, 16000, 16000, 1)),
    ("Wav2Vec2ForCTC", {}, (1, 249600, None), (1, 249600, 249600, 1)),
    ("WhisperForConditionalGeneration", {}, (1, None, None), (1, 3000, 448, 1)),
    ("WhisperForConditionalGeneration", {"max_target_positions": 64}, (1, None, None), (1, 3000, 64, 1)),
    ("WhisperForConditionalGeneration", {"max_source_positions": 100}, (1, 200, 20), (1, 200, 20, 1)),
])
def test_the_shape_of_a_micro_batch(architecture, values, given, expected):
    config = ARCHITECTURES[architecture].config(values)
    assert resolve_shape("m", architecture, config, *given) == InputShape(*expected)


@pytest.mark.parametrize("architecture, given, field, message", [
    ("BertForMaskedLM", (0, None, None), "micro_batch_size", "0 is not a positive whole number"),
    ("BertForMaskedLM", (True, None, None), "micro_batch_size", "True is not a positive whole number"),
    ("BertForMaskedLM", (1, -3, None), "sequence_length", "-3 is not a positive whole number"),
    ("BertForMaskedLM", (1, 2.5, None), "sequence_length", "2.5 is not a positive whole number"),
    ("T5ForConditionalGeneration", (1, 8, 0), "decoder_sequence_length", "0 is not a positive whole number"),
    ("BertForMaskedLM", (1, 8, 8), "decoder_sequence_length",
     "8 is for the decoders of the models that generate (BART, T5, MT5, Whisper); BertForMaskedLM has no decoder "
     "of its own length"),
    ("ViTForImageClassification", (1, 224, None), "sequence_length",
     "ViTForImageClassification takes images of the size its config.json gives (image_size 224), not 224"),
    ("WhisperForConditionalGeneration", (1, 1500, None), "sequence_length",
     "WhisperForConditionalGeneration's encoder takes 3000 frames of features (twice max_source_positions), not 1500"),
])
def test_a_shape_refused_names_the_field_the_value_and_what_is_allowed(architecture, given, field, message):
    config = ARCHITECTURES[architecture].config({})
    with pytest.raises(PlacementError) as refused:
        resolve_shape("org/model", architecture, config, *given)
    assert refused.value.setting == field
    assert str(refused.value) == f"Cannot place org/model with `{field}`: {message}."
