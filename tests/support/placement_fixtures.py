"""Models for placement tests: checkpoints written from their headers alone (the data is a sparse file of zeros, so a
checkpoint of gigabytes costs nothing), the tiny models of every architecture saved as transformers saves them,
a BERT-base-sized config and a tiny BERT, and the settings of a config as the placement reads them."""

import json
import math
import os
import struct
from functools import lru_cache
from typing import Dict, Mapping, Tuple

from optimum_ipu_ext import PlainIPUConfig

from .placement_models import TINY_MODELS

# bert-base-uncased's config.json, as its repository holds it
BERT_BASE = {
    "architectures": ["BertForMaskedLM"], "attention_probs_dropout_prob": 0.1, "gradient_checkpointing": False,
    "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": 768, "initializer_range": 0.02,
    "intermediate_size": 3072, "layer_norm_eps": 1e-12, "max_position_embeddings": 512, "model_type": "bert",
    "num_attention_heads": 12, "num_hidden_layers": 12, "pad_token_id": 0, "position_embedding_type": "absolute",
    "transformers_version": "4.6.0.dev0", "type_vocab_size": 2, "use_cache": True, "vocab_size": 30522,
}
# a BERT of 3 layers of 16 units: its parameters are counted by hand in the tests
TINY_BERT = dict(BERT_BASE, vocab_size=64, hidden_size=16, num_hidden_layers=3, num_attention_heads=2,
                 intermediate_size=32, max_position_embeddings=32)
# a BERT of 5 layers whose builds on 4 IPUs at 512 tokens fit, are tight or do not fit as the split, the replicas
# and the optimizer's place change: what the plan's tests search
PLANNED_BERT = dict(BERT_BASE, architectures=["BertForPreTraining"], hidden_size=1536, intermediate_size=6144,
                    num_hidden_layers=5, num_attention_heads=12)


def write_checkpoint(folder, shapes: Mapping[str, Tuple[int, ...]], config: Mapping = None, dtype: str = "F16") -> str:
    """A safetensors checkpoint of tensors of these shapes (in `folder/model.safetensors`, with `config` as
    `config.json`), its data a sparse file of zeros."""
    os.makedirs(folder, exist_ok=True)
    width = {"F16": 2, "F32": 4, "I64": 8, "BOOL": 1}[dtype]
    header, offset = {}, 0
    for name, shape in shapes.items():
        size = math.prod(shape) * width
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    path = os.path.join(folder, "model.safetensors")
    with open(path, "wb") as writer:
        writer.write(struct.pack("<Q", len(text)) + text)
        writer.truncate(8 + len(text) + offset)
    if config is not None:
        with open(os.path.join(folder, "config.json"), "w", encoding="utf-8") as writer:
            json.dump(dict(config), writer)
    return str(folder)


def bert_shapes(config: Mapping, layers: int = None, head: bool = True) -> Dict[str, Tuple[int, ...]]:
    """The tensors of a BertForMaskedLM checkpoint of `config` (its pre-training head but the next-sentence one)."""
    hidden, vocab, inner = config["hidden_size"], config["vocab_size"], config["intermediate_size"]
    shapes = {
        "bert.embeddings.word_embeddings.weight": (vocab, hidden),
        "bert.embeddings.position_embeddings.weight": (config["max_position_embeddings"], hidden),
        "bert.embeddings.token_type_embeddings.weight": (config["type_vocab_size"], hidden),
        "bert.embeddings.LayerNorm.weight": (hidden,), "bert.embeddings.LayerNorm.bias": (hidden,),
        "bert.embeddings.position_ids": (1, config["max_position_embeddings"]),
    }
    for layer in range(config["num_hidden_layers"] if layers is None else layers):
        base = f"bert.encoder.layer.{layer}"
        linears = {
            "attention.self.query": (hidden, hidden), "attention.self.key": (hidden, hidden),
            "attention.self.value": (hidden, hidden), "attention.output.dense": (hidden, hidden),
            "intermediate.dense": (inner, hidden), "output.dense": (hidden, inner),
        }
        for name, (rows, columns) in linears.items():
            shapes[f"{base}.{name}.weight"] = (rows, columns)
            shapes[f"{base}.{name}.bias"] = (rows,)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            shapes[f"{base}.{norm}.weight"] = (hidden,)
            shapes[f"{base}.{norm}.bias"] = (hidden,)
    if head:
        shapes.update({"cls.predictions.bias": (vocab,), "cls.predictions.transform.dense.weight": (hidden, hidden),
                       "cls.predictions.transform.dense.bias": (hidden,),
                       "cls.predictions.transform.LayerNorm.weight": (hidden,),
                       "cls.predictions.transform.LayerNorm.bias": (hidden,)})
    return shapes


def bert_base(folder) -> str:
    """A checkpoint of bert-base-uncased's shapes (as BertForMaskedLM, no pooler), header only."""
    return write_checkpoint(folder, bert_shapes(BERT_BASE), BERT_BASE)


