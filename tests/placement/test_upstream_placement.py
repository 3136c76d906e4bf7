"""`placement()` against optimum-graphcore 0.7.1's own `parallelize()` (run by the reference harness,
upstream_placement.py, on tiny random models): for every architecture, the same blocks on each IPU, the same
layers, every parameter on the IPU where upstream first uses it, the same parameters frozen; for wildcard,
zero-layer, single-IPU, uneven, inference, generation, serialized and replicated-sharded accumulating configs; and
the same refusals.

Collected on the IPU-host stack only (conftest: `collect_ignore_glob`).
"""

import math

import pytest

from optimum_ipu_ext import PlacementError
from support.placement_models import TINY_MODELS
from support.upstream_comparison import assert_same, assert_same_split, ours, reference_and_ours, upstream_refusal
from support.upstream_placement import upstream_placement

GENERATING = ["BartForConditionalGeneration", "MT5ForConditionalGeneration", "T5ForConditionalGeneration",
              "WhisperForConditionalGeneration"]


# --- every architecture -------------------------------------------------------------------------------------------

# 3 IPUs, the middle one a wildcard, the last one with no layer: heads on the last IPU, and what runs after the last
# layer on the middle one; LXMERT places itself on 4
UNEVEN = {"layers_per_ipu": [1, -1, 0]}


@pytest.mark.parametrize("architecture", sorted(TINY_MODELS))
def test_every_architecture_is_placed_as_upstream_places_it(architecture, tmp_path_factory):
    settings = {"layers_per_ipu": [-1] * 4} if architecture.startswith("Lxmert") else UNEVEN
    assert_same(*reference_and_ours(architecture, tmp_path_factory, settings))


@pytest.mark.parametrize("architecture", ["BertForSequenceClassification", "GPT2LMHeadModel", "HubertForCTC",
                                          "Wav2Vec2ForPreTraining", "T5ForConditionalGeneration"])
def test_one_ipu_takes_everything(architecture, tmp_path_factory):
    reference, placer = reference_and_ours(architecture, tmp_path_factory, {})
    assert_same(reference, placer)
    assert len(placer.place().ipus) == 1


@pytest.mark.parametrize("architecture", ["BertForQuestionAnswering", "GPT2ForTokenClassification",
                                          "DebertaForMaskedLM", "BartForSequenceClassification",
                                          "ConvNextForImageClassification"])
def test_a_first_ipu_with_no_layer(architecture, tmp_path_factory):
    assert_same(*reference_and_ours(architecture, tmp_path_factory, {"layers_per_ipu": [0, -1]}))


def test_convnext_places_the_stages_its_config_builds(tmp_path_factory):
    """transformers builds `num_stages` stages, of `depths` layers each: a config listing more depths has fewer
    layers than their sum."""
    reference, placer = reference_and_ours("ConvNextForImageClassification", tmp_path_factory, UNEVEN,
                                           model_config={"num_stages": 2, "depths": [1, 2, 3]})
    assert_same(reference, placer)
    assert sum(len(ipu.layers) for ipu in placer.place().ipus) == 3


INFERENCE = {"layers_per_ipu": [-1, -1], "inference_layers_per_ipu": [0, 2, -1]}


@pytest.mark.parametrize("architecture", ["BertForMaskedLM", "RobertaForSequenceClassification",
                                          "DistilBertForMultipleChoice", "MPNetForMaskedLM", "GPT2LMHeadModel",
                                          "BartForConditionalGeneration", "WhisperForConditionalGeneration",
                                          "ViTForImageClassification", "HubertForSequenceClassification",
                                          "Wav2Vec2ForCTC", "GroupBertForMaskedLM"])
def test_the_inference_build_uses_the_inference_settings(architecture, tmp_path_factory):
    reference, placer = reference_and_ours(architecture, tmp_path_factory, INFERENCE, for_inference=True)
    assert_same(reference, placer)
    placement = placer.place()
    assert placement.build == "inference" and len(placement.ipus) == 3


@pytest.mark.parametrize("architecture", GENERATING)
@pytest.mark.parametrize("split", [[-1, -1], [1, 1, 1, 1], [2, 0, 1, 1]])
def test_a_generation_build_runs_encoder_and_decoder_on_ipus_of_their_own(architecture, split, tmp_path_factory):
    reference, placer = reference_and_ours(architecture, tmp_path_factory, {"inference_layers_per_ipu": split},
                                           for_inference=True, for_generation=True)
    assert_same(reference, placer)


