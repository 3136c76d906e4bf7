"""The doubles of poptorch 3.4's model wrappers, data loader and optimizers follow the real API and stop where
compiling starts."""
import inspect

import pytest
import torch

from support.doubles import installed, poptorch, state
from support.doubles.poptorch import models, optim

SYNC = poptorch.DataLoaderMode.Sync
# (name, default) of each parameter of the real poptorch 3.4 functions; "*" marks *args / **kwargs
REAL_PARAMETERS = {
    models.trainingModel: "model options=None optimizer=None",
    models.inferenceModel: "model options=None",
    models.PoplarExecutor.__init__: "self model options training poptorch_version optimizer=None user_model=None",
    models.PoplarExecutor.__call__: "self *args **kwargs",
    models.PoplarExecutor.compile: "self *args **kwargs",
    models.PoplarExecutor.setOptimizer: "self optimizer",
    models.PoplarExecutor.isCompiled: "self",
    models.PoplarExecutor.isAttachedToDevice: "self",
    models.PoplarExecutor.attachToDevice: "self",
    models.PoplarExecutor.detachFromDevice: "self",
    models.PoplarExecutor.destroy: "self",
    models.DataLoader.__init__: (
        "self options dataset batch_size=1 shuffle=None num_workers=0 drop_last=True persistent_workers=None "
        f"auto_distributed_partitioning=True mode={SYNC} async_options=None rebatched_worker_size=None "
        "batch_sampler=None **kwargs"
    ),
    models.DataLoader.terminate: "self",
    optim.VariableAttributes.__init__: "self variable_attributes allowed_attributes",
    optim.VariableAttributes.isConstant: "self attr",
    optim.VariableAttributes.markAsConstant: "self attr",
    optim.VariableAttributes.markAsVariable: "self attr",
    optim.Optimizer.state_dict: "self",
    optim.Optimizer.load_state_dict: "self state",
    optim.Optimizer.get_state_dict: "self",
    optim.Optimizer.set_state_dict: "self state",
    optim.Optimizer.has_state: "self",
    optim.AdamW.__init__: (
        "self params lr=None betas=None eps=None weight_decay=None amsgrad=None maximize=None foreach=None "
        "capturable=None differentiable=None fused=None loss_scaling=None bias_correction=None accum_type=None "
        "first_order_momentum_accum_type=None second_order_momentum_accum_type=None max_grad_norm=None"
    ),
    optim.LAMB.__init__: (
        "self params lr=None betas=None eps=None weight_decay=None bias_correction=None loss_scaling=None "
        "max_weight_norm=None accum_type=None first_order_momentum_accum_type=None "
        "second_order_momentum_accum_type=None"
    ),
}


def parameters(function) -> str:
    words = []
    for parameter in inspect.signature(function).parameters.values():
        star = {parameter.VAR_POSITIONAL: "*", parameter.VAR_KEYWORD: "**"}.get(parameter.kind, "")
        default = "" if parameter.default is parameter.empty else f"={parameter.default}"
        words.append(f"{star}{parameter.name}{default}")
    return " ".join(words)


@pytest.mark.parametrize("function", REAL_PARAMETERS, ids=lambda function: function.__qualname__)
def test_signatures_are_poptorch_3_4s(function):
    assert parameters(function) == REAL_PARAMETERS[function]


@pytest.fixture(autouse=True)
def doubles_installed():
    with installed(hardware_version=2):
        yield
    models.wrapped.clear()


def pipelined_options(accumulation=4):
    options = poptorch.Options()
    options.replicationFactor(2)
    options.Training.gradientAccumulation(accumulation)
    options.setExecutionStrategy(poptorch.PipelinedExecution(poptorch.AutoStage.AutoIncrement))
    return options


def adamw(model):
    return poptorch.optim.AdamW(model.parameters(), lr=0.01)


