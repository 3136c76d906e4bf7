"""Both ways on every config we have: each preset and each builder fixture (tests/support/builders), training and
inference, exports as an option file that poptorch's own `loadFromFile` (on the doubles, which run it as poptorch 3.4
does) turns into options of the state `to_options()` builds; the file imports back into the same config, on the
recorder and on the poptorch in use."""

import pytest
from hypothesis import given

from optimum_ipu_ext import IPUConfig, PlainIPUConfig
from support.builder_cases import CASES, imported
from support.doubles import installed
from support.expected_states import differences
from support.option_file_helpers import MODES, PRESETS, built, loaded, untold
from support.strategies import PROFILE, full_settings


def exported(config, folder):
    """{mode: the path of the option file of that build of `config`}."""
    return {mode: config.to_options_file(folder / f"{mode}.cfg", for_inference=mode == "inference") for mode in MODES}


def assert_both_ways(config, folder, as_imported=True):
    """The builds of `config` export as files poptorch loads to their state, and the files import back into
    `config`; or, where `config` is not what an import of its builds gives (`as_imported=False`), into what it gives,
    which builds the same."""
    files = exported(config, folder)
    for mode, path in files.items():
        assert differences(loaded(mode, path), built(config, mode)) == {}, mode
    again = type(config).from_options_file(**files, **untold(config))  # on the recorder: no SDK here
    with installed(hardware_version=2):  # on the poptorch in use
        assert type(config).from_options_file(**files, **untold(config)).settings_dict() == again.settings_dict()
        options = {mode: config.options_plan(for_inference=mode == "inference").build() for mode in MODES}
        assert again.settings_dict() == type(config).from_options(**options, **untold(config)).settings_dict()
    if as_imported:
        assert again.settings_dict() == config.settings_dict()
    for mode in MODES:
        assert differences(built(again, mode), built(config, mode)) == {}, mode


@pytest.mark.filterwarnings("ignore:`replicated_tensor_sharding=true` has no effect")  # the preset's one replica
@pytest.mark.parametrize("preset", PRESETS, ids=[preset.stem for preset in PRESETS])
def test_each_preset_both_ways(tmp_path, preset):
    assert_both_ways(IPUConfig.from_pretrained(str(preset)), tmp_path)


@pytest.mark.parametrize("preset", PRESETS, ids=[preset.stem for preset in PRESETS])
def test_each_preset_both_ways_without_transformers(tmp_path, preset):
    assert_both_ways(PlainIPUConfig.from_json_file(preset), tmp_path)


@pytest.mark.parametrize("name", list(CASES))
def test_each_builder_fixture_both_ways(builders, tmp_path, name):  # noqa: F811
    case = CASES[name]
    with installed(hardware_version=2, popdist_environment={}):
        _, config = imported(case, builders)
    # imported from its inference build alone, a config keeps the default training strategy, `pipelined`, with the
    # `auto_stage` of its inference build, `same_as_ipu`: poptorch's default strategy, which imports as null
    assert_both_ways(config, tmp_path, as_imported=case.training is not None)


@pytest.mark.filterwarnings("ignore:`replicated_tensor_sharding=true` has no effect")
@PROFILE
@given(full_settings())
def test_any_config_exports_as_a_file_poptorch_loads_to_its_build(tmp_path_factory, config_dict):
    config = PlainIPUConfig.from_dict(config_dict)
    files = exported(config, tmp_path_factory.mktemp("files"))
    for mode, path in files.items():
        assert differences(loaded(mode, path), built(config, mode)) == {}, mode