def test_accumulating_replicated_and_sharded_builds_place_the_same_and_size_their_state(tmp_path_factory):
    sharded = {"layers_per_ipu": [1, -1], "replication_factor": 4, "replicated_tensor_sharding": True,
               "optimizer_state_offchip": True, "gradient_accumulation_steps": 16}
    reference, placer = reference_and_ours("BertForQuestionAnswering", tmp_path_factory, sharded)
    assert_same(reference, placer)
    # fp16 weights and accumulators on chip, 6 bytes of optimizer state over 4 replicas, a quarter of the largest
    # tensor's brought on chip for its update
    placement = placer.place()
    largest = placer.configured.parameters.elements("bert.embeddings.word_embeddings.weight")
    assert placement.ipus[0].update_bytes == math.ceil(6 * largest / 4)
    for ipu in placement.ipus:
        assert (ipu.on_chip_bytes, ipu.streaming_bytes) == (4 * ipu.parameters + ipu.update_bytes,
                                                           math.ceil(6 * ipu.parameters / 4))


# --- what parallelize() changes -----------------------------------------------------------------------------------


@pytest.mark.parametrize("architecture", ["GPT2LMHeadModel", "GPT2ForSequenceClassification"])
def test_gpt2_pads_its_vocabulary_as_upstream_pads_it(architecture, tmp_path_factory):
    reference, placer = reference_and_ours(architecture, tmp_path_factory,
                                           {"layers_per_ipu": [-1, -1], "embedding_serialization_factor": 2},
                                           model_config={"vocab_size": 63})
    assert_same(reference, placer)
    assert placer.place().ipus[0].parameters == reference["parameter_counts"]["transformer.wte.weight"] + 16 + \
        sum(count for name, count in reference["parameter_counts"].items() if name.startswith("transformer.wpe")) + \
        sum(count for name, count in reference["parameter_counts"].items() if name.startswith("transformer.h.0."))


@pytest.mark.parametrize("architecture", ["BertForMaskedLM", "MPNetForMaskedLM", "GroupBertForMaskedLM"])
def test_a_serialized_head_is_placed_as_upstream_places_it(architecture, tmp_path_factory):
    assert_same(*reference_and_ours(architecture, tmp_path_factory,
                                    {"layers_per_ipu": [-1, -1], "embedding_serialization_factor": 2}))


