"""The placement on the tiny models of every architecture transformers has here: the parameters it counts are the
model's `named_parameters()`, whether read from its checkpoint, from a checkpoint lacking its head or holding only
the bare model, or from its config alone; and `--balance` is the best split a brute force over all finds."""

import os

import pytest
import transformers
from safetensors.torch import load_file, save_file

from optimum_ipu_ext import PlacementError, PlainIPUConfig
from optimum_ipu_ext.placement.estimate import balance
from optimum_ipu_ext.placement.estimate.layer_runs import LayerRunCosts
from optimum_ipu_ext.placement.estimate.layout import encoder_decoder_cut, layer_counts
from optimum_ipu_ext.placement.models import ARCHITECTURES
from optimum_ipu_ext.placement.models.rules import Block, Run, Split, expand
from support.placement_fixtures import saved_tiny_model, tiny_model
from support.placement_models import TINY_MODELS
from support.splits import compositions

IN_TRANSFORMERS = [name for name in TINY_MODELS if hasattr(transformers, name)]
FOUR_IPUS = PlainIPUConfig(layers_per_ipu=[-1] * 4)


def parameters(placement):
    return sum(ipu.parameters for ipu in placement.ipus)


def expected_parameters(architecture):
    """The model's parameters, each tied weight once, and the copy a pipelined model holds of one."""
    model = tiny_model(architecture)
    named = dict(model.named_parameters())
    copies = ARCHITECTURES[architecture].copies
    return sum(parameter.numel() for parameter in named.values()) + sum(named[source].numel()
                                                                         for source, _ in copies.values())


def head_paths(row, values):
    """The modules a checkpoint may lack: the steps a row's modules call heads (a split's, its whole
    module's)."""
    steps = [step for step, _, _ in expand(row, row.config(values))]
    return {*(step.path for step in steps if (
        step.whole.head if isinstance(step, Split) else isinstance(step, (Block, Run)) and step.head))}


def rewrite(folder, keep):
    path = os.path.join(folder, "model.safetensors")
    tensors = load_file(path)
    save_file({keep(name): tensor for name, tensor in tensors.items() if keep(name)}, path, metadata={"format": "pt"})


@pytest.mark.parametrize("architecture", IN_TRANSFORMERS)
def test_the_parameters_are_the_model_s_from_every_source(architecture, tmp_path):
    row = ARCHITECTURES[architecture]
    expected = expected_parameters(architecture)
    folder = saved_tiny_model(architecture, tmp_path / "model")
    assert parameters(FOUR_IPUS.placement(folder)) == expected
    config = tiny_model(architecture).config.to_dict()
    assert parameters(FOUR_IPUS.placement(config)) == expected  # sized by the formulas of config.json

    def bare(name):  # a checkpoint of the base model: its names without the prefix, no head
        prefix = row.prefix + "."
        return name[len(prefix):] if name.startswith(prefix) else None

    if any(name.startswith(row.prefix + ".") for name in load_file(os.path.join(folder, "model.safetensors"))):
        rewrite(folder, bare)
        assert parameters(FOUR_IPUS.placement(folder)) == expected
    folder = saved_tiny_model(architecture, tmp_path / "headless")
    heads = head_paths(row, config)
    rewrite(folder, lambda name: None if any(name == path or name.startswith(path + ".") for path in heads)
            else name)
    assert parameters(FOUR_IPUS.placement(folder)) == expected


def test_a_checkpoint_lacking_a_layer_is_not_this_config_s(tmp_path):
    folder = saved_tiny_model("BertForMaskedLM", tmp_path / "model")
    rewrite(folder, lambda name: None if name.startswith("bert.encoder.layer.2.") else name)
    with pytest.raises(PlacementError) as raised:
        PlainIPUConfig(layers_per_ipu=[1, 2]).placement(folder)
    assert str(raised.value) == (f"Cannot place {folder}: its checkpoint holds no parameter of "
                                 "`bert.encoder.layer.2`, one of the 3 layers its config.json gives it: the "
                                 "checkpoint is not this config's.")


# --- balancing ---------------------------------------------------------------------------------------------------


def best_by_brute_force(placer, placement):
    """The split of the placement's model a brute force over every split upstream accepts finds best."""
    layers = sum(len(ipu.layers) for ipu in placement.ipus)
    found = []
    for split in compositions(layers, len(placement.ipus)):
        try:
            other = placer.place(split)
        except PlacementError:
            continue  # a split upstream refuses (an encoder-decoder cut that is not a power of two)
        found.append((list(other.layers_per_ipu), max(ipu.on_chip_bytes for ipu in other.ipus)))
    return balance.chosen(found, placement.layers_per_ipu)


