"""``poptorch.optim`` (Poplar SDK 3.4): the IPU optimizers that ``trainingModel`` takes.

Each class is its torch optimizer plus poptorch's own keywords, with poptorch 3.4's signature and defaults.
An argument left at ``None`` takes poptorch's default and is a constant on the IPU; one given is a variable
(``variable_attrs``). Only ``AdamW`` and ``LAMB`` are here: what the examples and optimum-graphcore's trainer
import. Stepping on the host is out of scope (``LAMB.step`` raises ``NotImplementedError``, as torch's base does).
"""
from typing import Any, Dict, Iterable, List, Optional, Tuple

import torch

_ACCUMULATION_TYPES = (torch.float16, torch.float32)


class VariableAttributes:
    """Which attributes of an optimizer are variables (updated on the IPU between runs) and which are constants."""

    def __init__(self, variable_attributes: List[str], allowed_attributes: List[str]) -> None:
        self._variable_attributes = variable_attributes
        self._allowed_attributes = allowed_attributes

    def isConstant(self, attr: str) -> bool:
        return attr not in self._variable_attributes

    def markAsConstant(self, attr: str) -> None:
        self._check_allowed(attr)
        self._variable_attributes = [name for name in self._variable_attributes if name != attr]

    def markAsVariable(self, attr: str) -> None:
        self._check_allowed(attr)
        self._variable_attributes.append(attr)

    def _check_allowed(self, attr: str) -> None:
        if attr not in self._allowed_attributes:
            raise AssertionError(f"Unknown attribute {attr}, allowed values: {self._allowed_attributes}")


def _given(arguments: Dict[str, Any]) -> List[str]:
    """The names of the arguments the caller gave (not ``None``): these become variables."""
    return [name for name, value in arguments.items() if value is not None]


def _or_default(value: Any, default: Any) -> Any:
    return default if value is None else value


def _check_accumulation_types(*dtypes: torch.dtype) -> None:
    if any(dtype not in _ACCUMULATION_TYPES for dtype in dtypes):
        raise AssertionError(f"Accumulation types must be either torch.float32 or torch.float16, got {dtypes}")


class Optimizer:
    """The part every poptorch optimizer adds to its torch class: the optimizer state kept on the IPU."""

    def __init__(self) -> None:
        self._state_dict = {"ipu_state": None, "ipu_param": None}
        self.ipu_state_is_dirty = False
        self.host_state_is_dirty = False

    def state_dict(self) -> Dict[str, Any]:
        return self.get_state_dict()

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        torch.optim.Optimizer.load_state_dict(self, state)
        self.set_state_dict(state)

    def get_state_dict(self) -> Dict[str, Any]:
        return {**self._state_dict, **torch.optim.Optimizer.state_dict(self)}

    def set_state_dict(self, state: Dict[str, Any]) -> None:
        if not state:
            raise RuntimeError("Cannot load optimizer state dictionary because it is empty.")
        if "ipu_state" not in state or "ipu_param" not in state:
            raise RuntimeError("Only IPU optimizer states can be loaded onto the IPU.")
        self._state_dict = state
        self.ipu_state_is_dirty = True
        self.host_state_is_dirty = False

    def has_state(self) -> bool:
        return self._state_dict.get("ipu_state") is not None and self._state_dict.get("ipu_param") is not None


