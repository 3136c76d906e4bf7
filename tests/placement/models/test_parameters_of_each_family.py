"""The parameters of every architecture (its steps' modules, in its family's module of placement/models) against
the `named_parameters()` of the model transformers builds (on the meta device: tests/support/meta_models.py), name for
name and shape for shape, on both stacks: the tiny models of placement_models.py, a variant of each family with other
sizes and the config flags that change its parameters, the defaults of each config class, the full-size models of
tests/full_size.

Each stack checks the architectures it can build: on transformers 5, all but GroupBERT's (optimum-graphcore's own
classes, importable on the IPU-host stack only), and not the variants of what transformers 5 dropped."""

import json
import math

import pytest
import transformers

from optimum_ipu_ext.placement.estimate.parameters import from_config, loaded_names
from optimum_ipu_ext.placement.models import ARCHITECTURES
from support import PRESET
from support.cli_helpers import run_alone
from support.corpus import (
    FULL_SIZE,
    FULL_SIZE_BASE_MODELS,
    FULL_SIZE_PARAMETERS,
    MODELS as CORPUS_MODELS,
    WITH_ANOTHER_HEAD,
    full_size_config,
)
from support.meta_models import model_class, model_config, named_shapes
from support.placement_models import TINY_MODELS

MODERN = int(transformers.__version__.split(".")[0]) >= 5

