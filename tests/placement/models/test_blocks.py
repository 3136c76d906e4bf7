"""`placement/models/blocks.py`: each building block's parameters as torch names them, what it keeps and what it
computes, as closed forms (test_upstream_costs.py checks them within the families, against upstream's models); the
operations the IPU runs for it (its matrix products give its FLOPs; a product's backward is two products, an
elementwise operation's touches twice its elements, a frozen block has none); a step of blocks: its parameters under
its path, each tensor kept once, the bytes of each kind of element, the operations of its two passes."""

import pytest

from optimum_ipu_ext.placement.hardware import matmul_cycles
from optimum_ipu_ext.placement.models.blocks import (
    BOOL,
    INTEGER,
    NO_OPERATIONS,
    Activation,
    Attention,
    Convolution,
    CrossEntropy,
    ElementwiseOp,
    Embedding,
    Frozen,
    GroupNorm,
    Keeps,
    LayerNorm,
    Linear,
    Matmul,
    MatmulOp,
    Operations,
    Parameter,
    RMSNorm,
    Saved,
    Sequential,
    StepCost,
    Unused,
    backward_operations,
    forward_operations,
)


def test_a_linear_layer_holds_its_weight_and_bias_keeps_its_input_and_computes_2mnk():
    layer = Linear("dense", 5, 7, 3, "x")
    assert layer.parameters == {"dense.weight": (7, 5), "dense.bias": (7,)}
    assert (layer.saved, layer.flops) == ((Saved("x", 3 * 5),), 2 * 3 * 5 * 7)
    assert Linear("dense", 5, 7, 3, "x", bias=False).parameters == {"dense.weight": (7, 5)}
    assert Linear("dense", 5, 7, 3, "x", tied=True).parameters == {"dense.bias": (7,)}
    assert Linear("c_attn", 5, 7, 3, "x", transposed=True).parameters == {"c_attn.weight": (5, 7),
                                                                          "c_attn.bias": (7,)}
    assert Linear("dense", 5, 7, 3, "x", storage=99).saved == (Saved("x", 99),)


def test_an_embedding_keeps_its_indices_where_they_are_not_a_buffer():
    assert Embedding("words", 11, 5, "ids", 6).parameters == {"words.weight": (11, 5)}
    assert Embedding("words", 11, 5, "ids", 6).saved == (Saved("ids", 6, INTEGER),)
    assert Embedding("positions", 11, 5).saved == () and Embedding("positions", 11, 5).flops == 0


def test_the_norms_keep_their_input_and_their_statistics():
    assert LayerNorm("norm", 5, 3, "x").parameters == {"norm.weight": (5,), "norm.bias": (5,)}
    assert LayerNorm("norm", 5, 3, "x").saved == (Saved("x", 15), Saved("x: mean", 3), Saved("x: rstd", 3))
    assert RMSNorm("norm", 5, 3, "x").parameters == {"norm.weight": (5,)}
    assert RMSNorm("norm", 5, 3, "x").saved == (Saved("x", 15), Saved("x: rstd", 3), Saved("x: normalised", 15))


def test_a_convolution_computes_over_its_outputs_and_the_inputs_of_its_group():
    conv = Convolution("conv", 8, 6, (3, 2), 2, 10, "x", 99, groups=2)
    assert conv.parameters == {"conv.weight": (6, 4, 3, 2), "conv.bias": (6,)}
    assert (conv.saved, conv.flops) == ((Saved("x", 99),), 2 * 2 * 6 * 10 * 4 * 3 * 2)
    assert type(conv.flops) is int  # FLOPs are counted whole, as PyTorch's FlopCounterMode counts them
    assert Convolution("conv", 8, 6, (3,), 2, 10, "x", 99, bias=False).parameters == {"conv.weight": (6, 8, 3)}


def test_attention_keeps_copies_of_its_operands_and_the_softmax_output():
    attention = Attention("self", 2, 3, 5, 7, 11)
    assert attention.parameters == {}
    assert attention.saved == (Saved("self: queries", 2 * 3 * 5 * 11), Saved("self: keys", 2 * 3 * 7 * 11),
                               Saved("self: probabilities", 2 * 3 * 5 * 7), Saved("self: values", 2 * 3 * 7 * 11))
    assert attention.flops == 2 * 2 * 3 * 5 * 11 * 7 + 2 * 2 * 3 * 5 * 7 * 11


def test_the_blocks_without_parameters():
    assert (Matmul(2, 3, 5, 7).flops, Matmul(2, 3, 5, 7, (Saved("x", 1),)).saved) == (2 * 2 * 3 * 5 * 7,
                                                                                    (Saved("x", 1),))
    assert (Activation("x", 9).saved, Activation("x", 9).flops) == ((Saved("x", 9),), 0)
    assert Keeps("mask", 4, BOOL).saved == (Saved("mask", 4, BOOL),)
    assert CrossEntropy("loss", 3, 7).saved == (Saved("loss: log-probabilities", 21),
                                                Saved("loss: targets", 3, INTEGER), Saved("loss: loss", 1))
    assert Parameter("bias", (7,)).parameters == {"bias": (7,)} and Parameter("bias", (7,)).saved == ()


