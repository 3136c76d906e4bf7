"""Properties over generated configurations (hypothesis): a config survives its JSON form unchanged, and a config that
uses none of the settings this package adds builds the options optimum-graphcore's own class builds."""

import json

from hypothesis import given

from optimum_ipu_ext import IPUConfig
from support import doubles
from support.builds import comparable
from support.expected_states import differences
from support.strategies import PROFILE, full_settings, upstream_settings


@PROFILE
@given(full_settings())
def test_from_dict_to_json_from_dict_is_the_identity(config_dict):
    config = IPUConfig.from_dict(config_dict)
    text = config.to_json_string()
    again = IPUConfig.from_dict(json.loads(text))
    assert again.to_json_string() == text
    assert again.to_dict() == config.to_dict()
    for name, value in config_dict.items():
        assert getattr(again, name) == value, name
    assert again.non_default_settings() == config.non_default_settings()


@PROFILE
@given(upstream_settings())
def test_a_config_without_new_settings_builds_what_upstream_builds(config_dict):
    upstream = doubles.load_upstream_ipu_configuration()
    with doubles.installed(hardware_version=2):
        for for_inference in (False, True):
            theirs = comparable(upstream.IPUConfig(**config_dict).to_options(for_inference=for_inference))
            ours = comparable(IPUConfig(**config_dict).to_options(for_inference=for_inference))
            assert differences(ours, theirs) == {}, for_inference
