"""Importing a hand-written builder's options and rebuilding them, against running the builder itself.

The builder is Graphcore's public BERT application's `get_options` (re-written as
tests/support/builders/bert_options.py), for its BERT-Large pre-training configuration, run on the test doubles of
poptorch/popart. Both sides build `poptorch.Options` on the same doubles; ours reads them into a config
(`IPUConfig.from_options`) and builds them again (`to_options()`). Prints the best time per call of each, timed in
alternation, and the ratio ours/builder: what a config costs over the code it replaces (above 1: it costs more).

    python benchmarks/import_builder.py [--repeat 15] [--number 50]
"""

import argparse
import importlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from config_ops import best_of_both  # noqa: E402
from optimum_ipu_ext import IPUConfig  # noqa: E402
from support.builders.bert_configs import LAYERS_PER_IPU_LARGE, PRETRAINING_LARGE_128  # noqa: E402
from support.doubles import installed  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--number", type=int, default=50)
    args = parser.parse_args()

    with installed(hardware_version=2):
        get_options = importlib.import_module("support.builders.bert_options").get_options
        bert_config = argparse.Namespace(**PRETRAINING_LARGE_128)
        built = get_options(bert_config)
        config = IPUConfig.from_options(training=built, layers_per_ipu=LAYERS_PER_IPU_LARGE)

        def builder():
            return get_options(bert_config)

        def import_options():
            return IPUConfig.from_options(training=built, layers_per_ipu=LAYERS_PER_IPU_LARGE)

        operations = {
            "import (from_options)": import_options,
            "rebuild (to_options)": config.to_options,
            "import + rebuild": lambda: import_options().to_options(),
        }
        print(f"{'BERT get_options, pre-training':32} {'ours (us)':>10} {'builder (us)':>13} {'ratio':>7}")
        for name, ours in operations.items():
            our_time, builder_time = best_of_both(ours, builder, args.repeat, args.number)
            print(f"{name:32} {our_time:10.1f} {builder_time:13.1f} {our_time / builder_time:7.2f}")


if __name__ == "__main__":
    main()
