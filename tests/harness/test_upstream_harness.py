"""The reference placement harness runs optimum-graphcore 0.7.1's real `parallelize()` on every architecture it
pipelines, and its answers are right where they were worked out by hand from upstream's `parallelize()` methods.

Collected on the IPU-host stack only (conftest: `collect_ignore_glob`).
"""
import json

import pytest
import torch
from torch import nn
from transformers import PretrainedConfig, PreTrainedModel

from support.doubles import poptorch
from support.placement_models import TINY_MODELS, TinyModel
from support.upstream_placement import (
    HarnessError,
    _original_model,
    architectures,
    upstream_modules,
    upstream_placement,
)

TWO_IPUS = {"layers_per_ipu": [-1, -1]}
GENERATING = [
    "BartForConditionalGeneration",
    "MT5ForConditionalGeneration",
    "T5ForConditionalGeneration",
    "WhisperForConditionalGeneration",
]
# Parameters that no op uses: in inference the audio models mask no frame
UNUSED = {
    ("HubertForCTC", True): ["hubert.masked_spec_embed"],
    ("HubertForSequenceClassification", True): ["hubert.masked_spec_embed"],
    ("Wav2Vec2ForCTC", True): ["wav2vec2.masked_spec_embed"],
    ("Wav2Vec2ForPreTraining", True): ["wav2vec2.masked_spec_embed"],
}
# PipelinedMPNetForMaskedLM builds a new encoder after transformers tied the decoder to the old one
COPIES = {
    "MPNetForMaskedLM": {
        "mpnet.embeddings.word_embeddings.weight": {
            "mpnet.embeddings.word_embeddings.weight": 0,
            "lm_head.decoder.weight": 0,
        }
    }
}


def incompatible_config_error():
    return upstream_modules()[0].IncompatibleIPUConfigError


def expected_ipus(names, rules):
    """`{name: IPU}` by the first `(prefix, IPU)` rule each name starts with; every name needs one."""
    result = {}
    for name in names:
        matches = [ipu for prefix, ipu in rules if name.startswith(prefix)]
        assert matches, f"no rule places {name}"
        result[name] = matches[0]
    return result


def original_counts(architecture, model_config=None):
    config = TINY_MODELS[architecture].config if model_config is None else model_config
    model = _original_model(architecture, json.dumps(config, sort_keys=True))
    return {name: parameter.numel() for name, parameter in model.named_parameters()}


def check_accounts_for_every_parameter(placement, counts):
    placed = [*placement["parameters"], *placement["spread"], *placement["unused"]]
    assert sorted(placed) == sorted(counts)


def ipus_of(placement):
    return set(placement["parameters"].values())


# --- every architecture -------------------------------------------------------------------------------


def test_the_table_has_every_class_optimum_graphcore_pipelines():
    assert sorted(architectures()) == sorted(TINY_MODELS)
    assert len(TINY_MODELS) == 45


@pytest.mark.parametrize("for_inference", [False, True], ids=["training", "inference"])
@pytest.mark.parametrize("architecture", sorted(TINY_MODELS))
def test_every_architecture_is_placed_on_the_pipeline(architecture, for_inference):
    result = upstream_placement(architecture, None, TWO_IPUS, for_inference=for_inference)
    counts = original_counts(architecture)
    assert result["parameter_counts"] == counts
    check_accounts_for_every_parameter(result, counts)
    assert result["unused"] == UNUSED.get((architecture, for_inference), [])
    assert result["copies"] == COPIES.get(architecture, {})
    assert (result["spread"], result["created"], result["several_ipus"]) == ({}, {}, {})
    # the CTC models freeze their feature encoder in parallelize()
    frozen = [name for name in counts if ".feature_extractor." in name] if architecture.endswith("ForCTC") else []
    assert result["frozen"] == frozen
    user_ids = {user_id for user_id, _ in result["blocks"]}
    assert all(user_id in user_ids or user_id.isdigit() for user_id, _ in result["started"])
    # LXMERT's parallelize() puts its layers on IPUs 1, 2 and 3 whatever the config says
    assert ipus_of(result) == ({0, 1, 2, 3} if architecture.startswith("Lxmert") else {0, 1})


