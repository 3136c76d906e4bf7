"""The placement of a model on a config's IPUs (`placement/placement.py`): its data and JSON, its immutability, where
each parameter is, and the model it is for (a folder, a config.json, a dict or a `PretrainedConfig`), with the
refusals of what it is given.

Its parts each have a file: test_layout.py, test_rules.py, test_parameters.py, test_memory.py, test_report.py."""

import copy
import dataclasses
import json
import math
import os
import subprocess
import sys

import pytest

from optimum_ipu_ext import ArchitectureError, IPUConfig, ModelFileError, PlacementError, PlainIPUConfig
from optimum_ipu_ext.errors import as_json
from optimum_ipu_ext.placement.estimate.memory import Verdict
from optimum_ipu_ext.placement.models import ARCHITECTURES
from support.placement_fixtures import TINY_BERT, tiny_bert

# --- a placement: data, immutability, where each parameter is --------------------------------------------------------


def test_a_placement_s_data_has_exactly_the_keys_of_its_json(tmp_path):
    placement = PlainIPUConfig(layers_per_ipu=[1, 2], gradient_accumulation_steps=5).placement(tiny_bert(tmp_path))
    data = placement.to_dict()
    assert list(data) == ["model", "architecture", "build", "layers_per_ipu", "micro_batch_size", "sequence_length",
                          "decoder_sequence_length", "ipu_memory_bytes", "reserve_bytes", "verdict", "fits",
                          "problems", "stages", "pipeline_cycles", "pipeline_efficiency", "bottleneck_ipu", "ipu",
                          "step_seconds", "samples_per_step", "samples_per_second", "samples_per_second_range",
                          "step_parts", "time_model", "generation", "ipus"]
    assert [list(ipu) for ipu in data["ipus"]] == [
        ["ipu", "blocks", "layers", "parameters", "on_chip_bytes", "streaming_bytes", "weights_bytes",
         "gradient_accumulator_bytes", "optimizer_state_bytes", "update_bytes", "activation_bytes", "stash_bytes",
         "recompute_bytes", "forward_flops", "backward_flops", "recompute_flops", "operations", "exchange_bytes",
         "cycle_seconds", "generation"]] * 2
    uncounted = dict.fromkeys(["activation_bytes", "stash_bytes", "recompute_bytes", "forward_flops", "backward_flops",
                               "recompute_flops", "operations", "exchange_bytes", "cycle_seconds", "generation"])
    assert data == {
        "model": str(tmp_path / "bert"), "architecture": "BertForMaskedLM", "build": "training",
        "layers_per_ipu": [1, 2], "micro_batch_size": None, "sequence_length": None, "decoder_sequence_length": None,
        "ipu_memory_bytes": 940572672, "reserve_bytes": 235143168, "verdict": "fits", "fits": True, "problems": [],
        "stages": [{"ipu": 0, "blocks": ["Embedding", "Encoder0"], "stash_depth": 5},
                   {"ipu": 1, "blocks": ["Encoder1", "Encoder2"], "stash_depth": 3},
                   {"ipu": 0, "blocks": ["Classifier"], "stash_depth": 1}],
        "pipeline_cycles": 5 + 4, "pipeline_efficiency": 5 / 9, "bottleneck_ipu": None,
        **dict.fromkeys(["ipu", "step_seconds", "samples_per_step", "samples_per_second", "samples_per_second_range",
                         "step_parts", "time_model", "generation"]),
        "ipus": [{"ipu": 0, "blocks": ["Embedding", "Encoder0", "Classifier"], "layers": [0],
                  "parameters": 1600 + 2224 + 368, "on_chip_bytes": 10 * 4192, "streaming_bytes": 0,
                  "weights_bytes": 2 * 4192, "gradient_accumulator_bytes": 2 * 4192, "optimizer_state_bytes": 6 * 4192,
                  "update_bytes": 0, **uncounted},
                 {"ipu": 1, "blocks": ["Encoder1", "Encoder2"], "layers": [1, 2], "parameters": 2 * 2224,
                  "on_chip_bytes": 10 * 2 * 2224, "streaming_bytes": 0, "weights_bytes": 2 * 2 * 2224,
                  "gradient_accumulator_bytes": 2 * 2 * 2224, "optimizer_state_bytes": 6 * 2 * 2224, "update_bytes": 0,
                  **uncounted}]}
    assert json.loads(placement.to_json_string()) == data and placement.to_json_string().endswith("}\n")


