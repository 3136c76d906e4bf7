"""ConvNeXt: its image classifier.

`parallelize()` puts the embeddings on IPU 0, the layers of every stage as `get_layer_ipu` places them (numbered in
their stage), and the final norm and the classifier on the last IPU; each stage but the first begins by downsampling
(outside every block: it runs on the IPU of the layer before). The image, `image_size` pixels on a side (or a pair:
height and width), is cut into patches of `patch_size` (or a pair); each downsampling halves the sides of the feature
maps. Read off transformers 4.29.2's `modeling_convnext.py` and optimum-graphcore 0.7.1's `models/convnext`, whose
`OptimizedConvNextLayer` the layers run.
"""

from dataclasses import dataclass
from typing import List, Tuple

from .blocks import (
    Activation,
    Convolution,
    CrossEntropy,
    Keeps,
    LayerNorm,
    Linear,
    Parameter,
    Saved,
    Sequential,
)
from .rules import IMAGE, LAST, Architecture, Block, InputShape, Layers, ModelConfig, Position
from .transformer import head, pair

DEFAULTS = {"num_channels": 3, "patch_size": 4, "num_stages": 4, "hidden_sizes": [96, 192, 384, 768],
            "depths": [3, 3, 9, 3], "layer_scale_init_value": 1e-6, "image_size": 224}


@dataclass(frozen=True)
class ConvNextSizes:
    """b images of the micro-batch, each of `channels` x `pixels`, cut into patches of `patch` (height, width); each
    stage's `widths` (its channels) and `areas` (the pixels of its feature maps); n labels; `layer_scale`: each
    layer scales its output by a learned vector."""

    b: int
    channels: int
    pixels: int
    patch: Tuple[int, int]
    widths: Tuple[int, ...]
    areas: Tuple[int, ...]
    n: int
    layer_scale: bool


def convnext_sizes(config: ModelConfig, shape: InputShape) -> ConvNextSizes:
    """The image is `shape.sequence_length`: the config's `image_size`."""
    height, width = pair(shape.sequence_length)
    patch = pair(config.patch_size)
    rows, columns = height // patch[0], width // patch[1]
    widths = tuple(config.hidden_sizes)
    areas = tuple((rows >> stage) * (columns >> stage) for stage in range(len(widths)))
    return ConvNextSizes(b=shape.micro_batch_size, channels=config.num_channels, pixels=height * width, patch=patch,
                         widths=widths, areas=areas, n=config.num_labels,
                         layer_scale=config.layer_scale_init_value > 0)


def stage_depths(config: ModelConfig) -> List[int]:
    """The layers of each stage: transformers builds `num_stages` stages, of `depths` layers each."""
    return list(config.depths[:config.num_stages])


def _maps(sizes: ConvNextSizes, stage: int) -> Tuple[Saved, ...]:
    """The feature maps a stage's layer hands on, or takes from the one before."""
    return (Saved("hidden", sizes.b * sizes.widths[stage] * sizes.areas[stage]),)


def _pooled(sizes: ConvNextSizes) -> Tuple[Saved, ...]:
    return (Saved("pooled", sizes.b * sizes.widths[-1]),)


# --- the modules ----------------------------------------------------------------------------------------------------


def _channels_first_norm(name: str, width: int, sizes: ConvNextSizes, area: int, x: str) -> Tuple:
    """`ConvNextLayerNorm` over the `width` channels of maps of `area` pixels, written out in operations: keeps the
    centred `x`, its normalised and scaled copies, and the deviation of each pixel."""
    maps = sizes.b * width * area
    return (Parameter(f"{name}.weight", (width,)), Parameter(f"{name}.bias", (width,)),
            Keeps(f"{x}: centred", maps), Keeps(f"{x}: normalised", maps), Keeps(f"{x}: scaled", maps),
            Keeps(f"{x}: deviation", sizes.b * area))


def convnext_embeddings(sizes: ConvNextSizes) -> Sequential:
    """The patches' projection (a convolution whose stride is its kernel), normed over the channels."""
    images = sizes.b * sizes.channels * sizes.pixels
    return Sequential(
        Convolution("patch_embeddings", sizes.channels, sizes.widths[0], sizes.patch, sizes.b, sizes.areas[0],
                    "pixels", images),
        _channels_first_norm("layernorm", sizes.widths[0], sizes, sizes.areas[0], "patches"),
        enters=(Saved("pixels", images),), leaves=_maps(sizes, 0))


def downsampling(sizes: ConvNextSizes, at: Position) -> Sequential:
    """A norm, then a convolution of kernel 2 and stride 2; the first stage's is `nn.Identity`."""
    if at.stage == 0:
        return Sequential()
    before, stage = at.stage - 1, at.stage
    width = sizes.widths[before]
    return Sequential(
        _channels_first_norm("0", width, sizes, sizes.areas[before], "hidden"),
        Convolution("1", width, sizes.widths[stage], (2, 2), sizes.b, sizes.areas[stage], "normalised",
                    sizes.b * width * sizes.areas[before]))


def convnext_layer(sizes: ConvNextSizes, at: Position) -> Sequential:
    """A depthwise 7 x 7 convolution, a norm, two linear layers around gelu, and a learned scale where the config
    has one."""
    width, stage = sizes.widths[at.stage], at.stage
    rows = sizes.b * sizes.areas[stage]
    return Sequential(
        Convolution("dwconv", width, width, (7, 7), sizes.b, sizes.areas[stage], "hidden", rows * width, groups=width),
        LayerNorm("layernorm", width, rows, "convolved"),
        Linear("pwconv1", width, 4 * width, rows, "normalised"),
        Activation("expanded", rows * 4 * width),
        Linear("pwconv2", 4 * width, width, rows, "activated"),
        ((Parameter("layer_scale_parameter", (width,)), Keeps("projected", rows * width)) if sizes.layer_scale
         else None),
        enters=_maps(sizes, stage), leaves=_maps(sizes, stage))


def pooled_norm(sizes: ConvNextSizes) -> Sequential:
    """The last stage's maps averaged over their pixels, and normed."""
    return Sequential(LayerNorm("", sizes.widths[-1], sizes.b, "pooled"), enters=_maps(sizes, -1),
                      leaves=_pooled(sizes))


def classifier(sizes: ConvNextSizes) -> Sequential:
    """A linear layer on the pooled features, and the loss over the labels. A config of no labels has `nn.Identity`
    instead, with no parameters."""
    pooled = sizes.b * sizes.widths[-1]
    return Sequential(Linear("", sizes.widths[-1], sizes.n, sizes.b, "pooled") if sizes.n else Keeps("pooled", pooled),
                      CrossEntropy("loss", sizes.b, sizes.n), enters=_pooled(sizes))


# --- the row --------------------------------------------------------------------------------------------------------

CONVNEXT = {
    "ConvNextForImageClassification": Architecture(
        "ConvNextForImageClassification", ("convnext",), "convnext",
        (Block("Embedding", "convnext.embeddings", module=convnext_embeddings),
         Layers("encoder", "Encoder_stage_{stage}_layer_{i}", "convnext.encoder.stages.{stage}.layers.{i}",
                stage_depths, stage_prelude="convnext.encoder.stages.{stage}.downsampling_layer",
                module=convnext_layer, prelude_module=downsampling),
         Block("LayerNorm", "convnext.layernorm", LAST, module=pooled_norm),
         head("Classifier", "classifier", classifier)),
        DEFAULTS, inputs=IMAGE, sizes=convnext_sizes),
}