def test_training_freezes_the_options_handed_over_and_runs_on_a_clone_with_the_final_output_mode():
    model, options = torch.nn.Linear(2, 2), pipelined_options()
    executor = poptorch.trainingModel(model, options=options, optimizer=adamw(model))
    with pytest.raises(AttributeError, match="Can't modify frozen Options"):
        options.replicationFactor(4)
    assert executor.options is not options and options.defaultOutputMode()
    resolved = pipelined_options()
    resolved.outputMode(poptorch.OutputMode.Final)
    assert state(executor.options) == state(resolved)
    assert [(wrapping.training, wrapping.model, wrapping.options) for wrapping in models.wrapped] == [
        (True, model, options)]


def test_inference_resolves_all_as_the_output_mode_and_refuses_gradient_accumulation():
    model = torch.nn.Linear(2, 2)
    executor = poptorch.inferenceModel(model, options=pipelined_options(accumulation=1))
    assert executor.options.output_mode == poptorch.OutputMode.All
    refusal = "gradientAccumulation to 1 .* Use poptorch.Options\\(\\).deviceIterations"
    with pytest.raises(poptorch.Error, match=refusal):
        poptorch.inferenceModel(model, options=pipelined_options(accumulation=4))
    sharded = poptorch.Options()
    sharded.Training.gradientAccumulation(2)
    sharded.setExecutionStrategy(poptorch.ShardedExecution())
    with pytest.raises(poptorch.Error, match=r"inferenceModel\(\)\.$"):
        poptorch.inferenceModel(model, options=sharded)


def test_an_output_mode_given_is_kept():
    options = pipelined_options()
    options.outputMode(poptorch.OutputMode.All)
    model = torch.nn.Linear(2, 2)
    assert poptorch.trainingModel(model, options=options, optimizer=adamw(model)).options.output_mode == (
        poptorch.OutputMode.All)


def test_wrapping_refuses_what_poptorch_refuses():
    model = torch.nn.Linear(2, 2)
    with pytest.raises(poptorch.Error, match="Expected poptorch.Options"):
        poptorch.trainingModel(model, options={"replication_factor": 2}, optimizer=adamw(model))
    with pytest.raises(poptorch.Error, match="Unsupported optimizer type LBFGS"):
        poptorch.trainingModel(model, options=pipelined_options(), optimizer=torch.optim.LBFGS(model.parameters()))
    with pytest.raises(NotImplementedError, match="default optimizer"):
        poptorch.trainingModel(torch.nn.Linear(2, 2))
    with pytest.raises(AssertionError, match="Optimizer should be None"):
        models.PoplarExecutor(model, None, training=False, poptorch_version="3.4.0", optimizer=adamw(model))
    poptorch.trainingModel(model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1))  # torch's are converted
    with pytest.raises(RuntimeError, match="already been wrapped"):
        poptorch.trainingModel(model, optimizer=adamw(model))


def test_the_first_call_or_compile_stops_where_poptorch_compiles():
    model = torch.nn.Linear(2, 2)
    executor = poptorch.trainingModel(model, optimizer=adamw(model))
    for start in (lambda: executor(torch.ones(1, 2)), lambda: executor.compile(torch.ones(1, 2))):
        with pytest.raises(models.CompilationStopped, match="training model not compiled") as stopped:
            start()
        assert stopped.value.executor is executor
    assert not executor.isCompiled() and not executor.isAttachedToDevice()
    for device_call in (executor.attachToDevice, executor.detachFromDevice):
        with pytest.raises(poptorch.Error, match="has not been compiled"):
            device_call()
    executor.destroy()
    assert executor.model is model and executor.out_features == 2  # other attributes are the model's
    with pytest.raises(NotImplementedError, match="replica-grouping wrapper of parameter 'weight'"):
        _ = executor.weight  # reading the attribute raises


def test_an_offline_model_cannot_be_called():
    options = poptorch.Options()
    options.connectionType(poptorch.ConnectionType.Never)
    executor = poptorch.inferenceModel(torch.nn.Linear(2, 2), options=options)
    with pytest.raises(AssertionError, match="offline device"):
        executor(torch.ones(1, 2))


