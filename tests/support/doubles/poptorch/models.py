"""``poptorch.trainingModel``, ``poptorch.inferenceModel``, the ``PoplarExecutor`` they return, and
``poptorch.DataLoader`` (Poplar SDK 3.4).

Wrapping a model takes the options as poptorch does: it checks their type, freezes the ``Options`` handed over
and works on a clone whose default output mode is resolved (``Final`` in training, ``All`` in inference); an
inference model refuses gradient accumulation. Nothing here compiles: the first call of the executor, or its
``compile()``, raises ``CompilationStopped``, where poptorch would trace the model and compile it for the IPU.
So the executor is never compiled or attached, and answers as poptorch does for such an executor.

``wrapped`` lists every wrapping, in order, as ``Wrapping(training, model, options, optimizer)`` with the very
``options`` object handed over: tests read it (and empty it) to check what a script gave poptorch.
"""
import copy
import weakref
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional, Sequence, Union

import torch

from . import enums, optim
from ._impl import createPoptorchError
from .options import Options, PipelinedExecution, ShardedExecution

__version__ = "3.4.0"

# the torch optimizers poptorch converts to its own
_TORCH_OPTIMIZERS = (torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW, torch.optim.RMSprop)
_NOT_COMPILED = "Model has not been compiled or has been destroyed."


class CompilationStopped(Exception):
    """Raised where poptorch would compile the model for the IPU: the double cannot go further.

    Attributes:
        executor: the ``PoplarExecutor`` that was to compile.
    """

    def __init__(self, executor: "PoplarExecutor"):
        super().__init__(
            f"poptorch double: {'training' if executor._training else 'inference'} model not compiled "
            "(compiling needs the Poplar SDK and an IPU)"
        )
        self.executor = executor


@dataclass
class Wrapping:
    """One call of ``trainingModel`` (``training=True``) or ``inferenceModel``, with what it was handed."""

    training: bool
    model: torch.nn.Module
    options: Optional[Options]
    optimizer: Optional[torch.optim.Optimizer]


wrapped: List[Wrapping] = []
_wrapped_for_training = weakref.WeakSet()  # user models inside a training executor, as poptorch marks them


class PoplarExecutor:
    """The wrapper ``trainingModel``/``inferenceModel`` return; not created directly."""

    def __init__(
        self,
        model: torch.nn.Module,
        options: Optional[Options],
        training: bool,
        poptorch_version: str,
        optimizer: Optional[torch.optim.Optimizer] = None,
        user_model: Optional[torch.nn.Module] = None,
    ):
        if options:
            if not isinstance(options, Options):
                raise createPoptorchError(
                    f"Invalid type: 'options' is of type {type(options)} (Expected poptorch.Options)"
                )
            options._freeze()
            options = options.clone()
        else:
            options = Options()
        self._user_model = user_model or model
        if training:
            if options.defaultOutputMode():
                options.outputMode(enums.OutputMode.Final)
            if not optimizer:
                raise NotImplementedError("poptorch double: the default optimizer (SGD, lr=0.01) is not modelled")
        else:
            if options.defaultOutputMode():
                options.outputMode(enums.OutputMode.All)
            if options.Training.gradient_accumulation != 1:
                raise createPoptorchError(_accumulation_in_inference_message(options))
            assert not optimizer, "Optimizer should be None for inference"
        self._executable = None
        self._options = options
        self._optimizer = None
        self._training = training
        if optimizer:
            self.setOptimizer(optimizer)
        self._options._freeze()

    @property
    def model(self) -> torch.nn.Module:
        return self._user_model

    @property
    def options(self) -> Options:
        return self._options

    def __getattr__(self, attr: str) -> Any:
        """Other attributes are the user model's, as in poptorch (which wraps parameters for replica grouping)."""
        if attr.startswith("_"):
            raise AttributeError(attr)
        value = getattr(self._user_model, attr)
        if isinstance(value, torch.nn.Parameter):
            raise NotImplementedError(
                f"poptorch double: the replica-grouping wrapper of parameter {attr!r} is not modelled"
            )
        return value

    def setOptimizer(self, optimizer: torch.optim.Optimizer) -> None:
        if not isinstance(optimizer, (optim.Optimizer,) + _TORCH_OPTIMIZERS):
            raise createPoptorchError(
                f"Unsupported optimizer type {type(optimizer).__name__}: supported are poptorch.optim's optimizers "
                "and torch.optim.SGD, Adam, AdamW, RMSprop"
            )
        self._optimizer = optimizer

    def compile(self, *args, **kwargs) -> None:
        raise CompilationStopped(self)

    def __call__(self, *args, **kwargs):
        assert self._options.connection_type != enums.ConnectionType.Never.value, (
            "Trying to run a model on an offline device (ConnectionType.Never): use model.compile(inputs) instead of"
            " model(inputs)"
        )
        raise CompilationStopped(self)

    def isCompiled(self) -> bool:
        return bool(self._executable)

    def isAttachedToDevice(self) -> bool:
        return False  # never compiled

    def attachToDevice(self) -> None:
        raise createPoptorchError(_NOT_COMPILED)

    def detachFromDevice(self) -> None:
        raise createPoptorchError(_NOT_COMPILED)

    def destroy(self) -> None:
        """Releases the executable; poptorch does nothing for a model never compiled (the model stays wrapped)."""