def test_unused_modules_hold_their_parameters_and_neither_keep_nor_compute():
    unused = Unused(Linear("cross", 5, 5, 3, "x"), None, (LayerNorm("norm", 5, 3, "y"),))
    assert unused.parameters == {"cross.weight": (5, 5), "cross.bias": (5,), "norm.weight": (5,), "norm.bias": (5,)}
    assert (unused.saved, unused.flops) == ((), 0)


def test_a_step_names_its_parameters_under_its_path_and_keeps_each_tensor_once():
    step = Sequential(Linear("query", 5, 5, 3, "x"), (Linear("key", 5, 5, 3, "x"), None), Keeps("mask", 3, BOOL),
                      enters=(Saved("x", 15),), leaves=(Saved("ids", 3, INTEGER),))
    assert step.parameters("layer.0") == {"layer.0.query.weight": (5, 5), "layer.0.query.bias": (5,),
                                          "layer.0.key.weight": (5, 5), "layer.0.key.bias": (5,)}
    assert step.cost(False)[:4] == StepCost(2 * 15 + 3, 2 * 15, 4 * 3, 2 * (2 * 3 * 5 * 5))[:4]
    assert step.cost(True)[:4] == StepCost(4 * 15 + 3, 4 * 15, 4 * 3, 2 * (2 * 3 * 5 * 5))[:4]
    # forward: two products of a 5 x 5 weight by 3 rows and the mask's 3 elements; backward: each product's two
    # (A^T dY, 5 x 5 by 3 rows; dY X^T, 5 x 3 by 5 rows) and the mask's, reading twice its elements
    product, weight_gradient = matmul_cycles(1, 5, 5, 3), matmul_cycles(1, 5, 3, 5)
    assert step.cost(False).forward == Operations(3, pytest.approx(2 * product), 3)
    assert step.cost(False).backward == Operations(5, pytest.approx(2 * (product + weight_gradient)), 6)
    assert step.cost(True)[4:] == step.cost(False)[4:]  # fp32 changes the bytes, not the operations


@pytest.mark.parametrize("kind, fp16, fp32", [("float", 2, 4), (INTEGER, 4, 4), (BOOL, 1, 1)])
def test_each_kind_of_element_has_its_size(kind, fp16, fp32):
    assert (Saved("x", 3, kind).bytes(False), Saved("x", 3, kind).bytes(True)) == (3 * fp16, 3 * fp32)


def test_a_group_norm_keeps_its_input_and_two_statistics_a_group_of_each_example():
    norm = GroupNorm("norm", 4, 8, 3, 10, "x")
    assert norm.parameters == {"norm.weight": (8,), "norm.bias": (8,)}
    assert norm.saved == (Saved("x", 3 * 8 * 10), Saved("x: mean", 3 * 4), Saved("x: rstd", 3 * 4))
    assert norm.flops == 0


def test_a_weight_normed_convolution_holds_a_direction_and_a_norm_and_keeps_the_weight_it_works_out():
    plain = Convolution("conv", 8, 8, (5,), 2, 9, "x", 2 * 8 * 9, groups=2)
    normed = Convolution("conv", 8, 8, (5,), 2, 9, "x", 2 * 8 * 9, groups=2, weight_norm=2)
    assert normed.parameters == {"conv.weight_g": (1, 1, 5), "conv.weight_v": (8, 4, 5), "conv.bias": (8,)}
    assert normed.saved == (*plain.saved, Saved("conv: weight norm", 5), Saved("conv: weight", 8 * 4 * 5))
    assert normed.flops == plain.flops == 2 * 2 * 8 * 9 * 4 * 5
    assert Convolution("conv", 8, 8, (5,), 2, 9, "x", 0, weight_norm=0).parameters["conv.weight_g"] == (8, 1, 1)


def test_frozen_modules_hold_their_parameters_and_compute_but_keep_nothing():
    convolution = Convolution("conv", 1, 4, (3,), 2, 8, "samples", 2 * 10, bias=False)
    norm = LayerNorm("norm", 4, 2 * 8, "convolved")
    step = Sequential(Frozen(convolution, (norm,)))
    assert step.parameters("extractor") == {"extractor.conv.weight": (4, 1, 3), "extractor.norm.weight": (4,),
                                            "extractor.norm.bias": (4,)}
    assert step.cost(False)[:4] == StepCost(0, 0, 0, convolution.flops)[:4]
    assert step.cost(False).forward == forward_operations(convolution.ops[0]).plus(forward_operations(norm.ops[0]))
    assert step.cost(False).backward == NO_OPERATIONS


def test_a_parameter_named_nothing_is_the_one_the_step_s_path_names():
    assert Sequential(Parameter("", (6,))).parameters("model.masked_embedding") == {"model.masked_embedding": (6,)}
    assert Sequential(LayerNorm("", 6, 1, "x")).parameters("model.norm") == {"model.norm.weight": (6,),
                                                                            "model.norm.bias": (6,)}


