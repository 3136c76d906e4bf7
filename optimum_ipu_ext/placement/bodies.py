"""The parameters of each family's body (the model without the heads a row lists apart), as formulas of
`config.json`, named as transformers 4.29.2's `named_parameters()` names them (a tied weight once, by its first
name), and the defaults of each config class in 4.29.2 for the fields they read.

A body is `body(config) -> {parameter: shape}` (a row binds the path its family's template takes, with
`functools.partial`); a layer is a function of its path and the config. Read off transformers 4.29.2's
`modeling_*.py` (and optimum-graphcore 0.7.1's GroupBERT); the tests compare every architecture with the
`named_parameters()` of the model transformers builds, on both stacks.

Nothing here imports torch or transformers.
"""

from typing import Callable, Dict, Sequence, Tuple

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


def scale(name: str, size: int) -> Shapes:
    """A norm with a weight and no bias (T5's)."""
    return {f"{name}.weight": (size,)}


def embedding(name: str, rows: int, width: int) -> Shapes:
    return {f"{name}.weight": (rows, width)}


def convolution(name: str, outputs: int, inputs: int, kernel: Sequence[int], groups: int = 1,
                bias: bool = True) -> Shapes:
    """`nn.Conv1d` / `nn.Conv2d(inputs, outputs, kernel, groups=groups)`."""
    return {f"{name}.weight": (outputs, inputs // groups, *kernel), **({f"{name}.bias": (outputs,)} if bias else {})}


def under(prefix: str, path: str) -> str:
    return f"{prefix}.{path}" if prefix else path


def _layers(path: str, count: int, layer: Callable[[str, ModelConfig], Shapes], config: ModelConfig) -> Shapes:
    shapes: Shapes = {}
    for index in range(count):
        shapes.update(layer(path.format(i=index), config))
    return shapes


# --- BERT-like encoders: BERT, RoBERTa, GroupBERT, LXMERT's language layers ------------------------------------------

_SIZES = {"vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
          "intermediate_size": 3072, "max_position_embeddings": 512, "tie_word_embeddings": True}
BERT_DEFAULTS = {**_SIZES, "type_vocab_size": 2, "position_embedding_type": "absolute", "add_cross_attention": False}


def bert_embeddings(path: str, config: ModelConfig) -> Shapes:
    hidden = config.hidden_size
    return {**embedding(f"{path}.word_embeddings", config.vocab_size, hidden),
            **embedding(f"{path}.position_embeddings", config.max_position_embeddings, hidden),
            **embedding(f"{path}.token_type_embeddings", config.type_vocab_size, hidden),
            **norm(f"{path}.LayerNorm", hidden)}


def bert_self_attention(path: str, config: ModelConfig) -> Shapes:
    """BERT's query, key and value projections."""
    hidden = config.hidden_size
    return {**linear(f"{path}.query", hidden, hidden), **linear(f"{path}.key", hidden, hidden),
            **linear(f"{path}.value", hidden, hidden)}


def _dense_and_norm(path: str, outputs: int, inputs: int) -> Shapes:
    return {**linear(f"{path}.dense", outputs, inputs), **norm(f"{path}.LayerNorm", outputs)}


def _bert_attention(path: str, config: ModelConfig) -> Shapes:
    return {**bert_self_attention(f"{path}.self", config),
            **_dense_and_norm(f"{path}.output", config.hidden_size, config.hidden_size)}


def _bert_feed_forward(intermediate: str, output: str, config: ModelConfig) -> Shapes:
    return {**linear(f"{intermediate}.dense", config.intermediate_size, config.hidden_size),
            **_dense_and_norm(output, config.hidden_size, config.intermediate_size)}


# --- MPNet, DistilBERT, DeBERTa --------------------------------------------------------------------------------------

MPNET_DEFAULTS = {**_SIZES, "vocab_size": 30527, "relative_attention_num_buckets": 32}


def _mpnet_layer(path: str, config: ModelConfig) -> Shapes:
    hidden = config.hidden_size
    shapes = {}
    for projection in "qkvo":
        shapes.update(linear(f"{path}.attention.attn.{projection}", hidden, hidden))
    return {**shapes, **norm(f"{path}.attention.LayerNorm", hidden),
            **_bert_feed_forward(f"{path}.intermediate", f"{path}.output", config)}


def mpnet_body(base: str, config: ModelConfig) -> Shapes:
    hidden = config.hidden_size
    return {**embedding(under(base, "embeddings.word_embeddings"), config.vocab_size, hidden),
            **embedding(under(base, "embeddings.position_embeddings"), config.max_position_embeddings, hidden),
            **norm(under(base, "embeddings.LayerNorm"), hidden),
            **_layers(under(base, "encoder.layer.{i}"), config.num_hidden_layers, _mpnet_layer, config),
            **embedding(under(base, "encoder.relative_attention_bias"), config.relative_attention_num_buckets,
                        config.num_attention_heads)}


DISTILBERT_DEFAULTS = {"vocab_size": 30522, "max_position_embeddings": 512, "sinusoidal_pos_embds": False,
                       "n_layers": 6, "dim": 768, "hidden_dim": 3072, "tie_word_embeddings": True}


def _distilbert_layer(path: str, config: ModelConfig) -> Shapes:
    dim = config.dim
    shapes = {}
    for projection in ("q_lin", "k_lin", "v_lin", "out_lin"):
        shapes.update(linear(f"{path}.attention.{projection}", dim, dim))
    return {**shapes, **norm(f"{path}.sa_layer_norm", dim), **linear(f"{path}.ffn.lin1", config.hidden_dim, dim),
            **linear(f"{path}.ffn.lin2", dim, config.hidden_dim), **norm(f"{path}.output_layer_norm", dim)}


def distilbert_body(config: ModelConfig) -> Shapes:
    return {**embedding("distilbert.embeddings.word_embeddings", config.vocab_size, config.dim),
            **embedding("distilbert.embeddings.position_embeddings", config.max_position_embeddings, config.dim),
            **norm("distilbert.embeddings.LayerNorm", config.dim),
            **_layers("distilbert.transformer.layer.{i}", config.n_layers, _distilbert_layer, config)}


# `talking_head` and `embedding_size`: not fields of DebertaConfig, read by the model where a config.json has them
DEBERTA_DEFAULTS = {**_SIZES, "vocab_size": 50265, "type_vocab_size": 0, "relative_attention": False,
                    "max_relative_positions": -1, "position_biased_input": True, "pos_att_type": (),
                    "talking_head": False, "embedding_size": lambda c: c.hidden_size,
                    "pooler_hidden_size": lambda c: c.hidden_size}


def _deberta_attention_types(config: ModelConfig) -> Tuple[str, ...]:
    """`pos_att_type`: a list, or a string such as "p2c|c2p" (DebertaConfig splits it)."""
    kinds = config.pos_att_type
    return tuple(kind.strip() for kind in kinds.lower().split("|")) if isinstance(kinds, str) else tuple(kinds)


def _deberta_layer(path: str, config: ModelConfig) -> Shapes:
    hidden, heads = config.hidden_size, config.num_attention_heads
    attention = f"{path}.attention.self"
    shapes = {**weight(f"{attention}.in_proj", 3 * hidden, hidden), f"{attention}.q_bias": (hidden,),
              f"{attention}.v_bias": (hidden,)}
    if config.talking_head:
        shapes.update({**weight(f"{attention}.head_logits_proj", heads, heads),
                       **weight(f"{attention}.head_weights_proj", heads, heads)})
    if config.relative_attention:
        kinds = _deberta_attention_types(config)
        if "c2p" in kinds:
            shapes.update(weight(f"{attention}.pos_proj", hidden, hidden))
        if "p2c" in kinds:
            shapes.update(linear(f"{attention}.pos_q_proj", hidden, hidden))
    return {**shapes, **_dense_and_norm(f"{path}.attention.output", hidden, hidden),
            **_bert_feed_forward(f"{path}.intermediate", f"{path}.output", config)}


def deberta_body(config: ModelConfig) -> Shapes:
    width, hidden = config.embedding_size, config.hidden_size
    shapes = embedding("deberta.embeddings.word_embeddings", config.vocab_size, width)
    if config.position_biased_input:
        shapes.update(embedding("deberta.embeddings.position_embeddings", config.max_position_embeddings, width))
    if config.type_vocab_size > 0:
        shapes.update(embedding("deberta.embeddings.token_type_embeddings", config.type_vocab_size, width))
    if width != hidden:
        shapes.update(weight("deberta.embeddings.embed_proj", hidden, width))
    shapes.update(norm("deberta.embeddings.LayerNorm", hidden))
    shapes.update(_layers("deberta.encoder.layer.{i}", config.num_hidden_layers, _deberta_layer, config))
    if config.relative_attention:
        positions = config.max_relative_positions
        positions = config.max_position_embeddings if positions < 1 else positions
        shapes.update(embedding("deberta.encoder.rel_embeddings", 2 * positions, hidden))
    return shapes


# --- encoder-decoders: BART, T5, MT5, Whisper --------------------------------------------------------------------

BART_DEFAULTS = {"num_labels": 3, "vocab_size": 50265, "max_position_embeddings": 1024, "d_model": 1024,
                 "encoder_layers": 12, "decoder_layers": 12, "encoder_ffn_dim": 4096, "decoder_ffn_dim": 4096,
                 "tie_word_embeddings": True}
T5_DEFAULTS = {"vocab_size": 32128, "d_model": 512, "d_kv": 64, "d_ff": 2048, "num_layers": 6,
               "num_decoder_layers": lambda c: c.num_layers, "num_heads": 8, "relative_attention_num_buckets": 32,
               "feed_forward_proj": "relu", "tie_word_embeddings": True}
MT5_DEFAULTS = {**T5_DEFAULTS, "vocab_size": 250112, "d_ff": 1024, "num_layers": 8, "num_heads": 6,
                "feed_forward_proj": "gated-gelu", "tie_word_embeddings": False}
WHISPER_DEFAULTS = {"vocab_size": 51865, "num_mel_bins": 80, "d_model": 256, "encoder_layers": 6, "decoder_layers": 6,
                    "encoder_ffn_dim": 1536, "decoder_ffn_dim": 1536, "max_source_positions": 1500,
                    "max_target_positions": 448, "tie_word_embeddings": True}


def _attention(path: str, width: int, key_bias: bool = True) -> Shapes:
    """BART's and Whisper's attention: k, v, q and out projections (Whisper's key without a bias)."""
    return {**linear(f"{path}.k_proj", width, width, bias=key_bias), **linear(f"{path}.v_proj", width, width),
            **linear(f"{path}.q_proj", width, width), **linear(f"{path}.out_proj", width, width)}


def _seq2seq_layer(key_bias: bool, cross: bool, feed_forward: str) -> Callable[[str, ModelConfig], Shapes]:
    """A BART or Whisper layer: self-attention, cross-attention in the decoder, two linear layers, norms after each."""
    def layer(path: str, config: ModelConfig) -> Shapes:
        width, inner = config.d_model, getattr(config, feed_forward)
        shapes = {**_attention(f"{path}.self_attn", width, key_bias), **norm(f"{path}.self_attn_layer_norm", width)}
        if cross:
            shapes.update({**_attention(f"{path}.encoder_attn", width, key_bias),
                           **norm(f"{path}.encoder_attn_layer_norm", width)})
        return {**shapes, **linear(f"{path}.fc1", inner, width), **linear(f"{path}.fc2", width, inner),
                **norm(f"{path}.final_layer_norm", width)}

    return layer


def bart_body(config: ModelConfig) -> Shapes:
    """The shared embedding (each stack's `embed_tokens` is tied to it), then each stack: learned positions with an
    offset of 2, the layers, the embedding norm."""
    width = config.d_model
    shapes = embedding("model.shared", config.vocab_size, width)
    for stack, cross in (("encoder", False), ("decoder", True)):
        shapes.update(embedding(f"model.{stack}.embed_positions", config.max_position_embeddings + 2, width))
        shapes.update(_layers(f"model.{stack}.layers.{{i}}", getattr(config, f"{stack}_layers"),
                              _seq2seq_layer(True, cross, f"{stack}_ffn_dim"), config))
        shapes.update(norm(f"model.{stack}.layernorm_embedding", width))
    return shapes


def _t5_attention(path: str, config: ModelConfig, relative: bool) -> Shapes:
    inner, width = config.num_heads * config.d_kv, config.d_model
    shapes = {**weight(f"{path}.q", inner, width), **weight(f"{path}.k", inner, width),
              **weight(f"{path}.v", inner, width), **weight(f"{path}.o", width, inner)}
    if relative:
        shapes.update(embedding(f"{path}.relative_attention_bias", config.relative_attention_num_buckets,
                                config.num_heads))
    return shapes


def _t5_feed_forward(path: str, config: ModelConfig) -> Shapes:
    """"gated-..." projections have two input matrices, `wi_0` and `wi_1`; the others one, `wi`."""
    width, inner = config.d_model, config.d_ff
    gated = config.feed_forward_proj.split("-")[0] == "gated"
    inputs = ("wi_0", "wi_1") if gated else ("wi",)
    shapes = {}
    for name in inputs:
        shapes.update(weight(f"{path}.DenseReluDense.{name}", inner, width))
    return {**shapes, **weight(f"{path}.DenseReluDense.wo", width, inner),
            **scale(f"{path}.layer_norm", width)}


def _t5_stack(stack: str, layers: int, config: ModelConfig) -> Shapes:
    """A T5 stack: its first block alone holds the relative attention bias; the decoder's blocks attend to the
    encoder too."""
    shapes: Shapes = {}
    decoder = stack == "decoder"
    for index in range(layers):
        block = f"{stack}.block.{index}.layer"
        shapes.update({**_t5_attention(f"{block}.0.SelfAttention", config, index == 0),
                       **scale(f"{block}.0.layer_norm", config.d_model)})
        if decoder:
            shapes.update({**_t5_attention(f"{block}.1.EncDecAttention", config, False),
                           **scale(f"{block}.1.layer_norm", config.d_model)})
        shapes.update(_t5_feed_forward(f"{block}.{2 if decoder else 1}", config))
    return {**shapes, **scale(f"{stack}.final_layer_norm", config.d_model)}


def t5_body(decoder: bool, config: ModelConfig) -> Shapes:
    """The shared embedding (each stack's `embed_tokens` is tied to it), the encoder and, but in
    `T5EncoderModel`, the decoder."""
    shapes = {**embedding("shared", config.vocab_size, config.d_model),
              **_t5_stack("encoder", config.num_layers, config)}
    return {**shapes, **_t5_stack("decoder", config.num_decoder_layers, config)} if decoder else shapes


def whisper_body(config: ModelConfig) -> Shapes:
    width = config.d_model
    return {
        **convolution("model.encoder.conv1", width, config.num_mel_bins, (3,)),
        **convolution("model.encoder.conv2", width, width, (3,)),
        **embedding("model.encoder.embed_positions", config.max_source_positions, width),
        **_layers("model.encoder.layers.{i}", config.encoder_layers, _seq2seq_layer(False, False, "encoder_ffn_dim"),
                  config),
        **norm("model.encoder.layer_norm", width),
        **embedding("model.decoder.embed_tokens", config.vocab_size, width),
        **embedding("model.decoder.embed_positions", config.max_target_positions, width),
        **_layers("model.decoder.layers.{i}", config.decoder_layers, _seq2seq_layer(False, True, "decoder_ffn_dim"),
                  config),
        **norm("model.decoder.layer_norm", width),
    }


# --- speech: HuBERT, Wav2Vec2 --------------------------------------------------------------------------------------

_SPEECH = {"vocab_size": 32, "hidden_size": 768, "num_hidden_layers": 12, "intermediate_size": 3072,
           "feat_extract_norm": "group", "conv_dim": [512] * 7, "conv_kernel": [10, 3, 3, 3, 3, 2, 2],
           "conv_bias": False, "num_conv_pos_embeddings": 128, "num_conv_pos_embedding_groups": 16,
           "do_stable_layer_norm": False, "mask_time_prob": 0.05, "mask_feature_prob": 0.0,
           "use_weighted_layer_sum": False, "classifier_proj_size": 256, "add_adapter": False,
           "output_hidden_size": lambda c: c.hidden_size}
# HubertConfig has no adapter: its CTC head reads `add_adapter` where a config.json has it
HUBERT_DEFAULTS = {**_SPEECH, "feat_proj_layer_norm": True}
WAV2VEC2_DEFAULTS = {**_SPEECH, "adapter_kernel_size": 3, "num_adapter_layers": 3, "num_codevectors_per_group": 320,
                     "num_codevector_groups": 2, "codevector_dim": 256, "proj_codevector_dim": 256}


def _speech_layer(path: str, config: ModelConfig) -> Shapes:
    hidden, inner = config.hidden_size, config.intermediate_size
    return {**_attention(f"{path}.attention", hidden), **norm(f"{path}.layer_norm", hidden),
            **linear(f"{path}.feed_forward.intermediate_dense", inner, hidden),
            **linear(f"{path}.feed_forward.output_dense", hidden, inner), **norm(f"{path}.final_layer_norm", hidden)}


def _feature_encoder(path: str, config: ModelConfig) -> Shapes:
    """The convolutions over the waveform: each normed where `feat_extract_norm` is "layer", the first alone where
    it is "group"."""
    shapes: Shapes = {}
    channels = 1
    for index, (width, kernel) in enumerate(zip(config.conv_dim, config.conv_kernel)):
        layer = f"{path}.conv_layers.{index}"
        shapes.update(convolution(f"{layer}.conv", width, channels, (kernel,), bias=config.conv_bias))
        if config.feat_extract_norm == "layer" or index == 0 and config.feat_extract_norm == "group":
            shapes.update(norm(f"{layer}.layer_norm", width))
        channels = width
    return shapes


def speech_body(prefix: str, config: ModelConfig) -> Shapes:
    """A HuBERT or Wav2Vec2 model: the feature encoder and projection (HuBERT's norm where `feat_proj_layer_norm`
    says), the masked frames' embedding where masking is on, the weight-normed positional convolution, the layers,
    and Wav2Vec2's adapter where `add_adapter` is set."""
    hidden, features = config.hidden_size, config.conv_dim[-1]
    wav2vec2 = prefix == "wav2vec2"
    shapes = _feature_encoder(f"{prefix}.feature_extractor", config)
    if wav2vec2 or config.feat_proj_layer_norm:
        shapes.update(norm(f"{prefix}.feature_projection.layer_norm", features))
    shapes.update(linear(f"{prefix}.feature_projection.projection", hidden, features))
    if config.mask_time_prob > 0 or config.mask_feature_prob > 0:
        shapes[f"{prefix}.masked_spec_embed"] = (hidden,)
    positions, kernel = f"{prefix}.encoder.pos_conv_embed.conv", config.num_conv_pos_embeddings
    shapes.update({f"{positions}.weight_g": (1, 1, kernel),
                   f"{positions}.weight_v": (hidden, hidden // config.num_conv_pos_embedding_groups, kernel),
                   f"{positions}.bias": (hidden,)})
    shapes.update(norm(f"{prefix}.encoder.layer_norm", hidden))
    shapes.update(_layers(f"{prefix}.encoder.layers.{{i}}", config.num_hidden_layers, _speech_layer, config))
    if wav2vec2 and config.add_adapter:
        shapes.update(_adapter(f"{prefix}.adapter", config))
    return shapes


def _adapter(path: str, config: ModelConfig) -> Shapes:
    """Wav2Vec2's adapter: a projection to `output_hidden_size` where it differs, then strided convolutions."""
    hidden, output = config.hidden_size, config.output_hidden_size
    shapes = {**linear(f"{path}.proj", output, hidden), **norm(f"{path}.proj_layer_norm", output)} \
        if output != hidden else {}
    for index in range(config.num_adapter_layers):
        shapes.update(convolution(f"{path}.layers.{index}.conv", 2 * output, output, (config.adapter_kernel_size,)))
    return shapes


# --- LXMERT ----------------------------------------------------------------------------------------------------------

LXMERT_DEFAULTS = {"vocab_size": 30522, "hidden_size": 768, "intermediate_size": 3072, "max_position_embeddings": 512,
                   "type_vocab_size": 2, "l_layers": 9, "x_layers": 5, "r_layers": 5, "visual_feat_dim": 2048,
                   "visual_pos_dim": 4, "num_qa_labels": 9500}


def _lxmert_cross_layer(path: str, config: ModelConfig) -> Shapes:
    """An `LxmertXLayer`: the cross-attention (shared by both ways), each modality's self-attention and
    feed-forward."""
    hidden = config.hidden_size
    shapes = {**bert_self_attention(f"{path}.visual_attention.att", config),
              **_dense_and_norm(f"{path}.visual_attention.output", hidden, hidden)}
    for modality in ("lang", "visn"):
        shapes.update(_bert_attention(f"{path}.{modality}_self_att", config))
    for modality in ("lang", "visn"):
        shapes.update(_bert_feed_forward(f"{path}.{modality}_inter", f"{path}.{modality}_output", config))
    return shapes


def _lxmert_layer(path: str, config: ModelConfig) -> Shapes:
    return {**_bert_attention(f"{path}.attention", config),
            **_bert_feed_forward(f"{path}.intermediate", f"{path}.output", config)}


def lxmert_body(config: ModelConfig) -> Shapes:
    hidden = config.hidden_size
    visual = "lxmert.encoder.visn_fc"
    return {**bert_embeddings("lxmert.embeddings", config),
            **linear(f"{visual}.visn_fc", hidden, config.visual_feat_dim), **norm(f"{visual}.visn_layer_norm", hidden),
            **linear(f"{visual}.box_fc", hidden, config.visual_pos_dim), **norm(f"{visual}.box_layer_norm", hidden),
            **_layers("lxmert.encoder.layer.{i}", config.l_layers, _lxmert_layer, config),
            **_layers("lxmert.encoder.x_layers.{i}", config.x_layers, _lxmert_cross_layer, config),
            **_layers("lxmert.encoder.r_layers.{i}", config.r_layers, _lxmert_layer, config)}
