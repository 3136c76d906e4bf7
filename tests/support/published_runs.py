"""Graphcore's published runs the tests hold the placement and the time model to, and plan against: five
optimum-graphcore training runs on an IPU-POD16 with their measured throughput (`OPTIMUM_RUNS`,
tests/placement/test_calibration.py), and the published configs at the micro-batch and lengths their runs used
(`PUBLISHED_RUNS`)."""

from typing import Any, Dict, NamedTuple, Optional, Union


class OptimumRun(NamedTuple):
    """One optimum-graphcore training run on an IPU-POD16: its model (a folder of tests/full_size, or the sizes of
    its config.json), architecture, micro-batch, sequence length (None: the image's patches), its IPU config's
    settings beside `OPTIMUM_POD16`, and its measured `train_samples_per_second`."""

    name: str
    model: Union[str, Dict[str, Any]]
    architecture: str
    micro_batch: int
    length: Optional[int]
    settings: Dict[str, Any]
    measured: float


# what the five runs' IPU configs share: 4 IPUs a replica, 4 replicas on 16 IPUs (`--pod_type pod16`)
OPTIMUM_POD16 = {"ipus_per_replica": 4, "replication_factor": 4, "replicated_tensor_sharding": True,
                 "recompute_checkpoint_every_layer": True, "enable_half_partials": True}
# gpt2's config.json (huggingface.co/gpt2): its sizes
GPT2_SMALL = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "n_embd": 768, "n_layer": 12, "n_head": 12,
              "n_positions": 1024, "n_ctx": 1024, "vocab_size": 50257}
BERT_LARGE_SQUAD = {"layers_per_ipu": [3, 7, 7, 7], "gradient_accumulation_steps": 64, "optimizer_state_offchip": True,
                    "embedding_serialization_factor": 2, "matmul_proportion": [0.15, 0.18, 0.2, 0.25]}
OPTIMUM_RUNS = [
    # huggingface.co/Graphcore/bert-base-uncased @c134b71, all_results.json ("train_samples_per_second": 2409.431)
    # and ipu_config.json; the command of optimum-graphcore's examples/language-modeling/README.md @176a939b, phase 2
    OptimumRun("O1 BERT-base pre-training", "bert-base-uncased", "BertForPreTraining", 8, 512,
               {"layers_per_ipu": [0, 4, 4, 4], "gradient_accumulation_steps": 512, "optimizer_state_offchip": False,
                "embedding_serialization_factor": 2, "matmul_proportion": 0.22}, 2409.4),
    # github.com/huggingface/optimum-graphcore @26811003, notebooks/introduction_to_optimum_graphcore.ipynb: its
    # output ("train_samples_per_second": 419.265) and its printed IPU config (Graphcore/bert-large-ipu, G 64)
    OptimumRun("O2 BERT-large SQuAD, Graphcore", "bert-large-uncased", "BertForQuestionAnswering", 1, 384,
               BERT_LARGE_SQUAD, 419.3),
    # the same notebook in github.com/graphcore/Gradient-HuggingFace, notebook-tutorials/
    # introduction_to_optimum_graphcore.ipynb, on Paperspace (SDK 2.6), @00d820b6 (361.48) and @d8eb3720 (328.998)
    OptimumRun("O2 BERT-large SQuAD, Paperspace 2022-11", "bert-large-uncased", "BertForQuestionAnswering", 1, 384,
               BERT_LARGE_SQUAD, 361.5),
    OptimumRun("O2 BERT-large SQuAD, Paperspace 2022-08", "bert-large-uncased", "BertForQuestionAnswering", 1, 384,
               BERT_LARGE_SQUAD, 329.0),
    # huggingface.co/Graphcore/gpt2-wikitext-103 @e76c1eb, train_results.json (261.293) and the model card's command
    # (Graphcore/gpt2-small-ipu, G 128, embedding_serialization_factor=4, optimizer_state_offchip=true); the
    # split and the device iterations are gpt2-small-ipu's as optimum-graphcore's language_modeling notebook
    # @5f4993fb prints it
    OptimumRun("O3 GPT-2 small WikiText-103", GPT2_SMALL, "GPT2LMHeadModel", 1, 1024,
               {"layers_per_ipu": [0, 4, 4, 4], "gradient_accumulation_steps": 128, "optimizer_state_offchip": True,
                "embedding_serialization_factor": 4, "device_iterations": 2}, 261.3),
    # huggingface.co/jimypbr/cifar10_outputs (revision not recorded), train_results.json (4242.326; batch 17, G 128
    # in its card), run by the command of optimum-graphcore's examples/image-classification/README.md @d93d1c01
    # with huggingface.co/Graphcore/vit-base-ipu @b1115b3, ipu_config.json (its `"matmul_proportion": [0.3]`, one entry
    # for 4 IPUs, is 0.3 in its later revision, tests/data/published_configs)
    OptimumRun("O4 ViT-base CIFAR-10", "vit-base-patch16-224-in21k", "ViTForImageClassification", 17, None,
               {"layers_per_ipu": [3, 3, 3, 3], "gradient_accumulation_steps": 128, "optimizer_state_offchip": True,
                "matmul_proportion": 0.3}, 4242.3),
    # huggingface.co/Graphcore/roberta-base-squad2 @fddddad, train_results.json (1391.43) and the model card's
    # command; its ipu_config.json @c804a1c2 (tests/data/published_configs)
    OptimumRun("O5 RoBERTa-base SQuAD v2", "roberta-base", "RobertaForQuestionAnswering", 4, 384,
               {"layers_per_ipu": [0, 4, 4, 4], "gradient_accumulation_steps": 16, "optimizer_state_offchip": False,
                "embedding_serialization_factor": 1, "matmul_proportion": 0.25}, 1391.4),
]


# Graphcore's published configs at the micro-batch and lengths their runs used (design notes; Hub model cards and
# optimum-graphcore's examples): (config file, model, architecture, micro-batch, sequence length, decoder length)
PUBLISHED_RUNS = [
    ("hub__Graphcore__bert-large-ipu@main.json", "bert-large-uncased", "BertForPreTraining", 8, 128, None),
    ("hub__Graphcore__bert-large-ipu@main.json", "bert-large-uncased", "BertForPreTraining", 2, 512, None),
    ("hub__Graphcore__gpt2-medium-ipu@4063b4ba.json", "gpt2-medium", "GPT2LMHeadModel", 1, 1024, None),
    ("hub__Graphcore__vit-base-ipu@main.json", "vit-base-patch16-224-in21k", "ViTForImageClassification", 17, None,
     None),
    ("hub__Graphcore__hubert-base-ipu@main.json", "hubert-base-ls960", "HubertForSequenceClassification", 2, 16000,
     None),
    ("hub__Graphcore__wav2vec2-base-ipu@main.json", "wav2vec2-base", "Wav2Vec2ForPreTraining", 1, 249600, None),
    ("hub__Graphcore__mt5-small-ipu@main.json", "mt5-small", "MT5ForConditionalGeneration", 1, 128, 128),
]
