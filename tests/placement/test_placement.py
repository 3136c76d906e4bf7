"""The placement of a model on a config's IPUs: every rule of the layout, the parameters as transformers builds them,
the memory arithmetic, the data and the text of a `Placement`, and where it refuses what optimum-graphcore refuses.

The comparison with optimum-graphcore's own `parallelize()` is in test_upstream_placement.py (IPU-host stack)."""

import copy
import dataclasses
import json
import os
import subprocess
import sys

import pytest

from optimum_ipu_ext import ArchitectureError, IPUConfig, ModelFileError, PlacementError, PlainIPUConfig
from optimum_ipu_ext.errors import as_json
from optimum_ipu_ext.placement.architectures import ARCHITECTURES
from optimum_ipu_ext.placement.layout import (
    Claim,
    Layout,
    encoder_decoder_cut,
    expand_layers_per_ipu,
    first_uses,
    lay_out,
    origins,
)
from optimum_ipu_ext.placement.memory import IPU_MEMORY_BYTES, MemoryModel, Storage, memory_model
from optimum_ipu_ext.placement.parameters import Parameters, from_checkpoint, from_config, loaded_names, parallelized
from optimum_ipu_ext.placement.placement import _frozen
from optimum_ipu_ext.placement.report import bar, compress, render, render_comparison
from optimum_ipu_ext.placement.rules import ModelConfig
from support.placement_fixtures import BERT_BASE, bert_base, bert_shapes, write_checkpoint

TINY_BERT = dict(BERT_BASE, vocab_size=64, hidden_size=16, num_hidden_layers=3, num_attention_heads=2,
                 intermediate_size=32, max_position_embeddings=32)
ON_CHIP = Storage(True, 1)


def settings(**values):
    return vars(PlainIPUConfig(**values))


def tiny_bert(tmp_path, architecture="BertForMaskedLM", layers=None, **config):
    values = dict(TINY_BERT, architectures=[architecture], **config)
    return write_checkpoint(tmp_path / "bert", bert_shapes(values, layers), values)


def layout_of(architecture, config=None, for_inference=False, **ipu_settings):
    row = ARCHITECTURES[architecture]
    return lay_out("m", row, row.config(config or {}), settings(**ipu_settings), for_inference)


# --- layers_per_ipu, expanded as upstream expands it --------------------------------------------------------------


@pytest.mark.parametrize("given, ipus, layers, expanded", [
    ([-1], 1, 12, [12]),
    ([-1, -1], 2, 12, [6, 6]),
    ([-1, -1], 2, 13, [6, 7]),  # the remainder on the last IPU
    ([-1], 4, 3, [0, 0, 0, 3]),  # fewer layers than IPUs: all on the last
    ([-1] * 4, 4, 3, [0, 0, 0, 3]),
    ([1, -1, -1], 3, 5, [1, 2, 2]),
    ([-1, 2, -1], 3, 7, [2, 2, 3]),  # the remainder on the last wildcard
    ([-1, 2, -1, 0], 4, 7, [2, 2, 3, 0]),
    ([0, 3], 2, 3, [0, 3]),
    ([3, -1], 2, 3, [3, 0]),  # a wildcard may get no layer
    ([3, 0], 2, 3, [3, 0]),
    ([4, 8], 2, 12, [4, 8]),
])
def test_layers_per_ipu_is_expanded_as_upstream_expands_it(given, ipus, layers, expanded):
    assert expand_layers_per_ipu("m", given, ipus, layers, "layers_per_ipu") == expanded


def test_one_ipu_takes_every_layer_whatever_layers_per_ipu_says():
    assert expand_layers_per_ipu("m", [5], 1, 12, "layers_per_ipu") == [12]


@pytest.mark.parametrize("given, ipus, problem", [
    ([6, 5], 2, "[6, 5] places 11 layers and the model has 12"),
    ([6, 7], 2, "[6, 7] places 13 layers and the model has 12"),
    ([-1, 2], 3, "[-1, 2] has 2 entries, and `ipus_per_replica` is 3"),
    ([14, -1], 2, "[14, -1] places 14 layers besides its wildcards, and the model has 12"),
])
def test_a_split_of_another_number_of_layers_is_refused_with_both_numbers(given, ipus, problem):
    with pytest.raises(PlacementError) as raised:
        expand_layers_per_ipu("bert-base", given, ipus, 12, "layers_per_ipu")
    assert (raised.value.setting, raised.value.problem, raised.value.model) == ("layers_per_ipu", problem, "bert-base")
    assert str(raised.value) == f"Cannot place bert-base with `layers_per_ipu`: {problem}."


def test_the_inference_split_is_named_in_its_refusal():
    with pytest.raises(PlacementError) as raised:
        expand_layers_per_ipu("m", [-1, 2], 3, 12, "inference_layers_per_ipu")
    assert raised.value.setting == "inference_layers_per_ipu"
    assert "`inference_ipus_per_replica` is 3" in raised.value.problem


@pytest.mark.parametrize("expanded, encoder, cut", [
    ([2, 2], 2, 1), ([1, 1, 1, 1], 2, 2), ([2, 0, 1, 1], 2, 2), ([4, 0, 0, 0, 1, 1, 1, 1], 4, 4),
    ([1, 1, 2, 0], 2, 2), ([3, 1, 1, 1], 3, 1),
])
def test_a_generation_build_cuts_after_the_encoder_at_the_largest_power_of_two(expanded, encoder, cut):
    assert encoder_decoder_cut("m", expanded, encoder, "inference_layers_per_ipu") == cut


@pytest.mark.parametrize("expanded, encoder", [([1, 3], 2), ([3, 1], 2), ([1, 1, 1, 1, 1, 1], 3)])
def test_a_generation_build_refuses_a_split_with_no_cut(expanded, encoder):
    with pytest.raises(PlacementError) as raised:
        encoder_decoder_cut("t5", expanded, encoder, "inference_layers_per_ipu")
    assert raised.value.setting == "inference_layers_per_ipu"
    assert f"does not end the encoder's {encoder} layers on IPU 1, 2, 4, 8" in str(raised.value)


def test_a_generation_build_needs_two_ipus():
    with pytest.raises(PlacementError) as raised:
        encoder_decoder_cut("t5", [4], 2, "inference_layers_per_ipu")
    assert raised.value.setting == "inference_ipus_per_replica"


# --- the config's fields, with transformers 4.29.2's defaults ---------------------------------------------------


def test_a_config_field_left_out_takes_its_default_and_null_is_left_out():
    config = ModelConfig({"num_layers": 3, "d_model": None},
                         {"d_model": 512, "num_decoder_layers": lambda c: c.num_layers})
    assert (config.num_layers, config.d_model, config.num_decoder_layers) == (3, 512, 3)
    assert ModelConfig({"num_decoder_layers": 2, "num_layers": 3}, config.defaults).num_decoder_layers == 2
    with pytest.raises(AttributeError, match="'vocab_size' has no default"):
        _ = config.vocab_size


def test_the_number_of_labels_is_that_of_their_names():
    assert ModelConfig({}, {}).num_labels == 2
    assert ModelConfig({"id2label": {"0": "a", "1": "b", "2": "c"}}, {}).num_labels == 3
    assert ModelConfig({"num_labels": 5}, {}).num_labels == 5


def test_a_step_s_condition_holds_on_the_config():
    config = ModelConfig({"do_stable_layer_norm": True}, {})
    assert config.holds(None) and config.holds(("do_stable_layer_norm", True))
    assert not config.holds(("do_stable_layer_norm", False))


# --- the layout: blocks, layers and where modules run --------------------------------------------------------------


def ipus_of(layout, *paths):
    return [layout.claims["model"][path].ipu for path in paths]


def test_heads_go_to_the_last_ipu_and_modules_outside_blocks_to_the_last_layer_s():
    layout = layout_of("BertForSequenceClassification", {"num_hidden_layers": 3}, layers_per_ipu=[3, 0])
    assert ipus_of(layout, "bert.embeddings", "bert.pooler", "classifier") == [0, 0, 1]
    assert layout.blocks == [["Embedding", "Encoder0", "Encoder1", "Encoder2"], ["Classifier Output"]]
    assert (layout.layers_per_ipu, layout.layer_ipus) == ([3, 0], [0, 0, 0])


def test_gpt2_s_final_norm_runs_on_the_last_layer_s_ipu():
    assert ipus_of(layout_of("GPT2LMHeadModel", {"n_layer": 4}, layers_per_ipu=[1, 3]), "transformer.ln_f",
                   "lm_head") == [1, 0]
    assert ipus_of(layout_of("GPT2LMHeadModel", {"n_layer": 4}, layers_per_ipu=[4, 0]), "transformer.ln_f") == [0]


def test_a_head_placed_with_the_last_layer_follows_it():
    layout = layout_of("BartForSequenceClassification", {"encoder_layers": 2, "decoder_layers": 2},
                       layers_per_ipu=[3, 1, 0])
    assert ipus_of(layout, "classification_head") == [1]
    assert layout.blocks[0] == ["Embedding", "Encoder0", "Encoder1", "Decoder0"]


