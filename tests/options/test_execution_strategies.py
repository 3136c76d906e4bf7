"""Execution strategies as settings: every poptorch 3.4 strategy, with an `AutoStage`, explicit stages or phases and
the phased strategies' own options, written by hand on the strict doubles, imports into settings (written out
here) whose options have the same state; the plans print as Python that builds those options; bad values and
settings that no build reads are refused by name."""

import json

import pytest

from optimum_ipu_ext import (
    IncompatibleSettingsError,
    InvalidSettingError,
    IPUConfig,
    SettingTypeError,
    UnsupportedOptionsError,
)
from support import doubles
from support.doubles import state

TWO_IPUS = {"IPU0": 0.2, "IPU1": 0.2}


def _stage(p, *blocks, ipu=None):
    stage = p.Stage(*blocks)
    return stage if ipu is None else stage.ipu(ipu)


def _serial(p, liveness, separate):
    strategy = p.SerialPhasedExecution(
        p.Phase(_stage(p, "0", ipu=0), _stage(p, "1", ipu=1)), ["2", "3"], "4"
    ).useSeparateBackwardPhase(separate)
    strategy.phase(1).ipus(0)
    return strategy.setTensorsLiveness(getattr(p.Liveness, liveness))


def _parallel(p, off_chip):
    strategy = p.ParallelPhasedExecution([_stage(p, "0"), _stage(p, "1")], p.Phase(_stage(p, "2")))
    strategy.phase(0).ipus(0, 2)
    return strategy.sendTensorsOffChipAfterFwd(off_chip)


PHASES = [
    [{"blocks": ["0"], "ipu": 0}, {"blocks": ["1"], "ipu": 1}],
    [{"blocks": ["2", "3"], "ipu": 0}],
    [{"blocks": ["4"]}],
]
PARALLEL_PHASES = [[{"blocks": ["0"], "ipu": 0}, {"blocks": ["1"], "ipu": 2}], [{"blocks": ["2"]}]]

# name: (the strategy as a builder writes it, the settings it imports as; `{prefix}` is "" or "inference_")
STRATEGIES = {
    # poptorch's default strategy, set or not, is no call: `auto_stage` is left for the other build
    "default": (None, {"{prefix}execution_strategy": None, "auto_stage": "auto_increment", "execution_stages": None}),
    "pipelined, same as IPU": (
        lambda p: p.PipelinedExecution(p.AutoStage.SameAsIpu),
        {"{prefix}execution_strategy": None, "auto_stage": "auto_increment", "execution_stages": None},
    ),
    "pipelined, auto-increment": (
        lambda p: p.PipelinedExecution(p.AutoStage.AutoIncrement),
        {"{prefix}execution_strategy": "pipelined", "auto_stage": "auto_increment", "execution_stages": None},
    ),
    "sharded, same as IPU": (
        lambda p: p.ShardedExecution(p.AutoStage.SameAsIpu),
        {"{prefix}execution_strategy": "sharded", "auto_stage": "same_as_ipu", "execution_stages": None},
    ),
    "sharded, auto-increment": (
        lambda p: p.ShardedExecution(p.AutoStage.AutoIncrement),
        {"{prefix}execution_strategy": "sharded", "auto_stage": "auto_increment", "execution_stages": None},
    ),
    "pipelined, stages": (
        lambda p: p.PipelinedExecution(_stage(p, "embeddings", ipu=0), _stage(p, "encoder", "pooler", ipu=1), "head"),
        {
            "{prefix}execution_strategy": "pipelined",
            "execution_stages": [
                {"blocks": ["embeddings"], "ipu": 0},
                {"blocks": ["encoder", "pooler"], "ipu": 1},
                {"blocks": ["head"]},
            ],
        },
    ),
    "pipelined, lists of blocks": (
        lambda p: p.PipelinedExecution(["0", "1"], ["2"]),
        {"{prefix}execution_strategy": "pipelined", "execution_stages": [{"blocks": ["0", "1"]}, {"blocks": ["2"]}]},
    ),
    "sharded, stages": (
        lambda p: p.ShardedExecution(_stage(p, "a", ipu=1), _stage(p, "b", ipu=0)),
        {
            "{prefix}execution_strategy": "sharded",
            "execution_stages": [{"blocks": ["a"], "ipu": 1}, {"blocks": ["b"], "ipu": 0}],
        },
    ),
    **{
        f"serial phased, {liveness}, separate {separate}": (
            lambda p, liveness=liveness, separate=separate: _serial(p, liveness, separate),
            {
                "{prefix}execution_strategy": "serial_phased",
                "execution_phases": PHASES,
                "separate_backward_phase": separate,
                "tensors_liveness": choice,
            },
        )
        for liveness, choice in [
            ("AlwaysLive", "always_live"),
            ("OffChipAfterFwd", "off_chip_after_fwd"),
            ("OffChipAfterFwdNoOverlap", "off_chip_after_fwd_no_overlap"),
            ("OffChipAfterEachPhase", "off_chip_after_each_phase"),
        ]
        for separate in (False, True)
    },
    **{
        f"parallel phased, off chip {off_chip}": (
            lambda p, off_chip=off_chip: _parallel(p, off_chip),
            {
                "{prefix}execution_strategy": "parallel_phased",
                "execution_phases": PARALLEL_PHASES,
                "separate_backward_phase": False,
                "tensors_liveness": choice,
            },
        )
        for off_chip, choice in [(False, "always_live"), (True, "off_chip_after_fwd")]
    },
}


