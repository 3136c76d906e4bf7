"""The vocabulary of the cost tables (cost_rows.py): the operations a step of a placement runs, each with the
tensors autograd keeps for the backward pass and its FLOPs, as formulas (Python expressions) of the model's config.json
and the input shape; and `step_cost()`, which sums a table.

The rules (tested against optimum-graphcore 0.7.1's own pipelined models, see tests/placement/test_upstream_costs.py):

- activations: each tensor autograd keeps once per step, parameters (and views of them) and buffers not counted; a
  floating element is 2 bytes (4 with `fp32`), an integer one 4 (int32 on the IPU), a bool 1; dropout masks are not
  counted (the IPU regenerates them from the seed), so a table describes the forward pass with dropout off;
- FLOPs: as `torch.utils.flop_counter` counts them: 2mnk for each matrix product, the convolutions; elementwise
  operations count nothing.
"""

from functools import lru_cache
from typing import Any, Dict, List, Mapping, NamedTuple, Tuple

FLOAT = "float"
INTEGER = "integer"
BOOL = "bool"
_INTEGER_BYTES = 4
_BOOL_BYTES = 1

# --- the vocabulary of the tables ----------------------------------------------------------------------------------


class Kept(NamedTuple):
    """A tensor autograd keeps: `name` identifies it within its step (operations keeping the same tensor name it
    alike, and it counts once), `elements` is a formula."""

    name: str
    elements: str
    kind: str = FLOAT


class Op(NamedTuple):
    """One operation of a step: what it keeps, its FLOPs (a formula), and `when`, a formula saying whether it runs
    (e.g. only in the first layer)."""

    kind: str
    keeps: Tuple[Kept, ...] = ()
    flops: str = "0"
    when: str = "True"


class Table(NamedTuple):
    """A step's operations, what enters it from the step before (`enters`) and what it hands on (`leaves`)."""

    ops: Tuple[Op, ...]
    enters: Tuple[Kept, ...] = ()
    leaves: Tuple[Kept, ...] = ()


def keep(name: str, elements: str, kind: str = FLOAT, when: str = "True") -> Op:
    return Op("keep", (Kept(name, elements, kind),), when=when)


def linear(x: str, rows: str, inputs: str, outputs: str, when: str = "True", storage: str = "") -> Op:
    """`y = x W^T + b`: keeps its input, or the whole `storage` it is a view of (the first token of each sequence)."""
    return Op("linear", (Kept(x, storage or f"({rows})*({inputs})"),), f"2*({rows})*({inputs})*({outputs})", when)


def matmul(batch: str, m: str, k: str, n: str, keeps: Tuple[Kept, ...] = (), when: str = "True") -> Op:
    """A batched matrix product of `batch` (m x k) by (k x n) matrices; `keeps`: the copies torch makes of its
    operands (a transposed view is copied before the product)."""
    return Op("matmul", keeps, f"2*({batch})*({m})*({k})*({n})", when)


def conv(x: str, elements: str, flops: str) -> Op:
    """A convolution: keeps its input of `elements`."""
    return Op("conv", (Kept(x, elements),), flops)


def layer_norm(x: str, rows: str, width: str) -> Op:
    """Keeps its input, and the mean and the reciprocal deviation of each row."""
    return Op("layer_norm", (Kept(x, f"({rows})*({width})"), Kept(f"{x}: mean", rows), Kept(f"{x}: rstd", rows)))


def rms_norm(x: str, rows: str, width: str) -> Op:
    """T5's norm, in float32 ops: keeps its input, each row's reciprocal root mean square and the normalised rows."""
    return Op("rms_norm", (Kept(x, f"({rows})*({width})"), Kept(f"{x}: rstd", rows),
                           Kept(f"{x}: normalised", f"({rows})*({width})")))


def elementwise(x: str, elements: str, kind: str = "gelu") -> Op:
    """An activation (gelu, tanh, ...) that keeps its input (or its output: one tensor either way)."""
    return Op(kind, (Kept(x, elements),))


