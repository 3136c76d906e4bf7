"""The parameters of each family's body (the model without the heads a row lists apart), as formulas of
`config.json`, named as transformers 4.29.2's `named_parameters()` names them (a tied weight once, by its first
name), and the defaults of each config class in 4.29.2 for the fields they read.

A body is `body(config) -> {parameter: shape}` (a row binds the path its family's template takes, with
`functools.partial`); a layer is a function of its path and the config. Read off transformers 4.29.2's
`modeling_*.py` (and optimum-graphcore 0.7.1's GroupBERT); the tests compare every architecture with the
`named_parameters()` of the model transformers builds, on both stacks.

Nothing here imports torch or transformers.
"""

from typing import Any, Callable, Dict, Sequence, Tuple

from .models.rules import ModelConfig

Shapes = Dict[str, Tuple[int, ...]]
Body = Callable[[ModelConfig], Shapes]  # a row's body: a template with its path bound

# --- the parameters of torch modules ---------------------------------------------------------------------------------


def linear(name: str, outputs: int, inputs: int, bias: bool = True) -> Shapes:
    """`nn.Linear(inputs, outputs)` named `name`."""
    return {f"{name}.weight": (outputs, inputs), **({f"{name}.bias": (outputs,)} if bias else {})}


def weight(name: str, outputs: int, inputs: int) -> Shapes:
    """`nn.Linear(inputs, outputs, bias=False)` named `name`."""
    return {f"{name}.weight": (outputs, inputs)}


def norm(name: str, size: int) -> Shapes:
    """A norm over `size` features (`nn.LayerNorm`, `nn.GroupNorm` of `size` groups, ...)."""
    return {f"{name}.weight": (size,), f"{name}.bias": (size,)}


def embedding(name: str, rows: int, width: int) -> Shapes:
    return {f"{name}.weight": (rows, width)}


