"""Tensor ops of ``poptorch.ops`` (Poplar SDK 3.4), as they run on CPU.

Each op checks its arguments as the real one does (same exception types) and computes what
poptorch's CPU kernels compute (``RegisterAtenOverloads.cpp``): ``recomputationCheckpoint``
and ``serializedMatMul``'s annotation return their input, ``identity_loss`` reduces,
``dynamic_slice``/``dynamic_update`` slice at the start the tensor holds. While a model is
traced for the IPU (``isRunningOnIpu()``), ``cond`` builds IPU branches: not in the double.
The block API (``BeginBlock`` ...) lives in ``blocks``.
"""
from typing import Callable, List

import torch

from . import _impl, enums, poptorch_core
from .blocks import BeginBlock, Block, removeBlocks  # noqa: F401  (poptorch.ops holds them too)

_REDUCTIONS = {"sum": torch.sum, "mean": torch.mean, "none": torch.clone}
_START_TYPES = (torch.int64, torch.int32, torch.int16)


def cond(
    condition: "torch.Tensor",
    then_body: Callable[[List["torch.Tensor"]], List["torch.Tensor"]],
    then_inps: List["torch.Tensor"],
    else_body: Callable[[List["torch.Tensor"]], List["torch.Tensor"]],
    else_inps: List["torch.Tensor"],
) -> List["torch.Tensor"]:
    """Runs ``then_body(*then_inps)`` if ``condition`` else ``else_body(*else_inps)``; returns the outputs as a
    list."""
    if not isinstance(then_inps, list) or not isinstance(else_inps, list):
        raise ValueError(
            "poptorch.cond expects then_inps and else_inps tensors to be a list of tensors. (Object is not list)"
        )
    if _impl.isRunningOnIpu():
        raise NotImplementedError("poptorch.cond traced for the IPU: the double runs it on CPU only")
    result = then_body(*then_inps) if condition else else_body(*else_inps)
    return [result] if isinstance(result, torch.Tensor) else [*result]


def _start_index(start: "torch.Tensor") -> int:
    if start.dtype not in _START_TYPES:
        raise poptorch_core.Error("Expected integer typed start tensor")
    return int(start.reshape(-1)[0])


def _check_slice_arguments(op: str, tensor, dim, start, size) -> None:
    if not isinstance(tensor, torch.Tensor):
        raise _impl.createPoptorchError(f"{op} must take a torch.tensor input. {type(tensor)} is not supported.")
    if not isinstance(dim, int):
        raise _impl.createPoptorchError("Dimension must be an integer.")
    if not isinstance(start, torch.Tensor):
        raise _impl.createPoptorchError(
            f"Slice start argument to {op} must be a torch.tensor. {type(start)} is not supported."
        )
    if not isinstance(size, int):
        raise _impl.createPoptorchError("Size must be an integer.")


def dynamic_slice(tensor: "torch.Tensor", dim: int, start: "torch.Tensor", size: int, step: int) -> "torch.Tensor":
    """``tensor`` sliced along ``dim`` from the index ``start`` holds, ``size`` long, every ``step``."""
    _check_slice_arguments("dynamic_slice", tensor, dim, start, size)
    if not isinstance(step, int):
        raise _impl.createPoptorchError("Step must be an integer.")
    first = _start_index(start)
    index = [slice(None)] * tensor.dim()
    index[dim] = slice(first, first + size, step)
    return tensor[tuple(index)]


def dynamic_update(
    input: "torch.Tensor", src: "torch.Tensor", dim: int, start: "torch.Tensor", size: int
) -> "torch.Tensor":
    """A copy of ``input`` with ``src`` written along ``dim`` from the index ``start`` holds, ``size`` long."""
    _check_slice_arguments("dynamic_update", input, dim, start, size)
    if not isinstance(src, torch.Tensor):
        raise _impl.createPoptorchError(
            f"Src argument to dynamic_update must be a torch.tensor. {type(src)} is not supported."
        )
    if input.dim() != src.dim():
        raise _impl.createPoptorchError(
            f"input and src tensors must have same dimensionality. ({input.dim()}) vs ({src.dim()})"
        )
    if input.dtype != src.dtype:
        raise _impl.createPoptorchError(f"input and src tensor must have same dtype. ({input.dtype} vs {src.dtype})")
    first = _start_index(start)
    return torch.slice_scatter(input, src, dim, first, first + size, 1)


def recomputationCheckpoint(*tensors: List["torch.Tensor"]) -> List["torch.Tensor"]:
    """Marks tensors to be kept rather than recomputed; returns them (one tensor, or a tuple / the given sequence)."""
    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        return type(tensors[0])(recomputationCheckpoint(*tensors[0]))
    for tensor in tensors:
        if not isinstance(tensor, torch.Tensor):
            raise ValueError("All inputs must be tensors")
    return tensors[0] if len(tensors) == 1 else tuple(tensors)


def serializedMatMul(
    lhs: "torch.Tensor",
    rhs: "torch.Tensor",
    mode: "enums.MatMulSerializationMode",
    factor: int = 0,
    keep_precision: bool = False,
) -> "torch.Tensor":
    """``lhs @ rhs``, annotated to be computed in ``factor`` pieces along ``mode`` on the IPU."""
    assert isinstance(keep_precision, bool)
    assert isinstance(factor, int)
    assert isinstance(mode, enums.MatMulSerializationMode)
    return torch.matmul(lhs, rhs)


def identity_loss(x: "torch.Tensor", reduction: "str") -> "torch.Tensor":
    """Marks ``x`` as the loss; returns it reduced by ``"sum"``, ``"mean"`` or ``"none"`` (a copy)."""
    assert reduction in _REDUCTIONS, "Unsupported reduction type!"
    return _REDUCTIONS[reduction](x)
