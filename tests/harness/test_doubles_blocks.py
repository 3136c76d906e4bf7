"""The poptorch doubles of pipeline blocks and of the tensor ops behave as poptorch 3.4 does on CPU (ops.py,
_impl.py, RegisterAtenOverloads.cpp): what the models of optimum-graphcore call in `parallelize()` and forward."""
import sys

import pytest
import torch
from torch import nn

from support.doubles import installed


class RecordingStages:
    """What poptorch's stages manager is told while a model is traced (its IStageManager interface)."""

    def __init__(self):
        self.events = []
        self.auto_ids = 0

    def beginStage(self, user_id, ipu_id_from_block):
        self.events.append(("begin", user_id, ipu_id_from_block))

    def nextAutoId(self):
        self.auto_ids += 1
        return str(self.auto_ids - 1)

    def resetAutoId(self):
        self.auto_ids = 0


class Recorder(nn.Module):
    """A layer that records when it runs, in the same list as the stages."""

    def __init__(self, events):
        super().__init__()
        self.events = events

    def forward(self, x):
        self.events.append(("forward", self))
        return x


@pytest.fixture
def poptorch():
    with installed():
        import poptorch

        yield poptorch


@pytest.fixture
def stages(poptorch):
    recording = RecordingStages()
    poptorch.Block._stages_manager = recording
    yield recording
    poptorch.Block._stages_manager = None


# --- blocks -----------------------------------------------------------------------------------------


def test_begin_block_hooks_the_module_itself_and_begins_before_it_runs(poptorch, stages):
    layer = Recorder(stages.events)
    assert poptorch.BeginBlock(layer, "Encoder0", ipu_id=1) is layer
    layer(torch.ones(1))
    layer(torch.ones(1))
    assert stages.events == [("begin", "Encoder0", 1), ("forward", layer)] * 2


def test_begin_block_starts_nothing_outside_a_trace(poptorch):
    events = []
    layer = poptorch.BeginBlock(Recorder(events), "Embedding", ipu_id=0)
    assert layer(torch.ones(1)).tolist() == [1.0]
    assert events == [("forward", layer)]


def test_a_block_without_id_takes_the_next_auto_id_once(poptorch, stages):
    first, second = Recorder(stages.events), Recorder(stages.events)
    poptorch.BeginBlock(first, ipu_id=0)
    poptorch.BeginBlock(second, None, 2)
    for layer in (first, second, first):
        layer(torch.ones(1))
    begun = [event[1:] for event in stages.events if event[0] == "begin"]
    assert begun == [("0", 0), ("1", 2), ("0", 0)]
    assert repr(first._forward_pre_hooks[next(iter(first._forward_pre_hooks))]) == "BeginBlock(user_id=0, ipu_id=0)"


def test_a_module_is_given_one_block_only(poptorch):
    layer = poptorch.BeginBlock(nn.Linear(2, 2), "A", 0)
    with pytest.raises(poptorch.Error, match="module has already been assigned to a block"):
        poptorch.BeginBlock(layer, "B", 1)


def test_begin_block_takes_modules(poptorch):
    with pytest.raises(poptorch.Error, match="module is not an instance of torch.nn.Module or function"):
        poptorch.BeginBlock(3, "A", 0)
    with pytest.raises(NotImplementedError, match="modules only"):
        poptorch.BeginBlock(lambda x: x, "A", 0)


def test_remove_blocks_removes_the_block_hooks_of_every_submodule_and_keeps_the_others(poptorch, stages):
    events = stages.events
    inner = poptorch.BeginBlock(Recorder(events), "Inner", 1)
    outer = poptorch.BeginBlock(nn.Sequential(inner), "Outer", 0)
    inner.register_forward_pre_hook(lambda module, inputs: events.append(("other hook",)))
    poptorch.removeBlocks(outer)
    outer(torch.ones(1))
    assert events == [("other hook",), ("forward", inner)]
    assert poptorch.BeginBlock(inner, "Again", 2) is inner


def test_remove_blocks_takes_a_module(poptorch):
    with pytest.raises(AssertionError):
        poptorch.removeBlocks([nn.Linear(1, 1)])


