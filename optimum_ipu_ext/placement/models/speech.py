"""The speech encoders: HuBERT and Wav2Vec2, with their CTC heads, HuBERT's sequence classifier and Wav2Vec2's
pre-training.

Convolutions over the waveform (the feature extractor), a projection of their features to the hidden size, a
weight-normed grouped convolution adding positions, and transformer layers: post-norm, or pre-norm where
`do_stable_layer_norm` (the encoder's norm then comes after the layers, not before). `parallelize()` lists the
convolutions, the positional convolution, the layers and the heads of the CTC and pre-training models in one layer
list for `get_layer_ipu` (with one IPU the CTC models place no block at all), and freezes the CTC models' feature
extractor; the sequence classifier puts the extractor, the projection and the encoder in unnamed blocks on IPU 0 and
its heads on the last IPU. Read off transformers 4.29.2's `modeling_hubert.py` / `modeling_wav2vec2.py` and
optimum-graphcore 0.7.1's `models/hubert` and `models/wav2vec2`.
"""

from dataclasses import dataclass, replace
from typing import Any, Callable, Dict, Tuple

from .blocks import (
    BOOL,
    INTEGER,
    Activation,
    Convolution,
    CrossEntropy,
    Frozen,
    GroupNorm,
    Keeps,
    LayerNorm,
    Linear,
    Matmul,
    Parameter,
    Saved,
    Sequential,
    Unused,
)
from .rules import AUDIO, LAST, Architecture, Block, InputShape, Layers, ModelConfig, Position, Run, Step
from .transformer import (
    LayerNames,
    Sizes,
    config_sizes,
    final_norm,
    hidden,
    post_norm_layer,
    pre_norm_layer,
    under,
)

_DEFAULTS = {"vocab_size": 32, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
             "intermediate_size": 3072, "feat_extract_norm": "group", "conv_dim": [512] * 7,
             "conv_kernel": [10, 3, 3, 3, 3, 2, 2], "conv_stride": [5, 2, 2, 2, 2, 2, 2], "conv_bias": False,
             "num_conv_pos_embeddings": 128, "num_conv_pos_embedding_groups": 16, "do_stable_layer_norm": False,
             "apply_spec_augment": True, "mask_time_prob": 0.05, "mask_feature_prob": 0.0,
             "use_weighted_layer_sum": False, "classifier_proj_size": 256, "add_adapter": False,
             "output_hidden_size": lambda c: c.hidden_size}
# HubertConfig has no adapter: its CTC head reads `add_adapter` where a config.json has it
HUBERT_DEFAULTS = {**_DEFAULTS, "feat_proj_layer_norm": True}
WAV2VEC2_DEFAULTS = {**_DEFAULTS, "adapter_kernel_size": 3, "num_adapter_layers": 3, "num_codevectors_per_group": 320,
                     "num_codevector_groups": 2, "codevector_dim": 256, "proj_codevector_dim": 256,
                     "num_negatives": 100}

CTC_FRAMES_PER_LABEL = 4  # a transcript of one label (character) every 4 frames, 80 ms, for the CTC loss's sizes


@dataclass(frozen=True)
class SpeechSizes(Sizes):
    """A transformer's sizes (`s`: the frames the feature extractor gives), and the config's:

    - the feature extractor: each convolution's output `channels` and `kernels`, the `lengths` it works on (the
      samples, then each convolution's output positions), its `conv_bias` and `feature_norm` ("group": the first
      convolution's, "layer": each one's); `projection_norm`: the projection's norm (HuBERT's
      `feat_proj_layer_norm`);
    - SpecAugment: the `masked_embedding` held where masking is on, and which masks a training pass draws and keeps
      (`time_masks`, `feature_masks`);
    - `stable`: pre-norm layers; the positional convolution's `positions_kernel` and `position_groups`;
    - the heads: the `layers` (whose hidden states the classifier may weigh), its projection `p`; the CTC head's
      input width `head_width` and the `labels` of each transcript;
    - Wav2Vec2's `adapter` (`adapter_layers` convolutions of `adapter_kernel` on `output_width`) and its
      pre-training's quantizer: `groups` of `codevectors`, `codevector_width` and the `projected` width the
      contrastive loss compares `negatives` + 1 candidates in.
    """

    channels: Tuple[int, ...]
    kernels: Tuple[int, ...]
    lengths: Tuple[int, ...]
    conv_bias: bool
    feature_norm: str
    projection_norm: bool
    masked_embedding: bool
    time_masks: bool
    feature_masks: bool
    stable: bool
    positions_kernel: int
    position_groups: int
    layers: int
    p: int
    head_width: int
    labels: int
    adapter: bool = False
    adapter_layers: int = 0
    adapter_kernel: int = 0
    output_width: int = 0
    groups: int = 0
    codevectors: int = 0
    codevector_width: int = 0
    projected: int = 0
    negatives: int = 0