def test_the_json_is_indented_by_two_and_ends_its_line(tmp_path):
    placement = PlainIPUConfig(layers_per_ipu=[1, 2]).placement(tiny_bert(tmp_path))
    assert placement.to_json_string() == json.dumps(placement.to_dict(), indent=2) + "\n"


def test_a_placement_can_be_copied_and_its_copy_balanced(tmp_path):
    placer = PlainIPUConfig(layers_per_ipu=[1, 2]).placer(tiny_bert(tmp_path))
    placement = placer.place()
    copied = copy.deepcopy(placement)
    assert copied.to_dict() == placement.to_dict()
    assert copied.parameter_ipus == placement.parameter_ipus
    assert placer.balanced(copied).to_dict() == placer.balanced(placement).to_dict()


def test_the_balance_leaves_an_ipu_without_a_stage_only_where_it_counts_no_training_stash(tmp_path):
    """A training pipeline with its activations counted keeps every IPU running a stage (the stash depths are those
    of the even split): an IPU takes a layer unless a block of its own runs there (BERT's IPU 0, the embeddings and
    the head); elsewhere an IPU may take none, as upstream allows."""
    config = PlainIPUConfig(layers_per_ipu=[0, 1, 0], inference_layers_per_ipu=[0, 1, 0],
                            gradient_accumulation_steps=16)
    folder = tiny_bert(tmp_path, layers=1, num_hidden_layers=1)
    uncounted = config.placer(folder)
    inference = config.placer(folder, for_inference=True, micro_batch_size=2, sequence_length=16)
    assert balanced(uncounted).layers_per_ipu == balanced(inference).layers_per_ipu == (0, 1, 0)
    with pytest.raises(PlacementError, match="no split gives every IPU a stage of the pipeline"):
        balanced(config.placer(folder, micro_batch_size=2, sequence_length=16))
    two_layers = tiny_bert(tmp_path / "two", layers=2, num_hidden_layers=2)
    counted = PlainIPUConfig(layers_per_ipu=[1, 1, 0], gradient_accumulation_steps=16).placer(
        two_layers, micro_batch_size=2, sequence_length=16)
    assert balanced(counted).layers_per_ipu == (0, 1, 1)


def balanced(placer, objective="memory"):
    """The placement `placer` balances from the config's."""
    return placer.balanced(placer.place(), objective)


def test_a_placement_is_immutable(tmp_path):
    import optimum_ipu_ext

    placement = PlainIPUConfig().placement(tiny_bert(tmp_path))
    assert isinstance(placement, optimum_ipu_ext.Placement)
    with pytest.raises(dataclasses.FrozenInstanceError):
        placement.model = "other"
    with pytest.raises(dataclasses.FrozenInstanceError):
        placement.ipus[0].parameters = 0


def test_an_ipu_fits_up_to_its_reserve_s_last_byte_and_is_tight_up_to_its_memory_s(tmp_path):
    placement = PlainIPUConfig().placement(tiny_bert(tmp_path))
    largest = placement.ipus[0].on_chip_bytes
    verdicts = [dataclasses.replace(placement, ipu_memory_bytes=largest + reserve, reserve_bytes=10).verdict
                for reserve in (10, 9, 0, -1)]
    assert verdicts == [Verdict.FITS, Verdict.TIGHT, Verdict.TIGHT, Verdict.DOES_NOT_FIT]
    fits = [dataclasses.replace(placement, ipu_memory_bytes=largest + reserve, reserve_bytes=10).fits
            for reserve in (10, 9, 0, -1)]
    assert fits == [True, False, False, False]


def test_an_inference_step_takes_a_micro_batch_on_each_inference_replica_each_device_iteration(tmp_path):
    config = PlainIPUConfig(layers_per_ipu=[1, 2], replication_factor=4, inference_replication_factor=2,
                            inference_device_iterations=3)
    time = config.placement(tiny_bert(tmp_path), for_inference=True, micro_batch_size=5).time
    assert time.samples_per_step == 5 * 3 * 2