def test_t5_s_final_norms_go_with_the_last_layer_of_their_stack():
    layout = layout_of("T5ForConditionalGeneration", {"num_layers": 2}, layers_per_ipu=[1, 2, 1])
    assert ipus_of(layout, "encoder.final_layer_norm", "decoder.final_layer_norm", "lm_head") == [1, 2, 0]


def test_mt5_s_head_goes_to_the_last_ipu_unless_it_is_tied():
    assert ipus_of(layout_of("MT5ForConditionalGeneration", {"num_layers": 1}, layers_per_ipu=[-1, -1, -1]),
                   "lm_head") == [2]
    assert ipus_of(layout_of("MT5ForConditionalGeneration", {"num_layers": 1, "tie_word_embeddings": True},
                             layers_per_ipu=[-1, -1, -1]), "lm_head") == [0]


def test_whisper_s_output_projection_goes_where_the_decoder_starts_or_its_one_split():
    config = {"encoder_layers": 2, "decoder_layers": 2}
    assert ipus_of(layout_of("WhisperForConditionalGeneration", config, layers_per_ipu=[3, 1]), "proj_out",
                   "model.decoder.embed_positions") == [0, 0]
    split = layout_of("WhisperForConditionalGeneration", config, layers_per_ipu=[2, 2],
                      serialized_projection_splits_per_ipu=[0, 2])
    assert ipus_of(split, "model.decoder.embed_tokens", "proj_out") == [1, 1]
    with pytest.raises(PlacementError) as raised:
        layout_of("WhisperForConditionalGeneration", config, layers_per_ipu=[2, 2],
                  serialized_projection_splits_per_ipu=[1, 1])
    assert raised.value.setting == "serialized_projection_splits_per_ipu"


def test_a_module_wrapped_but_never_called_begins_no_block():
    layout = layout_of("WhisperForConditionalGeneration", {"encoder_layers": 1, "decoder_layers": 1},
                       layers_per_ipu=[-1, -1])
    assert layout.blocks[0] == ["Conv1", "Conv2", "Embed Positions", "Encoder0", "Encoder Layer Norm"]
    deberta = layout_of("DebertaForMaskedLM", {"relative_attention": True, "num_hidden_layers": 2},
                        layers_per_ipu=[0, 2])
    assert deberta.blocks == [["Embedding", None, None, "Projection"], ["Encoder0", "Encoder1"]]
    assert ipus_of(deberta, "deberta.encoder.rel_embeddings", "cls.predictions.transform") == [0, 1]
    assert layout_of("DebertaForMaskedLM", {"num_hidden_layers": 2}).blocks == [
        ["Embedding", None, "Encoder0", "Encoder1", "Projection"]]


def test_convnext_takes_every_stage_s_layers_and_downsamples_on_the_previous_layer_s_ipu():
    layout = layout_of("ConvNextForImageClassification", {"depths": [1, 2]}, layers_per_ipu=[1, 2])
    assert layout.blocks == [["Embedding", "Encoder_stage_0_layer_0"],
                             ["Encoder_stage_1_layer_0", "Encoder_stage_1_layer_1", "LayerNorm", "Classifier"]]
    assert ipus_of(layout, "convnext.encoder.stages.1.downsampling_layer",
                   "convnext.encoder.stages.1.layers.0") == [0, 1]


def test_the_speech_models_list_their_convolutions_and_heads_as_layers():
    config = {"conv_dim": [8, 8, 8], "num_hidden_layers": 2}
    layout = layout_of("Wav2Vec2ForPreTraining", config, layers_per_ipu=[-1, -1])
    assert layout.layers_per_ipu == [4, 5]
    assert layout.blocks[0] == ["Conv 0 ", "Conv 1 ", "Conv 2 ", "Positional Embedding"]
    assert ipus_of(layout, "wav2vec2.feature_projection", "wav2vec2.encoder.layer_norm", "quantizer") == [0, 0, 1]
    stable = layout_of("HubertForCTC", dict(config, do_stable_layer_norm=True), layers_per_ipu=[5, 2])
    assert ipus_of(stable, "hubert.encoder.layer_norm", "lm_head") == [1, 1]


def test_ctc_models_place_no_block_on_one_ipu():
    layout = layout_of("HubertForCTC", {"conv_dim": [8, 8], "num_hidden_layers": 2})
    assert (layout.blocks, layout.layers_per_ipu) == ([[]], [6])
    assert layout_of("Wav2Vec2ForPreTraining", {"conv_dim": [8], "num_hidden_layers": 1}).blocks[0][0] == "Conv 0 "


def test_hubert_classifies_with_unnamed_blocks():
    layout = layout_of("HubertForSequenceClassification", {"num_hidden_layers": 2}, layers_per_ipu=[2, 0, 0])
    assert layout.blocks == [[None, None, None, "Encoder0", "Encoder1"], [], [None, None]]
    assert ipus_of(layout, "hubert.encoder.pos_conv_embed", "projector") == [0, 2]


def test_lxmert_places_its_layers_on_ipus_0_to_3_whatever_the_config_says():
    config = {"l_layers": 2, "r_layers": 1, "x_layers": 1}
    layout = layout_of("LxmertForQuestionAnswering", config, layers_per_ipu=[7, 7, 7, 7, 7])
    assert layout.layers_per_ipu == [0, 2, 1, 1, 0]
    assert layout.blocks[3] == ["Cross modality layer0", "Pooler", "Head"]
    with pytest.raises(PlacementError) as raised:
        layout_of("LxmertForQuestionAnswering", config, layers_per_ipu=[-1, -1])
    assert raised.value.setting == "ipus_per_replica"
    assert 'places its block "Visual layer0" on IPU 2, and the pipeline has 2 IPUs' in raised.value.problem


def test_the_inference_build_reads_the_inference_settings():
    layout = layout_of("BertForQuestionAnswering", for_inference=True, layers_per_ipu=[-1, -1],
                       inference_layers_per_ipu=[4, 4, 4])
    assert layout.layers_per_ipu == [4, 4, 4]
    assert ipus_of(layout, "qa_outputs") == [2]


def test_a_generation_build_runs_encoder_and_decoder_as_executors_of_their_own():
    config = {"num_layers": 2}
    kwargs = {"inference_parallelize_kwargs": {"for_generation": True}}
    layout = layout_of("T5ForConditionalGeneration", config, for_inference=True, layers_per_ipu=[1, 1, 1, 1], **kwargs)
    assert [tuple(executor) for executor in layout.executors] == [("encoder", 0, 2), ("decoder", 2, 2)]
    assert [layout.claims[name]["shared"].ipu for name in ("encoder", "decoder")] == [0, 2]
    assert layout.claims["decoder"]["lm_head"].ipu == 2
    assert "decoder.block.0" not in layout.claims["encoder"] and "encoder.block.0" not in layout.claims["decoder"]
    assert layout.blocks == [["Embedding", "Encoder0"], ["Encoder1", "Encoder Stack Final LayerNorm"],
                             ["Embedding", "Decoder0", "LM Head Output"],
                             ["Decoder1", "Decoder Stack Final LayerNorm"]]
    assert layout_of("MT5ForConditionalGeneration", config, True, layers_per_ipu=[2, 1, 1], **kwargs).claims[
        "decoder"]["lm_head"].ipu == 2


def test_parallelize_keyword_arguments_are_those_upstream_takes():
    with pytest.raises(PlacementError) as raised:
        layout_of("BertForMaskedLM", parallelize_kwargs={"for_generation": True})
    assert raised.value.setting == "parallelize_kwargs"
    assert raised.value.problem == "BertForMaskedLM's parallelize() takes no keyword argument, not `for_generation`"
    with pytest.raises(PlacementError, match="takes `for_generation`, not `use_cache`"):
        layout_of("MT5ForConditionalGeneration", parallelize_kwargs={"use_cache": True})
    assert layout_of("T5ForConditionalGeneration", parallelize_kwargs={"use_cache": True, "max_length": 4}).ipus == 1
    with pytest.raises(PlacementError, match="use_group_quantized_linears"):
        layout_of("WhisperForConditionalGeneration",
                  inference_parallelize_kwargs={"use_group_quantized_linears": True}, for_inference=True)


def test_a_null_embedding_factor_fails_where_parallelize_compares_it_with_1():
    with pytest.raises(PlacementError) as raised:
        layout_of("GPT2LMHeadModel", layers_per_ipu=[-1, -1], serialized_embedding_splits_per_ipu=[1, 1])
    assert raised.value.setting == "embedding_serialization_factor"
    # MPNetModel and the models of other families never read it
    assert layout_of("MPNetModel", layers_per_ipu=[-1, -1], serialized_embedding_splits_per_ipu=[1, 1]).ipus == 2
    assert layout_of("ViTForImageClassification", layers_per_ipu=[-1, -1],
                     serialized_embedding_splits_per_ipu=[1, 1]).ipus == 2