def _lengths(samples: int, kernels: Tuple[int, ...], strides: Tuple[int, ...]) -> Tuple[int, ...]:
    lengths = [samples]
    for kernel, stride in zip(kernels, strides):
        lengths.append((lengths[-1] - kernel) // stride + 1)
    return tuple(lengths)


def speech_sizes(config: ModelConfig, shape: InputShape, projection_norm: bool, adapter: bool) -> SpeechSizes:
    """The sizes both families share: a training pass draws a mask of frames where `mask_time_prob` and SpecAugment
    are on."""
    lengths = _lengths(shape.sequence_length, tuple(config.conv_kernel), tuple(config.conv_stride))
    frames = lengths[-1]
    base = config_sizes(config, shape._replace(sequence_length=frames))
    augments = config.apply_spec_augment
    return SpeechSizes(
        **vars(base), channels=tuple(config.conv_dim), kernels=tuple(config.conv_kernel), lengths=lengths,
        conv_bias=config.conv_bias, feature_norm=config.feat_extract_norm, projection_norm=projection_norm,
        masked_embedding=config.mask_time_prob > 0 or config.mask_feature_prob > 0,
        time_masks=augments and config.mask_time_prob > 0, feature_masks=augments and config.mask_feature_prob > 0,
        stable=config.do_stable_layer_norm, positions_kernel=config.num_conv_pos_embeddings,
        position_groups=config.num_conv_pos_embedding_groups, layers=config.num_hidden_layers,
        p=config.classifier_proj_size,
        head_width=config.output_hidden_size if config.add_adapter else config.hidden_size,
        labels=max(1, frames // CTC_FRAMES_PER_LABEL), adapter=adapter)


def hubert_sizes(config: ModelConfig, shape: InputShape) -> SpeechSizes:
    return speech_sizes(config, shape, config.feat_proj_layer_norm, False)


def wav2vec2_sizes(config: ModelConfig, shape: InputShape) -> SpeechSizes:
    found = speech_sizes(config, shape, True, config.add_adapter)
    return replace(found, adapter_layers=config.num_adapter_layers, adapter_kernel=config.adapter_kernel_size,
                   output_width=config.output_hidden_size)


def pretraining_sizes(config: ModelConfig, shape: InputShape) -> SpeechSizes:
    """Pre-training masks frames where SpecAugment is on, whatever `mask_time_prob` (the data collator gives the
    mask)."""
    found = wav2vec2_sizes(config, shape)
    return replace(found, time_masks=config.apply_spec_augment, groups=config.num_codevector_groups,
                   codevectors=config.num_codevectors_per_group, codevector_width=config.codevector_dim,
                   projected=config.proj_codevector_dim, negatives=config.num_negatives)


# --- the modules ----------------------------------------------------------------------------------------------------

def _convolution_layer(sizes: SpeechSizes, index: int, path: str = "") -> Tuple:
    """`conv_layers.{index}` (at `path` within the step): a convolution, its norm where the config gives it one, gelu.
    A layer norm works on a transposed copy of the convolution's output."""
    def tensor(label: str) -> str:
        return f"{path}: {label}" if path else label

    inputs = sizes.channels[index - 1] if index else 1
    outputs, positions = sizes.channels[index], sizes.lengths[index + 1]
    convolution = Convolution(under(path, "conv"), inputs, outputs, (sizes.kernels[index],), sizes.b, positions,
                              tensor("input"), sizes.b * inputs * sizes.lengths[index], bias=sizes.conv_bias)
    elements = sizes.b * outputs * positions
    if sizes.feature_norm == "layer":
        norm = LayerNorm(under(path, "layer_norm"), outputs, sizes.b * positions, tensor("convolved"))
    elif sizes.feature_norm == "group" and index == 0:
        norm = GroupNorm(under(path, "layer_norm"), outputs, outputs, sizes.b, positions, tensor("convolved"))
    else:
        return convolution, Activation(tensor("convolved"), elements)
    return convolution, norm, Activation(tensor("normalised"), elements)


def convolution_layer(frozen: bool) -> Callable[[SpeechSizes, Position], Sequential]:
    """One convolution of the extractor, a layer of the CTC and pre-training models; `frozen`: the CTC models'."""
    def layer(sizes: SpeechSizes, at: Position) -> Sequential:
        blocks = _convolution_layer(sizes, at.layer)
        return Sequential(Frozen(blocks) if frozen else blocks)

    return layer


def feature_extractor(sizes: SpeechSizes) -> Sequential:
    """The whole extractor, one block of the sequence classifier."""
    return Sequential(_convolution_layer(sizes, index, f"conv_layers.{index}") for index in range(len(sizes.channels)))


def feature_projection(sizes: SpeechSizes) -> Sequential:
    """A norm where the model has one, the projection to the hidden size; then the masks SpecAugment draws (applied
    by the model after this module): a bool a frame, a bool a feature of each example."""
    rows, width = sizes.b * sizes.s, sizes.channels[-1]
    return Sequential(
        LayerNorm("layer_norm", width, rows, "features") if sizes.projection_norm else None,
        Linear("projection", width, sizes.h, rows, "normalised" if sizes.projection_norm else "features"),
        Keeps("time mask", rows, BOOL) if sizes.time_masks else None,
        Keeps("feature mask", sizes.b * sizes.h, BOOL) if sizes.feature_masks else None,
        enters=(Saved("features", rows * width),), leaves=hidden(sizes))


def masked_embedding(sizes: SpeechSizes) -> Sequential:
    """`masked_spec_embed`, the vector masked frames take, held where masking is on; read directly."""
    return Sequential(Parameter("", (sizes.h,)) if sizes.masked_embedding else None)


def encoder(sizes: SpeechSizes) -> Sequential:
    """The encoder's own block: its modules are steps of their own."""
    return Sequential(enters=hidden(sizes), leaves=hidden(sizes))


def positional_convolution(sizes: SpeechSizes) -> Sequential:
    """A grouped convolution over the frames (padded on both sides; with an even kernel, its last output is
    dropped), weight-normed along the kernel, then gelu."""
    positions = sizes.s + 1 - sizes.positions_kernel % 2
    return Sequential(
        Convolution("conv", sizes.h, sizes.h, (sizes.positions_kernel,), sizes.b, positions, "transposed",
                    sizes.b * sizes.h * sizes.s, groups=sizes.position_groups, weight_norm=2),
        Activation("convolved", sizes.b * sizes.h * positions),
        enters=hidden(sizes), leaves=hidden(sizes))


POST_NORM = LayerNames(("attention.k_proj", "attention.v_proj", "attention.q_proj"), "attention.out_proj",
                       "layer_norm", "feed_forward.intermediate_dense", "feed_forward.output_dense",
                       "final_layer_norm")
# the stable layer: `layer_norm` before the attention, `final_layer_norm` before the feed-forward
PRE_NORM = POST_NORM._replace(attention_norm="final_layer_norm", output_norm="")


def encoder_layer(sizes: SpeechSizes, at: Position) -> Sequential:
    return pre_norm_layer(PRE_NORM, "layer_norm", sizes) if sizes.stable else post_norm_layer(POST_NORM, sizes)


def adapter(sizes: SpeechSizes) -> Sequential:
    """Wav2Vec2's adapter where `add_adapter`: a projection to `output_hidden_size` where it differs, then strided
    convolutions. Held, not run: upstream's `IPUWav2Vec2Adapter.forward` fails in every pass (it subtracts a bool
    tensor), so nothing measures what it would keep; its blocks are sized by their parameters alone."""
    if not sizes.adapter:
        return Sequential()
    width = sizes.output_width
    projection = (Linear("proj", sizes.h, width, 0, ""), LayerNorm("proj_layer_norm", width, 0, "")) \
        if width != sizes.h else None
    convolutions = tuple(Convolution(f"layers.{index}.conv", width, 2 * width, (sizes.adapter_kernel,), 0, 0, "", 0)
                         for index in range(sizes.adapter_layers))
    return Sequential(Unused(projection, convolutions))


def ctc_head(sizes: SpeechSizes, at: Position) -> Sequential:
    """The projection to the vocabulary, and the CTC loss: the log-probabilities, the input and target
    lengths and the targets, and the forward variables of each frame and extended label (the labels with blanks
    between) of each example."""
    rows = sizes.b * sizes.s
    return Sequential(
        Linear("", sizes.head_width, sizes.v, rows, "hidden"),
        Keeps("log-probabilities", rows * sizes.v),
        Keeps("lengths and targets", 2 * sizes.b + sizes.b * sizes.labels, INTEGER),
        Keeps("alignments", rows * (2 * sizes.labels + 1) + sizes.b),
        enters=hidden(sizes))


def layer_weights(sizes: SpeechSizes) -> Sequential:
    """`layer_weights`, read directly: the softmax of the weights (its output kept) weighs the stacked hidden states
    of the layers' inputs and the last output, which the product keeps."""
    stacked = sizes.layers + 1
    return Sequential(Parameter("", (stacked,)), Activation("weights", stacked),
                      Keeps("hidden states", stacked * sizes.b * sizes.s * sizes.h), enters=hidden(sizes),
                      leaves=hidden(sizes))


def projector(sizes: SpeechSizes) -> Sequential:
    """The projection of each frame, averaged over the frames (which keeps nothing) by the classifier's step."""
    return Sequential(Linear("", sizes.h, sizes.p, sizes.b * sizes.s, "hidden"), enters=hidden(sizes))


def classifier(sizes: SpeechSizes) -> Sequential:
    return Sequential(Linear("", sizes.p, sizes.n, sizes.b, "pooled"), CrossEntropy("loss", sizes.b, sizes.n),
                      enters=(Saved("pooled", sizes.b * sizes.p),))


# Wav2Vec2's pre-training: the targets are the features quantised by G groups of V codevectors (Gumbel softmax,
# with the perplexity of the codevectors used over the masked frames), compared by cosine similarity with the
# projected hidden states, and with K negatives drawn from other frames (a contrastive loss over K + 1 candidates)

def project_hidden(sizes: SpeechSizes, at: Position) -> Sequential:
    return Sequential(Linear("", sizes.h, sizes.projected, sizes.b * sizes.s, "hidden"), enters=hidden(sizes))


def quantizer(sizes: SpeechSizes, at: Position) -> Sequential:
    """The logits of each group's codevectors, their Gumbel softmax (three tensors kept) and hard choice, the
    perplexity, and the chosen codevectors (a product of the one-hot choices by the codevectors)."""
    rows, choices = sizes.b * sizes.s, sizes.groups * sizes.codevectors
    width = sizes.channels[-1]
    return Sequential(
        Linear("weight_proj", width, choices, rows, "features"),
        Keeps("distributions", 3 * rows * choices), Keeps("masked frames", rows),
        Keeps("perplexity", 3 * choices + sizes.groups + 1), Keeps("picked", rows * sizes.groups + 1, INTEGER),
        Parameter("codevectors", (1, choices, sizes.codevector_width // sizes.groups)),
        Matmul(rows * sizes.groups, 1, sizes.codevectors, sizes.codevector_width // sizes.groups),
        enters=(Saved("features", rows * width),))


def project_quantized(sizes: SpeechSizes, at: Position) -> Sequential:
    """The projection of the quantised features, then the contrastive loss: the negatives' indices, the targets, the
    candidates' cosine similarities (worked out in float32) and which negatives equal their target."""
    rows, candidates = sizes.b * sizes.s, sizes.negatives + 1
    return Sequential(
        Linear("", sizes.codevector_width, sizes.projected, rows, "quantised"),
        Keeps("negatives' indices", rows * sizes.negatives + rows + 1, INTEGER),
        Keeps("targets", rows * sizes.projected),
        Keeps("candidates", 3 * candidates * rows * sizes.projected + 5 * candidates * rows + 1),
        Keeps("negatives equal to their target", candidates * rows, BOOL),
        enters=(Saved("quantised", rows * sizes.codevector_width), Saved("projected", rows * sizes.projected)))


# --- the rows -------------------------------------------------------------------------------------------------------

# transformers 5 keeps a weight-normed convolution's two parameters under `parametrizations`
WEIGHT_NORM_RENAMES = (
    (r"\.parametrizations\.weight\.original0$", ".weight_g"),
    (r"\.parametrizations\.weight\.original1$", ".weight_v"),
)


def _encoder_steps(prefix: str, pipelined: bool, frozen: bool = False) -> Tuple[Step, ...]:
    """The feature extractor's convolutions, the projection, the positional convolution and the layers. In CTC and
    pre-training models (`pipelined`) the convolutions (`frozen` in CTC models) and the positional convolution are
    layers of the list too."""
    encoder_path = f"{prefix}.encoder"
    if pipelined:
        convolutions = Layers("convolutions", "Conv {i:<2}", f"{prefix}.feature_extractor.conv_layers.{{i}}",
                              lambda c: len(c.conv_dim), module=convolution_layer(frozen))
        positions = Layers("positions", "Positional Embedding", f"{encoder_path}.pos_conv_embed", 1,
                           module=lambda sizes, at: positional_convolution(sizes))
        layers = Layers("encoder", "Encoder {i:<2}", f"{encoder_path}.layers.{{i}}", "num_hidden_layers",
                        module=encoder_layer)
        start: Tuple[Step, ...] = (convolutions, Run(f"{prefix}.feature_projection", module=feature_projection))
    else:
        positions = Run(f"{encoder_path}.pos_conv_embed", module=positional_convolution)
        layers = Layers("encoder", "Encoder{i}", f"{encoder_path}.layers.{{i}}", "num_hidden_layers",
                        module=encoder_layer)
        start = (Block(None, f"{prefix}.feature_extractor", module=feature_extractor),
                 Block(None, f"{prefix}.feature_projection", module=feature_projection))
    return (
        *start,
        Run(f"{prefix}.masked_spec_embed", module=masked_embedding),
        *(() if pipelined else (Block(None, encoder_path, module=encoder),)),
        positions,
        Run(f"{encoder_path}.layer_norm", when=("do_stable_layer_norm", False), module=final_norm),
        layers,
        Run(f"{encoder_path}.layer_norm", when=("do_stable_layer_norm", True), module=final_norm),
    )


def _row(name: str, model_type: str, steps: Tuple[Step, ...], defaults: Dict[str, Any], sizes_of,
         **fields: Any) -> Architecture:
    """A row of a model whose prefix is its model type."""
    return Architecture(name, (model_type,), model_type, steps, defaults, renames=WEIGHT_NORM_RENAMES, inputs=AUDIO,
                        sizes=sizes_of, **fields)


def _ctc(family: str, prefix: str, defaults: Dict[str, Any], sizes_of,
         extra: Tuple[Step, ...] = ()) -> Architecture:
    """CTC: `parallelize()` freezes the feature extractor; with one IPU it places no block."""
    head = Layers("head", "Project Hidden", "lm_head", 1, module=ctc_head, head=True)
    return _row(f"{family}ForCTC", prefix, (*_encoder_steps(prefix, True, frozen=True), *extra, head), defaults,
                sizes_of, frozen={f"{prefix}.feature_extractor": None}, blocks_on_one_ipu=False)


SPEECH = {
    "HubertForSequenceClassification": _row(
        "HubertForSequenceClassification", "hubert",
        (*_encoder_steps("hubert", False),
         Run("layer_weights", when=("use_weighted_layer_sum", True), module=layer_weights, head=True),
         Block(None, "projector", LAST, module=projector, head=True),
         Block(None, "classifier", LAST, module=classifier, head=True)),
        HUBERT_DEFAULTS, hubert_sizes),
    "HubertForCTC": _ctc("Hubert", "hubert", HUBERT_DEFAULTS, hubert_sizes),
    "Wav2Vec2ForCTC": _ctc("Wav2Vec2", "wav2vec2", WAV2VEC2_DEFAULTS, wav2vec2_sizes,
                           (Run("wav2vec2.adapter", module=adapter),)),
    "Wav2Vec2ForPreTraining": _row(
        "Wav2Vec2ForPreTraining", "wav2vec2",
        (*_encoder_steps("wav2vec2", True), Run("wav2vec2.adapter", module=adapter),
         Layers("project_hid", "Project Hidden", "project_hid", 1, module=project_hidden, head=True),
         Layers("quantizer", "Quantizer", "quantizer", 1, module=quantizer, head=True),
         Layers("project_q", "Project Quantizer", "project_q", 1, module=project_quantized, head=True)),
        WAV2VEC2_DEFAULTS, pretraining_sizes),
}
