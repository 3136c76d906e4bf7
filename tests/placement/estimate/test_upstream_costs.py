"""`block_costs()` against optimum-graphcore 0.7.1's own pipelined models (measured by upstream_costs.py on tiny random
models): for every architecture, at two micro-batch sizes and two sequence lengths, and for the configs that change a
step's work besides its sizes, each step keeps the activations the formulas give (within 10 %) and computes their
forward FLOPs (within 5 %). The tables are exact on every one of these cases; the tolerances are the issue's.

The tiny configs give every size its own value (hidden 16, feed-forward 32, vocabulary 64 or 20, 2 heads of 8, ...), so
that a formula naming the wrong size fails. Collected on the IPU-host stack only (conftest: `collect_ignore_glob`).
"""

import json

import pytest

from optimum_ipu_ext.placement.estimate.costs import block_costs
from optimum_ipu_ext.placement.models import ARCHITECTURES, resolve_shape
from optimum_ipu_ext.placement.models.rules import AUDIO, ENCODER_DECODER, IMAGE, SPEECH_RECOGNITION
from support.placement_models import TINY_MODELS
from support.upstream_costs import step_paths, upstream_costs
from support.upstream_placement import _original_model

ACTIVATION_TOLERANCE = 0.10
FLOPS_TOLERANCE = 0.05

# (micro-batch size, sequence length) of the cases; `None`: the length the model's config fixes (images: the
# config's image_size, varied by SIZES below; Whisper: its frames, varied by max_source_positions)
TEXT_CASES = [(1, 8), (1, 12), (3, 8), (3, 12)]
# encoder-decoders: (micro-batch size, encoder tokens, decoder tokens)
SEQ2SEQ_CASES = [(1, 8, 5), (1, 12, 12), (3, 8, 8), (3, 12, 5)]
AUDIO_CASES = [(1, 400), (1, 560), (3, 400), (3, 560)]
# config changes giving the second "sequence length" of the models whose config fixes it, and sizes told apart
SIZES = {
    IMAGE: [{"image_size": 16}, {"image_size": 24}],
    SPEECH_RECOGNITION: [{"max_source_positions": 16}, {"max_source_positions": 24}],
}
AUDIO_SIZES = {"vocab_size": 20}
PRETRAINING_SIZES = dict(AUDIO_SIZES, num_codevectors_per_group=5, num_codevector_groups=3, codevector_dim=6,
                         proj_codevector_dim=7, num_negatives=4, conv_dim=(8, 8, 9))
# (architecture, micro-batch size, length, decoder length, config changes): the configs that change what a step
# keeps or computes besides its sizes: a gated feed-forward or not, decoders with heads of their own
VARIANT_CASES = [
    ("T5ForConditionalGeneration", 3, 12, 5, {"feed_forward_proj": "gated-gelu"}),
    ("MT5ForConditionalGeneration", 3, 12, 5, {"feed_forward_proj": "relu"}),
    ("BartForConditionalGeneration", 3, 12, 5, {"decoder_attention_heads": 8}),
    ("BartForSequenceClassification", 3, 12, None, {"decoder_attention_heads": 8}),
    ("WhisperForConditionalGeneration", 3, None, 5, {"max_source_positions": 16, "decoder_attention_heads": 8}),
]


def _cases():
    for architecture in sorted(ARCHITECTURES):
        kind = ARCHITECTURES[architecture].inputs
        if kind == AUDIO:
            sizes = PRETRAINING_SIZES if architecture == "Wav2Vec2ForPreTraining" else AUDIO_SIZES
            yield from ((architecture, batch, length, None, sizes) for batch, length in AUDIO_CASES)
        elif kind == ENCODER_DECODER:
            yield from ((architecture, batch, length, decoder, {}) for batch, length, decoder in SEQ2SEQ_CASES)
        elif kind in SIZES:
            for batch, sizes, decoder in zip((1, 1, 3, 3), SIZES[kind] * 2, (5, 8, 8, 5)):
                yield architecture, batch, None, decoder if kind == SPEECH_RECOGNITION else None, sizes
        else:
            yield from ((architecture, batch, length, None, {}) for batch, length in TEXT_CASES)


