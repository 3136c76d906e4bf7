"""The building blocks a model family is written in (a family module of this package): torch's modules and
operations, each giving from one declaration its parameters, the tensors autograd keeps of it for the backward pass,
and its FLOPs, for one training micro-batch whose sizes the declaration is given as numbers.

- `parameters`: `{name: shape}`, named under the step's module path as `named_parameters()` names them (a block
  named "" holds the step's own `weight`);
- `saved`: the tensors kept for the backward pass; a tensor is named within its step, and blocks keeping the same
  name keep the same tensor (three projections of one input keep it once). A floating element is 2 bytes (4 with
  `fp32`), an integer one 4 (int32 on the IPU), a bool 1; dropout masks are not counted (the IPU regenerates them
  from the seed), so a family describes its forward pass with dropout off;
- `flops`: as `torch.utils.flop_counter` counts them: 2mnk for each matrix product, the convolutions; elementwise
  operations count nothing;
- `ops`: the operations the IPU runs for it, as the time model weighs them (`Operations`): matrix products, by their
  shape, and the elementwise rest (norms, softmax, activations, look-ups, losses), by the elements they touch.

A step of the placement (a block, a layer, a module run between them) is a `Sequential` of blocks, with what enters
it from the step before (a pipeline stage starting there stashes it) and what it hands on (a recomputation
checkpoint after it stashes it). Checked against PyTorch's own accounting by tests/placement/test_upstream_costs.py.
"""

import math
from typing import Dict, Iterable, NamedTuple, Optional, Sequence, Tuple, Union

from ..hardware import matmul_cycles

FLOAT = "float"
INTEGER = "integer"
BOOL = "bool"
_BYTES = {INTEGER: 4, BOOL: 1}

Shape = Tuple[int, ...]
Shapes = Dict[str, Shape]


class Saved(NamedTuple):
    """A tensor autograd keeps: `name` identifies it within its step, `elements` its size."""

    name: str
    elements: int
    kind: str = FLOAT

    def bytes(self, fp32: bool) -> int:
        return self.elements * _BYTES.get(self.kind, 4 if fp32 else 2)


def _named(name: str, leaf: str) -> str:
    """`leaf` under `name`; either may be "" (a block named "" holds the step's own `weight`, a `Parameter` named ""
    is the step's path itself)."""
    return ".".join(part for part in (name, leaf) if part)


class MatmulOp(NamedTuple):
    """`batch` matrix products Y[m x n] = A[m x k] X[k x n], as Graphcore's matmul benchmark names them: A is the
    operand every one of the n rows reuses (a layer's weight), n the rows (the micro-batch's tokens)."""

    batch: int
    m: int
    k: int
    n: int


class ElementwiseOp(NamedTuple):
    """An operation that reads and writes `elements` elements, with no matrix product (a norm, a softmax, an
    activation, a look-up, a loss)."""

    elements: int


Op = Union[MatmulOp, ElementwiseOp]


class Operations(NamedTuple):
    """What one pass of a step runs on an IPU, as the time model weighs it: its operations (`count`: each costs a
    fixed time, as compute, exchange and synchronisation on all tiles), the cycles its matrix products take at the
    speed the IPU reaches for their shapes (`hardware.matmul_cycles`), and the elements its other operations touch."""

    count: int = 0
    matmul_cycles: float = 0.0
    elementwise_elements: int = 0

    def plus(self, other: "Operations", times: int = 1) -> "Operations":
        """These operations and `times` those of `other`."""
        return Operations(*(mine + times * theirs for mine, theirs in zip(self, other)))


NO_OPERATIONS = Operations()


def _matmul(op: MatmulOp) -> Operations:
    return Operations(1, matmul_cycles(*op), 0)


def forward_operations(op: Op) -> Operations:
    """The operations of `op` in the forward pass."""
    return _matmul(op) if isinstance(op, MatmulOp) else Operations(1, 0.0, op.elements)