def _accumulation_in_inference_message(options: Options) -> str:
    message = ("You must set poptorch.Options().Training.gradientAccumulation to 1 or leave it as its default value "
               "(1) when running a poptorch.inferenceModel().")
    strategy = options._execution_strategy
    if isinstance(strategy, PipelinedExecution) and not isinstance(strategy, ShardedExecution):
        message += (" Use poptorch.Options().deviceIterations to process a sufficient number of batches each run "
                    "for pipelined execution instead.")
    return message


def trainingModel(
    model: Union[torch.nn.Module, PoplarExecutor],
    options: Optional[Options] = None,
    optimizer: Optional[torch.optim.Optimizer] = None,
) -> PoplarExecutor:
    """Wraps ``model`` for training on the IPU (a shallow copy of it; the parameters are shared)."""
    if isinstance(model, PoplarExecutor):
        model = model._user_model
    if model in _wrapped_for_training:
        raise RuntimeError("Model has already been wrapped in 'poptorch.trainingModel'. Call model.destroy() on the "
                           "model to unwrap before wrapping again.")
    wrapped.append(Wrapping(True, model, options, optimizer))
    executor = PoplarExecutor(model=copy.copy(model), options=options, training=True, optimizer=optimizer,
                              user_model=model, poptorch_version=__version__)
    _wrapped_for_training.add(model)
    return executor


def inferenceModel(model: Union[torch.nn.Module, PoplarExecutor], options: Optional[Options] = None) -> PoplarExecutor:
    """Wraps ``model`` for inference on the IPU (a shallow copy of it; the parameters are shared)."""
    if isinstance(model, PoplarExecutor):
        model = model._user_model
    wrapped.append(Wrapping(False, model, options, None))
    return PoplarExecutor(model=copy.copy(model), options=options, training=False, poptorch_version=__version__)


class DataLoader(torch.utils.data.DataLoader):
    """``torch.utils.data.DataLoader`` whose batches are the combined batch of one run of the model: ``batch_size``
    x device iterations x replicas (per input group) x gradient accumulation.

    Modelled: synchronous loading (``DataLoaderMode.Sync``) in one process. Asynchronous modes, a user
    ``batch_sampler`` and distributed partitioning over several processes raise ``NotImplementedError``.
    """

    def __init__(
        self,
        options: Options,
        dataset: torch.utils.data.Dataset,
        batch_size: int = 1,
        shuffle: bool = None,
        num_workers: int = 0,
        drop_last: bool = True,
        persistent_workers: Optional[bool] = None,
        auto_distributed_partitioning: bool = True,
        mode: "enums.DataLoaderMode" = enums.DataLoaderMode.Sync,
        async_options: Optional[Dict[str, Any]] = None,
        rebatched_worker_size: Optional[int] = None,
        batch_sampler: Optional[Union[torch.utils.data.Sampler, Iterable[Sequence]]] = None,
        **kwargs,
    ):
        if batch_sampler is not None:
            raise NotImplementedError("poptorch double: DataLoader(batch_sampler=...) is not modelled")
        if mode != enums.DataLoaderMode.Sync:
            raise NotImplementedError(f"poptorch double: DataLoader(mode={mode!r}) is not modelled, only Sync")
        assert isinstance(options, Options)
        if options.Distributed.numProcesses > 1:
            raise NotImplementedError("poptorch double: DataLoader over several processes is not modelled")
        options._freeze()
        if persistent_workers is None:
            persistent_workers = num_workers > 0
        self._options = options
        self._combined_batch_size = None
        if batch_size is not None:
            batches_per_run = (options.device_iterations * (options.replication_factor // options.input_group_size)
                               * options.Training.gradient_accumulation)
            self._combined_batch_size = batch_size * batches_per_run
        super().__init__(dataset, batch_size=self._combined_batch_size, shuffle=bool(shuffle), num_workers=num_workers,
                         drop_last=drop_last, persistent_workers=persistent_workers, **kwargs)

    @property
    def combinedBatchSize(self) -> Optional[int]:
        return self._combined_batch_size

    @property
    def options(self) -> Options:
        return self._options

    def terminate(self) -> None:
        """Stops the worker of an asynchronous loader; nothing to stop in synchronous mode."""