@pytest.mark.parametrize("architecture", GENERATING)
def test_every_generating_architecture_is_placed_as_two_executors(architecture):
    result = upstream_placement(architecture, None, TWO_IPUS, for_inference=True, for_generation=True)
    assert result["layer_ipus"] == [[0, 0], [0, 0]]  # 2 encoder and 2 decoder layers: one IPU each
    encoder, decoder = result["executors"]["encoder"], result["executors"]["decoder"]
    counts = original_counts(architecture)
    for placement in (encoder, decoder):
        check_accounts_for_every_parameter(placement, counts)
        assert ipus_of(placement) == {0}
    # each executor uses what it runs; the shared embedding, where there is one, runs in both
    assert set(encoder["parameters"]).isdisjoint(decoder["parameters"]) == architecture.startswith("Whisper")
    assert all("decoder" not in name for name in encoder["parameters"])
    assert all(".encoder." not in f".{name}" for name in decoder["parameters"])


# --- cases worked out by hand from upstream's parallelize() -----------------------------------------


def test_bert_masked_lm_on_two_ipus_keeps_its_tied_head_with_the_embedding():
    result = upstream_placement("BertForMaskedLM", None, {"layers_per_ipu": [1, 2]})
    blocks = [["Embedding", 0], ["Encoder0", 0], ["Encoder1", 1], ["Encoder2", 1], ["Classifier", 0]]
    assert result["blocks"] == blocks and result["started"] == blocks
    assert result["layer_ipus"] == [[0, 1, 1]]
    counts = result["parameter_counts"]
    rules = [("bert.embeddings.", 0), ("bert.encoder.layer.0.", 0), ("bert.encoder.layer.", 1), ("cls.", 0)]
    assert result["parameters"] == expected_ipus(counts, rules)
    assert "cls.predictions.decoder.weight" not in counts  # tied to the word embedding: counted once
    model = _original_model("BertForMaskedLM", json.dumps(TINY_MODELS["BertForMaskedLM"].config, sort_keys=True))
    # embeddings 1600 + 3 layers of 2224 + head 368 (transform 304, decoder bias 64; its weight is the embedding)
    assert sum(counts.values()) == model.num_parameters() == 8640


def test_gpt2_final_layer_norm_runs_on_the_last_ipu_and_its_tied_head_on_the_first():
    result = upstream_placement("GPT2LMHeadModel", None, TWO_IPUS)
    assert result["blocks"] == [
        ["Token embedding", 0],
        ["Position embedding", 0],
        ["Layer0", 0],
        ["Layer1", 1],
        ["Layer2", 1],
        ["LM head", 0],
    ]
    assert result["layer_ipus"] == [[0, 1, 1]]  # the wildcard gives the remainder to the last IPU
    rules = [("transformer.wte.", 0), ("transformer.wpe.", 0), ("transformer.h.0.", 0), ("transformer.", 1)]
    assert result["parameters"] == expected_ipus(result["parameter_counts"], rules)
    assert "lm_head.weight" not in result["parameter_counts"]


def test_wildcards_beside_numbers_share_the_layers_left():
    config = dict(TINY_MODELS["BertForQuestionAnswering"].config, num_hidden_layers=5)
    result = upstream_placement("BertForQuestionAnswering", config, {"layers_per_ipu": [1, -1, -1]})
    assert result["layer_ipus"] == [[0, 1, 1, 2, 2]]
    assert result["blocks"][-1] == ["QA Outputs", 2]
    assert result["parameters"]["qa_outputs.weight"] == 2


