"""ViT: its image classifier.

`parallelize()` puts the embeddings on IPU 0, the encoder's layers as `get_layer_ipu` places them, and the final
norm and the classifier on the last IPU. The image, `image_size` pixels on a side (or a pair: height and width), is
cut into patches of `patch_size` (or a pair); the sequence is a class token and the patches. A layer is pre-norm.
Read off transformers 4.29.2's `modeling_vit.py` and optimum-graphcore 0.7.1's `models/vit`.
"""

from dataclasses import dataclass
from typing import Tuple

from .blocks import Convolution, CrossEntropy, Keeps, Linear, Parameter, Saved, Sequential
from .rules import IMAGE, LAST, Architecture, Block, InputShape, ModelConfig, Position
from .transformer import LayerNames, Sizes, encoder_steps, final_norm, head, hidden, pair, pre_norm_layer, sizes_of

DEFAULTS = {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072,
            "image_size": 224, "patch_size": 16, "num_channels": 3, "qkv_bias": True}

LAYER = LayerNames(("attention.attention.query", "attention.attention.key", "attention.attention.value"),
                   "attention.output.dense", "layernorm_after", "intermediate.dense", "output.dense", "")

# transformers 5 renamed ViT's layers; a checkpoint it saves is read with the names of 4.29.2
RENAMES = (
    (r"^vit\.layers\.(\d+)\.attention\.([qkv])_proj\.",
     lambda match: "vit.encoder.layer.{}.attention.attention.{}.".format(
         match.group(1), {"q": "query", "k": "key", "v": "value"}[match.group(2)])),
    (r"^vit\.layers\.(\d+)\.attention\.o_proj\.", r"vit.encoder.layer.\1.attention.output.dense."),
    (r"^vit\.layers\.(\d+)\.mlp\.fc1\.", r"vit.encoder.layer.\1.intermediate.dense."),
    (r"^vit\.layers\.(\d+)\.mlp\.fc2\.", r"vit.encoder.layer.\1.output.dense."),
    (r"^vit\.layers\.(\d+)\.", r"vit.encoder.layer.\1."),
)


@dataclass(frozen=True)
class ViTSizes(Sizes):
    """A transformer's sizes (s: the class token and the patches), and the images': `channels` and `pixels` of
    each, cut into `patches` of `patch` (height, width); `qkv_bias`: the query, key and value projections have a
    bias."""

    channels: int
    pixels: int
    patch: Tuple[int, int]
    patches: int
    qkv_bias: bool


def vit_sizes(config: ModelConfig, shape: InputShape) -> ViTSizes:
    """The image is `shape.sequence_length`: the config's `image_size`."""
    height, width = pair(shape.sequence_length)
    patch = pair(config.patch_size)
    patches = (height // patch[0]) * (width // patch[1])
    base = sizes_of(shape._replace(sequence_length=patches + 1), config.hidden_size, config.num_attention_heads,
                 config.intermediate_size, 0, config.num_labels)
    return ViTSizes(**vars(base), channels=config.num_channels, pixels=height * width, patch=patch, patches=patches,
                    qkv_bias=config.qkv_bias)


# --- the modules ----------------------------------------------------------------------------------------------------


def vit_embeddings(sizes: ViTSizes) -> Sequential:
    """The patches' projection (a convolution whose stride is its kernel), the class token before them, and a learned
    position for each."""
    images = sizes.b * sizes.channels * sizes.pixels
    return Sequential(
        Convolution("patch_embeddings.projection", sizes.channels, sizes.h, sizes.patch, sizes.b, sizes.patches,
                    "pixels", images),
        Parameter("cls_token", (1, 1, sizes.h)),
        Parameter("position_embeddings", (1, sizes.patches + 1, sizes.h)),
        enters=(Saved("pixels", images),), leaves=hidden(sizes))


def vit_layer(sizes: ViTSizes, at: Position) -> Sequential:
    return pre_norm_layer(LAYER, "layernorm_before", sizes, projection_bias=sizes.qkv_bias)


def classifier(sizes: ViTSizes) -> Sequential:
    """A linear layer on the class token (a view of the hidden state, kept whole), and the loss over the labels. A
    config of no labels has `nn.Identity` instead, with no parameters."""
    tokens = sizes.b * sizes.s * sizes.h
    return Sequential(Linear("", sizes.h, sizes.n, sizes.b, "hidden", storage=tokens) if sizes.n
                      else Keeps("hidden", tokens),
                      CrossEntropy("loss", sizes.b, sizes.n), enters=hidden(sizes))


# --- the row --------------------------------------------------------------------------------------------------------

VIT = {
    "ViTForImageClassification": Architecture(
        "ViTForImageClassification", ("vit",), "vit",
        encoder_steps("vit", vit_embeddings, vit_layer, (Block("LayerNorm", "vit.layernorm", LAST, module=final_norm),
                                                         head("Classifier", "classifier", classifier))),
        DEFAULTS, renames=RENAMES, inputs=IMAGE, sizes=vit_sizes),
}
