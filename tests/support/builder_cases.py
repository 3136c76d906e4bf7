"""The hand-written builders of `support/builders` as cases: each build's call, the settings the import is told and
what it drops; and a case's options with the config they import into (`builders`: the fixture of tests/options)."""

import argparse
import types
from typing import Any, Callable, Dict, NamedTuple, Optional

import pytest

from optimum_ipu_ext import IPUConfig

from .builders.bert_configs import LAYERS_PER_IPU_BASE, LAYERS_PER_IPU_LARGE, PRETRAINING_LARGE_128, SQUAD_BASE_384

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



def imported(case, builders):
    """The options of the case's builds, and the config they import into (what the import drops, as the case says)."""
    given = {mode: build(builders) for mode, build in zip(MODES, (case.training, case.inference)) if build}
    if not case.dropped:
        return given, IPUConfig.from_options(**given, **case.overrides)
    with pytest.warns(UserWarning, match=case.dropped):
        return given, IPUConfig.from_options(**given, **case.overrides)