def test_an_uneven_split_and_a_pooler_outside_every_block():
    result = upstream_placement("BertForSequenceClassification", None, {"layers_per_ipu": [2, 1]})
    assert result["layer_ipus"] == [[0, 0, 1]]
    rules = [("bert.embeddings.", 0), ("bert.encoder.layer.2.", 1), ("bert.encoder.", 0), ("bert.pooler.", 1)]
    rules.append(("classifier.", 1))
    assert result["parameters"] == expected_ipus(result["parameter_counts"], rules)
    assert "Pooler" not in {user_id for user_id, _ in result["blocks"]}


def test_a_single_ipu_holds_everything():
    result = upstream_placement("BertForTokenClassification", None, {"layers_per_ipu": [-1]})
    assert result["layer_ipus"] == [[0, 0, 0]] and result["blocks"][-1] == ["Classifier Output", 0]
    assert ipus_of(result) == {0} and not result["unused"]


def test_a_single_ipu_wav2vec2_has_no_block_at_all():
    result = upstream_placement("Wav2Vec2ForCTC", None, {"layers_per_ipu": [-1]})
    assert (result["blocks"], result["layer_ipus"], result["started"]) == ([], [], [])
    assert ipus_of(result) == {0} and not result["unused"]


def test_inference_uses_the_inference_layers_per_ipu():
    settings = {"layers_per_ipu": [1, 2], "inference_layers_per_ipu": [2, 1]}
    training = upstream_placement("BertForQuestionAnswering", None, settings)
    inference = upstream_placement("BertForQuestionAnswering", None, settings, for_inference=True)
    assert training["layer_ipus"] == [[0, 1, 1]] and inference["layer_ipus"] == [[0, 0, 1]]
    assert training["parameters"]["bert.encoder.layer.1.output.dense.weight"] == 1
    assert inference["parameters"]["bert.encoder.layer.1.output.dense.weight"] == 0


def test_inference_on_one_ipu_moves_the_head_to_it():
    settings = {"layers_per_ipu": [1, 2], "inference_layers_per_ipu": [3]}
    result = upstream_placement("BertForQuestionAnswering", None, settings, for_inference=True)
    assert result["layer_ipus"] == [[0, 0, 0]] and ipus_of(result) == {0}


def test_a_layers_per_ipu_for_another_model_is_refused_as_upstream_refuses_it():
    with pytest.raises(incompatible_config_error()) as refusal:
        upstream_placement("BertForMaskedLM", None, {"layers_per_ipu": [1, 1]})
    assert str(refusal.value) == (
        "layers_per_ipu does not define the correct number of layers for the current model. The current IPU Config"
        " specifies IPU assignments for 2 layers but there are 3 layers in the model. layers_per_ipu=[1, 1]"
    )


def test_an_inference_split_is_refused_under_its_inference_name():
    with pytest.raises(incompatible_config_error(), match=r"inference_layers_per_ipu=\[1, 1\]"):
        settings = {"layers_per_ipu": [1, 2], "inference_layers_per_ipu": [1, 1]}
        upstream_placement("BertForMaskedLM", None, settings, for_inference=True)


def test_an_encoder_decoder_cut_upstream_cannot_make_is_refused():
    settings = {"layers_per_ipu": [1, 2, 1]}
    with pytest.raises(incompatible_config_error(), match="Unable to find a valid split of ipu_config.inference_"):
        upstream_placement("T5ForConditionalGeneration", None, settings, for_inference=True, for_generation=True)
    # without generation the same split is one pipeline: layers 0 | 1 2 | 3
    result = upstream_placement("T5ForConditionalGeneration", None, settings, for_inference=True)
    assert result["layer_ipus"] == [[0, 1, 1, 2]]


