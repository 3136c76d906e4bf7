"""`placement/layout.py`: where a model's blocks, layers and modules go, every rule of optimum-graphcore's
`parallelize()` as the layout applies it (`layers_per_ipu` expanded as upstream expands it, the heads, the norms, the
generation builds' cut, the split weights, the keyword arguments), and where it refuses what upstream refuses.

The comparison with optimum-graphcore's own `parallelize()` is in test_upstream_placement.py (IPU-host stack)."""


import pytest

from optimum_ipu_ext import PlacementError
from optimum_ipu_ext.placement.estimate.layout import (
    Executor,
    FirstUse,
    ForwardStep,
    Layout,
    OnIPU,
    WithLayer,
    encoder_decoder_cut,
    expand_layers_per_ipu,
    first_uses,
    lay_out,
    origins,
    reference_layout,
)
from optimum_ipu_ext.placement.estimate.parameters import Parameters, from_config, parallelized
from optimum_ipu_ext.placement.models import ARCHITECTURES
from optimum_ipu_ext.placement.models.rules import MODEL
from support.placement_fixtures import settings


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


# --- the layout: blocks, layers and where modules run --------------------------------------------------------------


def ipus_of(layout, *paths):
    return [layout.uses["model"][path].ipu for path in paths]


def typed(origins):
    """`origins` (`{parameter: [origin, ...]}`) with each origin's kind, which a comparison of the NamedTuples
    alone does not tell apart (`OnIPU(1) == WithLayer(1)`)."""
    return {name: [(type(origin).__name__, *origin) for origin in found] for name, found in origins.items()}


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
    """Its `num_stages` stages: depths listed beyond them have no layers."""
    layout = layout_of("ConvNextForImageClassification", {"depths": [1, 2]}, layers_per_ipu=[1, 2])
    assert layout.blocks == [["Embedding", "Encoder_stage_0_layer_0"],
                             ["Encoder_stage_1_layer_0", "Encoder_stage_1_layer_1", "LayerNorm", "Classifier"]]
    assert ipus_of(layout, "convnext.encoder.stages.1.downsampling_layer",
                   "convnext.encoder.stages.1.layers.0") == [0, 1]
    assert layout_of("ConvNextForImageClassification", {"num_stages": 2, "depths": [1, 2, 3]},
                     layers_per_ipu=[1, 2]).blocks == layout.blocks


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
    assert [layout.uses[name]["shared"].ipu for name in ("encoder", "decoder")] == [0, 2]
    assert layout.uses["decoder"]["lm_head"].ipu == 2
    assert "decoder.block.0" not in layout.uses["encoder"] and "encoder.block.0" not in layout.uses["decoder"]
    assert layout.blocks == [["Embedding", "Encoder0"], ["Encoder1", "Encoder Stack Final LayerNorm"],
                             ["Embedding", "Decoder0", "LM Head Output"],
                             ["Decoder1", "Decoder Stack Final LayerNorm"]]
    assert layout_of("MT5ForConditionalGeneration", config, True, layers_per_ipu=[2, 1, 1], **kwargs).uses[
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


def test_the_forward_pass_runs_each_step_on_its_ipu_and_numbers_the_layers_across_their_groups():
    layout = layout_of("T5ForConditionalGeneration", {"num_layers": 2, "num_decoder_layers": 2},
                       layers_per_ipu=[1, 1, 1, 1])
    expected = tuple(ForwardStep(MODEL, *step) for step in [
        ("shared", True, "Embedding", 0, None, OnIPU(0)),
        ("encoder.block.0", True, "Encoder0", 0, 0, WithLayer(0)),
        ("encoder.block.1", True, "Encoder1", 1, 1, WithLayer(1)),
        ("encoder.final_layer_norm", True, "Encoder Stack Final LayerNorm", 1, None, WithLayer(1)),
        ("decoder.block.0", True, "Decoder0", 2, 2, WithLayer(2)),
        ("decoder.block.1", True, "Decoder1", 3, 3, WithLayer(3)),
        ("decoder.final_layer_norm", True, "Decoder Stack Final LayerNorm", 3, None, WithLayer(3)),
        ("lm_head", True, "LM Head Output", 0, None, OnIPU(0)),
    ])
    assert layout.forward == expected
    assert [type(step.origin) for step in layout.forward] == [type(step.origin) for step in expected]


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
    uses = layout.uses["model"]
    assert {path: uses[path].ipu for path in ipus} == ipus
    assert not any(path.startswith(("shared.split", "lm_head.split")) and path not in ipus for path in uses)
    paths = [step.path for step in layout.forward]
    assert len(paths) == len(set(paths))  # each part runs once, on its IPU


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
    assert {path: use.ipu for path, use in layout.uses["encoder"].items() if "split" in path} == {
        "shared.split_embeddings.0": 0, "shared.split_embeddings.1": 1}
    assert not any(path.startswith("lm_head") for path in layout.uses["encoder"])  # the decoder's alone
    # the decoder numbers its IPUs from its own first, and reads the whole list of the embedding's splits
    assert {path: use.ipu for path, use in layout.uses["decoder"].items() if "split" in path} == {
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
     False, None, {"bert.embeddings.word_embeddings.weight": [OnIPU(0)],
            "bert.encoder.layer.2.output.dense.weight": [WithLayer(2)],
            "cls.predictions.transform.dense.weight": [OnIPU(0)]}),
    # the module after the last block runs with the last layer
    ("GPT2LMHeadModel", {"n_layer": 3}, {"layers_per_ipu": [-1, -1]}, False, None,
     {"transformer.ln_f.weight": [WithLayer(2)], "transformer.h.0.attn.c_attn.weight": [WithLayer(0)]}),
    # layers parallelize() puts on IPUs of its own choosing
    ("LxmertForQuestionAnswering", {"l_layers": 2, "r_layers": 1, "x_layers": 1}, {"layers_per_ipu": [-1] * 4}, False,
     None, {"lxmert.encoder.layer.1.attention.self.query.weight": [OnIPU(1)],
            "lxmert.encoder.r_layers.0.attention.self.query.weight": [OnIPU(2)],
            "answer_head.logit_fc.0.weight": [OnIPU(3)]}),
    # a generation build whose encoder takes `cut` IPUs, whatever the config's split cuts at
    ("T5ForConditionalGeneration", {"num_layers": 2}, dict(T5_GENERATION, inference_layers_per_ipu=[1, 1, 1, 1]), True,
     1, {"shared.weight": [OnIPU(0), OnIPU(1)], "encoder.block.1.layer.0.SelfAttention.q.weight": [WithLayer(1)],
         "decoder.block.0.layer.0.SelfAttention.q.weight": [WithLayer(2)], "lm_head.weight": [OnIPU(1)],
         "decoder.final_layer_norm.weight": [WithLayer(3)]}),
    ("WhisperForConditionalGeneration", WHISPER,
     {"layers_per_ipu": [-1, -1], "serialized_projection_splits_per_ipu": [0, 2]}, False, None,
     {"proj_out.weight": [OnIPU(1)], "model.decoder.layers.0.fc1.weight": [WithLayer(2)]}),
    ("WhisperForConditionalGeneration", WHISPER, {"layers_per_ipu": [-1, -1]}, False, None,
     {"proj_out.weight": [WithLayer(2)]}),
])
def test_each_parameter_s_ipu_is_fixed_or_that_of_a_layer(architecture, config, ipu_settings, for_inference, cut,
                                                          expected):
    row = ARCHITECTURES[architecture]
    reference = reference_layout("m", row, row.config(config), settings(**ipu_settings), for_inference, cut)
    found = origins(reference, list(expected), {})
    assert typed(found) == typed(expected)


def test_the_reference_layout_of_a_split_upstream_refuses_names_the_model():
    row = ARCHITECTURES["LxmertForQuestionAnswering"]
    with pytest.raises(PlacementError, match="^Cannot place lxmert with `ipus_per_replica`"):
        reference_layout("lxmert", row, row.config({}), settings(layers_per_ipu=[-1, -1]), False, None)


def test_a_parameter_is_where_it_is_first_used_not_on_the_lowest_ipu():
    uses = {MODEL: {"head": FirstUse(0, 1, OnIPU(1)), "embedding": FirstUse(1, 0, OnIPU(0))}}
    layout = Layout(2, [0, 0], [], [[], []], uses, (Executor(MODEL, 0, 2),))
    assert first_uses(layout, ["head.weight"], {"head.weight": ["embedding.weight"]}) == {
        "head.weight": [uses[MODEL]["head"]]}


def test_each_of_the_45_architectures_has_a_row():
    assert len(ARCHITECTURES) == 45
    assert sorted(ARCHITECTURES) == list(ARCHITECTURES)
    assert all(name == row.name for name, row in ARCHITECTURES.items())
