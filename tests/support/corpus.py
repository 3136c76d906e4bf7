"""The corpus the tests read: configs as they were published (`data/published_configs`, with their sources in
`index.json`) and full-size models known by their `config.json` alone (`full_size`), with their sizes."""

import json
import warnings
from pathlib import Path

from optimum_ipu_ext import IPUConfig

TESTS = Path(__file__).resolve().parents[1]
PUBLISHED_CONFIGS = TESTS / "data" / "published_configs"
FULL_SIZE = TESTS / "full_size"
# each corpus file's source, the release it was written for and the model it was published for
INDEX = json.loads((PUBLISHED_CONFIGS / "index.json").read_text())
# their parameters as transformers 4.29.2 builds them (each tied weight once), as their model cards give them
FULL_SIZE_PARAMETERS = {
    "bert-large-uncased": 335_174_458, "gpt2-medium": 354_823_168, "t5-small": 60_506_624,
    "flan-t5-xl": 2_849_757_184, "whisper-small": 241_734_912, "wav2vec2-base": 95_044_608,
    "mt5-small": 300_176_768, "bert-base-uncased": 109_514_298, "bert-base-multilingual-cased": 177_974_523,
    "roberta-base": 124_697_433, "roberta-large": 355_412_057, "wav2vec2-large-960h": 315_461_792,
    "sentence-t5-base": 109_628_544,
}
# the full-size models whose config.json names a model optimum-graphcore does not pipeline, placed with the head each
# corpus file was run with (tests/placement/test_published_placement.py)
FULL_SIZE_BASE_MODELS = ("bart-base", "hubert-base-ls960", "vit-base-patch16-224-in21k")

# corpus file: its full-size model and the architecture it was run with, or why it is not placed
MODELS = {entry["file"]: entry["model"] for entry in INDEX}
# corpus file: (the setting upstream refuses, the refusal)
REFUSED = {
    "hub__Graphcore__wav2vec2-base-ipu@774002bd.json": (
        "layers_per_ipu", "[2, 1, 4, 3, 3, 3, 3, 0] places 19 layers and the model has 23"),
}
PLACED = sorted(name for name, model in MODELS.items() if "full_size" in model and name not in REFUSED)

# the parameters of a model with another head than the architecture its config.json names, as transformers 4.29.2
# builds it (each tied weight once): {(model, architecture): parameters}
WITH_ANOTHER_HEAD = {
    ("bart-base", "BartForConditionalGeneration"): 139_420_416,
    ("bert-base-multilingual-cased", "BertForSequenceClassification"): 177_854_978,
    ("bert-base-uncased", "BertForPreTraining"): 110_106_428,
    ("bert-base-uncased", "BertForQuestionAnswering"): 108_893_186,
    ("hubert-base-ls960", "HubertForSequenceClassification"): 94_569_090,
    ("roberta-base", "RobertaForMultipleChoice"): 124_646_401,
    ("roberta-base", "RobertaForQuestionAnswering"): 124_056_578,
    ("roberta-large", "RobertaForQuestionAnswering"): 354_312_194,
    ("vit-base-patch16-224-in21k", "ViTForImageClassification"): 85_800_194,
    ("wav2vec2-base", "Wav2Vec2ForCTC"): 94_396_320,
    ("wav2vec2-large-960h", "Wav2Vec2ForPreTraining"): 316_167_424,
}


# the encoder-decoder files whose split upstream refuses for generation (the encoder and the decoder on IPUs of their
# own, as upstream's pipelines build them): the encoder's layers, which the split does not end on a power of two of
# IPUs; the other one, mt5-small's, generates
GENERATION_REFUSED = {
    "hub__Graphcore__t5-small-ipu@7e8abbc8.json": 6,
    "hub__Graphcore__whisper-small-ipu@main.json": 12,
    **{f"optimum-graphcore__{example}.json": 6 for example in (
        "summarization@46596a9b", "summarization@c25614dc", "summarization@e0951130", "translation@46596a9b",
        "translation@83d64e25", "translation@a68820c3")},
}
GENERATING = "hub__Graphcore__mt5-small-ipu@main.json"


def loaded(name, for_generation=False):
    """The corpus file, as `IPUConfig.from_pretrained` loads it; `for_generation`: as upstream's pipelines build it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the migrations of older files, tested in tests/settings/test_migration.py
        config = IPUConfig.from_pretrained(str(PUBLISHED_CONFIGS / name))
    if for_generation:
        config.inference_parallelize_kwargs = {**config.inference_parallelize_kwargs, "for_generation": True}
    return config


def full_size_config(model):
    """The config.json of a full-size model, as a dict."""
    return json.loads((FULL_SIZE / model / "config.json").read_text())