def test_whisper_generation_numbers_each_executor_from_ipu_0_and_reads_positions_without_a_block():
    four_ipus = {"layers_per_ipu": [1, 1, 1, 1]}
    result = upstream_placement("WhisperForConditionalGeneration", None, four_ipus, True, for_generation=True)
    assert result["layer_ipus"] == [[0, 1], [0, 1]]
    encoder, decoder = result["executors"]["encoder"], result["executors"]["decoder"]
    assert ["Embed Positions", 0] in result["blocks"]
    assert encoder["started"] == [
        ["Conv1", 0],
        ["Conv2", 0],  # then the positions are read, in Conv2's block: "Embed Positions" never begins
        ["Encoder0", 0],
        ["Encoder1", 1],
        ["Encoder Layer Norm", 1],
    ]
    assert encoder["parameters"]["model.encoder.embed_positions.weight"] == 0
    assert decoder["started"][:5] == [
        ["Decoder Embedding", 0],
        ["Decoder0", 0],
        ["Decoder1", 1],
        ["Decoder Layer Norm", 1],
        ["Output Projection", 0],
    ]
    assert decoder["parameters"]["model.decoder.embed_tokens.weight"] == 0  # and the output projection tied to it
    assert "proj_out.weight" not in result["parameter_counts"]
    assert "model.encoder.conv1.weight" in decoder["unused"]


def test_deberta_relative_embeddings_are_read_in_the_encoder_block():
    result = upstream_placement("DebertaForMaskedLM", None, TWO_IPUS)
    assert result["blocks"][:3] == [["Embedding", 0], [None, 0], [None, 0]]
    assert result["started"][:2] == [["Embedding", 0], ["0", 0]]  # the encoder's block, named by auto id
    assert result["parameters"]["deberta.encoder.rel_embeddings.weight"] == 0
    # the prediction transform runs after the last layer, the projection back on IPU 0
    assert result["parameters"]["cls.predictions.transform.dense.weight"] == 1
    assert result["parameters"]["cls.predictions.bias"] == 0


def test_a_padded_vocabulary_creates_elements_of_no_original_parameter():
    config = dict(TINY_MODELS["GPT2ForSequenceClassification"].config, vocab_size=63)
    settings = dict(TWO_IPUS, embedding_serialization_factor=2)
    result = upstream_placement("GPT2ForSequenceClassification", config, settings)
    assert result["created"] == {"transformer.wte.split_embeddings.1.weight": {"ipu": 0, "elements": 16}}
    assert result["parameters"]["transformer.wte.weight"] == 0
    assert result["parameter_counts"]["transformer.wte.weight"] == 63 * 16


def test_mt5_splits_its_embedding_and_its_head_over_the_ipus_it_is_given():
    splits = {"serialized_embedding_splits_per_ipu": [1, 1], "serialized_projection_splits_per_ipu": [1, 1]}
    result = upstream_placement("MT5ForConditionalGeneration", None, dict(TWO_IPUS, **splits))
    assert result["blocks"][:2] == [["Embedding-0", 0], ["Embedding-1", 1]]
    assert result["blocks"][-2:] == [["Linear-0", 0], ["Linear-1", 1]]
    assert result["spread"] == {"shared.weight": {0: 512, 1: 512}, "lm_head.weight": {0: 512, 1: 512}}
    assert "shared.weight" not in result["parameters"] and "lm_head.weight" not in result["unused"]


def test_serializing_the_mpnet_decoder_ties_it_again():
    result = upstream_placement("MPNetForMaskedLM", None, dict(TWO_IPUS, embedding_serialization_factor=2))
    assert result["copies"] == {}


def test_the_package_config_is_placed_as_upstream_places_it_and_left_as_given():
    from optimum_ipu_ext import IPUConfig

    config = IPUConfig(layers_per_ipu=[1, 2], inference_layers_per_ipu=[2, 1])
    result = upstream_placement("BertForMaskedLM", None, config, for_inference=True)
    assert result["layer_ipus"] == [[0, 0, 1]] and config.mode == "training"
    with pytest.raises(HarnessError, match="ipu_settings must be a dict or an upstream IPUConfig, got str"):
        upstream_placement("BertForMaskedLM", None, "ipu_config.json")