def _build(strategy):
    """A build as users write one, with the strategy `strategy(poptorch)` (None: none set)."""
    p = doubles.poptorch
    opts = p.Options().setAvailableMemoryProportion(TWO_IPUS)
    opts.Precision.enableStochasticRounding(False)
    opts.TensorLocations.setOptimizerLocation(
        p.TensorLocationSettings().useOnChipStorage(True).useReplicatedTensorSharding(False)
    )
    if strategy is not None:
        opts.setExecutionStrategy(strategy(p))
    return opts


def _resolved(opts, mode):
    opts = opts.clone()
    if opts.defaultOutputMode():
        opts.outputMode(doubles.poptorch.OutputMode.All if mode == "inference" else doubles.poptorch.OutputMode.Final)
    return state(opts)


@pytest.mark.parametrize("mode", ["training", "inference"])
@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_each_strategy_imports_as_its_settings_and_rebuilds_to_equal_state(sdk, name, mode):
    strategy, settings = STRATEGIES[name]
    opts = _build(strategy)
    config = IPUConfig.from_options(**{mode: opts})
    prefix = "inference_" if mode == "inference" else ""
    expected = {key.format(prefix=prefix): value for key, value in settings.items()}
    assert {key: getattr(config, key) for key in expected} == expected
    rebuilt = config.to_options(for_inference=mode == "inference")
    assert state(rebuilt) == _resolved(opts, mode)


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_the_import_survives_save_and_load(sdk, name, tmp_path):
    opts = _build(STRATEGIES[name][0])
    IPUConfig.from_options(training=opts).save_pretrained(tmp_path)
    assert state(IPUConfig.from_pretrained(tmp_path).to_options()) == _resolved(opts, "training")


def test_both_builds_share_their_phases(sdk):
    training = _build(lambda p: _serial(p, "OffChipAfterFwd", True))
    inference = _build(lambda p: _serial(p, "OffChipAfterFwd", True))
    config = IPUConfig.from_options(training=training, inference=inference)
    assert (config.execution_strategy, config.inference_execution_strategy) == ("serial_phased", "serial_phased")
    assert state(config.to_options(for_inference=True)) == _resolved(inference, "inference")


def test_a_default_strategy_leaves_the_auto_stage_to_the_other_build(sdk):
    training = _build(lambda p: p.PipelinedExecution(p.AutoStage.SameAsIpu))
    inference = _build(lambda p: p.ShardedExecution(p.AutoStage.AutoIncrement))
    config = IPUConfig.from_options(training=training, inference=inference)
    assert (config.execution_strategy, config.inference_execution_strategy, config.auto_stage) == (
        None, "sharded", "auto_increment"
    )
    assert state(config.to_options()) == _resolved(training, "training")


