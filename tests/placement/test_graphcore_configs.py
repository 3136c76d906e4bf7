"""Graphcore's own configs, at the micro-batch sizes and lengths its examples, notebooks and model cards ran them with,
all ran: `place` must say they fit.

The configs are those of Graphcore's Hub repositories (`ipu_config.json`, as the stored copies below hold them); the
models are the transformers configs of the checkpoints they were published with; the sizes are those of
optimum-graphcore's examples (`examples/*/README.md`) and notebooks, and of the model cards.
"""

import pytest
import transformers

from optimum_ipu_ext import PlainIPUConfig

# the settings every one of these configs shares
SHARED = {"recompute_checkpoint_every_layer": True, "optimizer_state_offchip": True,
          "replicated_tensor_sharding": True, "enable_half_partials": True}
BERT_LARGE = {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16, "intermediate_size": 4096}

RUNS = [
    # https://huggingface.co/Graphcore/bert-large-ipu/blob/main/ipu_config.json; pre-training,
    # examples/language-modeling README (phase 1: micro-batch 8 at 128 tokens; phase 2: 2 at 512)
    ("BertForPreTraining", transformers.BertConfig(**BERT_LARGE),
     dict(SHARED, embedding_serialization_factor=2, gradient_accumulation_steps=16, ipus_per_replica=4,
          layers_per_ipu=[3, 7, 7, 7], matmul_proportion=[0.15, 0.18, 0.20, 0.25]), [(8, 128), (2, 512)]),
    # https://huggingface.co/Graphcore/gpt2-medium-ipu/resolve/4063b4ba209cba74eee034c2805e9a85242d2fc5/ipu_config.json
    # (its `embedding_serialization_factor` 0 meant "not serialised": 1 since 0.6.1); the text-generation notebook and
    # examples/language-modeling: micro-batch 1 at 1024 tokens
    ("GPT2LMHeadModel", transformers.GPT2Config(n_embd=1024, n_layer=24, n_head=16),
     dict(SHARED, embedding_serialization_factor=1, gradient_accumulation_steps=16, ipus_per_replica=4,
          layers_per_ipu=[3, 7, 7, 7], matmul_proportion=[0.15, 0.12, 0.15, 0.2]), [(1, 1024)]),
    # https://huggingface.co/Graphcore/vit-base-ipu/resolve/main/ipu_config.json; examples/image-classification
    # README: micro-batch 17 at 224 x 224
    ("ViTForImageClassification", transformers.ViTConfig(),
     dict(SHARED, gradient_accumulation_steps=128, ipus_per_replica=4, layers_per_ipu=[3, 3, 3, 3],
          matmul_proportion=0.3), [(17, None)]),
    # https://huggingface.co/Graphcore/hubert-base-ipu/resolve/main/ipu_config.json; examples/audio-classification
    # README: micro-batch 2 of 1 s at 16 kHz
    ("HubertForSequenceClassification", transformers.HubertConfig(),
     dict(SHARED, gradient_accumulation_steps=512, ipus_per_replica=4, layers_per_ipu=[0, 4, 4, 4],
          matmul_proportion=0.25), [(2, 16_000)]),
    # https://huggingface.co/Graphcore/wav2vec2-base-ipu/blob/main/ipu_config.json (4 IPUs); the wav2vec2 notebook and
    # examples/speech-pretraining README: micro-batch 1 of 249,600 samples
    ("Wav2Vec2ForPreTraining", transformers.Wav2Vec2Config(),
     dict(SHARED, optimizer_state_offchip=False, recompute_checkpoint_every_layer=False,
          gradient_accumulation_steps=32, ipus_per_replica=4, layers_per_ipu=[6, 5, 5, 7],
          matmul_proportion=[0.2, 1.0, 1.0, 1.0]), [(1, 249_600)]),
]


@pytest.mark.parametrize("architecture, model_config, settings, sizes", RUNS,
                         ids=[architecture for architecture, *_ in RUNS])
def test_graphcore_s_configs_fit_at_the_sizes_they_ran(architecture, model_config, settings, sizes):
    config = dict(model_config.to_dict(), architectures=[architecture])
    for micro_batch_size, sequence_length in sizes:
        placement = PlainIPUConfig(**settings).placement(config, micro_batch_size=micro_batch_size,
                                                         sequence_length=sequence_length)
        assert placement.fits, str(placement)
        assert placement.shape.micro_batch_size == micro_batch_size
        assert all(ipu.work.activation_bytes > 0 and ipu.work.recompute_bytes > 0 for ipu in placement.ipus
                   if ipu.layers)
