"""Every corpus config whose model is known (tests/data/published_configs) placed on that model at full size, from
its config.json alone (tests/full_size), in training and inference: its layers as it was published, every parameter
of the model placed; where upstream refuses it (a layer count of an older release), the one-line refusal."""

import warnings

import pytest

from optimum_ipu_ext import IPUConfig, PlacementError
from support.corpus import FULL_SIZE, FULL_SIZE_PARAMETERS, PUBLISHED_CONFIGS as DATA

# corpus file: (the full-size model it was published for, the architecture where its config.json names another,
# the layers of each IPU)
PLACED = {
    "hub__Graphcore__bert-large-ipu@main.json": ("bert-large-uncased", None, (3, 7, 7, 7)),
    "hub__Graphcore__gpt2-medium-ipu@4063b4ba.json": ("gpt2-medium", None, (3, 7, 7, 7)),
    "hub__Graphcore__t5-small-ipu@7e8abbc8.json": ("t5-small", None, (0, 4, 4, 4)),
    "hub__Graphcore__wav2vec2-base-ipu@main.json": ("wav2vec2-base", None, (6, 5, 5, 7)),
    "hub__Graphcore__wav2vec2-ctc-base-ipu@b0b565b4.json": ("wav2vec2-base", "Wav2Vec2ForCTC", (9, 4, 4, 4)),
    "hub__Graphcore__whisper-small-ipu@main.json": ("whisper-small", None, (1, 2, 3, 3, 3, 0, 6, 6)),
    "hub__Graphcore__mt5-small-ipu@main.json": ("mt5-small", None, (0, 8, 8, 0)),
    "optimum-graphcore__speech-pretraining_base_4-ipu_config@21817077.json": ("wav2vec2-base", None, (6, 5, 5, 7)),
    "optimum-graphcore__speech-pretraining_base_4-ipu_config@ba3f822c.json": ("wav2vec2-base", None, (6, 5, 5, 7)),
    "optimum-graphcore__speech-pretraining_base_4-ipu_config@da3cbf3f.json": ("wav2vec2-base", None, (6, 5, 5, 7)),
    "optimum-graphcore__speech-recognition_base_4-ipu_config@4242bef3.json": ("wav2vec2-base", "Wav2Vec2ForCTC",
                                                                              (9, 4, 4, 4)),
    "optimum-graphcore__speech-recognition_base_4-ipu_config@ba3f822c.json": ("wav2vec2-base", "Wav2Vec2ForCTC",
                                                                              (9, 4, 4, 4)),
}
# corpus file: (model, the setting upstream refuses, the refusal)
REFUSED = {
    "hub__Graphcore__wav2vec2-base-ipu@774002bd.json": (
        "wav2vec2-base", "layers_per_ipu", "[2, 1, 4, 3, 3, 3, 3, 0] places 19 layers and the model has 23"),
}


def loaded(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the migrations of older files, tested in test_migration.py
        return IPUConfig.from_pretrained(str(DATA / name))


@pytest.mark.parametrize("for_inference", [False, True], ids=["training", "inference"])
@pytest.mark.parametrize("name", sorted(PLACED))
def test_a_published_config_places_on_its_full_size_model(name, for_inference):
    model, architecture, layers = PLACED[name]
    placement = loaded(name).placement(str(FULL_SIZE / model), architecture=architecture, for_inference=for_inference)
    assert placement.layers_per_ipu == layers
    if architecture is None:  # the model of its config.json, whose size its model card gives
        assert sum(ipu.parameters for ipu in placement.ipus) == FULL_SIZE_PARAMETERS[model]


def test_mt5_small_s_embedding_is_split_over_its_first_two_ipus():
    placement = loaded("hub__Graphcore__mt5-small-ipu@main.json").placement(str(FULL_SIZE / "mt5-small"))
    half_the_embedding = 250_112 * 512 // 2  # [4, 4, 0, 0]: 4 of its 8 parts on each of IPUs 0 and 1
    assert placement.ipus[0].parameters == half_the_embedding
    assert placement.ipus[0].blocks == ("Embedding-0-3",)
    assert placement.ipus[1].blocks[0] == "Embedding-4-7"
    assert placement.ipus[1].parameters > half_the_embedding
    # the inference build splits nothing: the inference setting is null
    inference = loaded("hub__Graphcore__mt5-small-ipu@main.json").placement(str(FULL_SIZE / "mt5-small"),
                                                                             for_inference=True)
    assert inference.ipus[0].parameters == 2 * half_the_embedding


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_published_config_upstream_refuses_for_its_model_is_refused_in_one_line(name):
    model, setting, problem = REFUSED[name]
    with pytest.raises(PlacementError) as refused:
        loaded(name).placement(str(FULL_SIZE / model))
    assert (refused.value.setting, refused.value.problem) == (setting, problem)
    assert "\n" not in str(refused.value)