def test_builds_with_different_stages_are_refused_as_the_settings_share_them(sdk):
    training = _build(lambda p: p.PipelinedExecution("a", "b"))
    inference = _build(lambda p: p.ShardedExecution(["a", "b"]))
    with pytest.raises(UnsupportedOptionsError) as raised:
        IPUConfig.from_options(training=training, inference=inference)
    assert set(raised.value.options) == {"setExecutionStrategy (inference)"}


@pytest.mark.parametrize(
    "strategy, reason",
    [
        (
            lambda p: p.PipelinedExecution(p.Stage("a"), p.Stage(), p.Stage("b")),
            "PipelinedExecution with a stage of no blocks",
        ),
        (
            lambda p: p.ShardedExecution(p.Stage("a").ipu(-1)),
            "ShardedExecution: stage 0: `ipu` must be an integer >= 0",
        ),
        (
            lambda p: p.ShardedExecution(p.Stage("a").ipu(True)),
            "ShardedExecution: stage 0: `ipu` must be an integer >= 0",
        ),
        (
            lambda p: p.SerialPhasedExecution(p.Phase("a"), p.Phase()),
            "SerialPhasedExecution: phase 1, at least one stage is needed",
        ),
        (
            lambda p: p.ParallelPhasedExecution(p.Phase(p.Stage(), p.Stage("a"))),
            "ParallelPhasedExecution: phase 0, stage 0: `blocks` must be a non-empty list of block ids (strings, as "
            "`poptorch.Block` names them)",
        ),
    ],
)
def test_stages_the_settings_cannot_write_are_refused(sdk, strategy, reason):
    with pytest.raises(UnsupportedOptionsError) as raised:
        IPUConfig.from_options(training=_build(strategy))
    assert raised.value.options["setExecutionStrategy"] == reason  # beside the toDict() keys the rebuild differs in


# --- the plan: the strategy as printed, and the printed plan builds what `to_options()` builds -------------------

PLANS = [
    # (settings, the training build's setExecutionStrategy line, the inference build's; None: no call)
    ({}, "poptorch.PipelinedExecution(poptorch.AutoStage.AutoIncrement)",
     "poptorch.ShardedExecution(poptorch.AutoStage.AutoIncrement)"),
    ({"execution_strategy": None, "auto_stage": None}, None, "poptorch.ShardedExecution()"),
    ({"inference_execution_strategy": None, "auto_stage": "same_as_ipu"},
     "poptorch.PipelinedExecution(poptorch.AutoStage.SameAsIpu)", None),
    ({"execution_stages": [{"blocks": ["a", "b"], "ipu": 1}, {"blocks": ["c"]}]},
     'poptorch.PipelinedExecution(poptorch.Stage("a", "b").ipu(1), poptorch.Stage("c"))',
     'poptorch.ShardedExecution(poptorch.Stage("a", "b").ipu(1), poptorch.Stage("c"))'),
    ({"execution_strategy": "serial_phased", "execution_phases": PHASES, "separate_backward_phase": True,
      "tensors_liveness": "off_chip_after_each_phase"},
     'poptorch.SerialPhasedExecution(poptorch.Phase(poptorch.Stage("0").ipu(0), poptorch.Stage("1").ipu(1)), '
     'poptorch.Phase(poptorch.Stage("2", "3").ipu(0)), poptorch.Phase(poptorch.Stage("4")))'
     ".useSeparateBackwardPhase(True).setTensorsLiveness(poptorch.Liveness.OffChipAfterEachPhase)",
     "poptorch.ShardedExecution(poptorch.AutoStage.AutoIncrement)"),
    ({"inference_execution_strategy": "parallel_phased", "execution_phases": PARALLEL_PHASES,
      "tensors_liveness": "off_chip_after_fwd"},
     "poptorch.PipelinedExecution(poptorch.AutoStage.AutoIncrement)",
     'poptorch.ParallelPhasedExecution(poptorch.Phase(poptorch.Stage("0").ipu(0), poptorch.Stage("1").ipu(2)), '
     'poptorch.Phase(poptorch.Stage("2"))).sendTensorsOffChipAfterFwd(True)'),
    ({"execution_strategy": "parallel_phased", "execution_phases": [[{"blocks": ["a"]}]],
      "execution_stages": [{"blocks": ["a"]}], "separate_backward_phase": False},
     'poptorch.ParallelPhasedExecution(poptorch.Phase(poptorch.Stage("a"))).useSeparateBackwardPhase(False)',
     'poptorch.ShardedExecution(poptorch.Stage("a"))'),
]