def test_an_architecture_without_a_pipelined_version_is_named():
    with pytest.raises(HarnessError, match="'BertForNextSentencePrediction' is not one of the pipelined"):
        upstream_placement("BertForNextSentencePrediction", None, TWO_IPUS)


def test_generation_needs_an_encoder_decoder_inference_build():
    with pytest.raises(HarnessError, match="for_inference"):
        upstream_placement("T5ForConditionalGeneration", None, TWO_IPUS, for_generation=True)
    with pytest.raises(HarnessError, match="not an encoder-decoder"):
        upstream_placement("GPT2LMHeadModel", None, TWO_IPUS, for_inference=True, for_generation=True)


def test_deparallelize_removes_every_block():
    modeling_utils = upstream_modules()[0]
    model = modeling_utils.to_pipelined(
        _original_model("BertForMaskedLM", json.dumps(TINY_MODELS["BertForMaskedLM"].config, sort_keys=True)),
        modeling_utils.IPUConfig(layers_per_ipu=[1, 2]),
    )
    model.parallelize()

    def block_hooks():
        return [h for m in model.modules() for h in m._forward_pre_hooks.values() if type(h).__name__ == "_BlockHook"]

    assert len(block_hooks()) == 5
    model.deparallelize()
    assert block_hooks() == []


# --- the harness itself, on a model whose answer is known -------------------------------------------


class ToyConfig(PretrainedConfig):
    model_type = "toy-placement"


class Toy(PreTrainedModel):
    """A scale used before any block, an embedding, a layer outside every block, a layer, a table read directly."""

    config_class = ToyConfig

    def __init__(self, config):
        super().__init__(config)
        self.scale = nn.Parameter(torch.ones(1))
        self.embedding = nn.Embedding(8, 4)
        self.between = nn.Linear(4, 4)
        self.layer = nn.Linear(4, 4)
        self.table = nn.Embedding(2, 4)
        self.unused = nn.Linear(4, 1)

    def forward(self, input_ids):
        scale = self.scale.exp()
        hidden = self.embedding(input_ids) * scale
        return self.layer(self.between(hidden)) + self.table.weight[0]


@pytest.fixture
def toy(monkeypatch):
    modeling_utils = upstream_modules()[0]

    class PipelinedToy(Toy, modeling_utils.PipelineMixin):
        def parallelize(self):
            super().parallelize()
            self.embedding = modeling_utils.SerializedEmbedding(self.embedding, 2).parallelize([0, 1, 1])
            self.layer = poptorch.BeginBlock(self.layer, "Layer", ipu_id=3)
            self.table = poptorch.BeginBlock(self.table, "Table", ipu_id=4)
            return self

    monkeypatch.setitem(modeling_utils._PRETRAINED_TO_PIPELINED_REGISTRY, Toy, PipelinedToy)
    inputs = TinyModel({}, lambda config, training: {"input_ids": torch.tensor([[0, 5]])})
    monkeypatch.setitem(TINY_MODELS, "Toy", inputs)


def test_the_harness_follows_blocks_as_poptorch_does(toy):
    result = upstream_placement("Toy", {}, {"layers_per_ipu": [-1, -1, -1, -1, -1]})
    assert result["blocks"] == [["Embedding-0", 1], ["Embedding-1", 2], ["Layer", 3], ["Table", 4]]
    assert result["started"] == [["Embedding-0", 1], ["Embedding-1", 2], ["Layer", 3]]
    assert result["parameters"] == {
        "scale": 0,  # used before the first block
        "between.weight": 2,  # outside every block: on the IPU of the block that ran last
        "between.bias": 2,
        "layer.weight": 3,
        "layer.bias": 3,
        "table.weight": 3,  # read directly: its block never begins
    }
    assert result["spread"] == {"embedding.weight": {1: 16, 2: 16}}  # split over two IPUs by parallelize()
    assert result["unused"] == ["unused.weight", "unused.bias"]
    assert (result["copies"], result["created"], result["several_ipus"]) == ({}, {}, {})