BALANCED_CASES = [
    # the training build's own IPUs, not the inference build's
    ("BertForQuestionAnswering", {"num_hidden_layers": 6}, {"layers_per_ipu": [-1, -1, -1],
                                                            "inference_layers_per_ipu": [-1]}, False),
    ("BertForPreTraining", {"num_hidden_layers": 5}, {"layers_per_ipu": [1, -1], "gradient_accumulation_steps": 4},
     False),
    ("GPT2LMHeadModel", {"n_layer": 5}, {"layers_per_ipu": [-1, -1, -1, -1]}, False),
    ("GPT2ForSequenceClassification", {"n_layer": 4}, {"inference_layers_per_ipu": [-1, -1, -1]}, True),
    ("ConvNextForImageClassification", {"depths": [2, 3]}, {"layers_per_ipu": [-1, -1, -1]}, False),
    ("HubertForCTC", {}, {"layers_per_ipu": [-1, -1, -1], "optimizer_state_offchip": True}, False),
    # the inference build's generation split leaves the training build one executor
    ("T5ForConditionalGeneration", {"num_layers": 3}, {"layers_per_ipu": [-1, -1, -1, -1]}, False),
    ("T5ForConditionalGeneration", {"num_layers": 3},
     {"layers_per_ipu": [-1, -1, -1], "inference_parallelize_kwargs": {"for_generation": True}}, False),
    ("T5ForConditionalGeneration", {"num_layers": 3, "num_decoder_layers": 3},
     {"inference_layers_per_ipu": [1, 2, 2, 1], "inference_parallelize_kwargs": {"for_generation": True}}, True),
    ("WhisperForConditionalGeneration", {"encoder_layers": 3, "decoder_layers": 2},
     {"inference_layers_per_ipu": [3, 1, 1], "inference_parallelize_kwargs": {"for_generation": True}}, True),
    ("BartForConditionalGeneration", {"encoder_layers": 2, "decoder_layers": 3},
     {"inference_layers_per_ipu": [1, 1, 1, 2], "inference_parallelize_kwargs": {"for_generation": True}}, True),
    # the best splits leave the decoder's first IPU empty, its second keeping the encoder on 2 IPUs
    ("T5ForConditionalGeneration", {"num_layers": 2, "num_decoder_layers": 1},
     {"inference_layers_per_ipu": [2, 1, 0, 0, 0], "inference_parallelize_kwargs": {"for_generation": True}}, True),
    ("T5ForConditionalGeneration", {"num_layers": 1, "num_decoder_layers": 1},
     {"inference_layers_per_ipu": [1, 1, 0, 0, 0], "inference_parallelize_kwargs": {"for_generation": True}}, True),
    ("BartForConditionalGeneration", {"encoder_layers": 2, "decoder_layers": 2},
     {"inference_layers_per_ipu": [1, 1, 0, 1, 1], "inference_parallelize_kwargs": {"for_generation": True}}, True),
]


@pytest.mark.parametrize("architecture, model_config, ipu_settings, for_inference", BALANCED_CASES)
def test_the_balanced_split_is_the_best_upstream_accepts(architecture, model_config, ipu_settings, for_inference):
    config = dict(tiny_model(architecture).config.to_dict(), **model_config)
    placer = PlainIPUConfig(**ipu_settings).placer(config, architecture=architecture, for_inference=for_inference)
    placement = placer.place()
    balanced = placer.balanced(placement)
    best = best_by_brute_force(placer, placement)
    assert (list(balanced.layers_per_ipu), max(ipu.on_chip_bytes for ipu in balanced.ipus)) == best
    assert balanced.to_dict() == placer.place(best[0]).to_dict()


@pytest.mark.parametrize("architecture, model_config, ipu_settings, for_inference", BALANCED_CASES + [
    ("Wav2Vec2ForCTC", {}, {"layers_per_ipu": [-1, -1, -1], "gradient_accumulation_steps": 4}, False),
])
def test_the_balance_costs_each_split_as_its_placement_does(architecture, model_config, ipu_settings, for_inference):
    config = dict(tiny_model(architecture).config.to_dict(), **model_config)
    placer = PlainIPUConfig(**ipu_settings).placer(config, architecture=architecture, for_inference=for_inference)
    placement = placer.place()
    configured, ipus = placer.configured, len(placement.ipus)
    layers = sum(len(ipu.layers) for ipu in placement.ipus)
    row = configured.architecture
    encoder = layer_counts(row, configured.config).get((row.generation or [None])[0])
    checked = 0
    for cut in placer.cuts(ipus):
        cost = LayerRunCosts(configured, cut).on_chip_bytes
        for split in compositions(layers, ipus):
            try:
                other = placer.place(split)
                if cut is not None and encoder_decoder_cut("m", split, encoder, "layers_per_ipu") != cut:
                    continue
            except PlacementError:
                continue
            assert [cost(ipu, sum(split[:ipu]), sum(split[:ipu + 1])) for ipu in range(ipus)] == [
                ipu.on_chip_bytes for ipu in other.ipus], (cut, split)
            checked += 1
    assert checked > ipus


def test_one_ipu_is_balanced_already():
    placer = PlainIPUConfig().placer(tiny_model("BertForMaskedLM").config.to_dict(), architecture="BertForMaskedLM")
    placement = placer.place()
    assert placer.balanced(placement) is placement


def test_lxmert_has_no_split_to_balance():
    config = dict(tiny_model("LxmertForQuestionAnswering").config.to_dict(), _name_or_path="lxmert")
    placer = PlainIPUConfig(layers_per_ipu=[-1] * 4).placer(config, architecture="LxmertForQuestionAnswering")
    with pytest.raises(PlacementError) as raised:
        placer.balanced(placer.place())
    assert str(raised.value) == ("Cannot place lxmert: LxmertForQuestionAnswering's parallelize() places its layers "
                                 "on IPUs of its own choosing, whatever `layers_per_ipu` says: there is no split to "
                                 "balance.")