# per model type: the changes to the tiny config that give other sizes and the parameters its flags add or remove
VARIANTS = {
    "bert": {
        "sizes": dict(vocab_size=50, hidden_size=24, num_attention_heads=3, intermediate_size=40, num_hidden_layers=2,
                      type_vocab_size=3, max_position_embeddings=20, tie_word_embeddings=False, id2label={0: "a"}),
        "relative": dict(position_embedding_type="relative_key_query"),
        "cross-attention": dict(is_decoder=True, add_cross_attention=True),
    },
    "groupbert": {
        "sizes": dict(vocab_size=50, hidden_size=48, num_attention_heads=3, intermediate_size=64, num_hidden_layers=2,
                      ffn_groups=4, conv_group_size=8, conv_kernel_size=5, tie_word_embeddings=False),
        "relative": dict(position_embedding_type="relative_key"),
        "cross-attention": dict(is_decoder=True, add_cross_attention=True),
    },
    "roberta": {
        "sizes": dict(vocab_size=50, hidden_size=24, num_attention_heads=3, intermediate_size=40, num_hidden_layers=2,
                      type_vocab_size=1, tie_word_embeddings=False, id2label={0: "a", 1: "b", 2: "c"}),
        "relative": dict(position_embedding_type="relative_key"),
        "cross-attention": dict(is_decoder=True, add_cross_attention=True),
    },
    "mpnet": {
        "sizes": dict(vocab_size=50, hidden_size=24, num_attention_heads=3, intermediate_size=40, num_hidden_layers=2,
                      relative_attention_num_buckets=12, tie_word_embeddings=False),
    },
    "distilbert": {
        "sizes": dict(vocab_size=50, dim=24, n_heads=3, hidden_dim=40, n_layers=2, max_position_embeddings=20,
                      sinusoidal_pos_embds=True, tie_word_embeddings=False),
    },
    "deberta": {
        "sizes": dict(vocab_size=50, hidden_size=24, num_attention_heads=3, intermediate_size=40, num_hidden_layers=2,
                      type_vocab_size=2, position_biased_input=True, max_relative_positions=6, pos_att_type="p2c",
                      pooler_hidden_size=24, tie_word_embeddings=False),
        # a pooler narrower than the hidden size (its classifier is still of the hidden size)
        "absolute": dict(relative_attention=False, talking_head=True, pooler_hidden_size=12),
        "projected": dict(embedding_size=12, pos_att_type="c2p|p2c", tie_word_embeddings=False),
        # the least of each: one token type (none below), one relative position (the model's length below)
        "least": dict(type_vocab_size=1, max_relative_positions=1),
    },
    "gpt2": {
        "sizes": dict(vocab_size=70, n_embd=24, n_head=3, n_inner=50, n_layer=2, n_positions=20,
                      tie_word_embeddings=False, id2label={0: "a", 1: "b", 2: "c"}),
        "cross-attention": dict(add_cross_attention=True),
    },
    "bart": {
        "sizes": dict(vocab_size=70, d_model=24, encoder_attention_heads=3, decoder_attention_heads=3,
                      encoder_ffn_dim=40, decoder_ffn_dim=48, encoder_layers=3, decoder_layers=1,
                      max_position_embeddings=40, tie_word_embeddings=False,
                      id2label={0: "a", 1: "b", 2: "c", 3: "d"}),
    },
    "t5": {
        "sizes": dict(vocab_size=70, d_model=24, d_kv=4, d_ff=40, num_heads=3, num_layers=3, num_decoder_layers=1,
                      relative_attention_num_buckets=4, feed_forward_proj="gated-gelu", tie_word_embeddings=False),
    },
    "mt5": {
        "sizes": dict(vocab_size=70, d_model=24, d_kv=4, d_ff=40, num_heads=3, num_layers=1, num_decoder_layers=3,
                      feed_forward_proj="relu", tie_word_embeddings=True),
    },
    "whisper": {
        "sizes": dict(vocab_size=70, d_model=24, encoder_attention_heads=3, decoder_attention_heads=3, num_mel_bins=10,
                      encoder_ffn_dim=40, decoder_ffn_dim=44, encoder_layers=3, decoder_layers=1,
                      max_source_positions=20, max_target_positions=24, tie_word_embeddings=False),
    },
    "vit": {
        "sizes": dict(hidden_size=24, num_attention_heads=3, intermediate_size=40, num_hidden_layers=2,
                      image_size=[28, 20], patch_size=8, num_channels=1, qkv_bias=False,
                      id2label={0: "a", 1: "b", 2: "c"}),
    },
    "convnext": {
        "sizes": dict(num_stages=3, hidden_sizes=[8, 12, 16], depths=[1, 1, 2], patch_size=4, num_channels=1,
                      layer_scale_init_value=0.0, id2label={0: "a", 1: "b", 2: "c"}),
    },
    "hubert": {
        "sizes": dict(hidden_size=24, num_attention_heads=3, intermediate_size=40, num_hidden_layers=3,
                      conv_dim=[8, 12, 10], conv_kernel=[5, 3, 3], conv_stride=[2, 2, 2], feat_extract_norm="layer",
                      conv_bias=True, do_stable_layer_norm=True, feat_proj_layer_norm=False, mask_time_prob=0.0,
                      num_conv_pos_embeddings=6, num_conv_pos_embedding_groups=4, use_weighted_layer_sum=True,
                      classifier_proj_size=6, vocab_size=20),
    },
    "wav2vec2": {
        "sizes": dict(hidden_size=24, num_attention_heads=3, intermediate_size=40, num_hidden_layers=3,
                      conv_dim=[8, 12, 10], conv_kernel=[5, 3, 3], conv_stride=[2, 2, 2], feat_extract_norm="layer",
                      conv_bias=True, do_stable_layer_norm=True, mask_time_prob=0.0, mask_feature_prob=0.1,
                      num_conv_pos_embeddings=6, num_conv_pos_embedding_groups=4, vocab_size=20,
                      num_codevectors_per_group=3, num_codevector_groups=3, codevector_dim=6, proj_codevector_dim=5),
        "adapter": dict(add_adapter=True, output_hidden_size=12, num_adapter_layers=2, adapter_kernel_size=2,
                        mask_time_prob=0.0),
        "adapter-same-width": dict(add_adapter=True, num_adapter_layers=1),
    },
    "lxmert": {
        "sizes": dict(vocab_size=50, hidden_size=24, num_attention_heads=3, intermediate_size=40, l_layers=1,
                      x_layers=2, r_layers=3, visual_feat_dim=6, visual_pos_dim=5, num_qa_labels=7,
                      type_vocab_size=3),
    },
}

