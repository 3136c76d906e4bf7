"""`Mode`: the settings each build reads, and a settings dict as one build reads it."""

import pytest

from optimum_ipu_ext.config.plain import PlainIPUConfig
from optimum_ipu_ext.errors import InvalidSettingError
from optimum_ipu_ext.settings.mode import INFERENCE, MODES, TRAINING, TWINNED, Mode

# Every setting with an `inference_` twin, as data
TWINS = {
    "replication_factor", "layers_per_ipu", "ipus_per_replica", "matmul_proportion", "embedding_serialization_factor",
    "serialized_embedding_splits_per_ipu", "projection_serialization_factor", "serialized_projection_splits_per_ipu",
    "device_iterations", "parallelize_kwargs", "execution_strategy", "output_mode", "stochastic_rounding",
}


def test_the_twinned_settings():
    assert TWINNED == TWINS


@pytest.mark.parametrize("name, training, inference", [
    ("ipus_per_replica", "ipus_per_replica", "inference_ipus_per_replica"),
    ("execution_strategy", "execution_strategy", "inference_execution_strategy"),
    ("gradient_accumulation_steps", "gradient_accumulation_steps", "gradient_accumulation_steps"),
    ("explicit_ir_inference", "explicit_ir_inference", "explicit_ir_inference"),
    ("no_such_setting", "no_such_setting", "no_such_setting"),
])
def test_each_build_names_the_setting_it_reads(name, training, inference):
    assert [TRAINING.setting(name), INFERENCE.setting(name)] == [training, inference]


def test_a_view_reads_the_builds_settings():
    settings = vars(PlainIPUConfig(layers_per_ipu=[1, 1], inference_layers_per_ipu=[2], gradient_accumulation_steps=4))
    assert [TRAINING.view(settings)["ipus_per_replica"], INFERENCE.view(settings)["ipus_per_replica"]] == [2, 1]
    assert [mode.view(settings)["gradient_accumulation_steps"] for mode in MODES] == [4, 4]
    with pytest.raises(KeyError, match="no_such_setting"):
        TRAINING.view(settings)["no_such_setting"]


def test_modes_by_keyword_and_by_name():
    assert [Mode.of(False), Mode.of(True)] == [TRAINING, INFERENCE] == list(MODES)
    assert [Mode.named("training"), Mode.named("inference")] == [TRAINING, INFERENCE]
    assert [str(TRAINING), str(INFERENCE), TRAINING.is_inference, INFERENCE.is_inference] == [
        "training", "inference", False, True]
    assert Mode("inference").is_inference and Mode("inference") == INFERENCE


def test_the_bundled_base_refuses_an_unknown_mode_before_naming_its_settings():
    from optimum_ipu_ext.config.bundled_base import IPUConfig

    config = IPUConfig()
    with pytest.raises(InvalidSettingError, match="mode"):
        config.mode = "evaluation"
    assert config.mode == "training"