def test_a_block_shows_its_kind_its_parameters_what_it_keeps_its_flops_and_its_ops():
    linear = Linear("dense", 2, 3, rows=5, x="x")
    assert repr(linear) == (f"Linear({{'dense.weight': (3, 2), 'dense.bias': (3,)}}, ({Saved('x', 10)!r},), 60, "
                            "(MatmulOp(batch=1, m=3, k=2, n=5),))")


# --- the operations the IPU runs ---------------------------------------------------------------------------------


def product_flops(module):
    """The FLOPs of a block's matrix products, 2 x batch x m x k x n each."""
    return sum(2 * op.batch * op.m * op.k * op.n for op in module.ops if isinstance(op, MatmulOp))


@pytest.mark.parametrize("module", [
    Linear("dense", 5, 7, 3, "x"),
    Linear("c_attn", 5, 7, 3, "x", transposed=True, bias=False),
    Matmul(2, 3, 5, 7),
    Attention("self", 2, 3, 5, 7, 11),
    Attention("cross", 1, 4, 6, 9, 8),
    Convolution("conv", 8, 6, (3, 2), 2, 10, "x", 99, groups=2),
    Convolution("conv", 3, 768, (16, 8), 2, 14 * 20, "pixels", 99),
    Convolution("conv", 8, 8, (5,), 2, 9, "x", 0, groups=2, weight_norm=2),
], ids=repr)
def test_the_matrix_products_of_a_block_give_its_flops(module):
    assert product_flops(module) == module.flops > 0


def test_each_block_s_products_take_the_shape_of_its_weight_and_its_rows():
    """A product Y[m x n] = A[m x k] X[k x n] reuses A (the weight) across the n rows (the tokens)."""
    assert Linear("dense", 5, 7, 3, "x").ops == (MatmulOp(1, 7, 5, 3),)
    assert Matmul(2, 3, 5, 7).ops == (MatmulOp(2, 3, 5, 7),)
    # a product per group: its 3 filters of 4 channels x 3 x 2 by the 2 x 10 positions
    assert Convolution("conv", 8, 6, (3, 2), 2, 10, "x", 99, groups=2).ops == (MatmulOp(2, 3, 4 * 3 * 2, 2 * 10),)
    # the scores q k^T of each head of each example, their softmax, then their product by v
    assert Attention("self", 2, 3, 5, 7, 11).ops == (MatmulOp(6, 5, 11, 7), ElementwiseOp(6 * 5 * 7),
                                                     MatmulOp(6, 5, 7, 11))


def test_the_other_blocks_touch_their_elements_and_hold_no_product():
    assert LayerNorm("norm", 5, 3, "x").ops == RMSNorm("norm", 5, 3, "x").ops == (ElementwiseOp(15),)
    assert GroupNorm("norm", 4, 8, 3, 10, "x").ops == (ElementwiseOp(3 * 8 * 10),)
    assert Activation("x", 9).ops == Keeps("mask", 9, BOOL).ops == (ElementwiseOp(9),)
    assert CrossEntropy("loss", 3, 7).ops == (ElementwiseOp(21),)
    assert Embedding("words", 11, 5, "ids", 6).ops == (ElementwiseOp(6 * 5),)
    assert Embedding("positions", 11, 5).ops == Parameter("bias", (7,)).ops == ()
    assert Unused(Linear("cross", 5, 5, 3, "x")).ops == ()


def test_a_product_s_backward_is_the_gradients_of_its_two_operands():
    """dX = A^T dY: A^T [k x m] by dY [m x n], n rows; dA = dY X^T: dY [m x n] by X^T [n x k], k rows (A's)."""
    op = MatmulOp(2, 3, 5, 7)
    assert forward_operations(op) == Operations(1, matmul_cycles(2, 3, 5, 7), 0)
    assert backward_operations(op) == Operations(2, matmul_cycles(2, 5, 3, 7) + matmul_cycles(2, 3, 7, 5), 0)
    # each of the two does the forward's arithmetic: the backward has twice its FLOPs
    gradients = (MatmulOp(2, 5, 3, 7), MatmulOp(2, 3, 7, 5))
    assert sum(2 * g.batch * g.m * g.k * g.n for g in gradients) == 2 * (2 * 2 * 3 * 5 * 7)


def test_an_elementwise_operation_s_backward_reads_the_gradient_beside_its_input():
    assert forward_operations(ElementwiseOp(9)) == Operations(1, 0.0, 9)
    assert backward_operations(ElementwiseOp(9)) == Operations(1, 0.0, 18)


def test_a_frozen_block_runs_forward_only_and_a_trained_one_both_ways():
    linear = Linear("dense", 5, 7, 3, "x")
    frozen = Frozen(linear, LayerNorm("norm", 7, 3, "y"))
    assert frozen.trains is False and linear.trains is True
    assert frozen.ops == (MatmulOp(1, 7, 5, 3), ElementwiseOp(21))
    trained, still = Sequential(linear).cost(False), Sequential(frozen).cost(False)
    assert still.forward == Operations(2, matmul_cycles(1, 7, 5, 3), 21)
    assert (still.backward, trained.backward) == (NO_OPERATIONS, backward_operations(MatmulOp(1, 7, 5, 3)))
