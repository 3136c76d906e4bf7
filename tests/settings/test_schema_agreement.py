"""The shipped JSON Schema and the class agree on documents drawn from the schema (hypothesis-jsonschema): one the
schema accepts is accepted by the class unless it breaks a rule the schema's description lists as its own
(`documents.RULES_NOT_IN_SCHEMA`: rules between settings, and the checks of one value JSON Schema cannot write);
one the schema refuses is refused by the class too. Drawn the same way on every run (`derandomize`)."""

import json

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from hypothesis_jsonschema import from_schema

from optimum_ipu_ext import IncompatibleSettingsError, InvalidSettingError, IPUConfig, PlainIPUConfig
from optimum_ipu_ext.settings.documents import json_schema
from optimum_ipu_ext.settings.table import SETTINGS

SCHEMA = json_schema()
# The settings only: transformers' own keys are not IPU settings, and legacy keys stand for settings drawn already
SETTINGS_SCHEMA = {**SCHEMA, "properties": {name: SCHEMA["properties"][name] for name in SETTINGS}}
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)

# Enough drawn documents to reach the corners (150 found that the schema took `layers_per_ipu: []`), few enough to
# take seconds
AGREEMENT = settings(max_examples=150, derandomize=True, deadline=None, database=None,
                     suppress_health_check=[
                         HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large,
                     ])

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 70000) | st.floats(-1e3, 1e3, allow_nan=False) | st.text(max_size=4),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3),
    max_leaves=5,
)


def breaks_a_rule_the_schema_leaves_out(error: Exception) -> bool:
    """Whether the class refused a document for a rule listed in the schema's description: one between settings,
    or a setting's own check that JSON Schema cannot write (its `constraint`)."""
    if isinstance(error, IncompatibleSettingsError):
        return True
    setting = SETTINGS.get(getattr(error, "field", None))
    return isinstance(error, InvalidSettingError) and setting is not None and setting.constraint is not None \
        and setting.constraint(error.value) is not None


def test_the_schema_lists_the_rules_it_leaves_to_the_class():
    assert "replicas x IPUs per replica is a power of two" in SCHEMA["description"]


@AGREEMENT
@given(from_schema(SETTINGS_SCHEMA))
def test_a_document_the_schema_accepts_is_accepted_unless_it_breaks_a_listed_rule(document):
    for config_class in (PlainIPUConfig, IPUConfig):
        try:
            config = config_class.from_dict(json.loads(json.dumps(document)))
        except (ValueError, TypeError) as error:
            assert breaks_a_rule_the_schema_leaves_out(error), f"{config_class.__name__}: {error}"
        else:  # and what it saves, the schema accepts
            assert VALIDATOR.is_valid(json.loads(config.to_json_string())), config.to_json_string()


@settings(AGREEMENT, max_examples=75)
@given(document=from_schema(SETTINGS_SCHEMA), name=st.sampled_from(sorted(SETTINGS)), value=JSON_VALUES)
def test_a_document_the_schema_refuses_is_refused_by_the_class(document, name, value):
    document = {**document, name: value}
    if VALIDATOR.is_valid(document):
        return
    for config_class in (PlainIPUConfig, IPUConfig):
        with pytest.raises((ValueError, TypeError)):
            config_class.from_dict(json.loads(json.dumps(document)))


@pytest.mark.parametrize(
    "document", [{"replicaton_factor": 2}, {"random_seed": "3"}, {"sharded_execution_for_inference": 1}]
)
def test_unknown_keys_and_badly_typed_legacy_keys_are_refused_by_both(document):
    assert not VALIDATOR.is_valid(document)
    with pytest.raises((ValueError, TypeError)):
        PlainIPUConfig.from_dict(document)
