"""Hand-written builders as tests: each builder of tests/builders/ runs on the strict doubles, its options import
with `IPUConfig.from_options`, and the config rebuilds options of the same state, for training and inference, also
after `save_pretrained` + `from_pretrained`.
"""

import argparse
import importlib
import types
from typing import Any, Callable, Dict, NamedTuple, Optional

import pytest

import doubles
from builders.bert_configs import LAYERS_PER_IPU_BASE, LAYERS_PER_IPU_LARGE, PRETRAINING_LARGE_128, SQUAD_BASE_384
from doubles import installed, state
from optimum_ipu_ext import IPUConfig, UnsupportedOptionsError

BUILDERS = ("bert_options", "mae_options", "mnist_pipeline", "seed_build")  # bert_configs is plain data
MODES = ("training", "inference")

MNIST = dict(device_iterations=10, gradient_accumulation=10, strategy="pipelined", offload_optimiser=False)


def bert(**changes):
    return argparse.Namespace(**dict(PRETRAINING_LARGE_128, **changes))


def squad(**changes):
    return argparse.Namespace(**dict(SQUAD_BASE_384, **changes))


def mnist(**changes):
    return argparse.Namespace(**dict(MNIST, **changes))


def seed_args(replication_factor, optimizer_state_offchip=False):
    return types.SimpleNamespace(
        replication_factor=replication_factor, optimizer_state_offchip=optimizer_state_offchip
    )


Build = Callable[[Dict[str, Any]], Any]  # the builder modules by name -> poptorch.Options


class Case(NamedTuple):
    training: Optional[Build]
    inference: Optional[Build] = None
    overrides: Dict[str, Any] = {}
    dropped: Optional[str] = None  # what from_options says it dropped (a regular expression)


CASES = {
    "bert pre-training, 4 replicas, sharded optimizer state off chip": Case(
        lambda b: b["bert_options"].get_options(bert()), overrides={"layers_per_ipu": LAYERS_PER_IPU_LARGE},
    ),
    "bert pre-training, 1 replica, executable cache, no half partials, profiling": Case(
        lambda b: b["bert_options"].get_options(bert(
            replication_factor=1, replicated_tensor_sharding=False, device_iterations=10, gradient_accumulation=16,
            matmul_proportion=[0.6] * 4, executable_cache_dir="exec", enable_half_partials=False,
            profile_dir="profile/",
        )),
        overrides={"layers_per_ipu": [0, 1, 1, 1]},
    ),
    "bert pre-training, automatic loss scaling, synthetic data": Case(
        lambda b: b["bert_options"].get_options(bert(auto_loss_scaling=True, synthetic_data=True)),
        overrides={"layers_per_ipu": LAYERS_PER_IPU_LARGE},
    ),
    "bert squad, training and validation": Case(
        lambda b: b["bert_options"].squad_options(squad()),
        lambda b: b["bert_options"].squad_validation_options(squad()),
        overrides={"layers_per_ipu": LAYERS_PER_IPU_BASE, "inference_layers_per_ipu": LAYERS_PER_IPU_BASE},
    ),
    "mnist pipelined, explicit stages on 4 IPUs": Case(
        lambda b: b["mnist_pipeline"].training_options(mnist()),
        lambda b: b["mnist_pipeline"].inference_options(mnist()),
        overrides={"ipus_per_replica": 4, "inference_ipus_per_replica": 4},
    ),
    "mnist sharded, explicit stages on 4 IPUs": Case(
        lambda b: b["mnist_pipeline"].training_options(mnist(strategy="sharded")),
        lambda b: b["mnist_pipeline"].inference_options(mnist(strategy="sharded")),
        overrides={"ipus_per_replica": 4, "inference_ipus_per_replica": 4},
    ),
    "mnist pipelined, optimizer state off chip, other tensors on chip": Case(
        lambda b: b["mnist_pipeline"].training_options(mnist(offload_optimiser=True)),
        lambda b: b["mnist_pipeline"].inference_options(mnist(offload_optimiser=True)),
        overrides={"ipus_per_replica": 4, "inference_ipus_per_replica": 4},
    ),
    "mae pre-training, defaults": Case(
        lambda b: b["mae_options"].train_options(False),
    ),
    "mae pre-training, half precision, loss scaling, sharded optimizer state, 4 replicas": Case(
        lambda b: b["mae_options"].train_options(False, replica=4, iteration=2, half=True, als=True, rts=True),
    ),
    "mae pre-training through popdist.poptorch.Options, off poprun": Case(
        lambda b: b["mae_options"].train_options(True, half=True),
    ),
    "mae fine-tuning, training and evaluation": Case(
        lambda b: b["mae_options"].finetune_options(replica=2, half=True),
        lambda b: b["mae_options"].finetune_options(replica=2, device_iterations=4, half=True, opt_type="eval"),
    ),
    "mae alignment check": Case(
        None, lambda b: b["mae_options"].alignment_options(),
    ),
    "seed, 1 replica": Case(lambda b: b["seed_build"].build_ipu_config(seed_args(1))),
    "seed, 1 replica, optimizer state off chip": Case(lambda b: b["seed_build"].build_ipu_config(seed_args(1, True))),
    "seed, 4 replicas": Case(
        lambda b: b["seed_build"].build_ipu_config(seed_args(4)),
        overrides={"ipus_per_replica": 2},
        dropped="IPU2, IPU3, IPU4, IPU5, IPU6, IPU7, beyond the 2 IPUs per replica",
    ),
}


@pytest.fixture(scope="module")
def builders():
    """The builder modules by name, imported against the doubles (they import poptorch, popart, popdist at the top)."""
    with installed(popdist_environment={}):
        return {name: importlib.import_module(f"builders.{name}") for name in BUILDERS}


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


def imported(case, builders):
    """The options of the case's builds, and the config they import into (what the import drops, as the case says)."""
    given = {mode: build(builders) for mode, build in zip(MODES, (case.training, case.inference)) if build}
    if not case.dropped:
        return given, IPUConfig.from_options(**given, **case.overrides)
    with pytest.warns(UserWarning, match=case.dropped):
        return given, IPUConfig.from_options(**given, **case.overrides)


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
    equivalent, tests/builders/seed_build.py. One test, so a clone without it skips once."""
    for replication_factor in (1, 2, 4, 8, 16, 64):
        for optimizer_state_offchip in (False, True):
            args = seed_args(replication_factor, optimizer_state_offchip)
            with installed(hardware_version=2):
                built, original = builders["seed_build"].build_ipu_config(args), seed_module.build_ipu_config(args)
                assert state(built) == state(original), (replication_factor, optimizer_state_offchip)
