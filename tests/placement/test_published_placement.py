"""Every corpus config (tests/data/published_configs) placed at full size on the model it was published for, from that
model's config.json alone (tests/full_size), in training and inference: its layers as it was published, every
parameter of the model placed. Which model and which of its architectures each file was run with is in index.json
(`model`, with the evidence); a file upstream refuses for its model (a layer count of an older release) is refused in
one line, and a file that does not load has nothing to place."""

import json

import pytest

from optimum_ipu_ext import PlacementError
from support.corpus import (
    FULL_SIZE,
    FULL_SIZE_PARAMETERS,
    GENERATING,
    GENERATION_REFUSED,
    MODELS,
    PLACED,
    PUBLISHED_CONFIGS as DATA,
    REFUSED,
    WITH_ANOTHER_HEAD,
    full_size_config,
    loaded,
)

# the layers of each IPU of a file whose split has a wildcard (-1, or no split: one wildcard per IPU)
WILDCARD_LAYERS = {"optimum-graphcore__t5Encoder@a5727597.json": (2, 2, 2, 2, 2, 2)}


def parameters(model, architecture):
    """The parameters of `model` built as `architecture`."""
    if full_size_config(model)["architectures"] == [architecture]:
        return FULL_SIZE_PARAMETERS[model]
    return WITH_ANOTHER_HEAD[model, architecture]


def published_layers(name, for_inference):
    """The layers of each IPU as the file gives them."""
    if name in WILDCARD_LAYERS:
        return WILDCARD_LAYERS[name]
    raw = json.loads((DATA / name).read_text())
    layers = raw.get("inference_layers_per_ipu") if for_inference else None
    return tuple(layers or raw["layers_per_ipu"])


def test_every_corpus_file_names_its_model_or_why_it_is_not_placed():
    assert all(("full_size" in model) != ("not_placed" in model) for model in MODELS.values())
    for name in PLACED + sorted(REFUSED):
        assert (FULL_SIZE / MODELS[name]["full_size"] / "config.json").is_file(), name
        assert MODELS[name]["checkpoint"] and MODELS[name]["evidence"], name
    assert len(PLACED) == 40


@pytest.mark.parametrize("for_inference", [False, True], ids=["training", "inference"])
@pytest.mark.parametrize("name", PLACED)
def test_a_published_config_places_on_its_full_size_model(name, for_inference):
    model, architecture = MODELS[name]["full_size"], MODELS[name]["architecture"]
    placement = loaded(name).placement(str(FULL_SIZE / model), architecture=architecture, for_inference=for_inference)
    assert placement.layers_per_ipu == published_layers(name, for_inference)
    assert sum(ipu.parameters for ipu in placement.ipus) == parameters(model, architecture)


def test_every_encoder_decoder_file_is_placed_for_generation_too():
    assert sorted([*GENERATION_REFUSED, GENERATING]) == sorted(
        name for name in PLACED if MODELS[name]["architecture"].endswith("ForConditionalGeneration"))


@pytest.mark.parametrize("name", sorted(GENERATION_REFUSED))
def test_a_published_split_upstream_cannot_generate_with_is_refused_for_generation(name):
    with pytest.raises(PlacementError) as refused:
        loaded(name, for_generation=True).placement(str(FULL_SIZE / MODELS[name]["full_size"]),
                                                    architecture=MODELS[name]["architecture"], for_inference=True)
    layers = list(published_layers(name, for_inference=True))
    assert (refused.value.setting, refused.value.problem) == (
        "inference_layers_per_ipu", f"{layers} does not end the encoder's {GENERATION_REFUSED[name]} layers on IPU "
        "1, 2, 4, 8, ... : a generation build runs the encoder on its own IPUs, a power of two of them, and the "
        "decoder on the others")


def test_mt5_small_generates_with_a_copy_of_its_embedding_on_the_decoder_s_ipus():
    placement = loaded(GENERATING, for_generation=True).placement(str(FULL_SIZE / "mt5-small"), for_inference=True)
    assert placement.layers_per_ipu == (0, 8, 8, 0)
    embedding = 250_112 * 512
    assert sum(ipu.parameters for ipu in placement.ipus) == FULL_SIZE_PARAMETERS["mt5-small"] + embedding
    assert (placement.ipus[0].parameters, placement.parameter_ipus["shared.weight"]) == (embedding, (0, 2))


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
    setting, problem = REFUSED[name]
    with pytest.raises(PlacementError) as refused:
        loaded(name).placement(str(FULL_SIZE / MODELS[name]["full_size"]), architecture=MODELS[name]["architecture"])
    assert (refused.value.setting, refused.value.problem) == (setting, problem)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("for_inference, changes, setting", [
    (False, {"serialized_embedding_splits_per_ipu": None, "embedding_serialization_factor": 3},
     "embedding_serialization_factor"),
    (True, {"inference_embedding_serialization_factor": 3}, "inference_embedding_serialization_factor"),
])
def test_mt5_small_s_embedding_is_cut_by_a_factor_that_divides_its_rows_or_refused(for_inference, changes, setting):
    """`SerializedEmbedding` asserts its factor divides the 250,112 rows: 3 does not, 4 does (kept on IPU 0)."""
    config = loaded("hub__Graphcore__mt5-small-ipu@main.json")
    for name, value in changes.items():
        setattr(config, name, value)
    with pytest.raises(PlacementError) as refused:
        config.placement(str(FULL_SIZE / "mt5-small"), for_inference=for_inference)
    assert (refused.value.setting, refused.value.problem) == (
        setting, "3 does not divide the 250,112 rows of `shared.weight`, which MT5ForConditionalGeneration's "
                 "parallelize() splits into that many parts; the factors up to 16 that do: 1, 2, 4, 8, 16")
    setattr(config, setting, 4)
    placement = config.placement(str(FULL_SIZE / "mt5-small"), for_inference=for_inference)
    assert placement.ipus[0].parameters == 250_112 * 512


def test_mt5_small_s_projection_cut_by_a_factor_alone_may_leave_a_remainder():
    """`SerializedLinear` asserts nothing: 3 parts of the 250,112-row LM head are placed, whole on the last IPU."""
    config = loaded("hub__Graphcore__mt5-small-ipu@main.json")
    config.projection_serialization_factor = 3
    placement = config.placement(str(FULL_SIZE / "mt5-small"))
    assert sum(ipu.parameters for ipu in placement.ipus) == FULL_SIZE_PARAMETERS["mt5-small"]
    assert placement.parameter_ipus["lm_head.weight"] == (3,)