def _strategy_lines(config, for_inference):
    lines = str(config.options_plan(for_inference=for_inference)).splitlines()
    return [line for line in lines if line.startswith("opts.setExecutionStrategy(")]


@pytest.mark.parametrize("settings, training, inference", PLANS)
def test_the_plan_prints_the_strategy(settings, training, inference):
    config = IPUConfig(**settings)
    for for_inference, printed in ((False, training), (True, inference)):
        expected = [] if printed is None else [f"opts.setExecutionStrategy({printed})"]
        assert _strategy_lines(config, for_inference) == expected


@pytest.mark.parametrize("settings", [settings for settings, _, _ in PLANS])
@pytest.mark.parametrize("for_inference", [False, True])
def test_the_printed_plan_is_python_that_builds_the_same_options(sdk, settings, for_inference):
    config = IPUConfig(**settings)
    namespace = {}
    exec(str(config.options_plan(for_inference=for_inference)), namespace)
    expected = state(config.to_options(for_inference=for_inference))
    made = _resolved(namespace["opts"], "inference" if for_inference else "training")
    for built in (made, expected):
        built.pop("saveInitializersToFile")  # a fresh temporary file each build
    assert made == expected


def test_the_plan_as_data_holds_stages_as_constructed_objects():
    config = IPUConfig(execution_stages=[{"blocks": ["a"], "ipu": 1}])
    call = next(call for call in config.options_plan().to_dict()["calls"] if call["method"] == "setExecutionStrategy")
    assert json.loads(json.dumps(call)) == {
        "method": "setExecutionStrategy",
        "args": [{
            "new": "poptorch.PipelinedExecution",
            "args": [{"new": "poptorch.Stage", "args": ["a"], "kwargs": {}, "chain": [["ipu", [1]]]}],
            "kwargs": {},
            "chain": [],
        }],
    }


# --- bad values and settings no build reads -------------------------------------------------------------------

BAD_VALUES = [
    ("execution_stages", [], "at least one stage is needed"),
    ("execution_stages", [{"blocks": []}],
     "stage 0: `blocks` must be a non-empty list of block ids (strings, as `poptorch.Block` names them)"),
    ("execution_stages", [{"ipu": 1}],
     "stage 0: `blocks` must be a non-empty list of block ids (strings, as `poptorch.Block` names them)"),
    ("execution_stages", [{"blocks": 3}],
     "stage 0: `blocks` must be a non-empty list of block ids (strings, as `poptorch.Block` names them)"),
    ("execution_stages", [{"blocks": ["a"]}, {"blocks": ["b"], "ipu": -1}], "stage 1: `ipu` must be an integer >= 0"),
    ("execution_stages", [{"blocks": ["a"], "ipu": ["0"]}], "stage 0: `ipu` must be an integer >= 0"),
    ("execution_stages", [{"blocks": ["a"], "ipus": 0}],
     'stage 0: keys ["ipus"]: a stage has `blocks` and, optionally, `ipu`'),
    ("execution_stages", [{"blocks": ["a", "b"]}, {"blocks": ["b", "a"]}],
     'blocks ["a", "b"] are in more than one stage'),
    ("execution_phases", [], "at least one phase is needed"),
    ("execution_phases", [[{"blocks": ["a"]}], []], "phase 1, at least one stage is needed"),
    ("execution_phases", [[{"blocks": ["a"], "ipu": -2}]], "phase 0, stage 0: `ipu` must be an integer >= 0"),
    ("execution_phases", [[{"blocks": ["a"]}], [{"blocks": ["a"]}]], 'blocks ["a"] are in more than one stage'),
    ("tensors_liveness", "off_chip",
     'allowed values are "always_live", "off_chip_after_fwd", "off_chip_after_fwd_no_overlap", '
     '"off_chip_after_each_phase"'),
    ("execution_strategy", "phased", 'allowed values are "pipelined", "sharded", "serial_phased", "parallel_phased"'),
]