MT5_SPLIT_BLOCKS = [
    ({"serialized_embedding_splits_per_ipu": [2, 2, 0, 0]},
     [["Embedding-0-1", "Encoder0"], ["Embedding-2-3", "Encoder1", "Encoder Stack Final LayerNorm"], ["Decoder0"],
      ["Decoder1", "Decoder Stack Final LayerNorm", "LM Head Output"]],
     {"shared.split_embeddings.0": 0, "shared.split_embeddings.1": 0, "shared.split_embeddings.2": 1,
      "shared.split_embeddings.3": 1, "lm_head": 3}),
    ({"serialized_embedding_splits_per_ipu": [1, 0, 0, 0], "projection_serialization_factor": 4},
     [["Embedding", "Encoder0"], ["Encoder1", "Encoder Stack Final LayerNorm"], ["Decoder0"],
      ["Decoder1", "Decoder Stack Final LayerNorm", "LM Head Output"]],
     {"shared": 0, "lm_head": 3}),  # one split: no SerializedEmbedding; a factor without splits: one block
    ({"serialized_projection_splits_per_ipu": [0, 0, 1, 3]},
     [["Embedding", "Encoder0"], ["Encoder1", "Encoder Stack Final LayerNorm"], ["Decoder0", "Linear-0"],
      ["Decoder1", "Decoder Stack Final LayerNorm", "Linear-1-3"]],
     {"lm_head.split_linear_layers.0": 2, "lm_head.split_linear_layers.1": 3, "lm_head.split_linear_layers.2": 3,
      "lm_head.split_linear_layers.3": 3,
      "lm_head": 3}),
    ({"serialized_projection_splits_per_ipu": [0, 0, 1, 0]},  # one split: the head whole, on the last IPU
     [["Embedding", "Encoder0"], ["Encoder1", "Encoder Stack Final LayerNorm"], ["Decoder0"],
      ["Decoder1", "Decoder Stack Final LayerNorm", "LM Head Output"]],
     {"shared": 0, "lm_head": 3}),
]


@pytest.mark.parametrize("splits, blocks, ipus", MT5_SPLIT_BLOCKS)
def test_mt5_s_split_weights_begin_a_block_on_each_ipu_of_their_share(splits, blocks, ipus):
    layout = layout_of("MT5ForConditionalGeneration", {"num_layers": 2}, layers_per_ipu=[1, 1, 1, 1], **splits)
    assert layout.blocks == blocks
    claims = layout.claims["model"]
    assert {path: claims[path].ipu for path in ipus} == ipus
    assert not any(path.startswith(("shared.split", "lm_head.split")) and path not in ipus for path in claims)


def test_a_tied_embedding_split_in_one_part_is_not_split():
    layout = layout_of("MT5ForConditionalGeneration", {"num_layers": 1, "tie_word_embeddings": True},
                       layers_per_ipu=[-1, -1], serialized_embedding_splits_per_ipu=[1, 0])
    assert layout.blocks == [["Embedding", "Encoder0", "Encoder Stack Final LayerNorm", "LM Head Output"],
                             ["Decoder0", "Decoder Stack Final LayerNorm"]]


def test_the_inference_build_splits_with_the_inference_settings():
    layout = layout_of("MT5ForConditionalGeneration", {"num_layers": 2}, True, layers_per_ipu=[1, 1, 1, 1],
                       serialized_embedding_splits_per_ipu=[2, 2, 0, 0], inference_layers_per_ipu=[2, 2],
                       inference_serialized_projection_splits_per_ipu=[1, 1])
    assert layout.blocks == [["Embedding", "Encoder0", "Encoder1", "Encoder Stack Final LayerNorm", "Linear-0"],
                             ["Decoder0", "Decoder1", "Decoder Stack Final LayerNorm", "Linear-1"]]


def test_a_generation_build_gives_the_decoder_its_share_of_the_projection():
    layout = layout_of("MT5ForConditionalGeneration", {"num_layers": 2}, True, inference_layers_per_ipu=[1, 1, 1, 1],
                       inference_serialized_embedding_splits_per_ipu=[1, 1, 0, 0],
                       inference_serialized_projection_splits_per_ipu=[0, 0, 1, 1], **T5_GENERATION)
    assert [executor.name for executor in layout.executors] == ["encoder", "decoder"]
    assert {path: claim.ipu for path, claim in layout.claims["encoder"].items() if "split" in path} == {
        "shared.split_embeddings.0": 0, "shared.split_embeddings.1": 1}
    # the decoder numbers its IPUs from its own first, and reads the whole list of the embedding's splits
    assert {path: claim.ipu for path, claim in layout.claims["decoder"].items() if "split" in path} == {
        "shared.split_embeddings.0": 2, "shared.split_embeddings.1": 3, "lm_head.split_linear_layers.0": 2,
        "lm_head.split_linear_layers.1": 3}


def test_parallelized_parameters_hold_each_part_of_a_split_weight():
    row = ARCHITECTURES["MT5ForConditionalGeneration"]
    config = row.config({"vocab_size": 64, "d_model": 16, "num_layers": 1, "num_decoder_layers": 1})
    parameters = from_config(row, config)
    split = parallelized("m", row, parameters, settings(layers_per_ipu=[1, 1], serialized_embedding_splits_per_ipu=[
        3, 1], serialized_projection_splits_per_ipu=[0, 2]))
    assert {name: shape for name, shape in split.shapes.items() if "split" in name} == {
        **{f"shared.split_embeddings.{part}.weight": (16, 16) for part in range(4)},
        "lm_head.split_linear_layers.0.weight": (32, 16), "lm_head.split_linear_layers.1.weight": (32, 16)}
    assert "shared.weight" not in split.shapes and "lm_head.weight" not in split.shapes
    assert "shared.weight" not in split.aliases
    assert sum(split.elements(name) for name in split.shapes) == sum(parameters.elements(name)
                                                                    for name in parameters.shapes)
    # the inference build reads the inference settings
    whole = parallelized("m", row, parameters, settings(layers_per_ipu=[1, 1], serialized_embedding_splits_per_ipu=[
        3, 1]), for_inference=True)
    assert whole.shapes == parameters.shapes


WHISPER = {"encoder_layers": 2, "decoder_layers": 2}
T5_GENERATION = {"inference_parallelize_kwargs": {"for_generation": True}}


@pytest.mark.parametrize("refused, message", [
    (lambda: encoder_decoder_cut("t5", [4], 2, "inference_layers_per_ipu"),
     "Cannot place t5 with `inference_ipus_per_replica`: a generation build runs the encoder and the decoder on IPUs "
     "of their own, so it needs at least 2 IPUs."),
    (lambda: layout_of("T5ForConditionalGeneration", {"num_layers": 2}, True, inference_layers_per_ipu=[1, 3],
                       **T5_GENERATION),
     "Cannot place m with `inference_layers_per_ipu`: [1, 3] does not end the encoder's 2 layers on IPU 1, 2, 4, 8, "
     "... : a generation build runs the encoder on its own IPUs, a power of two of them, and the decoder on the "
     "others."),
    (lambda: layout_of("WhisperForConditionalGeneration", WHISPER, layers_per_ipu=[2, 2],
                       serialized_projection_splits_per_ipu=[1, 1]),
     "Cannot place m with `serialized_projection_splits_per_ipu`: [1, 1] splits it over several IPUs, and the model "
     "keeps all its splits on one."),
    (lambda: layout_of("BertForMaskedLM", parallelize_kwargs={"for_generation": True}),
     "Cannot place m with `parallelize_kwargs`: BertForMaskedLM's parallelize() takes no keyword argument, not "
     "`for_generation`."),
    (lambda: layout_of("WhisperForConditionalGeneration", inference_parallelize_kwargs={
        "use_group_quantized_linears": True}, for_inference=True),
     "Cannot place m with `inference_parallelize_kwargs`: `use_group_quantized_linears` packs the weights into groups "
     "of 4-bit numbers, which the placement does not size."),
    (lambda: layout_of("GPT2LMHeadModel", layers_per_ipu=[-1, -1], serialized_embedding_splits_per_ipu=[1, 1]),
     "Cannot place m with `embedding_serialization_factor`: it is null, as `serialized_embedding_splits_per_ipu` is "
     "given, and GPT2LMHeadModel's parallelize() compares it with 1, which fails."),
    (lambda: layout_of("MT5ForConditionalGeneration", {"tie_word_embeddings": True}, layers_per_ipu=[-1, -1],
                       serialized_embedding_splits_per_ipu=[1, 1]),
     "Cannot place m with `serialized_embedding_splits_per_ipu`: [1, 1] splits `shared`, and "
     "MT5ForConditionalGeneration's parallelize() splits no weight tied to another (`tie_word_embeddings` is true)."),
    (lambda: layout_of("MT5ForConditionalGeneration", {"tie_word_embeddings": True}, layers_per_ipu=[-1, -1],
                       embedding_serialization_factor=2),
     "Cannot place m with `embedding_serialization_factor`: 2 splits `shared`, and MT5ForConditionalGeneration's "
     "parallelize() splits no weight tied to another (`tie_word_embeddings` is true)."),
    (lambda: layout_of("MT5ForConditionalGeneration", {"tie_word_embeddings": True}, True,
                       inference_layers_per_ipu=[-1, -1], inference_serialized_projection_splits_per_ipu=[0, 1]),
     "Cannot place m with `inference_serialized_projection_splits_per_ipu`: [0, 1] splits `lm_head`, and "
     "MT5ForConditionalGeneration's parallelize() splits no weight tied to another (`tie_word_embeddings` is true)."),
    (lambda: layout_of("MT5ForConditionalGeneration", {"num_layers": 2}, True, inference_layers_per_ipu=[1, 1, 1, 1],
                       inference_serialized_embedding_splits_per_ipu=[0, 1, 1, 0], **T5_GENERATION),
     "Cannot place m with `inference_serialized_embedding_splits_per_ipu`: [0, 1, 1, 0] puts splits of `shared` "
     "outside the encoder's IPUs 0-1, where a generation build keeps them all."),
    (lambda: layout_of("MT5ForConditionalGeneration", {"num_layers": 2}, True, inference_layers_per_ipu=[1, 1, 1, 1],
                       inference_serialized_projection_splits_per_ipu=[0, 1, 1, 0], **T5_GENERATION),
     "Cannot place m with `inference_serialized_projection_splits_per_ipu`: [0, 1, 1, 0] puts splits of `lm_head` "
     "outside the decoder's IPUs 2-3, where a generation build keeps them all."),
    (lambda: parallelized("m", ARCHITECTURES["MT5ForConditionalGeneration"],
                          Parameters({"lm_head.weight": (6, 4)}, {}),
                          settings(layers_per_ipu=[1, 1], serialized_projection_splits_per_ipu=[2, 2])),
     "Cannot place m with `serialized_projection_splits_per_ipu`: 4 parts do not divide the 6 rows of "
     "`lm_head.weight`, which MT5ForConditionalGeneration's parallelize() splits into that many."),
    (lambda: layout_of("LxmertForQuestionAnswering", {"l_layers": 2, "r_layers": 1, "x_layers": 1},
                       layers_per_ipu=[-1, -1]),
     'Cannot place m with `ipus_per_replica`: LxmertForQuestionAnswering\'s parallelize() places its block '
     '"Visual layer0" on IPU 2, and the pipeline has 2 IPUs.'),
], ids=["two-ipus", "no-cut", "splits", "kwargs", "quantized", "null-factor", "mt5-tied-splits",
                            "mt5-tied-factor", "mt5-tied-projection", "mt5-embedding-on-decoder",
                            "mt5-projection-on-encoder", "mt5-projection-rows", "lxmert"])