# the variants of what transformers 5 no longer has: BERT's relative position embeddings (`position_embedding_type`)
NOT_IN_TRANSFORMERS_5 = ("relative",)


def importable_here():
    return [architecture for architecture in sorted(ARCHITECTURES) if model_class(architecture) is not None]


HERE = importable_here()


def cases():
    for architecture in HERE:
        yield architecture, "tiny"
        for variant in VARIANTS[ARCHITECTURES[architecture].model_types[0]]:
            if not (MODERN and variant in NOT_IN_TRANSFORMERS_5):
                yield architecture, variant


def config_values(architecture, variant):
    row = ARCHITECTURES[architecture]
    changes = {} if variant == "tiny" else VARIANTS[row.model_types[0]][variant]
    return dict(TINY_MODELS[architecture].config, **changes, model_type=row.model_types[0],
                architectures=[architecture])


def formula(architecture, values):
    row = ARCHITECTURES[architecture]
    return from_config(row, row.config(values)).shapes


def oracle(architecture, values):
    """The `named_parameters()` of the model transformers builds, renamed as a checkpoint of it is read."""
    named = named_shapes(architecture, values)
    renamed = loaded_names(ARCHITECTURES[architecture], list(named))
    return {renamed[name]: shape for name, shape in named.items()}


def config_json(architecture, values):
    """The config.json transformers saves of a config built from `values`: every field it has, by its own
    defaults (transformers 5's may differ from 4.29.2's)."""
    saved = json.loads(model_config(architecture, values).to_json_string())
    return dict(saved, architectures=[architecture])


_DEBERTA_PROJECTED_HEAD = {
    "cls.predictions.decoder.bias": (64,), "cls.predictions.decoder.weight": (64, 12),
    "cls.predictions.transform.LayerNorm.bias": (12,), "cls.predictions.transform.LayerNorm.weight": (12,),
    "cls.predictions.transform.dense.bias": (12,), "cls.predictions.transform.dense.weight": (12, 16),
}
_BART_UNTIED = {"model.decoder.embed_tokens.weight": (70, 24), "model.encoder.embed_tokens.weight": (70, 24)}
# Where transformers 5 builds another model than 4.29.2 (which optimum-graphcore runs, and the formulas follow) from
# the same config.json: {(architecture, variant): {parameter: its shape in transformers 5, None: it has none}}. With
# `tie_word_embeddings` false, 5 unties BART's stack embeddings from the shared one and the MLM decoders' bias from
# the head's; DeBERTa's MLM head works in `embedding_size`; T5's and MT5's heads are always tied.
IN_TRANSFORMERS_5 = {
    ("BartForConditionalGeneration", "sizes"): _BART_UNTIED,
    ("BartForSequenceClassification", "sizes"): _BART_UNTIED,
    ("BertForMaskedLM", "sizes"): {"cls.predictions.decoder.bias": (50,)},
    ("BertForPreTraining", "sizes"): {"cls.predictions.decoder.bias": (50,)},
    ("DebertaForMaskedLM", "sizes"): {"cls.predictions.decoder.bias": (50,)},
    ("DebertaForMaskedLM", "projected"): _DEBERTA_PROJECTED_HEAD,
    ("MPNetForMaskedLM", "sizes"): {"lm_head.decoder.bias": (50,)},
    ("RobertaForMaskedLM", "sizes"): {"lm_head.decoder.bias": (50,)},
    ("MT5ForConditionalGeneration", "defaults"): {"lm_head.weight": None},
    ("MT5ForConditionalGeneration", "mt5-small"): {"lm_head.weight": None},
    ("T5ForConditionalGeneration", "flan-t5-xl"): {"lm_head.weight": None},
}


def whole_sizes(shapes):
    """Whether every size is an int, as torch gives it (a float quotient equals it, but would print the parameter
    count as `1,024.0`)."""
    return {type(size) for shape in shapes.values() for size in shape} == {int}


