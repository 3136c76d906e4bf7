"""The building blocks the speech encoders added (placement/models/blocks.py): a group norm, a weight-normed
convolution, frozen modules, a parameter read directly: their parameters as torch names them, what they keep and
compute (tests/placement/test_upstream_costs.py checks them within the speech encoders, against upstream's models)."""

from optimum_ipu_ext.placement.models.blocks import (
    Convolution,
    Frozen,
    GroupNorm,
    LayerNorm,
    Parameter,
    Saved,
    Sequential,
    StepCost,
)


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
    assert step.cost(False) == StepCost(0, 0, 0, convolution.flops)


def test_a_parameter_named_nothing_is_the_one_the_step_s_path_names():
    assert Sequential(Parameter("", (6,))).parameters("model.masked_embedding") == {"model.masked_embedding": (6,)}
    assert Sequential(LayerNorm("", 6, 1, "x")).parameters("model.norm") == {"model.norm.weight": (6,),
                                                                            "model.norm.bias": (6,)}