def test_each_refusal_says_what_upstream_cannot_do_for_which_model(refused, message):
    with pytest.raises(PlacementError) as raised:
        refused()
    assert str(raised.value) == message


def test_keyword_arguments_upstream_takes_are_listed_in_its_order():
    row = ARCHITECTURES["GPT2LMHeadModel"]._replace(kwargs=("for_generation", "use_cache"))
    with pytest.raises(PlacementError) as raised:
        lay_out("m", row, row.config({}), settings(parallelize_kwargs={"max_length": 4}), False)
    assert raised.value.problem == ("GPT2LMHeadModel's parallelize() takes `for_generation`, `use_cache`, not "
                                    "`max_length`")


def test_a_conditional_encoder_runs_encoder_and_decoder_as_one_executor():
    kwargs = {"for_generation": True, "use_cond_encoder": True}
    layout = layout_of("WhisperForConditionalGeneration", WHISPER, True, inference_layers_per_ipu=[1, 1, 1, 1],
                       inference_parallelize_kwargs=kwargs)
    assert [tuple(executor) for executor in layout.executors] == [("model", 0, 4)]
    assert layout_of("BertForMaskedLM", layers_per_ipu=[-1, -1]).executors == (("model", 0, 2),)
    assert layout_of("LxmertForQuestionAnswering", layers_per_ipu=[-1] * 4).executors == (("model", 0, 4),)


@pytest.mark.parametrize("architecture, config, ipu_settings, for_inference, cut, expected", [
    # a block on an IPU of its own (the embeddings, a tied head), or on the IPU of a layer of the layer list
    ("BertForMaskedLM", {"num_hidden_layers": 3}, {"layers_per_ipu": [5, 5], "inference_layers_per_ipu": [-1] * 3},
     False, None, {"bert.embeddings.word_embeddings.weight": [("ipu", 0)],
            "bert.encoder.layer.2.output.dense.weight": [("layer", 2)],
            "cls.predictions.transform.dense.weight": [("ipu", 0)]}),
    # the module after the last block runs with the last layer
    ("GPT2LMHeadModel", {"n_layer": 3}, {"layers_per_ipu": [-1, -1]}, False, None,
     {"transformer.ln_f.weight": [("layer", 2)], "transformer.h.0.attn.c_attn.weight": [("layer", 0)]}),
    # layers parallelize() puts on IPUs of its own choosing
    ("LxmertForQuestionAnswering", {"l_layers": 2, "r_layers": 1, "x_layers": 1}, {"layers_per_ipu": [-1] * 4}, False,
     None, {"lxmert.encoder.layer.1.attention.self.query.weight": [("ipu", 1)],
            "lxmert.encoder.r_layers.0.attention.self.query.weight": [("ipu", 2)],
            "answer_head.logit_fc.0.weight": [("ipu", 3)]}),
    # a generation build whose encoder takes `cut` IPUs, whatever the config's split cuts at
    ("T5ForConditionalGeneration", {"num_layers": 2}, dict(T5_GENERATION, inference_layers_per_ipu=[1, 1, 1, 1]), True,
     1, {"shared.weight": [("ipu", 0), ("ipu", 1)], "encoder.block.1.layer.0.SelfAttention.q.weight": [("layer", 1)],
         "decoder.block.0.layer.0.SelfAttention.q.weight": [("layer", 2)], "lm_head.weight": [("ipu", 1)],
         "decoder.final_layer_norm.weight": [("layer", 3)]}),
    ("WhisperForConditionalGeneration", WHISPER,
     {"layers_per_ipu": [-1, -1], "serialized_projection_splits_per_ipu": [0, 2]}, False, None,
     {"proj_out.weight": [("ipu", 1)], "model.decoder.layers.0.fc1.weight": [("layer", 2)]}),
    ("WhisperForConditionalGeneration", WHISPER, {"layers_per_ipu": [-1, -1]}, False, None,
     {"proj_out.weight": [("layer", 2)]}),
])
def test_each_parameter_s_ipu_is_fixed_or_that_of_a_layer(architecture, config, ipu_settings, for_inference, cut,
                                                          expected):
    row = ARCHITECTURES[architecture]
    found = origins("m", row, row.config(config), settings(**ipu_settings), for_inference, cut, list(expected), {})
    assert found == expected


def test_the_origins_of_a_split_upstream_refuses_name_the_model():
    row = ARCHITECTURES["LxmertForQuestionAnswering"]
    with pytest.raises(PlacementError, match="^Cannot place lxmert with `ipus_per_replica`"):
        origins("lxmert", row, row.config({}), settings(layers_per_ipu=[-1, -1]), False, None, [], {})


def test_a_parameter_is_where_it_is_first_used_not_on_the_lowest_ipu():
    claims = {"model": {"head": Claim(0, 1, ("ipu", 1)), "embedding": Claim(1, 0, ("ipu", 0))}}
    layout = Layout(2, [0, 0], [], [[], []], claims, (("model", 0, 2),))
    assert first_uses(layout, ["head.weight"], {"head.weight": ["embedding.weight"]}) == {
        "head.weight": [claims["model"]["head"]]}


def test_each_of_the_45_architectures_has_a_row():
    assert len(ARCHITECTURES) == 45
    assert sorted(ARCHITECTURES) == list(ARCHITECTURES)
    assert all(name == row.name for name, row in ARCHITECTURES.items())


# --- the parameters, named as transformers loads them ---------------------------------------------------------


def test_a_bare_model_s_checkpoint_loads_under_the_base_prefix_and_the_other_way():
    row = ARCHITECTURES["BertForQuestionAnswering"]
    assert loaded_names(row, ["embeddings.x.weight", "qa_outputs.bias"]) == {
        "embeddings.x.weight": "bert.embeddings.x.weight", "qa_outputs.bias": "qa_outputs.bias"}
    assert loaded_names(ARCHITECTURES["BertModel"], ["bert.embeddings.x.weight", "cls.y"]) == {
        "bert.embeddings.x.weight": "embeddings.x.weight", "cls.y": "cls.y"}
    assert loaded_names(row, ["bert.a", "qa_outputs.bias"]) == {"bert.a": "bert.a",
                                                                "qa_outputs.bias": "qa_outputs.bias"}