def ours(architecture, model_config, batch, length, decoder):
    """`block_costs()` for the harness's model, read from its config as config.json gives it."""
    row = ARCHITECTURES[architecture]
    values = dict(TINY_MODELS[architecture].config, **model_config)
    config = row.config(_original_model(architecture, json.dumps(values, sort_keys=True)).config.to_dict())
    return block_costs(row, config, resolve_shape(architecture, architecture, config, batch, length, decoder))


def assert_as_measured(costs, reference):
    assert set(costs) == set(reference)
    for step, measured in reference.items():
        found = costs[step]
        assert found.activation_bytes == pytest.approx(measured.activation_bytes, rel=ACTIVATION_TOLERANCE), step
        assert found.forward_flops == pytest.approx(measured.forward_flops, rel=FLOPS_TOLERANCE), step


@pytest.mark.parametrize("architecture, batch, length, decoder, model_config", [*_cases(), *VARIANT_CASES])
def test_each_step_keeps_and_computes_what_upstream_does(architecture, batch, length, decoder, model_config):
    reference = upstream_costs(architecture, model_config, batch, length or 0, decoder_length=decoder)
    assert_as_measured(ours(architecture, model_config, batch, length, decoder), reference)


# images of another height than width, cut into patches of another height than width
NOT_SQUARE = {
    "ViTForImageClassification": {"image_size": [24, 16], "patch_size": [4, 2]},
    "ConvNextForImageClassification": {"image_size": [24, 16], "patch_size": [2, 4]},
}


@pytest.mark.parametrize("architecture", sorted(NOT_SQUARE))
@pytest.mark.parametrize("batch", [1, 3])
def test_an_image_of_a_height_and_a_width_is_costed_as_upstream_runs_it(architecture, batch):
    reference = upstream_costs(architecture, NOT_SQUARE[architecture], batch, 0)
    assert_as_measured(ours(architecture, NOT_SQUARE[architecture], batch, None, None), reference)


# the speech encoders' options the cases above leave at their defaults: {(architecture, options): config changes}
SPEECH_OPTIONS = {
    ("Wav2Vec2ForPreTraining", "layer norms"): {"feat_extract_norm": "layer", "conv_bias": True,
                                                "do_stable_layer_norm": True},
    ("HubertForSequenceClassification", "layer norms"): {"feat_extract_norm": "layer", "feat_proj_layer_norm": False},
    ("HubertForCTC", "no projection norm"): {"feat_proj_layer_norm": False},
    ("HubertForCTC", "masked features"): {"mask_time_prob": 0.0, "mask_feature_prob": 0.3},
    ("Wav2Vec2ForPreTraining", "masked features"): {"mask_feature_prob": 0.3},
    ("Wav2Vec2ForPreTraining", "no SpecAugment"): {"apply_spec_augment": False},
    ("Wav2Vec2ForCTC", "no SpecAugment"): {"apply_spec_augment": False, "mask_feature_prob": 0.3},
}


def _measured(costs):
    return {step: (cost.activation_bytes, cost.forward_flops) for step, cost in costs.items()}


@pytest.mark.parametrize("architecture, options", list(SPEECH_OPTIONS))
def test_the_speech_encoders_options_keep_and_compute_exactly_what_upstream_does(architecture, options):
    """A layer norm of each convolution keeps a transposed copy of its output and two statistics a position; a
    projection without a norm keeps its features alone; SpecAugment's mask of features keeps a bool a feature of each
    example, and without SpecAugment (`apply_spec_augment` false) no mask is drawn, even in pre-training."""
    model_config = dict(PRETRAINING_SIZES if architecture == "Wav2Vec2ForPreTraining" else AUDIO_SIZES,
                        **SPEECH_OPTIONS[architecture, options])
    batch, length = AUDIO_CASES[-1]
    reference = upstream_costs(architecture, model_config, batch, length)
    assert _measured(ours(architecture, model_config, batch, length, None)) == _measured(reference)