class AdamW(Optimizer, torch.optim.AdamW):
    """``torch.optim.AdamW`` with loss scaling, bias correction, accumulation types and gradient clipping."""

    _child_vars = ["loss_scaling"]

    def __init__(
        self,
        params: Iterable,
        lr: Optional[float] = None,
        betas: Optional[Tuple[float, float]] = None,
        eps: Optional[float] = None,
        weight_decay: Optional[float] = None,
        amsgrad: Optional[bool] = None,
        maximize: Optional[bool] = None,
        foreach: Optional[bool] = None,
        capturable: Optional[bool] = None,
        differentiable: Optional[bool] = None,
        fused: Optional[bool] = None,
        loss_scaling: Optional[float] = None,
        bias_correction: Optional[bool] = None,
        accum_type: Optional[torch.dtype] = None,
        first_order_momentum_accum_type: Optional[torch.dtype] = None,
        second_order_momentum_accum_type: Optional[torch.dtype] = None,
        max_grad_norm: Optional[float] = None,
    ) -> None:
        torch_arguments = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                               maximize=maximize, foreach=foreach, capturable=capturable,
                               differentiable=differentiable, fused=fused)
        variables = _given({**torch_arguments, "loss_scaling": loss_scaling, "bias_correction": bias_correction,
                            "accum_type": accum_type, "max_grad_norm": max_grad_norm,
                            "first_order_momentum_accum_type": first_order_momentum_accum_type,
                            "second_order_momentum_accum_type": second_order_momentum_accum_type})
        Optimizer.__init__(self)
        torch.optim.AdamW.__init__(self, params, **{name: torch_arguments[name] for name in _given(torch_arguments)})
        self.loss_scaling = _or_default(loss_scaling, 1.0)
        self.bias_correction = _or_default(bias_correction, True)
        self.accum_type = _or_default(accum_type, torch.float32)
        self.first_order_momentum_accum_type = _or_default(first_order_momentum_accum_type, torch.float32)
        self.second_order_momentum_accum_type = _or_default(second_order_momentum_accum_type, torch.float32)
        _check_accumulation_types(self.accum_type, self.first_order_momentum_accum_type,
                                  self.second_order_momentum_accum_type)
        self.max_grad_norm = _or_default(max_grad_norm, float("Inf"))
        self.variable_attrs = VariableAttributes(variables, list(self.defaults) + AdamW._child_vars)


class LAMB(Optimizer, torch.optim.Optimizer):
    """Layer-wise adaptive moments: poptorch's own optimizer, on top of ``torch.optim.Optimizer``."""

    _child_vars = ["loss_scaling"]

    def __init__(
        self,
        params: Iterable,
        lr: Optional[float] = None,
        betas: Tuple[float, float] = None,
        eps: Optional[float] = None,
        weight_decay: Optional[float] = None,
        bias_correction: Optional[bool] = None,
        loss_scaling: Optional[float] = None,
        max_weight_norm: Optional[float] = None,
        accum_type: Optional[torch.dtype] = None,
        first_order_momentum_accum_type: Optional[torch.dtype] = None,
        second_order_momentum_accum_type: Optional[torch.dtype] = None,
    ) -> None:
        variables = _given(dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                bias_correction=bias_correction, loss_scaling=loss_scaling,
                                max_weight_norm=max_weight_norm, accum_type=accum_type,
                                first_order_momentum_accum_type=first_order_momentum_accum_type,
                                second_order_momentum_accum_type=second_order_momentum_accum_type))
        defaults = dict(
            lr=_or_default(lr, 1e-3),
            betas=_or_default(betas, (0.9, 0.999)),
            eps=_or_default(eps, 1e-8),
            weight_decay=_or_default(weight_decay, 1e-2),
            max_weight_norm=_or_default(max_weight_norm, 65500.0),  # the float16 maximum
        )
        Optimizer.__init__(self)
        torch.optim.Optimizer.__init__(self, params, defaults)
        self.accum_type = _or_default(accum_type, torch.float32)
        self.first_order_momentum_accum_type = _or_default(first_order_momentum_accum_type, torch.float32)
        self.second_order_momentum_accum_type = _or_default(second_order_momentum_accum_type, torch.float32)
        _check_accumulation_types(self.accum_type, self.first_order_momentum_accum_type,
                                  self.second_order_momentum_accum_type)
        self.bias_correction = _or_default(bias_correction, True)
        self.loss_scaling = _or_default(loss_scaling, 1.0)
        self.max_weight_norm = defaults["max_weight_norm"]
        self.variable_attrs = VariableAttributes(variables, list(self.defaults) + LAMB._child_vars)