def test_old_and_new_names_load_as_transformers_4_29_names_them():
    assert loaded_names(ARCHITECTURES["BertModel"], ["encoder.LayerNorm.gamma", "encoder.LayerNorm.beta",
                                                     "gamma_x.weight"]) == {
        "encoder.LayerNorm.gamma": "encoder.LayerNorm.weight", "encoder.LayerNorm.beta": "encoder.LayerNorm.bias",
        "gamma_x.weight": "gamma_x.weight"}
    assert list(loaded_names(ARCHITECTURES["ViTForImageClassification"], [
        "vit.layers.0.attention.q_proj.weight", "vit.layers.0.attention.k_proj.bias",
        "vit.layers.1.attention.v_proj.weight", "vit.layers.0.attention.o_proj.weight", "vit.layers.0.mlp.fc1.bias",
        "vit.layers.0.mlp.fc2.weight", "vit.layers.3.layernorm_before.weight"]).values()) == [
        "vit.encoder.layer.0.attention.attention.query.weight", "vit.encoder.layer.0.attention.attention.key.bias",
        "vit.encoder.layer.1.attention.attention.value.weight", "vit.encoder.layer.0.attention.output.dense.weight",
        "vit.encoder.layer.0.intermediate.dense.bias", "vit.encoder.layer.0.output.dense.weight",
        "vit.encoder.layer.3.layernorm_before.weight"]
    assert list(loaded_names(ARCHITECTURES["HubertForCTC"], [
        "hubert.encoder.pos_conv_embed.conv.parametrizations.weight.original0",
        "hubert.encoder.pos_conv_embed.conv.parametrizations.weight.original1"]).values()) == [
        "hubert.encoder.pos_conv_embed.conv.weight_g", "hubert.encoder.pos_conv_embed.conv.weight_v"]


def test_buffers_and_tied_names_are_not_parameters_and_missing_heads_are_added():
    row = ARCHITECTURES["BertForMaskedLM"]
    config = row.config(TINY_BERT)
    tensors = {"bert.embeddings.position_ids": (1, 32), "bert.embeddings.token_type_ids": (1, 32),
               "bert.embeddings.word_embeddings.weight": (64, 16), "cls.predictions.decoder.weight": (64, 16),
               "cls.predictions.decoder.bias": (64,)}
    parameters = from_checkpoint("m", row, config, tensors)
    # a tied name is its parameter: the decoder's bias is the head's, its weight the word embeddings'
    assert parameters.shapes == {"bert.embeddings.word_embeddings.weight": (64, 16), "cls.predictions.bias": (64,)}
    assert parameters.aliases == {"bert.embeddings.word_embeddings.weight": ["cls.predictions.decoder.weight"],
                                  "cls.predictions.bias": ["cls.predictions.decoder.bias"]}
    headless = from_checkpoint("m", row, config, {"bert.embeddings.word_embeddings.weight": (64, 16)})
    assert headless.shapes == {
        "bert.embeddings.word_embeddings.weight": (64, 16), "cls.predictions.transform.dense.weight": (16, 16),
        "cls.predictions.transform.dense.bias": (16,), "cls.predictions.transform.LayerNorm.weight": (16,),
        "cls.predictions.transform.LayerNorm.bias": (16,), "cls.predictions.bias": (64,)}
    untied = from_checkpoint("m", row, row.config(dict(TINY_BERT, tie_word_embeddings=False)), {})
    assert untied.shapes["cls.predictions.decoder.weight"] == (64, 16)


def test_gpt2_s_attention_masks_are_buffers_and_its_attention_parameters_are_not():
    row = ARCHITECTURES["GPT2LMHeadModel"]
    shapes = from_checkpoint("m", row, row.config({}), {"h.0.attn.bias": (1, 1, 8, 8), "h.0.attn.masked_bias": (),
                                                        "h.0.attn.c_attn.bias": (48,), "wte.weight": (64, 16)}).shapes
    assert shapes == {"transformer.h.0.attn.c_attn.bias": (48,), "transformer.wte.weight": (64, 16)}


def test_a_tied_parameter_of_a_config_s_model_is_counted_once_as_the_weight_it_is_tied_to():
    row = ARCHITECTURES["GPT2LMHeadModel"]
    tied = from_config(row, row.config({"n_layer": 1}))
    assert (tied.shapes["transformer.wte.weight"], "lm_head.weight" in tied.shapes) == ((50257, 768), False)
    assert tied.aliases == {"transformer.wte.weight": ["lm_head.weight"]}
    untied = from_config(row, row.config({"n_layer": 1, "tie_word_embeddings": False}))
    assert (untied.shapes["lm_head.weight"], untied.aliases) == ((50257, 768), {})


def test_gpt2_pads_its_vocabulary_to_a_multiple_of_the_serialization_factor():
    row = ARCHITECTURES["GPT2ForSequenceClassification"]
    parameters = Parameters({"transformer.wte.weight": (63, 16), "score.weight": (2, 16)}, {})
    assert parallelized("m", row, parameters, settings(embedding_serialization_factor=4)).shapes == {
        "transformer.wte.weight": (64, 16), "score.weight": (2, 16)}
    assert parallelized("m", row, parameters, settings()).shapes["transformer.wte.weight"] == (63, 16)
    assert parallelized("m", row, parameters, settings(embedding_serialization_factor=2)).shapes[
        "transformer.wte.weight"] == (64, 16)


def test_an_embedding_split_into_parts_must_divide():
    row = ARCHITECTURES["BertForSequenceClassification"]
    parameters = Parameters({"bert.embeddings.word_embeddings.weight": (63, 16)}, {})
    with pytest.raises(PlacementError) as raised:
        parallelized("bert", row, parameters, settings(embedding_serialization_factor=2))
    assert (raised.value.setting, raised.value.model) == ("embedding_serialization_factor", "bert")
    assert raised.value.problem == ("2 does not divide the 63 rows of `bert.embeddings.word_embeddings.weight`, "
                                    "which BertForSequenceClassification's parallelize() splits into that many parts")
    serialized = parallelized("bert", row, parameters, settings(embedding_serialization_factor=3))
    assert serialized.shapes == parameters.shapes
    null_factor = settings(layers_per_ipu=[-1, -1], serialized_embedding_splits_per_ipu=[1, 1])
    assert null_factor["embedding_serialization_factor"] is None
    assert parallelized("bert", row, parameters, null_factor).shapes == parameters.shapes  # null: not serialized
    # the masked LM's head is serialized instead, with no such check
    mlm = ARCHITECTURES["BertForMaskedLM"]
    serialized = parallelized("bert", mlm, parameters, settings(embedding_serialization_factor=2))
    assert serialized.shapes == parameters.shapes


def test_the_pipelined_mpnet_mlm_keeps_a_copy_of_its_word_embeddings_unless_serialized():
    row = ARCHITECTURES["MPNetForMaskedLM"]
    parameters = from_checkpoint("m", row, row.config({}), {"mpnet.embeddings.word_embeddings.weight": (64, 16)})
    copied = parallelized("m", row, parameters, settings())
    assert copied.shapes["lm_head.decoder.weight"] == (64, 16)
    assert "lm_head.decoder.weight" not in copied.aliases["mpnet.embeddings.word_embeddings.weight"]
    retied = parallelized("m", row, parameters, settings(embedding_serialization_factor=2))
    assert "lm_head.decoder.weight" not in retied.shapes
    word_embeddings = "mpnet.embeddings.word_embeddings.weight"
    aliased = Parameters({word_embeddings: (64, 16)}, {word_embeddings: ["lm_head.decoder.weight", "other.weight"]})
    assert parallelized("m", row, aliased, settings()).aliases == {word_embeddings: ["other.weight"]}
    assert parallelized("m", row, Parameters({word_embeddings: (64, 16)}, {}), settings()).aliases == {
        word_embeddings: []}


@pytest.mark.parametrize("architecture, config, name, frozen", [
    ("Wav2Vec2ForCTC", {}, "wav2vec2.feature_extractor.conv_layers.0.conv.weight", True),
    ("Wav2Vec2ForCTC", {}, "wav2vec2.feature_extractor", True),
    ("Wav2Vec2ForCTC", {}, "wav2vec2.feature_projection.projection.weight", False),
    ("Wav2Vec2ForCTC", {}, "wav2vec2.feature_extractor_head.weight", False),
    ("DistilBertForMaskedLM", {"sinusoidal_pos_embds": True}, "distilbert.embeddings.position_embeddings.weight",
     True),
    ("DistilBertForMaskedLM", {}, "distilbert.embeddings.position_embeddings.weight", False),
])
def test_a_parameter_is_frozen_in_a_frozen_module_where_its_condition_holds(architecture, config, name, frozen):
    row = ARCHITECTURES[architecture]
    assert _frozen(row, row.config(config), name) is frozen


# --- memory -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("values, for_inference, fp32, expected", [
    ({}, False, False, ("training", 2, 0, 6)),
    ({"gradient_accumulation_steps": 8}, False, False, ("training", 2, 2, 6)),
    ({"gradient_accumulation_steps": 2}, False, False, ("training", 2, 2, 6)),
    ({"gradient_accumulation_steps": 8}, False, True, ("training", 4, 4, 8)),
    ({"gradient_accumulation_steps": 8}, True, False, ("inference", 2, 0, 0)),
    ({}, True, True, ("inference", 4, 0, 0)),
])
def test_bytes_per_parameter_are_iputrainer_s(values, for_inference, fp32, expected):
    model = memory_model(settings(**values), for_inference, fp32)
    assert (model.build, model.weight_bytes, model.accumulator_bytes, model.optimizer_bytes) == expected


