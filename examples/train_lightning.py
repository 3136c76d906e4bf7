"""Train a tiny Lightning module on IPUs with lightning-graphcore's IPUStrategy and a config of this package.

    python examples/train_lightning.py [--config configs/pipelined-2ipu.json] [--replication-factor 2]
                                       [--steps 2] [--out out/lightning]

Needs `pip install lightning-graphcore==0.1.0 "pytorch-lightning==2.0.*" "setuptools<80.9"`: lightning-graphcore
0.1.0 imports modules of Lightning 2.0, and Lightning 2.0 imports pkg_resources. The model is two layers, the data
random features made in memory. The preset pipelines 2 IPUs, so the second layer begins a second block; 2 replicas
use 4 IPUs. Without the Poplar SDK it stops before training, with one line.
"""

import argparse
import sys
from pathlib import Path

import pytorch_lightning as pl
import torch
from lightning_graphcore import IPUAccelerator, IPUStrategy

from optimum_ipu_ext import IPUConfig, PoplarSDKNotFoundError

PRESET = Path(__file__).resolve().parents[1] / "configs" / "pipelined-2ipu.json"
FEATURES, CLASSES = 8, 3


class TinyClassifier(pl.LightningModule):
    """Two linear layers; each step returns its loss."""

    def __init__(self):
        super().__init__()
        self.hidden = torch.nn.Sequential(torch.nn.Linear(FEATURES, 16), torch.nn.ReLU())
        self.head = torch.nn.Linear(16, CLASSES)
        self.loss = torch.nn.CrossEntropyLoss()

    def forward(self, features):
        return self.head(self.hidden(features))

    def training_step(self, batch, batch_index):
        features, labels = batch
        return self.loss(self(features), labels)

    def validation_step(self, batch, batch_index):
        features, labels = batch
        return self.loss(self(features), labels)

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)  # PopTorch runs torch's AdamW on the IPU


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
    parser.add_argument("--out", default="out/lightning")
    args = parser.parse_args()

    config = IPUConfig.from_pretrained(args.config, replication_factor=args.replication_factor)
    model = TinyClassifier()

    training_options = config.to_options()  # stops here, with PoplarSDKNotFoundError, where the SDK is missing
    inference_options = config.to_options(for_inference=True)
    import poptorch  # the SDK's, found by to_options()

    model.head = poptorch.BeginBlock(model.head, ipu_id=1)  # the second stage of the pipeline, on IPU 1
    # micro batches of 1: each batch of these loaders combines batch_size_factor() of them for one step
    train_loader = poptorch.DataLoader(training_options, random_samples(config.batch_size_factor() * args.steps))
    val_loader = poptorch.DataLoader(inference_options, random_samples(config.batch_size_factor(for_inference=True)))
    strategy = IPUStrategy(training_opts=training_options, inference_opts=inference_options)
    trainer = pl.Trainer(accelerator=IPUAccelerator(), strategy=strategy, max_steps=args.steps,
                         num_sanity_val_steps=0, default_root_dir=args.out)
    trainer.fit(model, train_loader, val_loader)  # compiles for the IPU, then trains


if __name__ == "__main__":
    try:
        main()
    except PoplarSDKNotFoundError as error:
        sys.exit(f"{Path(__file__).name}: needs the Poplar SDK ({error.name} is not installed): run it on an IPU "
                 "host with the SDK enabled; `ipu-config show CONFIG` previews the options on any machine")
