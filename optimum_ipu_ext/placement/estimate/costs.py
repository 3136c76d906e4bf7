"""What one training micro-batch keeps for the backward pass and computes in each step of a placement: the cost
model of `place` (activations, stash, recomputation, FLOPs).

`block_costs()` gives the cost of each step of a placement, keyed by the step's module path as the placement's
layout names it (`Layout.uses`), from the modules of its row (models/). No torch, no model: a few thousand blocks
for the largest models.

The rules (tested against optimum-graphcore 0.7.1's own pipelined models by tests/placement/test_upstream_costs.py):

- `activation_bytes`: the tensors autograd keeps, each storage once per step, parameters, views of them and buffers
  not counted; a floating element 2 bytes (4 with `fp32`), an integer one 4 (int32 on the IPU), a bool 1; dropout
  masks not counted (the IPU regenerates them from the seed); the loss and its logits where upstream computes them;
- `forward_flops`: as `torch.utils.flop_counter` counts them (2mnk per matrix product, convolutions; elementwise
  operations count nothing).
"""

from typing import Dict, Union

from ..models import ARCHITECTURES
from ..models.blocks import StepCost
from ..models.rules import (
    Architecture,
    Block,
    InputShape,
    ModelConfig,
    expand,
    module_of,
)

__all__ = ["StepCost", "block_costs"]


def block_costs(architecture: Union[str, Architecture], config: ModelConfig, shape: InputShape,
                fp32: bool = False) -> Dict[str, StepCost]:
    """`{step path: its cost}` for one training micro-batch of `shape`, for each step of the architecture's row that
    runs (a name of `ARCHITECTURES`, or its row): each layer is a step; a module run twice, like a shared embedding, is
    one step with the cost of both runs; a block never called (its weight read directly) has none."""
    if isinstance(architecture, str):
        architecture = ARCHITECTURES[architecture]
    sizes = architecture.sizes(config, shape)
    found: Dict[str, StepCost] = {}
    for step, _, _ in expand(architecture, config):
        if isinstance(step, Block) and not step.called:
            continue
        module = module_of(step)
        if module is None:
            raise KeyError(f"no module for {architecture.name}'s step {step.path}")
        found[step.path] = module(sizes).cost(fp32)
    return found
