"""Every corpus config (tests/data/published_configs) placed on a tiny model of the architecture it was published for
(index.json's `model`), with the layer counts of that full-size model, against optimum-graphcore 0.7.1's own
`parallelize()` (the reference harness, upstream_placement.py), in training and inference (and generation, for an
encoder-decoder): the same blocks on each IPU, the same layers, every parameter (or each IPU's share of a split one)
where upstream first uses it. A file upstream refuses for its model is refused for the same layer count; a file that
does not load is left out, as index.json says.

Collected on the IPU-host stack only (conftest: `collect_ignore_glob`).
"""

import json

import pytest

from optimum_ipu_ext import PlacementError
from optimum_ipu_ext.settings.migration import migrate
from support.corpus import (
    GENERATING,
    GENERATION_REFUSED,
    MODELS,
    PLACED,
    PUBLISHED_CONFIGS as DATA,
    REFUSED,
    full_size_config,
    loaded,
)
from support.upstream_comparison import (
    assert_same_placement,
    checkpoint,
    encoder_ipus,
    tiny_with_layers_of,
    upstream_refusal,
)
from support.upstream_placement import upstream_placement

# corpus file: the words of upstream's refusal, the same layer counts as ours (support.corpus.REFUSED)
UPSTREAM_REFUSALS = {
    "hub__Graphcore__wav2vec2-base-ipu@774002bd.json":
        "specifies IPU assignments for 19 layers but there are 23 layers",
}


def settings_of(name):
    """The file's settings in 0.7.1's terms, as upstream's IPUConfig is given them."""
    return migrate(json.loads((DATA / name).read_text())).config


def tiny_config(name):
    """The tiny model of the file's architecture with its full-size model's layer counts, its vocabulary divided by
    every number of parts the file cuts it into."""
    model = MODELS[name]
    return tiny_with_layers_of(model["architecture"], full_size_config(model["full_size"]), settings_of(name))


def ours(name, tiny, for_inference, tmp_path_factory, for_generation=False):
    architecture = MODELS[name]["architecture"]
    folder = checkpoint(architecture, json.dumps(tiny, sort_keys=True), str(tmp_path_factory.mktemp(architecture)))
    return loaded(name, for_generation).placer(folder, for_inference=for_inference)


@pytest.mark.parametrize("for_inference", [False, True], ids=["training", "inference"])
@pytest.mark.parametrize("name", PLACED)
def test_a_published_config_places_a_tiny_model_of_its_layers_as_upstream_does(name, for_inference,
                                                                                tmp_path_factory):
    tiny = tiny_config(name)
    reference = upstream_placement(MODELS[name]["architecture"], tiny, settings_of(name), for_inference)
    assert_same_placement(reference, ours(name, tiny, for_inference, tmp_path_factory))


def test_mt5_small_s_published_config_generates_as_upstream_does(tmp_path_factory):
    tiny, settings, architecture = tiny_config(GENERATING), settings_of(GENERATING), MODELS[GENERATING]["architecture"]
    reference = upstream_placement(architecture, tiny, settings, True, True)
    reference["encoder_ipus"] = encoder_ipus(architecture, settings, tiny)
    assert_same_placement(reference, ours(GENERATING, tiny, True, tmp_path_factory, for_generation=True))


@pytest.mark.parametrize("name", sorted(GENERATION_REFUSED))
def test_a_published_split_upstream_cannot_generate_with_is_refused_with_the_same_layers(name, tmp_path_factory):
    tiny, architecture = tiny_config(name), MODELS[name]["architecture"]
    with pytest.raises(upstream_refusal()) as theirs:
        upstream_placement(architecture, tiny, settings_of(name), True, True)
    assert "Unable to find a valid split of ipu_config.inference_layers_per_ipu" in str(theirs.value)
    with pytest.raises(PlacementError) as refused:
        ours(name, tiny, True, tmp_path_factory, for_generation=True).place()
    assert refused.value.setting == "inference_layers_per_ipu"
    assert f"does not end the encoder's {GENERATION_REFUSED[name]} layers" in refused.value.problem


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_what_upstream_refuses_of_the_corpus_is_refused_with_the_same_layer_count(name, tmp_path_factory):
    tiny = tiny_config(name)
    with pytest.raises(upstream_refusal()) as theirs:
        upstream_placement(MODELS[name]["architecture"], tiny, settings_of(name))
    with pytest.raises(PlacementError) as refused:
        ours(name, tiny, False, tmp_path_factory).place()
    assert (refused.value.setting, refused.value.problem) == REFUSED[name]
    assert UPSTREAM_REFUSALS[name] in str(theirs.value)


def test_the_tiny_models_have_the_full_size_layer_counts_and_a_vocabulary_the_files_divide():
    assert tiny_config("hub__Graphcore__whisper-small-ipu@main.json")["encoder_layers"] == 12
    assert tiny_config("optimum-graphcore__summarization@c25614dc.json")["vocab_size"] == 65
    assert tiny_config("optimum-graphcore__question-answering_roberta-large@fcec7f88.json")["vocab_size"] == 66
    assert tiny_config("hub__Graphcore__mt5-small-ipu@main.json")["vocab_size"] == 64
    wav2vec2 = tiny_config("optimum-graphcore__speech-pretraining_large_8-ipu_config@57bc3963.json")
    assert (wav2vec2["num_hidden_layers"], len(wav2vec2["conv_dim"]), len(wav2vec2["conv_kernel"])) == (24, 7, 7)
