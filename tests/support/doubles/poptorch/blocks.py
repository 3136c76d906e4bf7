"""Pipeline blocks of ``poptorch.ops`` (Poplar SDK 3.4): ``BeginBlock``, ``removeBlocks`` and the ``Block`` hook
target.

As in poptorch, ``BeginBlock(module, user_id, ipu_id)`` only registers a forward pre-hook
(``_BlockHook``) on the module and returns the module itself. When the module is called,
the hook tells ``Block._stages_manager`` that a block begins:
``beginStage(user_id, ipu_id)`` (a block without ``user_id`` first takes
``nextAutoId()``). From then on every op runs in that block, until the next block begins.
Outside a trace ``Block._stages_manager`` is ``None`` and the hook does nothing, as when
poptorch runs a model on CPU; a tracer sets it for the time it traces (poptorch's execution
strategy does so in ``onStartTracing``). ``removeBlocks(module)`` removes the hooks again.

Not here (``AttributeError``/``NotImplementedError``): ``Block`` as a context manager,
``BlockFunction``, ``BeginBlock`` of a plain function.
"""
from collections import OrderedDict
from typing import Optional

import torch

from . import _impl


class Block(torch.nn.Module):
    """Holds the stages manager the block hooks report to; ``None`` outside a trace."""

    _stages_manager = None

    @staticmethod
    def useAutoId():
        """Numbers the blocks without ``user_id`` from 0 again."""
        if Block._stages_manager is not None:
            Block._stages_manager.resetAutoId()

    @staticmethod
    def start(user_id: Optional[str] = None, ipu_id: Optional[int] = None):
        """Begins a block now."""
        if Block._stages_manager is not None:
            Block._stages_manager.beginStage(user_id, ipu_id)

    def __init__(self, user_id: Optional[str] = None, ipu_id: Optional[int] = None):
        super().__init__()
        self._user_id = user_id
        self._ipu_id = ipu_id


class _BlockHook:
    """The forward pre-hook ``BeginBlock`` registers: begins its block each time the module is called."""

    def __init__(self, user_id, ipu_id) -> None:
        super().__init__()
        self._user_id = user_id
        self._ipu_id = ipu_id

    def __call__(self, module, input):
        if Block._stages_manager is not None:
            if self._user_id is None:
                self._user_id = Block._stages_manager.nextAutoId()
            Block._stages_manager.beginStage(self._user_id, self._ipu_id)

    def __repr__(self):
        return f"BeginBlock(user_id={self._user_id}, ipu_id={self._ipu_id})"


def removeBlocks(module):
    """Removes the ``BeginBlock`` hooks of ``module`` and of all its submodules."""
    assert isinstance(module, torch.nn.Module)
    for m in module.modules():
        m._forward_pre_hooks = OrderedDict(
            (key, hook) for key, hook in m._forward_pre_hooks.items() if not isinstance(hook, _BlockHook)
        )


def BeginBlock(layer_to_call: torch.nn.Module, user_id: str = None, ipu_id: int = None) -> torch.nn.Module:
    """Makes ``layer_to_call`` begin block ``user_id`` on IPU ``ipu_id`` whenever it is called; returns it."""
    if not isinstance(layer_to_call, torch.nn.Module):
        if callable(layer_to_call):
            raise NotImplementedError(
                f"BeginBlock({layer_to_call!r}): the double supports modules only, not the legacy function form"
            )
        raise _impl.createPoptorchError("module is not an instance of torch.nn.Module or function.")
    if any(isinstance(hook, _BlockHook) for hook in layer_to_call._forward_pre_hooks.values()):
        raise _impl.createPoptorchError("module has already been assigned to a block.")
    layer_to_call.register_forward_pre_hook(_BlockHook(user_id, ipu_id))
    return layer_to_call