def as_built(architecture, variant, shapes):
    """The parameters of `shapes` as the transformers here builds them."""
    changes = IN_TRANSFORMERS_5.get((architecture, variant), {}) if MODERN else {}
    changed = {**shapes, **changes}
    return {name: shape for name, shape in changed.items() if shape is not None}


@pytest.mark.parametrize("architecture, variant", list(cases()))
def test_the_formulas_are_the_model_s_named_parameters(architecture, variant):
    values = config_json(architecture, config_values(architecture, variant))
    formulas = formula(architecture, values)
    assert as_built(architecture, variant, formulas) == oracle(architecture, values)
    assert whole_sizes(formulas)


def test_every_architecture_is_checked_here_but_optimum_graphcore_s_own_on_transformers_5():
    own = [architecture for architecture in sorted(ARCHITECTURES) if architecture.startswith("GroupBert")]
    assert sorted(set(ARCHITECTURES) - set(HERE)) == (own if MODERN else [])
    assert len(list(cases())) == (109 if MODERN else 145)


def test_every_family_has_a_variant_that_changes_its_parameters():
    for architecture in ARCHITECTURES:
        tiny = formula(architecture, config_values(architecture, "tiny"))
        row = ARCHITECTURES[architecture]
        for variant in VARIANTS[row.model_types[0]]:
            assert formula(architecture, config_values(architecture, variant)) != tiny, (architecture, variant)


# --- the defaults of a config.json's left-out fields ----------------------------------------------------------------

ABSENT = "absent"
# fields the models read with a default of their own where a config.json has them (not fields of the config class),
# or whose null the model reads as a size: {(model type, field): the class's value}
READ_BY_THE_MODEL = {
    ("deberta", "embedding_size"): ABSENT, ("deberta", "talking_head"): ABSENT, ("hubert", "add_adapter"): ABSENT,
    ("hubert", "output_hidden_size"): ABSENT, ("gpt2", "n_inner"): None,
}
# the defaults transformers 5's config classes changed (or fields they dropped):
# {(model type, field): (4.29.2's value, 5's value)}
CHANGED_IN_TRANSFORMERS_5 = {
    ("bert", "position_embedding_type"): ("absolute", ABSENT),
    ("roberta", "position_embedding_type"): ("absolute", ABSENT), ("roberta", "vocab_size"): (30522, 50265),
    ("mt5", "tie_word_embeddings"): (False, True), ("whisper", "d_model"): (256, 384),
    ("whisper", "encoder_layers"): (6, 4), ("whisper", "decoder_layers"): (6, 4),
    ("whisper", "encoder_attention_heads"): (4, 6), ("whisper", "decoder_attention_heads"): (4, 6),
}


def plain(value):
    return list(value) if isinstance(value, tuple) else value


@pytest.mark.parametrize("architecture", HERE)
def test_each_default_is_the_config_class_s(architecture):
    row = ARCHITECTURES[architecture]
    model_type = row.model_types[0]
    ours, theirs = row.config({}), model_class(architecture).config_class()
    for field in [*row.defaults, "num_labels"]:
        expected = plain(getattr(ours, field))
        if (model_type, field) in READ_BY_THE_MODEL:
            expected = READ_BY_THE_MODEL[model_type, field]
        elif MODERN and (model_type, field) in CHANGED_IN_TRANSFORMERS_5:
            expected = CHANGED_IN_TRANSFORMERS_5[model_type, field][1]
        their_value = getattr(theirs, field, ABSENT)
        if field == "pos_att_type" and their_value is None:  # DebertaConfig keeps the null its model reads as none
            their_value = []
        assert plain(their_value) == expected, field


@pytest.mark.parametrize("architecture", HERE)
def test_a_config_json_leaving_every_size_out_is_sized_by_the_defaults(architecture):
    """The full-size model of 4.29.2's defaults (on transformers 5, its changed defaults given as 4.29.2's)."""
    row = ARCHITECTURES[architecture]
    model_type = row.model_types[0]
    values = {"model_type": model_type, "architectures": [architecture]}
    older = {field: old for (kind, field), (old, new) in CHANGED_IN_TRANSFORMERS_5.items()
             if MODERN and kind == model_type and new != ABSENT}
    assert as_built(architecture, "defaults", formula(architecture, values)) == oracle(architecture,
                                                                                       dict(values, **older))