def test_the_data_loader_batches_one_run_and_freezes_its_options():
    options = pipelined_options(accumulation=3)
    options.deviceIterations(5)
    dataset = torch.utils.data.TensorDataset(torch.arange(60.0))
    loader = poptorch.DataLoader(options, dataset, batch_size=2)
    assert loader.combinedBatchSize == 2 * 5 * 2 * 3 and loader.options is options and len(loader) == 1
    [(batch,)] = list(loader)
    assert batch.tolist() == list(range(60))
    with pytest.raises(AttributeError, match="frozen"):
        options.deviceIterations(1)
    assert poptorch.DataLoader(poptorch.Options(), dataset, batch_size=None, drop_last=False).combinedBatchSize is None


def test_the_data_loader_refuses_what_it_does_not_model():
    dataset = torch.utils.data.TensorDataset(torch.arange(4.0))
    with pytest.raises(AssertionError):
        poptorch.DataLoader({"replication_factor": 1}, dataset)
    with pytest.raises(NotImplementedError, match="mode=<DataLoaderMode.Async: 1>"):
        poptorch.DataLoader(poptorch.Options(), dataset, mode=poptorch.DataLoaderMode.Async)
    with pytest.raises(NotImplementedError, match="batch_sampler"):
        poptorch.DataLoader(poptorch.Options(), dataset, batch_sampler=[[0, 1]])
    distributed = poptorch.Options()
    distributed.Distributed.configureProcessId(0, 2)
    with pytest.raises(NotImplementedError, match="several processes"):
        poptorch.DataLoader(distributed, dataset)


def test_optimizer_arguments_given_are_variables_and_the_others_take_poptorch_defaults():
    model = torch.nn.Linear(2, 2)
    adam = poptorch.optim.AdamW(model.parameters(), lr=0.1, accum_type=torch.float16)
    assert (adam.loss_scaling, adam.bias_correction, adam.max_grad_norm) == (1.0, True, float("inf"))
    assert (adam.accum_type, adam.first_order_momentum_accum_type) == (torch.float16, torch.float32)
    assert not adam.variable_attrs.isConstant("lr") and adam.variable_attrs.isConstant("weight_decay")
    adam.variable_attrs.markAsConstant("lr")
    adam.variable_attrs.markAsVariable("loss_scaling")
    assert adam.variable_attrs.isConstant("lr") and not adam.variable_attrs.isConstant("loss_scaling")
    with pytest.raises(AssertionError, match="Unknown attribute momentum"):
        adam.variable_attrs.markAsConstant("momentum")
    lamb = poptorch.optim.LAMB(model.parameters(), max_weight_norm=None, weight_decay=0.0)
    assert lamb.defaults == {"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.0,
                             "max_weight_norm": 65500.0}
    assert lamb.variable_attrs.isConstant("max_weight_norm") and not lamb.variable_attrs.isConstant("weight_decay")
    for optimizer in (poptorch.optim.AdamW, poptorch.optim.LAMB):
        with pytest.raises(AssertionError, match="Accumulation types"):
            optimizer(model.parameters(), second_order_momentum_accum_type=torch.bfloat16)


def test_the_optimizer_state_is_the_ipus_too():
    model = torch.nn.Linear(2, 2)
    adam = adamw(model)
    assert {"ipu_state", "ipu_param", "state", "param_groups"} <= set(adam.state_dict()) and not adam.has_state()
    with pytest.raises(RuntimeError, match="Only IPU optimizer states"):
        adam.load_state_dict(torch.optim.AdamW(model.parameters()).state_dict())
    adam.load_state_dict(dict(adam.state_dict(), ipu_state={"m": 1}, ipu_param={"p": 2}))
    assert adam.has_state() and adam.ipu_state_is_dirty
    with pytest.raises(NotImplementedError):
        poptorch.optim.LAMB(model.parameters()).step()


def test_only_the_modelled_optimizers_exist():
    for name in ("SGD", "Adam", "RMSprop"):
        assert not hasattr(poptorch.optim, name)