def backward_operations(op: Op) -> Operations:
    """The operations of `op`'s backward pass: a matrix product's two (the gradient of X, A^T dY, and that of A,
    dY X^T, whose rows are A's), the others' reading the gradient beside the input."""
    if isinstance(op, MatmulOp):
        return _matmul(op._replace(m=op.k, k=op.m)).plus(_matmul(op._replace(k=op.n, n=op.k)))
    return Operations(1, 0.0, 2 * op.elements)


class Module:
    """A torch module or operation of one forward pass: its parameters, what autograd keeps of it, its FLOPs and the
    operations the IPU runs for it. `trains`: whether it has a backward pass (a frozen module has none)."""

    __slots__ = ("parameters", "saved", "flops", "ops", "trains")

    def __init__(self, parameters: Optional[Shapes] = None, saved: Tuple[Saved, ...] = (), flops: int = 0,
                 ops: Tuple["Op", ...] = (), trains: bool = True):
        self.parameters: Shapes = parameters or {}
        self.saved = saved
        self.flops = flops
        self.ops = ops
        self.trains = trains

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.parameters}, {self.saved}, {self.flops}, {self.ops})"


class Parameter(Module):
    """A parameter used by no block of its own (a class token, a bias added after a tied projection); named "": the
    parameter the step's path names (a model's parameter read directly, not a module)."""

    def __init__(self, name: str, shape: Shape):
        super().__init__({name: tuple(shape)})


class Keeps(Module):
    """A tensor an operation without parameters or FLOPs keeps (an index, a mask, a copy)."""

    def __init__(self, name: str, elements: int, kind: str = FLOAT):
        super().__init__(saved=(Saved(name, elements, kind),), ops=(ElementwiseOp(elements),))


class Linear(Module):
    """`nn.Linear(inputs, outputs)` on `rows` rows of its input `x`: keeps `x`, or the whole `storage` it is a view of
    (the first token of each sequence). `tied`: its weight is another module's (no parameter of its own);
    `transposed`: transformers' `Conv1D`, whose weight is stored (inputs, outputs)."""

    def __init__(self, name: str, inputs: int, outputs: int, rows: int, x: str, bias: bool = True,
                 tied: bool = False, transposed: bool = False, storage: Optional[int] = None):
        parameters: Shapes = {}
        if not tied:
            parameters[_named(name, "weight")] = (inputs, outputs) if transposed else (outputs, inputs)
        if bias:
            parameters[_named(name, "bias")] = (outputs,)
        super().__init__(parameters, (Saved(x, rows * inputs if storage is None else storage),),
                         2 * rows * inputs * outputs, (MatmulOp(1, outputs, inputs, rows),))


class Embedding(Module):
    """`nn.Embedding(rows, width)`: keeps the `lookups` integer indices `ids`, unless they are a buffer (`ids` None:
    positions) or it is not looked up at all (its weight read directly)."""

    def __init__(self, name: str, rows: int, width: int, ids: Optional[str] = None, lookups: int = 0):
        saved = () if ids is None else (Saved(ids, lookups, INTEGER),)
        super().__init__({_named(name, "weight"): (rows, width)}, saved,
                         ops=(ElementwiseOp(lookups * width),) if lookups else ())


class LayerNorm(Module):
    """`nn.LayerNorm(width)` on `rows` rows of `x`: keeps `x`, and each row's mean and reciprocal deviation."""

    def __init__(self, name: str, width: int, rows: int, x: str):
        super().__init__({_named(name, "weight"): (width,), _named(name, "bias"): (width,)},
                         (Saved(x, rows * width), Saved(f"{x}: mean", rows), Saved(f"{x}: rstd", rows)),
                         ops=(ElementwiseOp(rows * width),))