def tiny_bert(tmp_path, architecture="BertForMaskedLM", layers=None, **config) -> str:
    """A BERT of `TINY_BERT`'s sizes (its architecture and config fields as given) saved in `tmp_path / "bert"`."""
    values = dict(TINY_BERT, architectures=[architecture], **config)
    return write_checkpoint(tmp_path / "bert", bert_shapes(values, layers), values)


def settings(**values) -> dict:
    """The settings of a `PlainIPUConfig` of `values`, as the placement reads them."""
    return vars(PlainIPUConfig(**values))


@lru_cache(maxsize=None)
def tiny_model(architecture: str):
    """The tiny random model of `architecture` that transformers builds from its `TINY_MODELS` config."""
    import torch
    import transformers

    cls = getattr(transformers, architecture)
    torch.manual_seed(0)
    return cls(cls.config_class(**TINY_MODELS[architecture].config))


def saved_tiny_model(architecture: str, folder) -> str:
    """`folder` holding the tiny model of `architecture`, saved as transformers saves it (safetensors)."""
    tiny_model(architecture).save_pretrained(str(folder), safe_serialization=True)
    return str(folder)


# the placement docs/placement.md draws (docs/images/placement.svg, `make documents`): bert-large pre-training on
# Graphcore's config, 16 micro-batches of 2 x 512 tokens a step, and the config as its picture names it
DOCUMENTED_CONFIG = "Graphcore/bert-large-ipu with gradient_accumulation_steps=16"


def documented_placement() -> Dict:
    """The dict of the placement docs/placement.md draws, its model named as on the Hub."""
    from .corpus import FULL_SIZE, PUBLISHED_CONFIGS

    config = PlainIPUConfig.from_json_file(str(PUBLISHED_CONFIGS / "hub__Graphcore__bert-large-ipu@main.json"))
    config.gradient_accumulation_steps = 16
    placement = config.placement(str(FULL_SIZE / "bert-large-uncased"), architecture="BertForPreTraining",
                                 micro_batch_size=2, sequence_length=512).to_dict()
    return dict(placement, model="bert-large-uncased")


def documented_plan() -> Dict:
    """The dict of the plan docs/placement.md draws: bert-large pre-training on 16 IPUs, a step of 16,384 sequences
    of 128 tokens, its model named as the docs' folder."""
    from optimum_ipu_ext import plan

    from .corpus import FULL_SIZE

    found = plan(str(FULL_SIZE / "bert-large-uncased"), 16, architecture="BertForPreTraining",
                 global_batch_size=16384, sequence_length=128, base=PlainIPUConfig())
    return dict(found.to_dict(), model="bert-large")


def plan_candidate(ipus, replicas, micro_batch, accumulation, share, verdict, speed, recompute=True, offchip=True,
                   sharding=False, problems=()) -> Dict:
    """A candidate of a plan as `ipu-config plan --json` gives it, its placement the documented one (its problems as
    given)."""
    return {"ipus_per_replica": ipus, "replication_factor": replicas, "layers_per_ipu": [3, 7, 7, 7],
            "micro_batch_size": micro_batch, "gradient_accumulation_steps": accumulation,
            "recompute_checkpoint_every_layer": recompute, "optimizer_state_offchip": offchip,
            "replicated_tensor_sharding": sharding, "largest_share": share, "verdict": verdict,
            "fits": verdict == "fits" and not problems,
            "samples_per_second": speed, "step_seconds": None if speed is None else 32 / speed,
            "pipeline_efficiency": 0.8, "ipu_config": {"ipus_per_replica": ipus},
            "placement": dict(documented_placement(), problems=list(problems))}


def written_plan() -> Dict:
    """A plan written by hand in the shape of `ipu-config plan --json`: 8 candidates, best first (one that poptorch
    refuses, one without a time), 5 on the frontier, and Graphcore's config."""
    return {
        "model": "bert-large-uncased", "architecture": "BertForQuestionAnswering", "build": "training", "ipus": 16,
        "ipu": "gc200", "global_batch_size": 2048, "micro_batch_size": None, "sequence_length": 384,
        "decoder_sequence_length": None,
        "candidates": [
            plan_candidate(4, 4, 2, 64, 0.56, "fits", 330.2),
            plan_candidate(4, 4, 4, 32, 0.74, "fits", 352.9),
            plan_candidate(4, 4, 1, 128, 0.48, "fits", 301.5),
            plan_candidate(4, 4, 8, 16, 0.93, "tight", 361.0),
            plan_candidate(2, 8, 2, 64, 1.35, "does not fit", 380.0, sharding=True),
            plan_candidate(4, 4, 2, 4, 0.55, "fits", 120.0, problems=["`gradient_accumulation_steps` is 4, ..."]),
            plan_candidate(4, 4, 2, 16, 0.5, "fits", None),
            plan_candidate(8, 2, 1, 128, 0.30, "fits", 240.0, offchip=False),
        ],
        "pareto": [0, 1, 2, 3, 7],
        "reference": plan_candidate(4, 4, 2, 16, 0.562, "fits", 299.3),
    }
