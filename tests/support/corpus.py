"""The corpus the tests read: configs as they were published (`data/published_configs`, with their sources in
`index.json`) and full-size models known by their `config.json` alone (`full_size`), with their sizes."""

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
PUBLISHED_CONFIGS = TESTS / "data" / "published_configs"
FULL_SIZE = TESTS / "full_size"
# their parameters as transformers 4.29.2 builds them (each tied weight once), as their model cards give them
FULL_SIZE_PARAMETERS = {
    "bert-large-uncased": 335_174_458, "gpt2-medium": 354_823_168, "t5-small": 60_506_624,
    "flan-t5-xl": 2_849_757_184, "whisper-small": 241_734_912, "wav2vec2-base": 95_044_608,
    "mt5-small": 300_176_768,
}