# --- full-size models known by their config.json alone -----------------------------------------------------------


@pytest.mark.parametrize("model, architecture", sorted(WITH_ANOTHER_HEAD))
def test_a_model_with_another_head_has_the_parameters_transformers_builds(model, architecture):
    """Counted on the model transformers builds (on the meta device), whose parameters the formulas give."""
    values = full_size_config(model)
    built = named_shapes(architecture, values)
    assert sum(math.prod(shape) for shape in built.values()) == WITH_ANOTHER_HEAD[model, architecture]
    assert as_built(architecture, model, formula(architecture, values)) == oracle(architecture, values)


def test_every_model_with_another_head_is_one_a_corpus_file_was_run_with():
    used = {(model["full_size"], model["architecture"]) for model in CORPUS_MODELS.values() if "full_size" in model}
    assert sorted(WITH_ANOTHER_HEAD) == sorted(pair for pair in used if full_size_config(pair[0])["architectures"] != [
        pair[1]])


@pytest.mark.parametrize("name", sorted(FULL_SIZE_PARAMETERS))
def test_a_full_size_model_known_by_its_config_json_alone_is_sized_exactly(name):
    values = json.loads((FULL_SIZE / name / "config.json").read_text())
    architecture = values["architectures"][0]
    shapes = formula(architecture, values)
    assert sum(math.prod(shape) for shape in shapes.values()) == FULL_SIZE_PARAMETERS[name]
    assert as_built(architecture, name, shapes) == oracle(architecture, values)


def test_placing_a_folder_of_a_config_json_alone_imports_neither_torch_nor_transformers():
    folders = [path.name for path in FULL_SIZE.iterdir() if path.is_dir()]
    assert sorted(folders) == sorted([*FULL_SIZE_PARAMETERS, *FULL_SIZE_BASE_MODELS])
    for name in sorted(FULL_SIZE_PARAMETERS):
        assert run_alone("place", PRESET, "--model", FULL_SIZE / name) == "0 []", name


# --- GroupBERT, where optimum-graphcore cannot be imported ---------------------------------------------------------

# GroupBertForPreTraining as optimum-graphcore 0.7.1 builds it, read off the IPU-host stack's named_parameters():
# {variant: (parameters, elements)}, and the tiny model's first layer
GROUPBERT_PRETRAINING = {"tiny": (124, 58754), "sizes": (89, 74612), "relative": (127, 61778),
                         "cross-attention": (154, 71618)}