class RMSNorm(Module):
    """A root-mean-square norm, a weight and no bias, in float32 operations: keeps `x`, each row's reciprocal root
    mean square and the normalised rows."""

    def __init__(self, name: str, width: int, rows: int, x: str):
        super().__init__({_named(name, "weight"): (width,)},
                         (Saved(x, rows * width), Saved(f"{x}: rstd", rows), Saved(f"{x}: normalised", rows * width)),
                         ops=(ElementwiseOp(rows * width),))


class GroupNorm(Module):
    """`nn.GroupNorm(groups, channels)` over `batch` examples of `positions` each: keeps `x`, and each group's mean and
    reciprocal deviation."""

    def __init__(self, name: str, groups: int, channels: int, batch: int, positions: int, x: str):
        super().__init__({_named(name, "weight"): (channels,), _named(name, "bias"): (channels,)},
                         (Saved(x, batch * channels * positions), Saved(f"{x}: mean", batch * groups),
                          Saved(f"{x}: rstd", batch * groups)), ops=(ElementwiseOp(batch * channels * positions),))


class Convolution(Module):
    """`nn.Conv1d` / `nn.Conv2d(inputs, outputs, kernel, groups=groups)` over `batch` examples, giving `positions`
    outputs a channel: keeps its input `x` of `elements`. `weight_norm`: the dimension of `nn.utils.weight_norm`'s,
    whose weight is worked out in each pass from a direction `weight_v` and a norm `weight_g` (one a slice along that
    dimension): it keeps the norm of the direction and the weight."""

    def __init__(self, name: str, inputs: int, outputs: int, kernel: Sequence[int], batch: int, positions: int,
                 x: str, elements: int, groups: int = 1, bias: bool = True, weight_norm: Optional[int] = None):
        shape = (outputs, inputs // groups, *kernel)
        saved = (Saved(x, elements),)
        if weight_norm is None:
            parameters = {_named(name, "weight"): shape}
        else:
            norm = tuple(size if axis == weight_norm else 1 for axis, size in enumerate(shape))
            parameters = {_named(name, "weight_g"): norm, _named(name, "weight_v"): shape}
            saved += (Saved(f"{name}: weight norm", math.prod(norm)), Saved(f"{name}: weight", math.prod(shape)))
        if bias:
            parameters[_named(name, "bias")] = (outputs,)
        # a product per group: the group's filters by the patches of its channels under the kernel
        product = MatmulOp(groups, outputs // groups, inputs // groups * math.prod(kernel), batch * positions)
        super().__init__(parameters, saved, 2 * batch * outputs * positions * (inputs // groups) * math.prod(kernel),
                         (product,))


class Matmul(Module):
    """A batched matrix product of `batch` (m x k) by (k x n) matrices; `saved`: the copies torch makes of its
    operands and keeps (a transposed view is copied before the product)."""

    def __init__(self, batch: int, m: int, k: int, n: int, saved: Tuple[Saved, ...] = ()):
        super().__init__(saved=saved, flops=2 * batch * m * k * n, ops=(MatmulOp(batch, m, k, n),))


class Activation(Module):
    """An elementwise activation (gelu, tanh, relu, ...): keeps its input (or its output: one tensor either way)."""

    def __init__(self, x: str, elements: int):
        super().__init__(saved=(Saved(x, elements),), ops=(ElementwiseOp(elements),))


class Attention(Module):
    """`softmax(q k^T) v` as transformers writes it with `torch.matmul` on (batch, heads, length, head size) views:
    torch copies q, k^T and v to contiguous matrices and keeps them, and the softmax keeps its output."""

    def __init__(self, name: str, batch: int, heads: int, queries: int, keys: int, head_size: int):
        pairs = batch * heads
        super().__init__(saved=(Saved(f"{name}: queries", pairs * queries * head_size),
                                Saved(f"{name}: keys", pairs * keys * head_size),
                                Saved(f"{name}: probabilities", pairs * queries * keys),
                                Saved(f"{name}: values", pairs * keys * head_size)),
                         flops=2 * (2 * pairs * queries * head_size * keys),  # scores, then their product by v
                         ops=(MatmulOp(pairs, queries, head_size, keys), ElementwiseOp(pairs * queries * keys),
                              MatmulOp(pairs, queries, keys, head_size)))


class CrossEntropy(Module):
    """`F.cross_entropy` of `rows` rows over `classes`: keeps the log-probabilities, the targets and the loss."""

    def __init__(self, name: str, rows: int, classes: int):
        super().__init__(saved=(Saved(f"{name}: log-probabilities", rows * classes),
                                Saved(f"{name}: targets", rows, INTEGER), Saved(f"{name}: loss", 1)),
                         ops=(ElementwiseOp(rows * classes),))


class Unused(Module):
    """Modules whose parameters the model holds and this forward pass does not run (a cross-attention without an
    encoder's states, the relative embeddings a layer reads through another module)."""

    def __init__(self, *modules: "Part"):
        super().__init__(_held(modules))


class Frozen(Module):
    """Modules whose parameters do not train (`requires_grad=False`), run on an input that needs no gradient: their
    parameters, FLOPs and forward operations, nothing kept, no backward pass."""

    def __init__(self, *modules: "Part"):
        super().__init__(_held(modules), flops=sum(module.flops for module in _flat(modules)),
                         ops=tuple(op for module in _flat(modules) for op in module.ops), trains=False)


class StepCost(NamedTuple):
    """What one training micro-batch keeps and computes in one step, and what crosses into it from the step before
    (`input_bytes`: what a pipeline stage starting there stashes) and out of it (`output_bytes`: what a recomputation
    checkpoint after it stashes), in bytes; the operations of its forward and its backward pass."""

    activation_bytes: int
    input_bytes: int
    output_bytes: int
    forward_flops: int
    forward: Operations = NO_OPERATIONS
    backward: Operations = NO_OPERATIONS


# a block, or blocks, or None (nothing): what a family's builder writes inside a `Sequential`
Part = Union[Module, Iterable["Part"], None]


def _flat(parts: Iterable[Part]) -> Iterable[Module]:
    for part in parts:
        if isinstance(part, Module):
            yield part
        elif part is not None:
            yield from _flat(part)


def _held(parts: Iterable[Part]) -> Shapes:
    """The parameters of blocks."""
    return {name: shape for module in _flat(parts) for name, shape in module.parameters.items()}


class Sequential:
    """A step's blocks, in the order its forward pass runs them (nested tuples and None are flattened: write
    `(...) if condition else None`), what `enters` the step and what it hands on (`leaves`)."""

    __slots__ = ("modules", "enters", "leaves")

    def __init__(self, *modules: Part, enters: Tuple[Saved, ...] = (), leaves: Tuple[Saved, ...] = ()):
        self.modules = tuple(_flat(modules))
        self.enters = enters
        self.leaves = leaves

    def parameters(self, path: str) -> Shapes:
        """`{parameter: shape}` of the step's blocks, named under the step's module `path`."""
        return {_named(path, name): shape for module in self.modules for name, shape in module.parameters.items()}

    def cost(self, fp32: bool) -> StepCost:
        """What the step keeps (each named tensor once) and computes, and the operations of its two passes."""
        kept: Dict[str, Saved] = {}
        forward = backward = NO_OPERATIONS
        for module in self.modules:
            for tensor in module.saved:
                kept.setdefault(tensor.name, tensor)
            for op in module.ops:
                forward = forward.plus(forward_operations(op))
                if module.trains:
                    backward = backward.plus(backward_operations(op))
        return StepCost(_bytes(kept.values(), fp32), _bytes(self.enters, fp32), _bytes(self.leaves, fp32),
                        sum(module.flops for module in self.modules), forward, backward)


def _bytes(tensors: Iterable[Saved], fp32: bool) -> int:
    return sum(tensor.bytes(fp32) for tensor in tensors)