@pytest.mark.parametrize("values, storage", [
    ({}, {"weights": ON_CHIP, "accumulators": ON_CHIP, "optimizer": ON_CHIP}),
    ({"optimizer_state_offchip": True}, {"weights": ON_CHIP, "accumulators": ON_CHIP, "optimizer": Storage(False, 1)}),
    ({"optimizer_state_offchip": True, "replicated_tensor_sharding": True},  # one replica shards nothing
     {"weights": ON_CHIP, "accumulators": ON_CHIP, "optimizer": Storage(False, 1)}),
    ({"replicated_tensor_sharding": True, "replication_factor": 4},
     {"weights": ON_CHIP, "accumulators": ON_CHIP, "optimizer": Storage(True, 4)}),
    ({"optimizer_state_offchip": None, "optimizer_location": {"useOnChipStorage": False,
                                                               "useReplicatedTensorSharding": True},
      "replication_factor": 2}, {"weights": ON_CHIP, "accumulators": ON_CHIP, "optimizer": Storage(False, 2)}),
    ({"weight_location": {"useOnChipStorage": False}, "accumulator_location": {"useOnChipStorage": False}},
     {"weights": Storage(False, 1), "accumulators": Storage(False, 1), "optimizer": ON_CHIP}),
])
def test_each_kind_of_tensor_is_kept_where_the_build_s_options_keep_it(values, storage):
    assert memory_model(settings(**values), False, False).storage == storage


def test_inference_storage_is_read_off_the_inference_build():
    values = settings(replication_factor=4, inference_replication_factor=1, replicated_tensor_sharding=True,
                      weight_location={"useOnChipStorage": False, "useReplicatedTensorSharding": True})
    assert memory_model(values, True, False).storage["weights"] == Storage(False, 1)
    assert memory_model(values, False, False).storage["weights"] == Storage(False, 4)


def test_the_bytes_of_trained_and_frozen_parameters_on_chip_and_in_streaming_memory():
    storage = {"weights": ON_CHIP, "accumulators": ON_CHIP, "optimizer": Storage(False, 3)}
    model = MemoryModel("training", 2, 2, 6, storage)
    assert model.bytes(100, 0) == (400, 200)
    assert model.bytes(100, 10) == (420, 200)  # a frozen parameter has no accumulator and no optimizer state
    assert model.bytes(101, 0) == (404, 202)  # a share rounds up
    assert MemoryModel("inference", 4, 0, 0, storage).bytes(100, 10) == (440, 0)
    off_chip = Storage(False, 4)
    streamed = MemoryModel("training", 2, 2, 6, {"weights": off_chip, "accumulators": ON_CHIP, "optimizer": off_chip})
    assert streamed.bytes(101, 0) == (202, 51 + 152)  # each kind's share rounds up to a whole byte


def test_the_assumptions_say_what_is_counted_and_what_comes_on_top():
    on_top = "activations, pipeline stashes, code and exchange buffers come on top"
    assert memory_model(settings(gradient_accumulation_steps=4), False, False).describe() == (
        f"training: weights fp16, gradient accumulators fp16, AdamW/LAMB state 6 bytes a parameter; {on_top}")
    assert memory_model(settings(optimizer_state_offchip=True, replicated_tensor_sharding=True, replication_factor=2),
                        False, True).describe() == (
        "training: weights fp32, AdamW/LAMB state 8 bytes a parameter in Streaming Memory, sharded over 2 replicas; "
        f"{on_top}")
    assert memory_model(settings(), True, False).describe() == f"inference: weights fp16; {on_top}"


def test_an_ipu_holds_1472_tiles_of_624_kib():
    assert IPU_MEMORY_BYTES == 940_572_672


# --- a placement: data, text, immutability ---------------------------------------------------------------------------


def test_a_placement_s_data_has_exactly_the_keys_of_its_json(tmp_path):
    placement = PlainIPUConfig(layers_per_ipu=[1, 2], gradient_accumulation_steps=5).placement(tiny_bert(tmp_path))
    data = placement.to_dict()
    assert list(data) == ["model", "architecture", "build", "layers_per_ipu", "micro_batch_size", "sequence_length",
                          "decoder_sequence_length", "ipu_memory_bytes", "fits", "problems", "stages",
                          "pipeline_cycles", "pipeline_efficiency", "bottleneck_ipu", "ipus"]
    assert [list(ipu) for ipu in data["ipus"]] == [
        ["ipu", "blocks", "layers", "parameters", "on_chip_bytes", "streaming_bytes", "weights_bytes",
         "gradient_accumulator_bytes", "optimizer_state_bytes", "activation_bytes", "stash_bytes", "recompute_bytes",
         "forward_flops", "backward_flops", "recompute_flops"]] * 2
    uncounted = dict.fromkeys(["activation_bytes", "stash_bytes", "recompute_bytes", "forward_flops", "backward_flops",
                               "recompute_flops"])
    assert data == {
        "model": str(tmp_path / "bert"), "architecture": "BertForMaskedLM", "build": "training",
        "layers_per_ipu": [1, 2], "micro_batch_size": None, "sequence_length": None, "decoder_sequence_length": None,
        "ipu_memory_bytes": 940572672, "fits": True, "problems": [],
        "stages": [{"ipu": 0, "blocks": ["Embedding", "Encoder0"], "stash_depth": 5},
                   {"ipu": 1, "blocks": ["Encoder1", "Encoder2"], "stash_depth": 3},
                   {"ipu": 0, "blocks": ["Classifier"], "stash_depth": 1}],
        "pipeline_cycles": 5 + 4, "pipeline_efficiency": 5 / 9, "bottleneck_ipu": None,
        "ipus": [{"ipu": 0, "blocks": ["Embedding", "Encoder0", "Classifier"], "layers": [0],
                  "parameters": 1600 + 2224 + 368, "on_chip_bytes": 10 * 4192, "streaming_bytes": 0,
                  "weights_bytes": 2 * 4192, "gradient_accumulator_bytes": 2 * 4192, "optimizer_state_bytes": 6 * 4192,
                  **uncounted},
                 {"ipu": 1, "blocks": ["Encoder1", "Encoder2"], "layers": [1, 2], "parameters": 2 * 2224,
                  "on_chip_bytes": 10 * 2 * 2224, "streaming_bytes": 0, "weights_bytes": 2 * 2 * 2224,
                  "gradient_accumulator_bytes": 2 * 2 * 2224, "optimizer_state_bytes": 6 * 2 * 2224, **uncounted}]}
    assert json.loads(placement.to_json_string()) == data and placement.to_json_string().endswith("}\n")


def test_the_json_is_indented_by_two_and_ends_its_line(tmp_path):
    placement = PlainIPUConfig(layers_per_ipu=[1, 2]).placement(tiny_bert(tmp_path))
    assert placement.to_json_string() == json.dumps(placement.to_dict(), indent=2) + "\n"


def test_a_placement_can_be_copied_and_its_copy_balanced(tmp_path):
    placement = PlainIPUConfig(layers_per_ipu=[1, 2]).placement(tiny_bert(tmp_path))
    copied = copy.deepcopy(placement)
    assert copied.to_dict() == placement.to_dict()
    assert copied.balanced().to_dict() == placement.balanced().to_dict()


def test_a_placement_is_immutable(tmp_path):
    import optimum_ipu_ext

    placement = PlainIPUConfig().placement(tiny_bert(tmp_path))
    assert isinstance(placement, optimum_ipu_ext.Placement)
    with pytest.raises(dataclasses.FrozenInstanceError):
        placement.model = "other"
    with pytest.raises(dataclasses.FrozenInstanceError):
        placement.ipus[0].parameters = 0


def test_an_ipu_fits_up_to_its_last_byte(tmp_path):
    placement = PlainIPUConfig().placement(tiny_bert(tmp_path))
    exactly = dataclasses.replace(placement, ipu_memory_bytes=placement.ipus[0].on_chip_bytes)
    assert exactly.fits and not dataclasses.replace(exactly, ipu_memory_bytes=exactly.ipu_memory_bytes - 1).fits


def test_every_parameter_is_on_the_ipu_that_first_uses_it(tmp_path):
    ipus = PlainIPUConfig(layers_per_ipu=[0, 3]).placement(tiny_bert(tmp_path)).parameter_ipus()
    assert ipus["bert.embeddings.word_embeddings.weight"] == (0,)  # first used by the embedding, then by the head
    assert ipus["cls.predictions.bias"] == (0,)
    assert ipus["bert.encoder.layer.0.output.dense.weight"] == (1,)
    assert "bert.embeddings.position_ids" not in ipus and len(ipus) == 5 + 3 * 16 + 5
    other = PlainIPUConfig(layers_per_ipu=[0, 3]).placement(tiny_bert(tmp_path)).with_layers_per_ipu([1, 2])
    assert other.parameter_ipus()["bert.encoder.layer.0.output.dense.weight"] == (0,)  # of its own split


