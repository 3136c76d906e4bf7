"""`options/readback.py`'s parts, on the strict doubles: the state `trainingModel` / `inferenceModel` see (the
default output mode resolved), what they use besides `toDict()`, and how refusals name an option and its build.

`IPUConfig.from_options` as a whole (every setting read back, every refusal): test_from_options.py."""

import pytest

from optimum_ipu_ext import PlainIPUConfig
from optimum_ipu_ext.options.readback import full_state, name_in_mode, option_name, python_state, resolved_state
from optimum_ipu_ext.settings.mode import Mode
from support import doubles

TRAINING, INFERENCE = Mode.of(False), Mode.of(True)


@pytest.mark.parametrize("key, name", [
    ("replication_factor", "replicationFactor (replication_factor)"),  # a row's call
    ("location_optimizer", "TensorLocations.setOptimizerLocation (location_optimizer)"),
    ("log_dir", "logDir (log_dir)"),  # a call no setting makes
    ("distributed_process_id", "Distributed.configureProcessId (distributed_process_id)"),
    ("autoRecomputation", "autoRecomputation"),  # a PopART session option, by `_Popart.set`
    ("sourceLocationExcludes", "sourceLocationExcludes"),  # the method's own name
    ("someUnknownOption", "someUnknownOption"),
])
def test_a_state_key_is_named_by_the_method_that_writes_it(key, name):
    assert option_name(key) == name


def test_an_option_is_named_with_its_build_where_both_builds_are_imported():
    assert name_in_mode("logDir (log_dir)", TRAINING, {TRAINING: object()}) == "logDir (log_dir)"
    both = {TRAINING: object(), INFERENCE: object()}
    assert name_in_mode("logDir (log_dir)", INFERENCE, both) == "logDir (log_dir) (inference)"
    assert name_in_mode("outlineThreshold", TRAINING, both) == "outlineThreshold (training)"


def test_the_default_output_mode_resolves_as_each_build_resolves_it(sdk):
    output_modes = doubles.poptorch.OutputMode
    options = doubles.poptorch.Options()
    assert resolved_state(options, TRAINING)["output_mode"] == output_modes.Final
    assert resolved_state(options, INFERENCE)["output_mode"] == output_modes.All
    assert options.defaultOutputMode()  # resolved on a clone
    chosen = doubles.poptorch.Options().outputMode(output_modes.Sum)
    assert resolved_state(chosen, INFERENCE)["output_mode"] == output_modes.Sum


def test_what_the_models_use_besides_toDict_is_read_where_poptorch_keeps_it(sdk):
    poptorch = doubles.poptorch
    options = poptorch.Options()
    assert python_state(options) == {
        "setExecutionStrategy": ("PipelinedExecution", poptorch.AutoStage.SameAsIpu, {}),
        "relaxOptimizerAttributesChecks": False,
        "disableModuleNamescope": False,
        "sourceLocationExcludes": ["install/poptorch", "site-packages/torch", "site-packages/poptorch"],
    }
    options.setExecutionStrategy(poptorch.ShardedExecution(poptorch.Stage("a").ipu(1)))
    options.relaxOptimizerAttributesChecks().disableModuleNamescope().sourceLocationExcludes(["mine/"])
    assert python_state(options) == {
        "setExecutionStrategy": ("ShardedExecution", None, {"a": (0, -1, 1)}),  # stage 0, in no phase, on IPU 1
        "relaxOptimizerAttributesChecks": True,
        "disableModuleNamescope": True,
        "sourceLocationExcludes": ["mine/"],
    }


def test_the_full_state_names_an_object_that_is_not_data_by_its_type(sdk):
    state = full_state(PlainIPUConfig().options_plan().build(), TRAINING)
    assert state["compilation_progress_bar_fn"] is doubles.poptorch._options_impl.ProgressBar
    assert state["relaxOptimizerAttributesChecks"] is False and state["replication_factor"] == 1


def test_the_state_toDict_leaves_out_tells_strategies_apart(sdk):
    poptorch = doubles.poptorch
    states = [
        python_state(poptorch.Options().setExecutionStrategy(strategy))
        for strategy in (poptorch.PipelinedExecution(poptorch.AutoStage.SameAsIpu),
                         poptorch.PipelinedExecution(poptorch.AutoStage.AutoIncrement),
                         poptorch.ShardedExecution(poptorch.AutoStage.SameAsIpu))
    ]
    assert states[0]["setExecutionStrategy"][:2] == ("PipelinedExecution", poptorch.AutoStage.SameAsIpu)
    assert len({repr(state) for state in states}) == 3