@pytest.mark.parametrize("name, value, allowed", BAD_VALUES)
def test_bad_values_are_named(name, value, allowed):
    with pytest.raises(InvalidSettingError) as raised:
        IPUConfig(**{name: value})
    assert str(raised.value) == f"`{name}={json.dumps(value)}` is invalid: {allowed}."
    assert (raised.value.field, raised.value.value) == (name, value)


@pytest.mark.parametrize(
    "name, value",
    [("execution_stages", [{"blocks": [0]}]), ("execution_stages", [{"blocks": "a"}]), ("execution_stages", ["a"]),
     ("execution_phases", [{"blocks": ["a"]}]), ("execution_stages", [{"blocks": ["a"], "ipu": True}]),
     ("separate_backward_phase", 1)],
)
def test_values_of_the_wrong_type_are_named(name, value):
    with pytest.raises(SettingTypeError) as raised:
        IPUConfig(**{name: value})
    assert (raised.value.field, raised.value.value) == (name, value)


PHASED = {"execution_phases": [[{"blocks": ["a"]}]]}
DEFAULT_STRATEGIES = '(`execution_strategy="pipelined"`, `inference_execution_strategy="sharded"`)'
BOTH_PHASED = {"execution_strategy": "serial_phased", "inference_execution_strategy": "parallel_phased", **PHASED}

RULES = [
    # (settings, the field named, what is said)
    ({"execution_stages": [{"blocks": ["a"]}], **BOTH_PHASED}, "execution_stages",
     "only the pipelined and sharded strategies read it, and no build uses them "
     '(`execution_strategy="serial_phased"`, `inference_execution_strategy="parallel_phased"`)'),
    ({"execution_stages": [{"blocks": ["a"]}], "execution_strategy": None, "inference_execution_strategy": None},
     "execution_stages",
     "only the pipelined and sharded strategies read it, and no build uses them (`execution_strategy=null`, "
     "`inference_execution_strategy=null`)"),
    (PHASED, "execution_phases",
     f"only the serial_phased and parallel_phased strategies read it, and no build uses them {DEFAULT_STRATEGIES}"),
    ({"separate_backward_phase": False}, "separate_backward_phase",
     f"only the serial_phased and parallel_phased strategies read it, and no build uses them {DEFAULT_STRATEGIES}"),
    ({"tensors_liveness": "always_live"}, "tensors_liveness",
     f"only the serial_phased and parallel_phased strategies read it, and no build uses them {DEFAULT_STRATEGIES}"),
    ({"execution_strategy": "serial_phased"}, "execution_strategy", "a phased strategy needs `execution_phases`"),
    ({"inference_execution_strategy": "parallel_phased"}, "inference_execution_strategy",
     "a phased strategy needs `execution_phases`"),
    ({**BOTH_PHASED, "tensors_liveness": "off_chip_after_each_phase"}, "tensors_liveness",
     '`inference_execution_strategy="parallel_phased"` sets it with `sendTensorsOffChipAfterFwd`, which takes '
     '"always_live", "off_chip_after_fwd"'),
]


@pytest.mark.parametrize("settings, field, problem", RULES)
def test_settings_no_build_reads_and_missing_phases_are_refused(settings, field, problem):
    with pytest.raises(IncompatibleSettingsError) as raised:
        IPUConfig(**settings)
    assert str(raised.value) == f"`{field}={json.dumps(settings[field])}` is invalid: {problem}."
    assert raised.value.field == field



def test_the_schema_describes_a_stage_as_far_as_json_schema_can():
    from optimum_ipu_ext.settings.documents import json_schema

    stage = {"type": "object", "additionalProperties": {"anyOf": [{"type": "integer"},
                                                                  {"type": "array", "items": {"type": "string"}}]}}
    properties = json_schema()["properties"]
    assert properties["execution_stages"]["anyOf"] == [{"type": "array", "items": stage}, {"type": "null"}]
    assert properties["execution_phases"]["anyOf"] == [
        {"type": "array", "items": {"type": "array", "items": stage}}, {"type": "null"}
    ]
    assert properties["tensors_liveness"]["anyOf"][0]["enum"] == [
        "always_live", "off_chip_after_fwd", "off_chip_after_fwd_no_overlap", "off_chip_after_each_phase"
    ]
