"""Graphcore's published configs at the micro-batch and lengths their runs used (`PUBLISHED_RUNS`): the tests place
them (tests/placement/test_calibration.py) and plan against them (tests/placement/test_plan_against_graphcore.py).
The measured runs, with their IPU configs and sources, are the package's dataset,
optimum_ipu_ext/placement/data/measured_runs.json (`calibration.read_runs()`)."""


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
