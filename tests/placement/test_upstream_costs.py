"""`block_costs()` against optimum-graphcore 0.7.1's own pipelined models (measured by upstream_costs.py on tiny random
models): for every architecture, at two micro-batch sizes and two sequence lengths, each step keeps the activations
the formulas give (within 10 %) and computes their forward FLOPs (within 5 %). The tables are exact on every one of
these cases; the tolerances are the issue's.

The tiny configs give every size its own value (hidden 16, feed-forward 32, vocabulary 64 or 20, 2 heads of 8, ...), so
that a formula naming the wrong size fails. Collected on the IPU-host stack only (conftest: `collect_ignore_glob`).
"""

import json

import pytest

from optimum_ipu_ext.placement.architectures import ARCHITECTURES
from optimum_ipu_ext.placement.cost_rows import AUDIO, COSTS, ENCODER_DECODER, IMAGE, SPEECH_RECOGNITION
from optimum_ipu_ext.placement.costs import block_costs, resolve_shape
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


def _cases():
    for architecture in sorted(ARCHITECTURES):
        kind = ARCHITECTURES[architecture].inputs or COSTS[architecture].kind
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


@pytest.mark.parametrize("architecture, batch, length, decoder, model_config", list(_cases()))
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
