"""`placement/parameters.py`: a model's parameters as transformers names and loads them (from a checkpoint's
names or from the config alone), tied and split weights, buffers, frozen modules, and the sizes of full-size
models."""


import pytest

from optimum_ipu_ext import PlacementError, PlainIPUConfig
from optimum_ipu_ext.placement.estimate.parameters import (
    Parameters,
    dividing_factors,
    from_checkpoint,
    from_config,
    loaded_names,
    parallelized,
)
from optimum_ipu_ext.placement.models import ARCHITECTURES
from optimum_ipu_ext.placement.placer import placer_of
from support.placement_fixtures import BERT_BASE, TINY_BERT, bert_base, settings

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
    parameters = from_checkpoint(row, config, tensors)
    # a tied name is its parameter: the decoder's bias is the head's, its weight the word embeddings'
    assert parameters.shapes == {"bert.embeddings.word_embeddings.weight": (64, 16), "cls.predictions.bias": (64,)}
    assert parameters.aliases == {"bert.embeddings.word_embeddings.weight": ["cls.predictions.decoder.weight"],
                                  "cls.predictions.bias": ["cls.predictions.decoder.bias"]}
    headless = from_checkpoint(row, config, {"bert.embeddings.word_embeddings.weight": (64, 16)})
    assert headless.shapes == {
        "bert.embeddings.word_embeddings.weight": (64, 16), "cls.predictions.transform.dense.weight": (16, 16),
        "cls.predictions.transform.dense.bias": (16,), "cls.predictions.transform.LayerNorm.weight": (16,),
        "cls.predictions.transform.LayerNorm.bias": (16,), "cls.predictions.bias": (64,)}
    untied = from_checkpoint(row, row.config(dict(TINY_BERT, tie_word_embeddings=False)), {})
    assert untied.shapes["cls.predictions.decoder.weight"] == (64, 16)


def test_gpt2_s_attention_masks_are_buffers_and_its_attention_parameters_are_not():
    row = ARCHITECTURES["GPT2LMHeadModel"]
    shapes = from_checkpoint(row, row.config({}), {"h.0.attn.bias": (1, 1, 8, 8), "h.0.attn.masked_bias": (),
                                                        "h.0.attn.c_attn.bias": (48,), "wte.weight": (64, 16)}).shapes
    assert shapes == {"transformer.h.0.attn.c_attn.bias": (48,), "transformer.wte.weight": (64, 16)}


def test_a_tied_parameter_of_a_config_s_model_is_counted_once_as_the_weight_it_is_tied_to():
    row = ARCHITECTURES["GPT2LMHeadModel"]
    tied = from_config(row, row.config({"n_layer": 1}))
    assert (tied.shapes["transformer.wte.weight"], "lm_head.weight" in tied.shapes) == ((50257, 768), False)
    assert tied.aliases == {"transformer.wte.weight": ["lm_head.weight"]}
    untied = from_config(row, row.config({"n_layer": 1, "tie_word_embeddings": False}))
    assert (untied.shapes["lm_head.weight"], untied.aliases) == ((50257, 768), {})


def test_a_module_naming_a_tied_weight_by_another_of_its_names_gives_it_by_its_own():
    """DeBERTa's decoder holds the masked LM's bias as its `bias`; `named_parameters()` names it the head's."""
    row = ARCHITECTURES["DebertaForMaskedLM"]
    parameters = from_config(row, row.config({"num_hidden_layers": 1}))
    assert parameters.shapes["cls.predictions.bias"] == (50265,)
    assert [name for name in parameters.shapes if name.startswith("cls.predictions.decoder.")] == []
    assert parameters.aliases["cls.predictions.bias"] == ["cls.predictions.decoder.bias"]


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
                                    "which BertForSequenceClassification's parallelize() splits into that many "
                                    "parts; the factors up to 16 that do: 1, 3, 7, 9")
    serialized = parallelized("bert", row, parameters, settings(embedding_serialization_factor=3))
    assert serialized.shapes == parameters.shapes
    null_factor = settings(layers_per_ipu=[-1, -1], serialized_embedding_splits_per_ipu=[1, 1])
    assert null_factor["embedding_serialization_factor"] is None
    assert parallelized("bert", row, parameters, null_factor).shapes == parameters.shapes  # null: not serialized
    # the masked LM's head is serialized instead, with no such check
    mlm = ARCHITECTURES["BertForMaskedLM"]
    serialized = parallelized("bert", mlm, parameters, settings(embedding_serialization_factor=2))
    assert serialized.shapes == parameters.shapes


@pytest.mark.parametrize("rows, dividing", [(63, [1, 3, 7, 9]), (50_265, [1, 3, 5, 9, 15]), (30_522, [1, 2, 3, 6]),
                                            (65_536, [1, 2, 4, 8, 16]), (17, [1])])
def test_the_factors_named_are_those_up_to_16_that_divide_the_rows(rows, dividing):
    assert dividing_factors(rows) == dividing


def test_mt5_s_embedding_kept_whole_is_still_cut_by_its_factor_which_must_divide_its_rows():
    """Not split over IPUs (its per-IPU list null, or of one part), the embedding is cut into `factor` parts on its
    IPU, which SerializedEmbedding asserts divide its rows; a null factor (the list given) cuts nothing."""
    row = ARCHITECTURES["MT5ForConditionalGeneration"]
    parameters = from_config(row, row.config({"vocab_size": 63, "d_model": 16, "num_layers": 1}))
    with pytest.raises(PlacementError) as raised:
        parallelized("mt5", row, parameters, settings(embedding_serialization_factor=2))
    assert (raised.value.model, raised.value.setting, raised.value.problem) == (
        "mt5", "embedding_serialization_factor", "2 does not divide the 63 rows of `shared.weight`, which "
        "MT5ForConditionalGeneration's parallelize() splits into that many parts; the factors up to 16 that do: 1, 3, "
        "7, 9")
    one_part = settings(layers_per_ipu=[1, 1], serialized_embedding_splits_per_ipu=[1, 0])
    assert one_part["embedding_serialization_factor"] is None
    assert parallelized("mt5", row, parameters, one_part).shapes == parameters.shapes


def test_the_parts_of_a_split_weight_have_whole_rows():
    row = ARCHITECTURES["MT5ForConditionalGeneration"]
    parameters = from_config(row, row.config({"vocab_size": 64, "d_model": 16, "num_layers": 1}))
    split = parallelized("mt5", row, parameters, settings(layers_per_ipu=[1, 1],
                                                          serialized_embedding_splits_per_ipu=[3, 1]))
    parts = [shape for name, shape in split.shapes.items() if name.startswith("shared.split_embeddings.")]
    assert parts == [(16, 16)] * 4
    assert {type(size) for shape in parts for size in shape} == {int}  # 64 // 4 rows, not 64 / 4


def test_the_pipelined_mpnet_mlm_keeps_a_copy_of_its_word_embeddings_unless_serialized():
    row = ARCHITECTURES["MPNetForMaskedLM"]
    parameters = from_checkpoint(row, row.config({}), {"mpnet.embeddings.word_embeddings.weight": (64, 16)})
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
    def shapes(row, model_config):  # the model's parameters, and `name` among them
        parameters = from_config(row, model_config)
        return Parameters({**parameters.shapes, name: (2, 2)}, parameters.aliases)

    configured = placer_of("m", ARCHITECTURES[architecture], config, settings(), shapes, False, False).configured
    assert name in configured.parameters.shapes
    assert (name in configured.frozen) is frozen


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
