"""`to_options()` and `options_plan()`: the option state they build, compared with the seed's and upstream's."""

import json
import random
import sys

import pytest

from optimum_ipu_ext import IPUConfig, PoplarSDKNotFoundError
from optimum_ipu_ext.sdk.plan import Ref
from support import PRESET, doubles
from support.builds import TEMP_FILE, UPSTREAM_CONFIGS, comparable
from support.expected_states import differences, seed_state


@pytest.mark.parametrize("optimizer_state_offchip", [False, True])
@pytest.mark.parametrize("replication_factor", [1, 2, 4, 8, 16, 64])
def test_preset_rebuilds_the_seed(sdk, replication_factor, optimizer_state_offchip):
    config = IPUConfig.from_pretrained(
        PRESET, replication_factor=replication_factor, optimizer_state_offchip=optimizer_state_offchip
    )
    built = comparable(config.to_options())
    assert differences(built, seed_state(replication_factor, optimizer_state_offchip)) == {}


@pytest.mark.parametrize("for_inference", [False, True], ids=["training", "inference"])
@pytest.mark.parametrize("name", sorted(UPSTREAM_CONFIGS))
def test_configs_without_extension_settings_build_like_upstream(sdk, upstream, name, for_inference):
    kwargs = UPSTREAM_CONFIGS[name]
    theirs = comparable(upstream.IPUConfig(**kwargs).to_options(for_inference=for_inference))
    ours = comparable(IPUConfig(**kwargs).to_options(for_inference=for_inference))
    assert differences(ours, theirs) == {}


@pytest.mark.parametrize("for_inference", [False, True], ids=["training", "inference"])
def test_compile_only_builds_like_upstream_without_an_ipu(sdk_without_ipu, upstream, for_inference):
    theirs = comparable(upstream.IPUConfig(replication_factor=2).to_options(for_inference, compile_only=True))
    ours = comparable(IPUConfig(replication_factor=2).to_options(for_inference, compile_only=True))
    assert differences(ours, theirs) == {}


def test_extension_settings_change_the_build(sdk):
    default = comparable(IPUConfig().to_options())
    changed = comparable(
        IPUConfig(
            layers_per_ipu=[-1, -1],
            recomputation_mode="standard",
            accumulation_and_replication_reduction_type="sum",
            auto_stage="same_as_ipu",
            stochastic_rounding=False,
            auto_round_num_ipus=False,
            outline_threshold=None,
            accumulate_outer_fragment_excluded_virtual_graphs=[0, 1],
            popart_options={"decomposeGradSum": True},
        ).to_options()
    )
    delta = differences(changed, default)
    assert delta.pop("autoRecomputation") == (1, "<missing>")
    assert delta.pop("accumulation_and_replication_reduction_type") == (0, 1)
    assert delta.pop("_execution_strategy")[0]["auto_stage"] == 0
    assert delta.pop("enableStochasticRounding") == (False, True)
    assert delta.pop("auto_round_num_ipus") == (False, True)
    assert delta.pop("outlineThreshold")[0] == "<missing>"
    assert delta.pop("accumulateOuterFragmentSettings.excludedVirtualGraphs") == (["0", "1"], ["0"])
    assert delta.pop("decomposeGradSum") == (True, "<missing>")
    assert set(delta) == {"available_memory_proportion"}  # the 2-IPU pipeline


def test_without_poptorch_the_error_names_the_sdk_and_the_plan(monkeypatch):
    monkeypatch.setitem(sys.modules, "poptorch", None)
    with pytest.raises(PoplarSDKNotFoundError) as raised:
        IPUConfig().to_options()
    assert "Poplar SDK" in str(raised.value) and "options_plan()" in str(raised.value)
    assert isinstance(raised.value, ImportError)


def test_without_an_ipu_the_error_is_upstreams(sdk_without_ipu, upstream):
    with pytest.raises(Exception) as theirs:
        upstream.IPUConfig().to_options()
    with pytest.raises(Exception) as ours:
        IPUConfig().to_options()
    assert (type(ours.value), str(ours.value)) == (type(theirs.value), str(theirs.value))


def test_execute_encoder_on_cpu_is_not_supported_like_upstream(sdk):
    with pytest.raises(NotImplementedError):
        IPUConfig(execute_encoder_on_cpu_for_generation=True).to_options()


@pytest.mark.parametrize("for_inference", [False, True], ids=["training", "inference"])
def test_printed_plan_is_python_that_builds_the_same_options(sdk, for_inference):
    config = IPUConfig.from_pretrained(PRESET, replication_factor=4, save_initializers_to_file=True)
    plan = config.options_plan(for_inference=for_inference)
    namespace = {}
    exec(compile(str(plan), "<plan>", "exec"), namespace)
    printed = comparable(namespace["opts"])
    assert differences(printed, comparable(plan.apply())) == {}
    expected = dict(seed_state(4, False), saveInitializersToFile=TEMP_FILE)
    if for_inference:  # sharded, no stochastic rounding, the training options untouched, inference's 1 replica
        expected.update(
            _execution_strategy={"type": "ShardedExecution", "auto_stage": 1, "blocks": {}},
            execution_mode=1,
            enableStochasticRounding=False,
            gradient_accumulation=1,
            replication_factor=1,
            location_optimizer={"onChip": 1, "useReplicatedTensorSharding": 0},
        )
    assert differences(printed, expected) == {}


