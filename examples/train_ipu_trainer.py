"""Fine-tune a tiny BERT with optimum-graphcore's IPUTrainer and a config of this package.

    python examples/train_ipu_trainer.py [--config configs/pipelined-2ipu.json] [--replication-factor 2]
                                         [--steps 2] [--out out/ipu-trainer]

The model is a 2-layer BERT built from a config and the data are random token ids made in memory: nothing is
downloaded. The preset pipelines the 2 layers over 2 IPUs; 2 replicas use 4 IPUs. Without the Poplar SDK it stops
before training, with one line.
"""

import argparse
import sys
from pathlib import Path

import torch
from transformers import BertConfig, BertForSequenceClassification

from optimum_ipu_ext import IPUConfig, PoplarSDKNotFoundError

PRESET = Path(__file__).resolve().parents[1] / "configs" / "pipelined-2ipu.json"
SEQUENCE_LENGTH = 16


class RandomSentences(torch.utils.data.Dataset):
    """Sentences of random token ids, each with a label of 2 classes."""

    def __init__(self, size: int, vocab_size: int):
        generator = torch.Generator().manual_seed(0)
        self.input_ids = torch.randint(vocab_size, (size, SEQUENCE_LENGTH), generator=generator)
        self.labels = torch.randint(2, (size,), generator=generator)

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int):
        return {"input_ids": self.input_ids[index], "labels": self.labels[index]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default=str(PRESET), help="a config file, folder or Hub name")
    parser.add_argument("--replication-factor", type=int, default=2)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--out", default="out/ipu-trainer")
    args = parser.parse_args()

    ipu_config = IPUConfig.from_pretrained(args.config, replication_factor=args.replication_factor)
    bert = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=64, max_position_embeddings=SEQUENCE_LENGTH, num_labels=2)
    model = BertForSequenceClassification(bert)
    # a micro batch of 1: one training step takes batch_size_factor() samples
    dataset = RandomSentences(ipu_config.batch_size_factor() * args.steps, bert.vocab_size)

    # IPUTrainer builds the options from the config itself; building them here first stops with one clear error
    # where the Poplar SDK is missing (optimum.graphcore imports poptorch, which ships with the SDK)
    ipu_config.to_options()
    from optimum.graphcore import IPUTrainer, IPUTrainingArguments

    training_args = IPUTrainingArguments(
        output_dir=args.out,
        per_device_train_batch_size=1,
        max_steps=args.steps,
        report_to="none",
    )
    if ipu_config.seed:  # IPUTrainer sets the config's seed to the arguments' one (42 by default): keep the config's
        training_args.seed = ipu_config.seed
    trainer = IPUTrainer(model=model, ipu_config=ipu_config, args=training_args, train_dataset=dataset)
    trainer.train()  # compiles for the IPU, then trains
    trainer.save_model()
    print(f"Trained {args.steps} steps; saved the model in {args.out}")


if __name__ == "__main__":
    try:
        main()
    except PoplarSDKNotFoundError as error:
        sys.exit(f"{Path(__file__).name}: needs the Poplar SDK ({error.name} is not installed): run it on an IPU "
                 "host with the SDK enabled; `ipu-config show CONFIG` previews the options on any machine")
