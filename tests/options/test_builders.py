"""Hand-written builders as tests: each builder of tests/support/builders/ runs on the strict doubles, its options
import with `IPUConfig.from_options`, and the config rebuilds options of the same state, for training and inference,
also after `save_pretrained` + `from_pretrained`.
"""


import pytest

from optimum_ipu_ext import IPUConfig, UnsupportedOptionsError
from support import doubles
from support.builder_cases import CASES, bert, imported, seed_args
from support.builders.bert_configs import LAYERS_PER_IPU_LARGE
from support.doubles import installed, state


@pytest.fixture
def sdk_off_poprun():
    """The doubles on an IPU Mk2, popdist installed but not launched by poprun."""
    with installed(hardware_version=2, popdist_environment={}):
        yield


def expected_state(options, mode, ipus=None):
    """The state `trainingModel` / `inferenceModel` see (on a clone whose default output mode is resolved); with
    `ipus`, without the memory proportions of IPUs beyond a pipeline of that many, which the import drops."""
    output_modes = doubles.poptorch.OutputMode
    options = options.clone()
    if options.defaultOutputMode():
        options.outputMode(output_modes.All if mode == "inference" else output_modes.Final)
    expected = state(options)
    if ipus is not None:
        proportions = expected["available_memory_proportion"]
        expected["available_memory_proportion"] = {ipu: value for ipu, value in proportions.items() if ipu < ipus}
    return expected


@pytest.mark.parametrize("name", list(CASES))
def test_a_builder_imports_and_rebuilds_its_state(builders, sdk_off_poprun, tmp_path, name):
    case = CASES[name]
    given, config = imported(case, builders)
    ipus = case.overrides["ipus_per_replica"] if case.dropped else None
    config.save_pretrained(tmp_path)
    for rebuilding in (config, IPUConfig.from_pretrained(tmp_path)):
        for mode, options in given.items():
            rebuilt = rebuilding.to_options(for_inference=mode == "inference")
            assert state(rebuilt) == expected_state(options, mode, ipus)


def test_bert_compiled_offline_is_the_imported_bert_rebuilt_for_an_offline_target(builders, sdk_off_poprun):
    bert_options = builders["bert_options"]
    config = IPUConfig.from_options(training=bert_options.get_options(bert()), layers_per_ipu=LAYERS_PER_IPU_LARGE)
    offline = bert_options.get_options(bert(compile_only=True))
    assert state(config.to_options(compile_only=True)) == expected_state(offline, "training")


def test_importing_bert_compiled_offline_names_the_offline_target(builders, sdk_off_poprun):
    with pytest.raises(UnsupportedOptionsError) as raised:
        IPUConfig.from_options(training=builders["bert_options"].get_options(bert(compile_only=True)))
    assert "useOfflineIpuTarget" in str(raised.value) and "compile_only" in str(raised.value)


def test_the_seed_fixture_builds_what_the_seed_builds(builders, seed_module):
    """The one test that needs the original seed file: every other test of the seed's build runs the project's own
    equivalent, tests/support/builders/seed_build.py. One test, so a clone without it skips once."""
    for replication_factor in (1, 2, 4, 8, 16, 64):
        for optimizer_state_offchip in (False, True):
            args = seed_args(replication_factor, optimizer_state_offchip)
            with installed(hardware_version=2):
                built, original = builders["seed_build"].build_ipu_config(args), seed_module.build_ipu_config(args)
                assert state(built) == state(original), (replication_factor, optimizer_state_offchip)