def test_plan_needs_no_sdk_and_is_json(monkeypatch):
    monkeypatch.setitem(sys.modules, "poptorch", None)
    monkeypatch.setitem(sys.modules, "popart", None)
    plan = IPUConfig.from_pretrained(PRESET, replication_factor=2).options_plan()
    data = json.loads(json.dumps(plan.to_dict()))
    calls = {call["method"]: call["args"] for call in data["calls"]}
    assert calls["replicationFactor"] == [2]
    assert calls["Training.gradientAccumulation"] == [128]
    assert calls["setExecutionStrategy"] == [
        {"new": "poptorch.PipelinedExecution", "args": [{"sdk": "poptorch.AutoStage.AutoIncrement"}], "kwargs": {},
         "chain": []}
    ]
    assert "opts.replicationFactor(2)" in str(plan).splitlines()


def test_options_plan_does_not_change_the_mode():
    config = IPUConfig(layers_per_ipu=[1, 1], inference_layers_per_ipu=[2]).eval()
    config.options_plan(for_inference=False)
    assert config.mode == "inference" and config._ipus_per_replica == 1


ENUM_SETTINGS = [setting for setting in IPUConfig.SETTINGS.values() if setting.sdk and setting.sdk.sdk_enum]


@pytest.mark.parametrize("setting", ENUM_SETTINGS, ids=[setting.name for setting in ENUM_SETTINGS])
def test_every_choice_names_an_sdk_enum_member(setting):
    sdk = {"poptorch": doubles.poptorch, "popart": doubles.popart}
    members = {choice: Ref(setting.sdk_member(choice)).resolve(sdk) for choice in setting.choices}
    assert len(set(members.values())) == len(members)


def test_recomputation_none_is_popart_no_recompute(sdk):
    built = comparable(IPUConfig(recomputation_mode="none").to_options())
    assert built["autoRecomputation"] == 0


def random_upstream_config(generator) -> dict:
    """A config of optimum-graphcore's own settings, drawn from values that exercise every branch of its build."""
    pipeline = generator.choice([[-1], [2, 2], [1, 2, 3, 4], [-1, -1, -1]])
    return {
        "layers_per_ipu": pipeline,
        "matmul_proportion": generator.choice([0.2, 0.35, [round(0.1 * (i + 1), 1) for i in range(len(pipeline))]]),
        "replication_factor": generator.choice([1, 2, 4]),
        "inference_replication_factor": generator.choice([1, 3]),
        "gradient_accumulation_steps": generator.choice([1, 8]),
        "device_iterations": generator.choice([1, 4]),
        "inference_device_iterations": generator.choice([1, 2]),
        "output_mode": generator.choice(["all", "sum", "final"]),  # "default": poptorch's toDict() refuses to show it
        "seed": generator.choice([None, 0, 5]),
        "executable_cache_dir": generator.choice(["", "disabled", "./exec"]),
        "auto_loss_scaling": generator.random() < 0.5,
        "explicit_ir_inference": generator.random() < 0.5,
        "enable_half_partials": generator.random() < 0.5,
        "optimizer_state_offchip": generator.random() < 0.5,
        "replicated_tensor_sharding": generator.random() < 0.5,
    }


@pytest.mark.parametrize("draw", range(40))
def test_random_configs_without_extension_settings_build_like_upstream(sdk, upstream, draw):
    kwargs = random_upstream_config(random.Random(draw))
    for for_inference in (False, True):
        theirs = comparable(upstream.IPUConfig(**kwargs).to_options(for_inference=for_inference))
        ours = comparable(IPUConfig(**kwargs).to_options(for_inference=for_inference))
        assert differences(ours, theirs) == {}, (kwargs, for_inference)


def test_each_build_is_new_options_that_a_model_may_freeze(sdk):
    config = IPUConfig()
    used = config.to_options()
    used._freeze()  # as poptorch.trainingModel does with the options of a model (_poplar_executor.py)
    fresh = config.to_options()
    assert fresh.replicationFactor(2).replication_factor == 2
    with pytest.raises(AttributeError, match="Can't modify frozen Options"):
        used.replicationFactor(2)


def test_options_keep_copies_of_the_configs_lists_and_dicts(sdk):
    config = IPUConfig(popart_options={"customCodelets": ["a.cpp"], "gclOptions": {"maxBytesPerTile": "256"}},
                       engine_options={"opt.useAutoloader": "true"})
    options = config.to_options()
    built = comparable(options)
    config.popart_options["customCodelets"].append("b.cpp")
    config.popart_options["gclOptions"]["maxBytesPerTile"] = "512"
    config.engine_options["opt.useAutoloader"] = "false"
    config.popart_patterns["TiedGather"] = False
    assert differences(comparable(options), built) == {}
    assert differences(comparable(config.to_options()), built).keys() == {
        "customCodelets", "gclOptions", "engineOptions", "patterns"
    }
