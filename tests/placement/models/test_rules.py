"""`placement/rules.py`: a model's `config.json` read as the rules need it, each field left out taking
transformers 4.29.2's default."""


import pytest

from optimum_ipu_ext import PlacementError
from optimum_ipu_ext.placement.models import ARCHITECTURES
from optimum_ipu_ext.placement.models.rules import ModelConfig

# --- the config's fields, with transformers 4.29.2's defaults ---------------------------------------------------


def test_a_config_field_left_out_takes_its_default_and_null_is_left_out():
    config = ModelConfig({"num_layers": 3, "d_model": None},
                         {"d_model": 512, "num_decoder_layers": lambda c: c.num_layers})
    assert (config.num_layers, config.d_model, config.num_decoder_layers) == (3, 512, 3)
    assert ModelConfig({"num_decoder_layers": 2, "num_layers": 3}, config.defaults).num_decoder_layers == 2
    with pytest.raises(AttributeError, match="'vocab_size' has no default"):
        _ = config.vocab_size


def test_a_field_whose_default_is_of_no_kind_the_rules_check_takes_the_config_s_value_as_it_is():
    """Only a default's kind of value is checked (a dict's is not): the field takes the config's value."""
    config = ModelConfig({"label2id": {"a": 0}, "num_layers": "3"}, {"label2id": {}, "num_layers": 2})
    assert config.label2id == {"a": 0}
    with pytest.raises(PlacementError) as raised:
        _ = config.num_layers
    assert str(raised.value) == ('Cannot place the model: its config.json gives `num_layers` "3", and the placement '
                                 "needs a whole number.")


def test_a_row_s_config_names_its_model_in_a_refusal_or_else_the_model():
    for config, named in [(ARCHITECTURES["BertModel"].config({"num_hidden_layers": "3"}), "the model"),
                          (ARCHITECTURES["BertModel"].config({"num_hidden_layers": "3"}, "org/bert"), "org/bert")]:
        with pytest.raises(PlacementError) as raised:
            _ = config.num_hidden_layers
        assert str(raised.value) == (f'Cannot place {named}: its config.json gives `num_hidden_layers` "3", and the '
                                     "placement needs a whole number.")


def test_the_number_of_labels_is_that_of_their_names():
    assert ModelConfig({}, {}).num_labels == 2
    assert ModelConfig({"id2label": {"0": "a", "1": "b", "2": "c"}}, {}).num_labels == 3
    assert ModelConfig({"num_labels": 5}, {}).num_labels == 5


def test_a_step_s_condition_holds_on_the_config():
    config = ModelConfig({"do_stable_layer_norm": True}, {})
    assert config.holds(None) and config.holds(("do_stable_layer_norm", True))
    assert not config.holds(("do_stable_layer_norm", False))
