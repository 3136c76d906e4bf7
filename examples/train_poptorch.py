"""Train a tiny torch model with plain PopTorch and a config of this package.

    python examples/train_poptorch.py [--config configs/pipelined-2ipu.json] [--replication-factor 2] [--steps 2]

The model is two layers, the data random features made in memory. The preset pipelines 2 IPUs, so the second
layer begins a second block; 2 replicas use 4 IPUs. Without the Poplar SDK it stops before training, with one line.
"""

import argparse
import sys
from pathlib import Path

import torch

from optimum_ipu_ext import IPUConfig, PoplarSDKNotFoundError

PRESET = Path(__file__).resolve().parents[1] / "configs" / "pipelined-2ipu.json"
FEATURES, CLASSES = 8, 3


class TinyClassifier(torch.nn.Module):
    """Two linear layers; with labels, it returns the loss too, which PopTorch trains on."""

    def __init__(self):
        super().__init__()
        self.hidden = torch.nn.Sequential(torch.nn.Linear(FEATURES, 16), torch.nn.ReLU())
        self.head = torch.nn.Linear(16, CLASSES)
        self.loss = torch.nn.CrossEntropyLoss()

    def forward(self, features, labels=None):
        logits = self.head(self.hidden(features))
        if labels is None:
            return logits
        return logits, self.loss(logits, labels)


def random_samples(size: int) -> torch.utils.data.TensorDataset:
    generator = torch.Generator().manual_seed(0)
    return torch.utils.data.TensorDataset(
        torch.randn(size, FEATURES, generator=generator), torch.randint(CLASSES, (size,), generator=generator)
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default=str(PRESET), help="a config file, folder or Hub name")
    parser.add_argument("--replication-factor", type=int, default=2)
    parser.add_argument("--steps", type=int, default=2)
    args = parser.parse_args()

    config = IPUConfig.from_pretrained(args.config, replication_factor=args.replication_factor)
    model = TinyClassifier()
    # a micro batch of 1: one training step takes batch_size_factor() samples
    dataset = random_samples(config.batch_size_factor() * args.steps)

    options = config.to_options()  # stops here, with PoplarSDKNotFoundError, where the Poplar SDK is missing
    import poptorch  # the SDK's, found by to_options()

    model.head = poptorch.BeginBlock(model.head, ipu_id=1)  # the second stage of the pipeline, on IPU 1
    loader = poptorch.DataLoader(options, dataset, batch_size=1, shuffle=True)
    optimizer = poptorch.optim.AdamW(model.parameters(), lr=1e-3)
    training_model = poptorch.trainingModel(model, options=options, optimizer=optimizer)
    for step, (features, labels) in enumerate(loader):
        _, loss = training_model(features, labels)  # the first call compiles for the IPU
        print(f"step {step}: loss {loss.mean().item():.4f}")
    training_model.detachFromDevice()


if __name__ == "__main__":
    try:
        main()
    except PoplarSDKNotFoundError as error:
        sys.exit(f"{Path(__file__).name}: needs the Poplar SDK ({error.name} is not installed): run it on an IPU "
                 "host with the SDK enabled; `ipu-config show CONFIG` previews the options on any machine")