@pytest.mark.parametrize("names, compressed", [
    (["Embedding", "Encoder0", "Encoder1", "Encoder2"], "Embedding, Encoder0-2"),
    (["Encoder3"], "Encoder3"),
    (["Encoder1", "Encoder3", "Encoder4"], "Encoder1, Encoder3-4"),
    (["Conv 0 ", "Conv 1 ", "Positional Embedding", "Encoder 0 "], "Conv 0-1, Positional Embedding, Encoder 0"),
    (["Encoder_stage_0_layer_0", "Encoder_stage_1_layer_0", "Encoder_stage_1_layer_1"],
     "Encoder_stage_0_layer_0, Encoder_stage_1_layer_0-1"),
    ([None, None, "Encoder0"], "Encoder0, 2 unnamed"),
    ([None], "1 unnamed block"),
    ([None, None], "2 unnamed blocks"),
    ([], "-"),
])
def test_block_names_are_compressed(names, compressed):
    assert compress(names) == compressed


def test_a_bar_shows_the_share_of_the_ipu_s_memory():
    assert bar(0, 100) == "[....................]"
    assert bar(50, 100) == "[##########..........]"
    assert bar(250, 100) == "[####################]"


def test_the_text_has_one_row_per_ipu_a_verdict_and_the_assumptions(tmp_path):
    config = PlainIPUConfig(layers_per_ipu=[6, 6], gradient_accumulation_steps=8)
    placement = config.placement(bert_base(tmp_path / "bert"))
    assert str(placement) == f"""\
{tmp_path / 'bert'}: BertForMaskedLM, training, layers_per_ipu [6, 6]

IPU  Blocks                             Parameters  On chip, MiB of 897.0                  Streaming, MiB
  0  Embedding, Encoder0-5, Classifier  66,987,066      638.8 [##############......]  71%             0.0
  1  Encoder6-11                        42,527,232      405.6 [#########...........]  45%             0.0

Fits: every IPU's on-chip figure is within its 897.0 MiB.
Assumes training: weights fp16, gradient accumulators fp16, AdamW/LAMB state 6 bytes a parameter; activations, \
pipeline stashes, code and exchange buffers come on top."""


def tagged(text, name):
    return f"<{name}>{text}</{name}>"


def test_an_ipu_over_its_memory_is_named_in_red(tmp_path):
    config = PlainIPUConfig(layers_per_ipu=[6, 6], gradient_accumulation_steps=8)
    placement = config.placement(bert_base(tmp_path / "bert"))
    over = dataclasses.replace(placement, ipu_memory_bytes=600 << 20)
    text = render(over, tagged)
    assert "<red>  0</red>  Embedding, Encoder0-5" in text and "  1  Encoder6-11" in text
    assert text.splitlines()[-2] == "Does not fit: <red>IPU 0</red> (638.8 MiB) over the 600.0 MiB of an IPU."
    assert not over.fits


def test_the_model_and_the_headers_are_bold_and_an_ipu_full_to_its_last_byte_is_not_over(tmp_path):
    placement = PlainIPUConfig(layers_per_ipu=[12, 0]).placement(bert_base(tmp_path / "bert"))
    exactly = dataclasses.replace(placement, ipu_memory_bytes=placement.ipus[0].on_chip_bytes)
    lines = render(exactly, tagged).splitlines()
    assert lines[0] == f"<bold>{tmp_path / 'bert'}</bold>: BertForMaskedLM, training, layers_per_ipu [12, 0]"
    assert lines[2].startswith("<bold>IPU  Blocks") and lines[2].endswith("Streaming, MiB</bold>")
    assert [number for number, line in enumerate(lines) if "<" in line] == [0, 2]
    assert lines[-2].startswith("Fits: ")
    # the parameters are right-aligned under their header
    header, *rows = str(exactly).splitlines()[2:5]
    ends = [row.index(f"{ipu.parameters:,}") + len(f"{ipu.parameters:,}") for row, ipu in zip(rows, exactly.ipus)]
    assert ends == [header.index("Parameters") + len("Parameters")] * 2 and exactly.ipus[1].parameters == 0


def test_the_comparison_s_verdict_and_headers_are_bold(tmp_path):
    placement = PlainIPUConfig(layers_per_ipu=[6, 6]).placement(bert_base(tmp_path / "bert"))
    balanced = placement.balanced()
    lines = render_comparison(placement, balanced, tagged).splitlines()
    assert lines[0] == f"<bold>Balanced: layers_per_ipu {list(balanced.layers_per_ipu)} (the config's: [6, 6])</bold>"
    assert lines[1] == "<bold>IPU  Layers  Balanced  On chip, MiB  Balanced, MiB</bold>"
    assert not any("<" in line for line in lines[2:])
    assert render_comparison(balanced, balanced, tagged) == (
        "<bold>Balanced: the config's layers_per_ipu already makes the largest on-chip figure smallest.</bold>")


def test_the_balanced_split_is_shown_beside_the_config_s(tmp_path):
    config = PlainIPUConfig(layers_per_ipu=[6, 6], gradient_accumulation_steps=8)
    placement = config.placement(bert_base(tmp_path / "bert"))
    balanced = placement.balanced()
    # per layer 7,087,872 parameters, and on IPU 0 the embeddings and the head: 24,459,834
    assert balanced.layers_per_ipu == (4, 8)
    assert render_comparison(placement, balanced) == """\
Balanced: layers_per_ipu [4, 8] (the config's: [6, 6])
IPU  Layers  Balanced  On chip, MiB  Balanced, MiB
  0       6         4         638.8          503.6
  1       6         8         405.6          540.8
The largest on-chip figure: 540.8 MiB instead of 638.8 MiB; it fits."""
    assert render_comparison(balanced, balanced.balanced()) == (
        "Balanced: the config's layers_per_ipu already makes the largest on-chip figure smallest.")


# --- the model a placement is for ------------------------------------------------------------------------------------


def test_a_model_is_a_folder_its_config_json_a_dict_or_a_pretrained_config(tmp_path):
    from transformers import BertConfig

    folder = tiny_bert(tmp_path)
    config = PlainIPUConfig(layers_per_ipu=[-1, -1])
    from_folder = config.placement(folder)
    assert config.placement(os.path.join(folder, "config.json")).model == os.path.join(folder, "config.json")
    from_dict = config.placement(dict(TINY_BERT, _name_or_path="tiny"))
    from_config = config.placement(BertConfig(**{key: value for key, value in TINY_BERT.items()
                                                 if key != "transformers_version"}))
    assert (from_dict.model, from_config.model) == ("tiny", "bert")
    # the architecture the config names, sized by its formulas: the same parameters as the checkpoint's
    assert [ipu.parameters for ipu in from_dict.ipus] == [ipu.parameters for ipu in from_folder.ipus]
    assert [ipu.parameters for ipu in from_config.ipus] == [ipu.parameters for ipu in from_folder.ipus]


def test_an_inference_placement_needs_only_the_inference_split_to_fit(tmp_path):
    config = PlainIPUConfig(layers_per_ipu=[2, 2], inference_layers_per_ipu=[1, 2])
    assert config.placement(tiny_bert(tmp_path), for_inference=True).layers_per_ipu == (1, 2)
    with pytest.raises(PlacementError, match="places 4 layers and the model has 3"):
        config.placement(tiny_bert(tmp_path))


def test_refusals_of_a_placement_s_other_splits_and_parameters_name_the_model(tmp_path):
    folder = tiny_bert(tmp_path, vocab_size=63)
    placement = PlainIPUConfig(layers_per_ipu=[1, 2]).placement(folder)
    with pytest.raises(PlacementError) as raised:
        placement.with_layers_per_ipu([2, 2])
    assert str(raised.value) == (f"Cannot place {folder} with `layers_per_ipu`: [2, 2] places 4 layers and the model "
                                 "has 3.")
    with pytest.raises(PlacementError) as raised:
        PlainIPUConfig(embedding_serialization_factor=2).placement(folder,
                                                                   architecture="BertForSequenceClassification")
    assert str(raised.value).startswith(f"Cannot place {folder} with `embedding_serialization_factor`: 2 does not "
                                        "divide")


def test_the_same_placement_on_both_config_classes(tmp_path):
    folder = tiny_bert(tmp_path)
    values = {"layers_per_ipu": [1, 2], "gradient_accumulation_steps": 4}
    assert IPUConfig(**values).placement(folder).to_dict() == PlainIPUConfig(**values).placement(folder).to_dict()


@pytest.mark.parametrize("make", [IPUConfig, PlainIPUConfig])
def test_fp32_sizes_the_weights_and_the_first_moments_in_fp32(tmp_path, make):
    folder = tiny_bert(tmp_path)
    fp16, fp32 = (make().placement(folder, fp32=fp32).ipus[0] for fp32 in (False, True))
    assert fp16.parameters == fp32.parameters
    assert (fp16.on_chip_bytes, fp32.on_chip_bytes) == (8 * fp16.parameters, 12 * fp16.parameters)
    inference = make().placement(folder, fp32=True, for_inference=True).ipus[0]
    assert inference.on_chip_bytes == 4 * fp16.parameters


def test_another_architecture_counts_its_head_and_not_the_checkpoint_s(tmp_path):
    placement = PlainIPUConfig().placement(tiny_bert(tmp_path), architecture="BertForQuestionAnswering")
    assert placement.architecture == "BertForQuestionAnswering"
    assert placement.ipus[0].parameters == 1600 + 3 * 2224 + 2 * 16 + 2  # no MLM head, a QA head of 2 labels
    assert placement.ipus[0].blocks[-1] == "QA Outputs"