def test_block_start_and_auto_ids_report_to_the_stages_manager_only_in_a_trace(poptorch, stages):
    poptorch.Block.start("Head", 3)
    assert stages.nextAutoId() == "0"
    poptorch.Block.useAutoId()
    assert stages.events == [("begin", "Head", 3)] and stages.auto_ids == 0
    poptorch.Block._stages_manager = None
    poptorch.Block.start("Ignored", 1)
    poptorch.Block.useAutoId()
    assert stages.events == [("begin", "Head", 3)]


def test_block_is_not_a_context_manager_in_the_double(poptorch):
    with pytest.raises((AttributeError, TypeError)):
        with poptorch.Block("A", 0):
            pass


# --- ops on CPU ---------------------------------------------------------------------------------------


def test_recomputation_checkpoint_returns_its_inputs(poptorch):
    a, b = torch.ones(2), torch.zeros(2)
    assert poptorch.recomputationCheckpoint(a) is a
    several = poptorch.recomputationCheckpoint(a, b)
    assert isinstance(several, tuple) and several[0] is a and several[1] is b
    together = poptorch.recomputationCheckpoint([a, b])
    assert isinstance(together, list) and together[0] is a and together[1] is b
    pair = poptorch.recomputationCheckpoint((a, b))
    assert isinstance(pair, tuple) and pair[0] is a and pair[1] is b


def test_recomputation_checkpoint_takes_tensors(poptorch):
    with pytest.raises(ValueError, match="All inputs must be tensors"):
        poptorch.recomputationCheckpoint(torch.ones(1), 2.0)


def test_serialized_matmul_is_a_matmul(poptorch):
    lhs, rhs = torch.arange(6.0).reshape(2, 3), torch.arange(12.0).reshape(3, 4)
    mode = poptorch.MatMulSerializationMode.OutputChannels
    assert torch.equal(poptorch.serializedMatMul(lhs, rhs, mode, 2), lhs @ rhs)
    assert torch.equal(poptorch.serializedMatMul(lhs, rhs, mode), lhs @ rhs)


@pytest.mark.parametrize(
    "arguments",
    [
        {"mode": "OutputChannels", "factor": 2},
        {"mode": None, "factor": 2.0},
        {"mode": None, "factor": 2, "keep_precision": 1},
    ],
)
def test_serialized_matmul_checks_its_arguments(poptorch, arguments):
    mode = arguments.pop("mode") or poptorch.MatMulSerializationMode.ReducingDim
    with pytest.raises(AssertionError):
        poptorch.serializedMatMul(torch.ones(2, 2), torch.ones(2, 2), mode, **arguments)


def test_identity_loss_reduces_as_asked(poptorch):
    loss = torch.tensor([1.0, 2.0, 6.0])
    assert poptorch.identity_loss(loss, "sum").item() == 9.0
    assert poptorch.identity_loss(loss, reduction="mean").item() == 3.0
    kept = poptorch.identity_loss(loss, "none")
    assert torch.equal(kept, loss) and kept is not loss
    with pytest.raises(AssertionError, match="Unsupported reduction type"):
        poptorch.identity_loss(loss, "max")


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int16])
def test_dynamic_slice_slices_from_the_start_the_tensor_holds(poptorch, dtype):
    tensor = torch.arange(24).reshape(2, 12)
    sliced = poptorch.dynamic_slice(tensor, 1, torch.tensor([3], dtype=dtype), 4, 2)
    assert sliced.tolist() == [[3, 5], [15, 17]]