# --- refusals -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("architecture, ipu_settings, for_inference, for_generation, model_config, setting, words", [
    ("BertForMaskedLM", {"layers_per_ipu": [1, 1]}, False, False, None, "layers_per_ipu",
     ["places 2 layers and the model has 3"]),
    ("T5ForConditionalGeneration", {"inference_layers_per_ipu": [3, 2]}, True, False, None, "inference_layers_per_ipu",
     ["places 5 layers and the model has 4"]),
    ("T5ForConditionalGeneration", {"inference_layers_per_ipu": [1, 3]}, True, True, None,
     "inference_layers_per_ipu", ["does not end the encoder's 2 layers on IPU 1, 2, 4, 8"]),
    ("BertForSequenceClassification", {"layers_per_ipu": [-1, -1], "embedding_serialization_factor": 2}, False, False,
     {"vocab_size": 63}, "embedding_serialization_factor", ["2 does not divide the 63 rows"]),
    ("ViTForImageClassification", {"parallelize_kwargs": {"for_generation": True}}, False, False, None,
     "parallelize_kwargs", ["takes no keyword argument, not `for_generation`"]),
    ("WhisperForConditionalGeneration", {"layers_per_ipu": [2, 2], "serialized_projection_splits_per_ipu": [1, 1]},
     False, False, None, "serialized_projection_splits_per_ipu", ["splits it over several IPUs"]),
    ("BertForQuestionAnswering", {"layers_per_ipu": [-1, -1], "serialized_embedding_splits_per_ipu": [1, 1]},
     False, False, None, "embedding_serialization_factor", ["it is null", "compares it with 1"]),
    ("T5ForConditionalGeneration", {"layers_per_ipu": [-1, -1], "serialized_embedding_splits_per_ipu": [1, 1]},
     False, False, None, "embedding_serialization_factor", ["it is null", "compares it with 1"]),
    ("BartForConditionalGeneration", {"layers_per_ipu": [-1, -1], "serialized_embedding_splits_per_ipu": [1, 1]},
     False, False, None, "embedding_serialization_factor", ["it is null", "compares it with 1"]),
    ("MT5ForConditionalGeneration", {"layers_per_ipu": [-1, -1], "serialized_embedding_splits_per_ipu": [1, 1]},
     False, False, {"tie_word_embeddings": True}, "serialized_embedding_splits_per_ipu",
     ["splits no weight tied to another"]),
    ("MT5ForConditionalGeneration", {"layers_per_ipu": [-1, -1], "embedding_serialization_factor": 2},
     False, False, {"tie_word_embeddings": True}, "embedding_serialization_factor", ["splits no weight tied"]),
    ("MT5ForConditionalGeneration", {"layers_per_ipu": [-1, -1], "serialized_projection_splits_per_ipu": [0, 1]},
     False, False, {"tie_word_embeddings": True}, "serialized_projection_splits_per_ipu", ["splits no weight tied"]),
    ("MT5ForConditionalGeneration",
     {"layers_per_ipu": [1, 1, 1, 1], "serialized_projection_splits_per_ipu": [0, 0, 1, 2]},
     False, False, None, "serialized_projection_splits_per_ipu", ["3 parts do not divide the 64 rows"]),
    ("MT5ForConditionalGeneration",
     {"layers_per_ipu": [1, 1, 1, 1], "serialized_embedding_splits_per_ipu": [0, 3, 0, 0]},
     False, False, None, "serialized_embedding_splits_per_ipu", ["3 parts do not divide the 64 rows"]),
    ("MT5ForConditionalGeneration", {"layers_per_ipu": [1, 1, 1, 1], "embedding_serialization_factor": 3},
     False, False, None, "embedding_serialization_factor", ["3 does not divide the 64 rows of `shared.weight`"]),
    ("MT5ForConditionalGeneration", {"inference_embedding_serialization_factor": 3}, True, False, None,
     "inference_embedding_serialization_factor", ["3 does not divide the 64 rows"]),
    ("MT5ForConditionalGeneration", {"inference_layers_per_ipu": [1, 1, 1, 1],
                                     "inference_serialized_embedding_splits_per_ipu": [0, 1, 1, 0]},
     True, True, None, "inference_serialized_embedding_splits_per_ipu", ["outside the encoder's IPUs 0-1"]),
    ("MT5ForConditionalGeneration", {"inference_layers_per_ipu": [1, 1, 1, 1],
                                     "inference_serialized_projection_splits_per_ipu": [0, 1, 1, 0]},
     True, True, None, "inference_serialized_projection_splits_per_ipu", ["outside the decoder's IPUs 2-3"]),
])
def test_what_upstream_refuses_is_refused(architecture, ipu_settings, for_inference, for_generation, model_config,
                                          setting, words, tmp_path_factory):
    with pytest.raises(PlacementError) as refused:
        ours(architecture, tmp_path_factory, ipu_settings, for_inference, for_generation, model_config).place()
    assert refused.value.setting == setting
    assert all(word in refused.value.problem for word in words)
    model = dict(TINY_MODELS[architecture].config, **(model_config or {}))
    with pytest.raises(upstream_refusal()):
        upstream_placement(architecture, model, ipu_settings, for_inference, for_generation)


# --- weights split over IPUs (MT5's SerializedEmbedding and SplitProjection) -----------------------------------------

MT5_SPLITS = [
    # a factor alone cuts the embedding into parts kept on IPU 0; the projection's, into parts of any rows
    ({"layers_per_ipu": [1, 1, 1, 1], "embedding_serialization_factor": 4, "projection_serialization_factor": 3},
     False, False),
    ({"inference_embedding_serialization_factor": 2, "embedding_serialization_factor": 3}, True, False),
    ({"layers_per_ipu": [1, 1, 1, 1], "serialized_embedding_splits_per_ipu": [2, 2, 0, 0]}, False, False),
    ({"layers_per_ipu": [1, 1, 1, 1], "serialized_projection_splits_per_ipu": [0, 0, 1, 3]}, False, False),
    ({"layers_per_ipu": [0, 2, 2, 0], "serialized_embedding_splits_per_ipu": [1, 3, 0, 0],
      "serialized_projection_splits_per_ipu": [0, 0, 2, 2]}, False, False),
    ({"layers_per_ipu": [1, 1, 1, 1], "serialized_embedding_splits_per_ipu": [2, 2, 0, 0],
      "inference_layers_per_ipu": [2, 2], "inference_serialized_projection_splits_per_ipu": [1, 1]}, True, False),
    ({"inference_layers_per_ipu": [1, 1, 1, 1], "inference_serialized_embedding_splits_per_ipu": [1, 3, 0, 0],
      "inference_serialized_projection_splits_per_ipu": [0, 0, 2, 2]}, True, True),
]


@pytest.mark.parametrize("settings, for_inference, for_generation", MT5_SPLITS)
def test_a_weight_split_over_ipus_is_placed_as_upstream_places_it(settings, for_inference, for_generation,
                                                                   tmp_path_factory):
    reference, placer = reference_and_ours("MT5ForConditionalGeneration", tmp_path_factory, settings,
                                           for_inference, for_generation)
    assert_same_split(reference, placer)


