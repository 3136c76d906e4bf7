"""What the generation builds of the families share: one step of a generation build's decoder (`Decoding`), and the
blocks its steps are written in: a self-attention writing the step's key and value into its KV cache and reading
the whole cache, an attention on the encoder's output (whose keys and values it projects each step, or once into a
cross cache), and the head projecting one position of each sequence.

Read off optimum-graphcore 0.7.1's `generation/attention_mixin.py`: `add_to_kv_cache` writes the step's key and
value each with a matrix product of a one-hot column of `max_length` by it (a tensor the size of the cache, added
to it); every step attends over all `max_length` positions, those not generated yet masked; `add_to_cross_kv_cache`
projects the encoder's output into the cross cache at the first step only (`poptorch.cond`). Without a KV cache
the decoder recomputes the whole sequence, padded to `max_length`, each step, and its head projects the step's
position alone (`_IndexedInputLinear`).
"""

from dataclasses import dataclass
from typing import Any, Optional, Tuple

from .blocks import Keeps, LayerNorm, Linear, Matmul, Saved, Sequential, Unused
from .transformer import Sizes, encoder_decoder_names, encoder_output, feed_forward, hidden


@dataclass(frozen=True)
class Decoding:
    """One step of a generation build's decoder: `sizes`, the family's, for its rows (batch x beams sequences,
    the decoder's `b`) whose encoder output has `sizes.s` positions, the decoder's `s` the tokens it runs (1 with a
    KV cache, else the padded `max_length`); `cache_length`: the KV cache's `max_length` (None: no KV cache);
    `cross_cached`: the encoder's keys and values are kept in a cross cache; `first`: the first step, which fills it.
    """

    sizes: Any
    cache_length: Optional[int]
    cross_cached: bool = False
    first: bool = False

    @property
    def decoder(self) -> Sizes:
        """The decoder's sizes (a model that is a decoder alone: its sizes)."""
        return getattr(self.sizes, "decoder", self.sizes)


def cache_writes(name: str, rows: int, heads: int, length: int, head_size: int) -> Tuple:
    """`add_to_kv_cache`: the step's key and value (`rows` x `heads` of `head_size`) each written into its cache of
    `length` positions by a product with a one-hot column, a tensor the size of the cache."""
    pairs = rows * heads
    return tuple(Matmul(pairs, length, 1, head_size, (Saved(f"{name}: {kind} written", pairs * length * head_size),))
                 for kind in ("key", "value"))


def cached_attention(name: str, rows: int, heads: int, keys: int, head_size: int) -> Tuple:
    """One query of each row and head on `keys` positions whose keys and values are a buffer (a cache): the scores,
    their probabilities, and the product with the values."""
    pairs = rows * heads
    return (Matmul(pairs, 1, head_size, keys), Keeps(f"{name}: probabilities", pairs * keys),
            Matmul(pairs, 1, keys, head_size))


def cached_decoder_layer(decoding: Decoding, pre_norm: bool, key_bias: bool = True) -> Sequential:
    """A decoder layer of the encoder-decoders written after fairseq's (`transformer.decoder_layer`) on one token a
    row: its self-attention on its KV cache, its attention on the encoder's output (projected each step, or kept in a
    cross cache filled at the first step), its feed-forward, each with its norm."""
    sizes, sources = decoding.decoder, decoding.sizes.s
    rows, length = sizes.b, decoding.cache_length
    own, cross = encoder_decoder_names("self_attn", key_bias), encoder_decoder_names("encoder_attn", key_bias)

    def normed(norm: str, name: str, modules) -> Tuple:
        if pre_norm:
            return LayerNorm(norm, sizes.h, rows, f"{name}: input"), modules(f"{name}: normalised")
        return modules(f"{name}: input"), LayerNorm(norm, sizes.h, rows, f"{name}: sum")

    def self_attention(x: str) -> Tuple:
        return (tuple(Linear(name, sizes.h, sizes.h, rows, x, bias=name not in own.unbiased)
                      for name in own.projections),
                cache_writes("self", rows, sizes.a, length, sizes.d),
                cached_attention("self", rows, sizes.a, length, sizes.d),
                Linear(own.context, sizes.h, sizes.h, rows, "context"))

    def cross_attention(x: str) -> Tuple:
        query, key, value = cross.projections
        projections = tuple(Linear(name, sizes.h, sizes.h, rows * sources, "encoder output",
                                   bias=name not in cross.unbiased) for name in (key, value))
        return (Linear(query, sizes.h, sizes.h, rows, x),
                Unused(*projections) if decoding.cross_cached and not decoding.first else projections,
                cached_attention("cross", rows, sizes.a, sources, sizes.d),
                Linear(cross.context, sizes.h, sizes.h, rows, "cross context"))

    return Sequential(
        normed(own.attention_norm, "self", self_attention),
        normed(cross.attention_norm, "cross", cross_attention),
        normed(own.output_norm, "feed-forward", lambda x: feed_forward(own, sizes, x)),
        enters=(*hidden(sizes), encoder_output(sizes, sources)), leaves=hidden(sizes))


def generation_head(decoding: Decoding, tied: bool) -> Sequential:
    """The projection to the vocabulary, without a bias (`tied`: its weight the word embeddings'), of the step's
    position of each row: the last token with a KV cache, else the step's of the padded sequence (sliced first)."""
    sizes = decoding.decoder
    return Sequential(Linear("", sizes.h, sizes.v, sizes.b, "hidden", bias=False, tied=tied,
                             storage=sizes.b * sizes.s * sizes.h), enters=hidden(sizes))