def embedding(ids: str, elements: str, when: str = "True") -> Op:
    """A lookup: keeps its integer indices."""
    return Op("embedding", (Kept(ids, elements, INTEGER),), when=when)


def cross_entropy(name: str, rows: str, classes: str) -> Op:
    """`F.cross_entropy`: keeps the log-probabilities, the targets and the reduced loss."""
    return Op("cross_entropy", (Kept(f"{name}: log-probabilities", f"({rows})*({classes})"),
                                Kept(f"{name}: targets", rows, INTEGER), Kept(f"{name}: loss", "1")))


def attention(prefix: str, batch: str, heads: str, queries: str, keys: str, head_dim: str) -> Tuple[Op, ...]:
    """`softmax(q k^T) v` as transformers writes it with `torch.matmul` on (batch, heads, length, head_dim) views:
    torch copies q, k^T and v to contiguous matrices and keeps them, and the softmax keeps its output."""
    pairs = f"({batch})*({heads})"
    return (
        matmul(pairs, queries, head_dim, keys, (Kept(f"{prefix}: queries", f"{pairs}*({queries})*({head_dim})"),
                                                 Kept(f"{prefix}: keys", f"{pairs}*({keys})*({head_dim})"))),
        Op("softmax", (Kept(f"{prefix}: probabilities", f"{pairs}*({queries})*({keys})"),)),
        matmul(pairs, queries, keys, head_dim, (Kept(f"{prefix}: values", f"{pairs}*({keys})*({head_dim})"),)),
    )


def table(*ops: Any, enters: Tuple[Kept, ...] = (), leaves: Tuple[Kept, ...] = (), when: str = "True") -> Table:
    """A `Table` of operations, each an `Op` or a tuple of them; `when`: a condition on all of them."""
    flat: List[Op] = []
    for op in ops:
        flat.extend((op,) if isinstance(op, Op) else op)
    if when != "True":
        flat = [op._replace(when=f"({when}) and ({op.when})") for op in flat]
    return Table(tuple(flat), enters, leaves)


class BlockCost(NamedTuple):
    """What one training micro-batch keeps and computes in one step of the placement, and what crosses into it from
    the step before (`input_bytes`: what a pipeline stage starting there stashes) and out of it (`output_bytes`: what
    a recomputation checkpoint after it stashes), in bytes."""

    activation_bytes: int
    input_bytes: int
    output_bytes: int
    forward_flops: int


# --- evaluation -----------------------------------------------------------------------------------------------------

_FUNCTIONS = {"sum": sum}


@lru_cache(maxsize=None)
def _compiled(formula: str):
    return compile(formula, formula, "eval")


def evaluate(formula: str, dims: Mapping[str, Any]) -> Any:
    """The value of a formula of `dims` (names of config fields and shape sizes)."""
    return eval(_compiled(formula), {"__builtins__": _FUNCTIONS}, dims)  # noqa: S307 - the package's own formulas


def _bytes(kept: Tuple[Kept, ...], dims: Mapping[str, Any], float_bytes: int) -> int:
    sizes = {FLOAT: float_bytes, INTEGER: _INTEGER_BYTES, BOOL: _BOOL_BYTES}
    return sum(evaluate(tensor.elements, dims) * sizes[tensor.kind] for tensor in kept)


def step_cost(step: Table, dims: Mapping[str, Any], fp32: bool) -> BlockCost:
    """What a step keeps (each named tensor once) and computes under `dims`."""
    float_bytes = 4 if fp32 else 2
    kept: Dict[str, Kept] = {}
    flops = 0
    for op in step.ops:
        if not evaluate(op.when, dims):
            continue
        flops += evaluate(op.flops, dims)
        for tensor in op.keeps:
            kept.setdefault(tensor.name, tensor)
    return BlockCost(_bytes(tuple(kept.values()), dims, float_bytes), _bytes(step.enters, dims, float_bytes),
                     _bytes(step.leaves, dims, float_bytes), flops)


