"""What several families share, under the names each gives its modules: a transformer layer's sizes, its post-norm
and pre-norm layers, the pooler and the task heads of the encoders, in the building blocks of blocks.py.

Sizes, as the papers name them: b sequences of the micro-batch (e examples x c choices), s tokens (patches, frames),
h hidden size, a attention heads, d head size, i feed-forward size, v vocabulary, n labels.
"""

from dataclasses import dataclass
from typing import Callable, Dict, NamedTuple, Optional, Sequence, Tuple, Union

from .blocks import (
    INTEGER,
    Activation,
    Attention,
    CrossEntropy,
    Embedding,
    Keeps,
    LayerNorm,
    Linear,
    Parameter,
    Saved,
    Sequential,
)
from .rules import LAST, Block, InputShape, IPURule, Layers, ModelConfig, Module, Step


@dataclass(frozen=True)
class Sizes:
    """The sizes of a transformer's micro-batch and layers."""

    e: int
    c: int
    b: int
    s: int
    h: int
    a: int
    d: int
    i: int
    v: int
    n: int


def sizes_of(shape: InputShape, hidden: int, heads: int, inner: int, vocabulary: int, labels: int) -> Sizes:
    return Sizes(e=shape.micro_batch_size, c=shape.choices, b=shape.micro_batch_size * shape.choices,
                 s=shape.sequence_length, h=hidden, a=heads, d=hidden // heads, i=inner, v=vocabulary, n=labels)


def config_sizes(config: ModelConfig, shape: InputShape) -> Sizes:
    """The sizes of a config that names them as most of transformers' configs do (`hidden_size`,
    `num_attention_heads`, `intermediate_size`, `vocab_size`)."""
    return sizes_of(shape, config.hidden_size, config.num_attention_heads, config.intermediate_size, config.vocab_size,
                 config.num_labels)


def hidden(sizes: Sizes) -> Tuple[Saved, ...]:
    """The hidden state a step hands on, or takes from the one before."""
    return (Saved("hidden", sizes.b * sizes.s * sizes.h),)


def pooled(sizes: Sizes) -> Tuple[Saved, ...]:
    return (Saved("pooled", sizes.b * sizes.h),)


def ids(sizes: Sizes) -> Tuple[Saved, ...]:
    """The token ids that enter the embeddings."""
    return (Saved("ids", sizes.b * sizes.s, INTEGER),)


class LayerNames(NamedTuple):
    """The names a family gives the modules of a transformer layer, under the layer's path. `projections`: the
    query, key and value projections, or one projection to all three (a fused weight); `unbiased`: those of them
    without a bias."""

    projections: Tuple[str, ...]
    context: str
    attention_norm: str
    intermediate: str
    output: str
    output_norm: str
    unbiased: Tuple[str, ...] = ()


# the names most encoders of transformers give a layer's modules (copied from one model into the others)
LAYER_NAMES = LayerNames(("attention.self.query", "attention.self.key", "attention.self.value"),
                         "attention.output.dense", "attention.output.LayerNorm", "intermediate.dense", "output.dense",
                         "output.LayerNorm")


def self_attention(names: LayerNames, sizes: Sizes, x: str, keep_fused_weight: bool = False,
                   projection_bias: bool = True, transposed: bool = False) -> Tuple:
    """The projections of `x` (kept once), the attention and its output projection. `keep_fused_weight`: the
    pipelined model concatenates the three weights in each pass, and autograd keeps the concatenation.
    `projection_bias`: whether the query, key and value projections have a bias; `transposed`: the linear layers
    are transformers' `Conv1D`."""
    rows = sizes.b * sizes.s
    width = sizes.h * 3 // len(names.projections)
    return (
        Keeps("query-key-value weight", 3 * sizes.h * sizes.h) if keep_fused_weight else None,
        tuple(Linear(name, sizes.h, width, rows, x, bias=projection_bias and name not in names.unbiased,
                     transposed=transposed) for name in names.projections),
        Attention("self", sizes.b, sizes.a, sizes.s, sizes.s, sizes.d),
        Linear(names.context, sizes.h, sizes.h, rows, "context", transposed=transposed),
    )


def feed_forward(names: LayerNames, sizes: Sizes, x: str, activation_keeps: int = 1,
                 transposed: bool = False) -> Tuple:
    """Two linear layers (`transposed`: transformers' `Conv1D`) around an activation that keeps `activation_keeps`
    tensors (gelu's tanh approximation keeps 4)."""
    rows = sizes.b * sizes.s
    return (
        Linear(names.intermediate, sizes.h, sizes.i, rows, x, transposed=transposed),
        tuple(Activation(f"intermediate {index}" if index else "intermediate", rows * sizes.i)
              for index in range(activation_keeps)),
        Linear(names.output, sizes.i, sizes.h, rows, "activated", transposed=transposed),
    )


def post_norm_layer(names: LayerNames, sizes: Sizes, fused: bool = False, extra: Tuple = ()) -> Sequential:
    """Attention, add and norm, feed-forward, add and norm. `fused`: the query, key and value weights are
    concatenated in each pass (the pipelined models of optimum-graphcore that fuse them). `extra`: modules the
    layer holds and this pass does not run."""
    rows = sizes.b * sizes.s
    return Sequential(
        self_attention(names, sizes, "input", keep_fused_weight=fused),
        LayerNorm(names.attention_norm, sizes.h, rows, "attention sum"),
        feed_forward(names, sizes, "attention output"),
        LayerNorm(names.output_norm, sizes.h, rows, "output sum"),
        extra,
        enters=hidden(sizes), leaves=hidden(sizes))


def pre_norm_layer(names: LayerNames, input_norm: str, sizes: Sizes, activation_keeps: int = 1,
                   projection_bias: bool = True, transposed: bool = False, extra: Tuple = ()) -> Sequential:
    """Norm, attention, add, norm, feed-forward, add. `projection_bias`, `transposed`: as `self_attention` reads
    them (`transposed` for the feed-forward too); `extra`: modules the layer holds and this pass does not run."""
    rows = sizes.b * sizes.s
    return Sequential(
        LayerNorm(input_norm, sizes.h, rows, "input"),
        self_attention(names, sizes, "normalised", projection_bias=projection_bias, transposed=transposed),
        LayerNorm(names.attention_norm, sizes.h, rows, "attention sum"),
        feed_forward(names, sizes, "normalised sum", activation_keeps, transposed),
        extra,
        enters=hidden(sizes), leaves=hidden(sizes))


def embeddings(sizes: Sizes, word: str, positions: Optional[Tuple[str, int]], types: Optional[Tuple[str, int]],
               norm: str, computed_positions: bool = False, given_types: bool = False) -> Sequential:
    """Word, position and token type embeddings, summed and normed. Positions index a buffer, unless
    `computed_positions` (worked out from the ids, and kept); token types a buffer of zeros, unless `given_types`
    (the tokenizer gives them: the lookup keeps them)."""
    tokens = sizes.b * sizes.s
    return Sequential(
        Embedding(word, sizes.v, sizes.h, "ids", tokens),
        Embedding(*positions, sizes.h, "positions" if computed_positions else None, tokens) if positions else None,
        Embedding(*types, sizes.h, "token types" if given_types else None, tokens) if types else None,
        LayerNorm(norm, sizes.h, tokens, "sum"),
        enters=ids(sizes), leaves=hidden(sizes))


def under(base: str, path: str) -> str:
    return f"{base}.{path}" if base else path


def encoder_steps(base: str, embedding, layer, tail: Tuple[Step, ...], after_layers: Tuple[Step, ...] = (),
                  after_embeddings: Tuple[Step, ...] = ()) -> Tuple[Step, ...]:
    """An encoder's steps: an embedding block on IPU 0, the layers as `get_layer_ipu` places them, then `tail`.
    `base`: where the encoder sits (the prefix, or "" for the bare model)."""
    return (
        Block("Embedding", under(base, "embeddings"), module=embedding),
        *after_embeddings,
        Layers("encoder", "Encoder{i}", under(base, "encoder.layer.{i}"), "num_hidden_layers", module=layer),
        *after_layers,
        *tail,
    )


# --- heads ----------------------------------------------------------------------------------------------------------


def pooler(sizes: Sizes, dense: str = "dense") -> Sequential:
    """`tanh(dense(hidden[:, 0]))`: keeps the whole hidden state (the first token is a view of it) and its output."""
    return Sequential(Linear(dense, sizes.h, sizes.h, sizes.b, "hidden", storage=sizes.b * sizes.s * sizes.h),
                      Activation("pooled", sizes.b * sizes.h), enters=hidden(sizes), leaves=pooled(sizes))


def sequence_classifier(sizes: Sizes, name: str = "") -> Sequential:
    """A linear layer on the pooled state, and the loss over the labels."""
    return Sequential(Linear(name, sizes.h, sizes.n, sizes.b, "pooled"), CrossEntropy("loss", sizes.b, sizes.n),
                      enters=pooled(sizes))


def choice_classifier(sizes: Sizes, name: str = "") -> Sequential:
    """A score for each choice of each example, and the loss over the choices."""
    return Sequential(Linear(name, sizes.h, 1, sizes.b, "pooled"), CrossEntropy("loss", sizes.e, sizes.c),
                      enters=pooled(sizes))


def token_classifier(sizes: Sizes, name: str = "") -> Sequential:
    return Sequential(Linear(name, sizes.h, sizes.n, sizes.b * sizes.s, "hidden"),
                      CrossEntropy("loss", sizes.b * sizes.s, sizes.n), enters=hidden(sizes))


def span_classifier(sizes: Sizes, name: str = "") -> Sequential:
    """Question answering: a start and an end score for each token (its `n` labels: 2), a loss over the tokens for
    each."""
    return Sequential(Linear(name, sizes.h, sizes.n, sizes.b * sizes.s, "hidden"),
                      CrossEntropy("start", sizes.b, sizes.s), CrossEntropy("end", sizes.b, sizes.s),
                      enters=hidden(sizes))


def masked_lm_head(sizes: Sizes, dense: str, norm: str, decoder: str, bias: str, tied: bool) -> Sequential:
    """A dense layer, gelu and a norm, then the projection to the vocabulary (its weight the word embeddings' where
    `tied`, its bias a parameter of the head's own), and the loss over every token."""
    rows = sizes.b * sizes.s
    return Sequential(
        Linear(dense, sizes.h, sizes.h, rows, "hidden"),
        Activation("transformed", rows * sizes.h),
        LayerNorm(norm, sizes.h, rows, "activated"),
        Linear(decoder, sizes.h, sizes.v, rows, "normalised", bias=False, tied=tied),
        Parameter(bias, (sizes.v,)),
        CrossEntropy("masked tokens", rows, sizes.v),
        enters=hidden(sizes))


def head(block: str, path: str, module: Module, ipu: IPURule = LAST) -> Block:
    """A head in a block of its own, on the last IPU unless said."""
    return Block(block, path, ipu, module=module, head=True)


# --- encoder-decoders -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EncoderDecoderSizes(Sizes):
    """An encoder-decoder's sizes: its encoder's, and `decoder`, its decoder's (s: the decoder's tokens)."""

    decoder: Sizes


def encoder_decoder_sizes(shape: InputShape, hidden: int, heads: int, inner: int, decoder_heads: int,
                          decoder_inner: int, vocabulary: int, labels: int) -> EncoderDecoderSizes:
    """The encoder's sizes for the micro-batch's sequences, the decoder's for its decoder's, each stack with its
    heads and feed-forward size."""
    encoder = sizes_of(shape, hidden, heads, inner, vocabulary, labels)
    decoder = sizes_of(shape._replace(sequence_length=shape.decoder_sequence_length), hidden, decoder_heads,
                    decoder_inner, vocabulary, labels)
    return EncoderDecoderSizes(**vars(encoder), decoder=decoder)


def encoder_output(sizes: Sizes, sources: int) -> Saved:
    """The encoder's output, of `sources` positions, that each decoder layer attends to."""
    return Saved("encoder output", sizes.b * sources * sizes.h)


def encoder_decoder_names(attention: str, key_bias: bool = True) -> LayerNames:
    """The names transformers gives the modules of a layer of the encoder-decoders written after fairseq's: the
    attention's (`attention`: self_attn, or encoder_attn on the encoder's output) q, k, v and out projections and its
    norm `{attention}_layer_norm`, then fc1, fc2 and final_layer_norm. `key_bias`: False where the key projection has
    none."""
    key = f"{attention}.k_proj"
    return LayerNames((f"{attention}.q_proj", key, f"{attention}.v_proj"), f"{attention}.out_proj",
                      f"{attention}_layer_norm", "fc1", "fc2", "final_layer_norm", () if key_bias else (key,))


def cross_attention(names: LayerNames, sizes: Sizes, x: str, sources: int) -> Tuple:
    """The query projection of `x`, the key and value projections of the encoder's output (`sources` positions,
    kept once), the attention and its output projection."""
    query, key, value = names.projections
    rows = sizes.b * sizes.s
    return (
        Linear(query, sizes.h, sizes.h, rows, x, bias=query not in names.unbiased),
        tuple(Linear(name, sizes.h, sizes.h, sizes.b * sources, "encoder output", bias=name not in names.unbiased)
              for name in (key, value)),
        Attention("cross", sizes.b, sizes.a, sizes.s, sources, sizes.d),
        Linear(names.context, sizes.h, sizes.h, rows, "cross context"),
    )


def decoder_layer(sizes: Sizes, sources: int, pre_norm: bool, key_bias: bool = True) -> Sequential:
    """A decoder layer, its modules named by `encoder_decoder_names`: self-attention, attention on the encoder's
    output (`sources` positions), feed-forward, each with its norm: on its input (`pre_norm`), else on its residual
    sum. `sizes`: the decoder's."""
    rows = sizes.b * sizes.s
    own, cross = encoder_decoder_names("self_attn", key_bias), encoder_decoder_names("encoder_attn", key_bias)

    def normed(norm: str, name: str, modules: Callable[[str], Tuple]) -> Tuple:
        if pre_norm:
            return LayerNorm(norm, sizes.h, rows, f"{name}: input"), modules(f"{name}: normalised")
        return modules(f"{name}: input"), LayerNorm(norm, sizes.h, rows, f"{name}: sum")

    return Sequential(
        normed(own.attention_norm, "self", lambda x: self_attention(own, sizes, x)),
        normed(cross.attention_norm, "cross", lambda x: cross_attention(cross, sizes, x, sources)),
        normed(own.output_norm, "feed-forward", lambda x: feed_forward(own, sizes, x)),
        enters=(*hidden(sizes), encoder_output(sizes, sources)), leaves=hidden(sizes))


def lm_head(sizes: Sizes, tied: bool) -> Sequential:
    """The projection of every token to the vocabulary, without a bias (`tied`: its weight the word embeddings'),
    and the loss of the next tokens. `sizes`: the decoder's."""
    rows = sizes.b * sizes.s
    return Sequential(Linear("", sizes.h, sizes.v, rows, "hidden", bias=False, tied=tied),
                      CrossEntropy("next tokens", rows, sizes.v), enters=hidden(sizes))

# --- what more encoders share: the ties of a masked LM --------------------------------------------------------------


def masked_lm_ties(head: str, word_embeddings: str, decoder: str = "decoder",
                   bias: str = "bias") -> Dict[str, Tuple[str, Optional[str]]]:
    """A masked LM's projection tied to the word embeddings (where `tie_word_embeddings`), and its bias, the head's
    own, always: `Architecture.ties`."""
    return {f"{head}.{decoder}.weight": (word_embeddings, "tie_word_embeddings"),
            f"{head}.{decoder}.bias": (f"{head}.{bias}", None)}


# --- a norm after the last layer -------------------------------------------------------------------------------------


def final_norm(sizes: Sizes) -> Sequential:
    """A norm of the hidden state the last layer hands on (a module of its own, outside the layers)."""
    return Sequential(LayerNorm("", sizes.h, sizes.b * sizes.s, "hidden"), enters=hidden(sizes), leaves=hidden(sizes))


# --- sizes given as one number or a pair -----------------------------------------------------------------------------


def pair(value: Union[int, Sequence[int]]) -> Tuple[int, int]:
    """A size a config gives as one number or a pair of them (`image_size` 224 or [224, 160]): (height, width)."""
    return (value[0], value[1]) if isinstance(value, (list, tuple)) else (value, value)