def test_a_checkpoint_lacking_a_pooler_gets_one_for_a_model_that_has_it(tmp_path):
    placement = PlainIPUConfig().placement(tiny_bert(tmp_path), architecture="BertForSequenceClassification")
    assert placement.ipus[0].parameters == 1600 + 3 * 2224 + (16 * 16 + 16) + (2 * 16 + 2)


BERT_CHOICES = ("give one of model type \"bert\"'s with --architecture (architecture=): BertForMaskedLM, "
                "BertForMultipleChoice, BertForPreTraining, BertForQuestionAnswering, BertForSequenceClassification, "
                "BertForTokenClassification, BertModel")
MODEL_TYPES = ("these have: bart, bert, convnext, deberta, distilbert, gpt2, groupbert, hubert, lxmert, mpnet, mt5, "
               "roberta, t5, vit, wav2vec2, whisper (ipu-config place --list-architectures)")


@pytest.mark.parametrize("architectures, model_type, problem", [
    (["BertForMaskedLM", "BertForPreTraining"], "bert",
     "its config.json names 2 architectures (BertForMaskedLM, BertForPreTraining); " + BERT_CHOICES),
    ([], "bert", "its config.json names no architecture; " + BERT_CHOICES),
    (["AlbertForMaskedLM"], "bert", "AlbertForMaskedLM has no pipelined version in optimum-graphcore 0.7.1; "
     + BERT_CHOICES),
    (["LlamaForCausalLM"], "llama", "LlamaForCausalLM has no pipelined version in optimum-graphcore 0.7.1; model type "
     "\"llama\" has no pipelined architecture; " + MODEL_TYPES),
    ([], "llama", "its config.json names no architecture; model type \"llama\" has no pipelined architecture; "
     + MODEL_TYPES),
])
def test_an_architecture_is_one_with_a_pipelined_version(tmp_path, architectures, model_type, problem):
    folder = tiny_bert(tmp_path)
    config_path = os.path.join(folder, "config.json")
    with open(config_path, "w") as writer:
        json.dump(dict(TINY_BERT, architectures=architectures, model_type=model_type), writer)
    with pytest.raises(ArchitectureError) as raised:
        PlainIPUConfig().placement(folder)
    assert (raised.value.problem, raised.value.model) == (problem, folder)
    assert len(problem.split("; ")[-1]) <= 250  # the choices: two lines of a terminal at most


def test_the_architecture_given_must_take_the_model_s_config(tmp_path):
    with pytest.raises(ArchitectureError) as raised:
        PlainIPUConfig().placement(tiny_bert(tmp_path), architecture="GPT2LMHeadModel")
    assert raised.value.problem == 'GPT2LMHeadModel takes a config of model type "gpt2", and this one is "bert"'
    with pytest.raises(ArchitectureError, match="BertForNothing has no pipelined version"):
        PlainIPUConfig().placement(tiny_bert(tmp_path), architecture="BertForNothing")


def test_a_folder_needs_its_config_json(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ModelFileError) as raised:
        PlainIPUConfig().placement(str(tmp_path / "empty"))
    assert raised.value.path == str(tmp_path / "empty" / "config.json")
    assert "no such file" in raised.value.problem
    (tmp_path / "empty" / "config.json").write_text("[1]")
    with pytest.raises(ModelFileError, match="expected a JSON object, found list"):
        PlainIPUConfig().placement(str(tmp_path / "empty"))
    (tmp_path / "empty" / "config.json").write_text("{")
    with pytest.raises(ModelFileError, match="not valid JSON"):
        PlainIPUConfig().placement(str(tmp_path / "empty"))


def test_a_wrong_split_is_found_before_any_weight_header_is_read(tmp_path):
    folder = tiny_bert(tmp_path)
    with open(os.path.join(folder, "model.safetensors"), "wb") as writer:
        writer.write(b"\x00")
    with pytest.raises(PlacementError) as raised:
        PlainIPUConfig(layers_per_ipu=[1, 1]).placement(folder)
    assert raised.value.problem == "[1, 1] places 2 layers and the model has 3"
    with pytest.raises(ModelFileError) as raised:
        PlainIPUConfig(layers_per_ipu=[1, 2]).placement(folder)
    assert raised.value.path == os.path.join(folder, "model.safetensors")


@pytest.mark.parametrize("architecture, field, value, needed", [
    ("BertForMaskedLM", "hidden_size", "768", "a whole number"),
    ("BertForMaskedLM", "num_hidden_layers", True, "a whole number"),
    ("BertForMaskedLM", "position_embedding_type", 1, "a string"),
    ("ViTForImageClassification", "image_size", [224], "a whole number or a list of two"),
    ("ViTForImageClassification", "patch_size", [16, "16"], "a whole number or a list of two"),
    ("Wav2Vec2ForCTC", "mask_time_prob", "0.05", "a number"),
    ("ConvNextForImageClassification", "layer_scale_init_value", False, "a number"),
    ("Wav2Vec2ForCTC", "conv_dim", [512, "512"], "a list of whole numbers"),
    ("Wav2Vec2ForCTC", "conv_kernel", 10, "a list of whole numbers"),
    ("DebertaForMaskedLM", "pos_att_type", ["p2c", 2], "a string or a list of strings"),
    ("BartForSequenceClassification", "num_labels", "3", "a whole number"),
])
def test_a_config_field_of_another_kind_than_its_default_is_refused(architecture, field, value, needed):
    values = {"model_type": ARCHITECTURES[architecture].model_types[0], "_name_or_path": "m",
              "relative_attention": True, field: value}
    with pytest.raises(PlacementError) as raised:
        PlainIPUConfig().placement(values, architecture=architecture)
    assert raised.value.problem == (f"its config.json gives `{field}` {as_json(value)}, and the placement needs "
                                    f"{needed}")
    assert str(raised.value).startswith("Cannot place m: its config.json gives")


@pytest.mark.parametrize("architecture, field, value", [
    ("ViTForImageClassification", "image_size", [224, 160]), ("ViTForImageClassification", "patch_size", (16, 8)),
    ("Wav2Vec2ForCTC", "conv_dim", (512,) * 7), ("Wav2Vec2ForCTC", "mask_time_prob", 0),
    ("DebertaForMaskedLM", "pos_att_type", "p2c|c2p"), ("BertForMaskedLM", "tie_word_embeddings", 0),
])
def test_a_config_field_of_its_default_s_kind_is_read(architecture, field, value):
    row = ARCHITECTURES[architecture]
    assert getattr(row.config({field: value}), field) == value


def test_the_number_of_labels_is_that_of_their_names_else_the_config_s_else_the_class_default():
    bart, bert = ARCHITECTURES["BartForSequenceClassification"], ARCHITECTURES["BertForSequenceClassification"]
    assert (bart.config({}).num_labels, bert.config({}).num_labels) == (3, 2)
    assert bert.config({"num_labels": 5}).num_labels == 5
    assert bert.config({"num_labels": 5, "id2label": {"0": "a"}}).num_labels == 1


def test_a_local_folder_has_no_revision(tmp_path):
    with pytest.raises(PlacementError, match="a local folder has no revisions"):
        PlainIPUConfig().placement(tiny_bert(tmp_path), revision="main")


def test_a_model_is_a_string_a_config_or_a_dict():
    with pytest.raises(TypeError, match="not int"):
        PlainIPUConfig().placement(7)


def test_a_local_folder_is_placed_without_torch_or_transformers(tmp_path):
    folder = tiny_bert(tmp_path)
    script = (
        "import sys\n"
        "from optimum_ipu_ext import PlainIPUConfig\n"
        f"placement = PlainIPUConfig(layers_per_ipu=[-1, -1]).placement({folder!r})\n"
        "placement.balanced(); str(placement)\n"
        "print(sorted(name for name in sys.modules if name.split('.')[0] in "
        "('torch', 'transformers', 'huggingface_hub', 'optimum', 'safetensors', 'numpy')))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout == "[]\n"


# --- sizes of full-size models, known by their config.json alone -----------------------------------------------------


def test_gpt2_large_has_774_million_parameters_on_the_meta_device():
    config = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_embd": 1280, "n_layer": 36,
              "n_head": 20, "n_positions": 1024, "vocab_size": 50257}
    placement = PlainIPUConfig(layers_per_ipu=[-1] * 4).placement(config)
    assert sum(ipu.parameters for ipu in placement.ipus) == 774_030_080
    assert placement.layers_per_ipu == (9, 9, 9, 9) and not placement.fits


def test_bert_base_has_the_parameters_of_its_checkpoint(tmp_path):
    from_config = PlainIPUConfig().placement(dict(BERT_BASE))
    from_checkpoint_ = PlainIPUConfig().placement(bert_base(tmp_path / "bert"))
    assert from_config.ipus[0].parameters == from_checkpoint_.ipus[0].parameters == 109_514_298
    assert PlainIPUConfig().placement(dict(BERT_BASE), architecture="BertModel").ipus[0].parameters == 109_482_240
