"""`placement/memory.py`: the bytes each parameter costs as IPUTrainer builds the model, where each kind of tensor is
kept (on chip or in Streaming Memory, sharded or not) as the build's options keep it, and what is counted."""


import pytest

from optimum_ipu_ext.placement.estimate.memory import (
    MemoryModel,
    ParameterBytes,
    Placed,
    Storage,
    Storages,
    memory_model,
)
from optimum_ipu_ext.placement.hardware import IPU_MEMORY_BYTES
from optimum_ipu_ext.settings.mode import INFERENCE, TRAINING
from support.placement_fixtures import settings

ON_CHIP = Storage(True, 1)


@pytest.mark.parametrize("values, for_inference, fp32, expected", [
    ({}, False, False, ("training", 2, 0, 6)),
    ({"gradient_accumulation_steps": 8}, False, False, ("training", 2, 2, 6)),
    ({"gradient_accumulation_steps": 2}, False, False, ("training", 2, 2, 6)),
    ({"gradient_accumulation_steps": 8}, False, True, ("training", 4, 4, 8)),
    ({"gradient_accumulation_steps": 8}, True, False, ("inference", 2, 0, 0)),
    ({}, True, True, ("inference", 4, 0, 0)),
])
def test_bytes_per_parameter_are_iputrainer_s(values, for_inference, fp32, expected):
    model = memory_model(settings(**values), for_inference, fp32)
    assert (str(model.mode), model.weight_bytes, model.accumulator_bytes, model.optimizer_bytes) == expected


@pytest.mark.parametrize("values, storage", [
    ({}, Storages(weights=ON_CHIP, accumulators=ON_CHIP, optimizer=ON_CHIP)),
    ({"optimizer_state_offchip": True}, Storages(weights=ON_CHIP, accumulators=ON_CHIP, optimizer=Storage(False, 1))),
    ({"optimizer_state_offchip": True, "replicated_tensor_sharding": True},  # one replica shards nothing
     Storages(weights=ON_CHIP, accumulators=ON_CHIP, optimizer=Storage(False, 1))),
    ({"replicated_tensor_sharding": True, "replication_factor": 4},
     Storages(weights=ON_CHIP, accumulators=ON_CHIP, optimizer=Storage(True, 4))),
    ({"optimizer_state_offchip": None, "optimizer_location": {"useOnChipStorage": False,
                                                               "useReplicatedTensorSharding": True},
      "replication_factor": 2}, Storages(weights=ON_CHIP, accumulators=ON_CHIP, optimizer=Storage(False, 2))),
    ({"weight_location": {"useOnChipStorage": False}, "accumulator_location": {"useOnChipStorage": False}},
     Storages(weights=Storage(False, 1), accumulators=Storage(False, 1), optimizer=ON_CHIP)),
])
def test_each_kind_of_tensor_is_kept_where_the_build_s_options_keep_it(values, storage):
    assert memory_model(settings(**values), False, False).storage == storage


def test_inference_storage_is_read_off_the_inference_build():
    values = settings(replication_factor=4, inference_replication_factor=1, replicated_tensor_sharding=True,
                      weight_location={"useOnChipStorage": False, "useReplicatedTensorSharding": True})
    assert memory_model(values, True, False).storage.weights == Storage(False, 1)
    assert memory_model(values, False, False).storage.weights == Storage(False, 4)


def test_the_bytes_of_trained_and_frozen_parameters_on_chip_and_in_streaming_memory():
    storage = Storages(weights=ON_CHIP, accumulators=ON_CHIP, optimizer=Storage(False, 3))
    model = MemoryModel(TRAINING, 2, 2, 6, storage)
    assert placed(model, 100, 0) == (400, 200)
    assert placed(model, 100, 10) == (420, 200)  # a frozen parameter has no accumulator and no optimizer state
    assert placed(model, 101, 0) == (404, 202)  # a share rounds up
    assert placed(MemoryModel(INFERENCE, 4, 0, 0, storage), 100, 10) == (440, 0)
    off_chip = Storage(False, 4)
    streamed = MemoryModel(TRAINING, 2, 2, 6, Storages(weights=off_chip, accumulators=ON_CHIP, optimizer=off_chip))
    assert placed(streamed, 101, 0) == (202, 51 + 152)  # each kind's share rounds up to a whole byte


def placed(model, trained, frozen):
    """(on-chip bytes, Streaming Memory bytes) of `trained` and `frozen` parameters."""
    parameters = model.parameters(trained, frozen)
    return parameters.on_chip, parameters.streaming



def test_the_bytes_of_each_kind_of_tensor_where_it_is_kept():
    storage = Storages(weights=ON_CHIP, accumulators=Storage(True, 2), optimizer=Storage(False, 3))
    assert MemoryModel(TRAINING, 2, 2, 6, storage).parameters(100, 10) == ParameterBytes(
        weights=Placed(110 * 2, 0), accumulators=Placed(100 * 2 // 2, 0), optimizer=Placed(0, 100 * 6 // 3))


def test_the_assumptions_say_what_is_counted_what_comes_on_top_and_what_the_reserve_is_for():
    reserve = "code, exchange buffers and the temporaries matmul_proportion allows are the reserve's"
    on_top = f"activations and pipeline stashes come on top; {reserve}"
    assert memory_model(settings(gradient_accumulation_steps=4), False, False).describe() == (
        f"training: weights fp16, gradient accumulators fp16, AdamW/LAMB state 6 bytes a parameter; {on_top}")
    assert memory_model(settings(optimizer_state_offchip=True, replicated_tensor_sharding=True, replication_factor=2),
                        False, True).describe() == (
        "training: weights fp32, AdamW/LAMB state 8 bytes a parameter in Streaming Memory, sharded over 2 replicas; "
        f"{on_top}")
    assert memory_model(settings(), True, False).describe() == f"inference: weights fp16; {on_top}"
    assert memory_model(settings(), True, False).describe(activations=True) == f"inference: weights fp16; {reserve}"


def test_an_optimizer_state_kept_off_chip_is_brought_on_chip_for_the_update_sharded_as_it_is_kept():
    on_chip = memory_model(settings(), False, False)
    off_chip = memory_model(settings(optimizer_state_offchip=True), False, False)
    sharded = memory_model(settings(optimizer_state_offchip=True, replicated_tensor_sharding=True,
                                    replication_factor=4), False, False)
    assert (on_chip.update_bytes(1001), off_chip.update_bytes(1001), sharded.update_bytes(1001)) == (
        0, 6 * 1001, -(-6 * 1001 // 4))


def test_an_ipu_holds_1472_tiles_of_624_kib():
    assert IPU_MEMORY_BYTES == 940_572_672