def test_the_bytes_the_update_brings_in_are_whole(tmp_path):
    """The largest trained tensor an IPU updates, or a serialized embedding's part of it, counted in whole elements:
    the JSON gives whole bytes."""
    config = PlainIPUConfig(layers_per_ipu=[1, 2], embedding_serialization_factor=4, optimizer_state_offchip=True)
    placement = config.placement(tiny_bert(tmp_path))
    assert all(type(ipu.update_bytes) is int and ipu.update_bytes > 0 for ipu in placement.ipus)
    assert '.0,' not in placement.to_json_string()


def test_every_parameter_is_on_the_ipu_that_first_uses_it(tmp_path):
    placer = PlainIPUConfig(layers_per_ipu=[0, 3]).placer(tiny_bert(tmp_path))
    ipus = placer.place().parameter_ipus
    assert ipus["bert.embeddings.word_embeddings.weight"] == (0,)  # first used by the embedding, then by the head
    assert ipus["cls.predictions.bias"] == (0,)
    assert ipus["bert.encoder.layer.0.output.dense.weight"] == (1,)
    assert "bert.embeddings.position_ids" not in ipus and len(ipus) == 5 + 3 * 16 + 5
    other = placer.place([1, 2])
    assert other.parameter_ipus["bert.encoder.layer.0.output.dense.weight"] == (0,)  # of its own split


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
    placer = PlainIPUConfig(layers_per_ipu=[1, 2]).placer(folder)
    with pytest.raises(PlacementError) as raised:
        placer.place([2, 2])
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


@pytest.mark.parametrize("architecture, heads", [
    ("Wav2Vec2ForCTC", ("lm_head",)),
    ("Wav2Vec2ForPreTraining", ("project_hid", "project_q", "quantizer")),
])
def test_a_checkpoint_of_the_bare_speech_model_gets_the_heads_from_their_modules(tmp_path, architecture, heads):
    """The heads a bare `Wav2Vec2Model` checkpoint lacks, each placed as a group of its own, are counted from their
    modules: the placement is that of the whole model's checkpoint."""
    from support.placement_fixtures import tiny_model, write_checkpoint

    model = tiny_model(architecture)
    shapes = {name: tuple(parameter.shape) for name, parameter in model.named_parameters()}
    bare = {name: shape for name, shape in shapes.items() if not name.startswith(heads)}
    assert len(bare) < len(shapes)
    config = dict(model.config.to_dict(), architectures=[architecture])
    whole = PlainIPUConfig().placement(write_checkpoint(tmp_path / "whole", shapes, config))
    placed = PlainIPUConfig().placement(write_checkpoint(tmp_path / "bare", bare, config))
    assert [ipu.parameters for ipu in placed.ipus] == [ipu.parameters for ipu in whole.ipus]
    assert sum(ipu.parameters for ipu in placed.ipus) == sum(map(math.prod, shapes.values()))


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


def test_a_config_json_without_model_type_is_of_the_model_type_of_the_architecture_it_names(tmp_path):
    """As transformers reads the model type of an early checkpoint's config.json from a name (gpt2-medium's first
    file had none); another architecture asked for is still checked against it, and none named, none is known."""
    values = {key: value for key, value in TINY_BERT.items() if key not in ("model_type", "architectures")}
    folder = tiny_bert(tmp_path)
    with open(os.path.join(folder, "config.json"), "w") as writer:
        json.dump(dict(values, architectures=["BertForMaskedLM"]), writer)
    assert PlainIPUConfig(layers_per_ipu=[1, 2]).placement(folder).architecture == "BertForMaskedLM"
    with pytest.raises(ArchitectureError) as raised:
        PlainIPUConfig().placement(folder, architecture="GPT2LMHeadModel")
    assert raised.value.problem == 'GPT2LMHeadModel takes a config of model type "gpt2", and this one is null'
    with open(os.path.join(folder, "config.json"), "w") as writer:
        json.dump(values, writer)
    with pytest.raises(ArchitectureError, match="its config.json names no architecture; model type null"):
        PlainIPUConfig().placement(folder)


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
        f"placer = PlainIPUConfig(layers_per_ipu=[-1, -1]).placer({folder!r})\n"
        "placement = placer.place(); placer.balanced(placement); str(placement)\n"
        "print(sorted(name for name in sys.modules if name.split('.')[0] in "
        "('torch', 'transformers', 'huggingface_hub', 'optimum', 'safetensors', 'numpy')))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout == "[]\n"