def convolution(name: str, outputs: int, inputs: int, kernel: Sequence[int], groups: int = 1,
                bias: bool = True) -> Shapes:
    """`nn.Conv1d` / `nn.Conv2d(inputs, outputs, kernel, groups=groups)`."""
    return {f"{name}.weight": (outputs, inputs // groups, *kernel), **({f"{name}.bias": (outputs,)} if bias else {})}


def conv1d_transposed(name: str, outputs: int, inputs: int) -> Shapes:
    """transformers' `Conv1D(outputs, inputs)` (GPT-2): a linear layer whose weight is stored transposed."""
    return {f"{name}.weight": (inputs, outputs), f"{name}.bias": (outputs,)}


def _layers(path: str, count: int, layer: Callable[[str, ModelConfig], Shapes], config: ModelConfig) -> Shapes:
    shapes: Shapes = {}
    for index in range(count):
        shapes.update(layer(path.format(i=index), config))
    return shapes


# --- GPT-2 ---------------------------------------------------------------------------------------------------------

GPT2_DEFAULTS = {"vocab_size": 50257, "n_positions": 1024, "n_embd": 768, "n_layer": 12,
                 "n_inner": lambda c: 4 * c.n_embd, "add_cross_attention": False, "tie_word_embeddings": True}


def _gpt2_layer(path: str, config: ModelConfig) -> Shapes:
    width, inner = config.n_embd, config.n_inner
    shapes = {**norm(f"{path}.ln_1", width), **conv1d_transposed(f"{path}.attn.c_attn", 3 * width, width),
              **conv1d_transposed(f"{path}.attn.c_proj", width, width), **norm(f"{path}.ln_2", width)}
    if config.add_cross_attention:
        shapes.update({**conv1d_transposed(f"{path}.crossattention.c_attn", 2 * width, width),
                       **conv1d_transposed(f"{path}.crossattention.q_attn", width, width),
                       **conv1d_transposed(f"{path}.crossattention.c_proj", width, width),
                       **norm(f"{path}.ln_cross_attn", width)})
    return {**shapes, **conv1d_transposed(f"{path}.mlp.c_fc", inner, width),
            **conv1d_transposed(f"{path}.mlp.c_proj", width, inner)}


def gpt2_body(config: ModelConfig) -> Shapes:
    return {**embedding("transformer.wte", config.vocab_size, config.n_embd),
            **embedding("transformer.wpe", config.n_positions, config.n_embd),
            **_layers("transformer.h.{i}", config.n_layer, _gpt2_layer, config),
            **norm("transformer.ln_f", config.n_embd)}


# --- vision: ViT, ConvNeXt -------------------------------------------------------------------------------------------

VIT_DEFAULTS = {"hidden_size": 768, "num_hidden_layers": 12, "intermediate_size": 3072, "image_size": 224,
                "patch_size": 16, "num_channels": 3, "qkv_bias": True}
CONVNEXT_DEFAULTS = {"num_channels": 3, "patch_size": 4, "num_stages": 4, "hidden_sizes": [96, 192, 384, 768],
                     "depths": [3, 3, 9, 3], "layer_scale_init_value": 1e-6}


def _pair(value: Any) -> Tuple[int, int]:
    return (value[0], value[1]) if isinstance(value, (list, tuple)) else (value, value)


def _vit_layer(path: str, config: ModelConfig) -> Shapes:
    hidden = config.hidden_size
    attention = f"{path}.attention.attention"
    return {**linear(f"{attention}.query", hidden, hidden, config.qkv_bias),
            **linear(f"{attention}.key", hidden, hidden, config.qkv_bias),
            **linear(f"{attention}.value", hidden, hidden, config.qkv_bias),
            **linear(f"{path}.attention.output.dense", hidden, hidden),
            **linear(f"{path}.intermediate.dense", config.intermediate_size, hidden),
            **linear(f"{path}.output.dense", hidden, config.intermediate_size),
            **norm(f"{path}.layernorm_before", hidden), **norm(f"{path}.layernorm_after", hidden)}


def vit_body(config: ModelConfig) -> Shapes:
    """ViT without its pooler (`ViTForImageClassification` has none): a class token, a position for it and each
    patch, the patches' projection, the layers, the final norm."""
    hidden = config.hidden_size
    (height, width), (patch_height, patch_width) = _pair(config.image_size), _pair(config.patch_size)
    patches = (height // patch_height) * (width // patch_width)
    return {"vit.embeddings.cls_token": (1, 1, hidden), "vit.embeddings.position_embeddings": (1, patches + 1, hidden),
            **convolution("vit.embeddings.patch_embeddings.projection", hidden, config.num_channels,
                          (patch_height, patch_width)),
            **_layers("vit.encoder.layer.{i}", config.num_hidden_layers, _vit_layer, config),
            **norm("vit.layernorm", hidden)}


def convnext_body(config: ModelConfig) -> Shapes:
    """The patch embedding, then each stage: a downsampling (a norm and a 2x2 convolution) but in the first, and its
    layers (a depthwise 7x7 convolution, a norm, two linear layers, a scale where `layer_scale_init_value` > 0)."""
    sizes = config.hidden_sizes
    shapes = {**convolution("convnext.embeddings.patch_embeddings", sizes[0], config.num_channels,
                            _pair(config.patch_size)),
              **norm("convnext.embeddings.layernorm", sizes[0])}
    for stage in range(config.num_stages):
        path, width = f"convnext.encoder.stages.{stage}", sizes[stage]
        if stage > 0:
            shapes.update({**norm(f"{path}.downsampling_layer.0", sizes[stage - 1]),
                           **convolution(f"{path}.downsampling_layer.1", width, sizes[stage - 1], (2, 2))})
        for index in range(config.depths[stage]):
            layer = f"{path}.layers.{index}"
            if config.layer_scale_init_value > 0:
                shapes[f"{layer}.layer_scale_parameter"] = (width,)
            shapes.update({**convolution(f"{layer}.dwconv", width, width, (7, 7), groups=width),
                           **norm(f"{layer}.layernorm", width), **linear(f"{layer}.pwconv1", 4 * width, width),
                           **linear(f"{layer}.pwconv2", width, 4 * width)})
    return {**shapes, **norm("convnext.layernorm", sizes[-1])}