def test_dynamic_update_writes_from_the_start_the_tensor_holds(poptorch):
    tensor = torch.zeros(2, 5)
    updated = poptorch.dynamic_update(tensor, torch.ones(2, 2), 1, torch.tensor(3), 2)
    assert updated.tolist() == [[0, 0, 0, 1, 1]] * 2 and tensor.sum() == 0


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda p: p.dynamic_slice([1], 0, torch.tensor(0), 1, 1), "dynamic_slice must take a torch.tensor input"),
        (lambda p: p.dynamic_slice(torch.ones(2), 0.0, torch.tensor(0), 1, 1), "Dimension must be an integer"),
        (lambda p: p.dynamic_slice(torch.ones(2), 0, 0, 1, 1), "start argument to dynamic_slice"),
        (lambda p: p.dynamic_slice(torch.ones(2), 0, torch.tensor(0), 1.0, 1), "Size must be an integer"),
        (lambda p: p.dynamic_slice(torch.ones(2), 0, torch.tensor(0), 1, None), "Step must be an integer"),
        (lambda p: p.dynamic_slice(torch.ones(2), 0, torch.tensor(0.0), 1, 1), "Expected integer typed start"),
        (lambda p: p.dynamic_update([1], torch.ones(1), 0, torch.tensor(0), 1), "dynamic_update must take a torch"),
        (lambda p: p.dynamic_update(torch.ones(2), [1], 0, torch.tensor(0), 1), "Src argument"),
        (lambda p: p.dynamic_update(torch.ones(2), torch.ones(1, 1), 0, torch.tensor(0), 1), "dimensionality"),
        (lambda p: p.dynamic_update(torch.ones(2), torch.ones(1).long(), 0, torch.tensor(0), 1), "same dtype"),
        (lambda p: p.dynamic_update(torch.ones(2), torch.ones(1), 0, 1, 1), "start argument to dynamic_update"),
    ],
)
def test_dynamic_slicing_checks_its_arguments(poptorch, call, words):
    with pytest.raises(poptorch.Error, match=words):
        call(poptorch)


def test_cond_runs_the_branch_the_condition_picks_on_cpu(poptorch):
    double, negate = (lambda x: x * 2), (lambda x, y: (-x, y))
    x, y = torch.tensor([1.0]), torch.tensor([5.0])
    assert poptorch.cond(torch.tensor(True), double, [x], negate, [x, y])[0].tolist() == [2.0]
    taken = poptorch.cond(torch.tensor(False), double, [x], negate, [x, y])
    assert isinstance(taken, list) and [t.tolist() for t in taken] == [[-1.0], [5.0]]
    with pytest.raises(ValueError, match="to be a list of tensors"):
        poptorch.cond(torch.tensor(True), double, (x,), negate, [x, y])


def test_ipu_context_is_off_on_cpu_and_cond_is_not_traced_by_the_double(poptorch):
    assert poptorch.isRunningOnIpu() is False
    poptorch._impl.setIpuContext(True)
    try:
        assert poptorch.isRunningOnIpu() is True
        with pytest.raises(NotImplementedError):
            poptorch.cond(torch.tensor(True), lambda x: x, [torch.ones(1)], lambda x: x, [torch.ones(1)])
    finally:
        poptorch._impl.setIpuContext(False)


def test_poptorch_errors_carry_type_message_and_location(poptorch):
    error = poptorch._impl.createPoptorchError("bad block")
    assert isinstance(error, poptorch.Error) and str(error) == "'poptorch_py_error': bad block"
    assert (error.type, error.message, error.location) == ("poptorch_py_error", "bad block", "")


def test_attribute_keeps_the_attributes_in_force_and_restores_them(poptorch):
    outer = poptorch.Attribute(__outline={"layer": "embedding"})
    inner = poptorch.Attribute(__outline={"layer": "encoder", "extra": "1"})
    with outer:
        assert poptorch.Attribute._current_attrs == {"__outline": {"layer": "embedding"}}
        with inner:
            assert poptorch.Attribute._current_attrs == {"__outline": {"layer": "encoder", "extra": "1"}}
        assert poptorch.Attribute._current_attrs == {"__outline": {"layer": "embedding"}}
    assert poptorch.Attribute._current_attrs == {}


def test_the_op_modules_are_importable_as_in_poptorch():
    with installed():
        import poptorch.ops
        from poptorch import _impl

        assert poptorch.ops.BeginBlock is poptorch.BeginBlock and _impl.isRunningOnIpu is poptorch.isRunningOnIpu
    assert "poptorch.ops" not in sys.modules


@pytest.mark.parametrize("name", ["BlockFunction", "custom_op", "for_loop", "nop", "MultiConv"])
def test_ops_the_models_do_not_call_on_cpu_are_absent(poptorch, name):
    with pytest.raises(AttributeError):
        getattr(poptorch, name)