GROUPBERT_TINY_LAYER = {
    "convolution.prenorm.weight": (32,), "convolution.prenorm.bias": (32,), "convolution.glu.weight": (64, 32),
    "convolution.glu.bias": (64,), "convolution.groupconv.weight": (32, 16, 3), "convolution.groupconv.bias": (32,),
    "convolution.conv_norm.weight": (32,), "convolution.conv_norm.bias": (32,),
    "convolution.output_projection.weight": (32, 32), "convolution.output_projection.bias": (32,),
    "intermediate_first.LayerNorm.weight": (32,), "intermediate_first.LayerNorm.bias": (32,),
    "intermediate_first.dense.weight": (64, 32), "intermediate_first.dense.bias": (64,),
    "output_first.grouped_matmul.weight": (32, 32, 1), "output_first.grouped_matmul.bias": (32,),
    "output_first.dense_output_projection.weight": (32, 32), "output_first.dense_output_projection.bias": (32,),
    "attention.LayerNorm.weight": (32,), "attention.LayerNorm.bias": (32,), "attention.self.query.weight": (32, 32),
    "attention.self.query.bias": (32,), "attention.self.key.weight": (32, 32), "attention.self.key.bias": (32,),
    "attention.self.value.weight": (32, 32), "attention.self.value.bias": (32,),
    "attention.output.dense.weight": (32, 32), "attention.output.dense.bias": (32,),
    "intermediate_second.LayerNorm.weight": (32,), "intermediate_second.LayerNorm.bias": (32,),
    "intermediate_second.dense.weight": (64, 32), "intermediate_second.dense.bias": (64,),
    "output_second.grouped_matmul.weight": (32, 32, 1), "output_second.grouped_matmul.bias": (32,),
    "output_second.dense_output_projection.weight": (32, 32), "output_second.dense_output_projection.bias": (32,),
}
GROUPBERT_TINY_OUTSIDE_LAYERS = {
    "bert.embeddings.word_embeddings.weight": (64, 32), "bert.embeddings.position_embeddings.weight": (32, 32),
    "bert.embeddings.token_type_embeddings.weight": (2, 32), "bert.embeddings.LayerNorm.weight": (32,),
    "bert.embeddings.LayerNorm.bias": (32,), "bert.encoder.LayerNorm.weight": (32,),
    "bert.encoder.LayerNorm.bias": (32,), "bert.pooler.dense.weight": (32, 32), "bert.pooler.dense.bias": (32,),
    "cls.predictions.bias": (64,), "cls.predictions.transform.dense.weight": (32, 32),
    "cls.predictions.transform.dense.bias": (32,), "cls.predictions.transform.LayerNorm.weight": (32,),
    "cls.predictions.transform.LayerNorm.bias": (32,), "cls.seq_relationship.weight": (2, 32),
    "cls.seq_relationship.bias": (2,),
}
GROUPBERT_SIZES_LAYER = {"convolution.groupconv.weight": (48, 8, 5), "output_first.grouped_matmul.weight": (48, 16, 1),
                         "output_second.grouped_matmul.weight": (48, 16, 1)}


@pytest.mark.parametrize("variant", sorted(GROUPBERT_PRETRAINING))
def test_groupbert_s_formulas_give_what_optimum_graphcore_builds(variant):
    shapes = formula("GroupBertForPreTraining", config_values("GroupBertForPreTraining", variant))
    assert (len(shapes), sum(map(math.prod, shapes.values()))) == GROUPBERT_PRETRAINING[variant]
    layer = {name[len("bert.encoder.layer.0."):]: shape for name, shape in shapes.items()
             if name.startswith("bert.encoder.layer.0.")}
    if variant == "tiny":
        assert layer == GROUPBERT_TINY_LAYER
        outside = {name: shape for name, shape in shapes.items() if ".layer." not in name}
        assert outside == GROUPBERT_TINY_OUTSIDE_LAYERS
    if variant == "sizes":
        assert {name: layer[name] for name in GROUPBERT_SIZES_LAYER} == GROUPBERT_SIZES_LAYER


def test_deberta_s_attention_types_are_a_list_or_a_string_such_as_p2c_or_c2p():
    def shapes(kinds):
        return formula("DebertaForMaskedLM", dict(config_values("DebertaForMaskedLM", "tiny"), pos_att_type=kinds))

    assert shapes(" C2P|p2c") == shapes(["c2p", "p2c"]) != shapes(["c2p"]) != shapes("p2c") == shapes(["p2c"])


def test_bert_s_relative_positions_add_a_distance_embedding_to_each_self_attention():
    """Pinned as data too: transformers 5, which cannot build them, runs the mutation tests."""
    values = dict(config_values("BertForMaskedLM", "relative"), **VARIANTS["bert"]["cross-attention"])
    added = set(formula("BertForMaskedLM", values)) - set(formula("BertForMaskedLM", config_values("BertForMaskedLM",
                                                                                                   "cross-attention")))
    distances = {name: formula("BertForMaskedLM", values)[name] for name in added}
    assert distances == {
        f"bert.encoder.layer.{layer}.attention.self.distance_embedding.weight": (63, 8) for layer in range(3)}
    assert whole_sizes(distances)