@pytest.mark.parametrize("stable", [False, True])
def test_the_weighted_layer_sum_is_kept_on_the_ipu_upstream_keeps_it_on(stable):
    """HuBERT's classifier with `use_weighted_layer_sum` stacks the hidden state of every layer and weighs them by the
    softmax of `layer_weights`, after the encoder: upstream's measure puts that on the step run last (the last layer,
    or the norm after it in a stable encoder), ours on `layer_weights` (a parameter read directly, run after it on
    the same IPU). Every other step is exact, and the two steps' sum."""
    architecture = "HubertForSequenceClassification"
    model_config = dict(AUDIO_SIZES, use_weighted_layer_sum=True, do_stable_layer_norm=stable)
    batch, length = AUDIO_CASES[-1]
    reference = _measured(upstream_costs(architecture, model_config, batch, length))
    found = _measured(ours(architecture, model_config, batch, length, None))
    last = "hubert.encoder.layer_norm" if stable else "hubert.encoder.layers.{}".format(
        TINY_MODELS[architecture].config["num_hidden_layers"] - 1)
    weighted = found.pop("layer_weights")
    assert reference.pop("layer_weights") == (0, 0) and weighted[0] > 0
    found[last] = (found[last][0] + weighted[0], found[last][1] + weighted[1])
    assert found == reference


def test_some_step_of_every_case_keeps_something_and_computes_something():
    """No case is vacuous: each keeps and computes somewhere, as the harness measures."""
    measured = upstream_costs("BertForMaskedLM", {}, 1, 8)
    assert all(measured[step].activation_bytes > 0 for step in step_paths("BertForMaskedLM", TINY_MODELS[
        "BertForMaskedLM"].config))
    assert measured["bert.encoder.layer.0"].forward_flops > 0


def test_fp32_counts_four_bytes_a_floating_element():
    measured = upstream_costs("BertForMaskedLM", {}, 3, 12, fp32=True)
    row = ARCHITECTURES["BertForMaskedLM"]
    config = row.config(_original_model("BertForMaskedLM", json.dumps(TINY_MODELS["BertForMaskedLM"].config,
                                                                      sort_keys=True)).config.to_dict())
    costs = block_costs(row, config, resolve_shape("m", "BertForMaskedLM", config, 3, 12), fp32=True)
    assert {step: cost.activation_bytes for step, cost in costs.items()} == {
        step: found.activation_bytes for step, found in measured.items()}


# DeBERTa's modules the tiny config leaves out: token types (as its tokenizer gives them), the embeddings' projection
# (untied: tied, 4.29.2's masked LM cannot run it), each kind of relative scores alone, or neither, the talking heads
DEBERTA_VARIANTS = [{"type_vocab_size": 2}, {"embedding_size": 12, "tie_word_embeddings": False},
                    {"pos_att_type": ["c2p"]}, {"pos_att_type": ["p2c"]}, {"pos_att_type": []}, {"talking_head": True}]


@pytest.mark.parametrize("architecture", [name for name in sorted(ARCHITECTURES) if name.startswith("Deberta")])
@pytest.mark.parametrize("model_config", DEBERTA_VARIANTS, ids=lambda variant: ",".join(variant))
def test_deberta_s_other_modules_keep_and_compute_exactly_what_upstream_does(architecture, model_config):
    """Exactly: the token types, under 4 % of the embeddings' bytes here, are within the tolerance above."""
    reference = upstream_costs(architecture, model_config, 3, 12)
    costs = ours(architecture, model_config, 3, 12, None)
    assert {step: (cost.activation_bytes, cost.forward_flops) for step, cost in costs.items()} == {
        step: (measured.activation_bytes, measured.forward_flops) for step, measured in reference.items()}
