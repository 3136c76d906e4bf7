"""Measure one IPU config with optimum-graphcore's IPUTrainer, for `ipu-config calibrate`.

    python examples/measure_ipu_trainer.py --config CONFIG --model MODEL --micro-batch-size B --out DIR
                                           [--sequence-length S] [--decoder-sequence-length T] [--architecture NAME]
                                           [--ipu {gc200,bow}] [--steps 20]

`ipu-config plan --trials K --write OUT_DIR` writes one such command a trial (OUT_DIR/NAME/command.txt). The model is
built from its config.json with random weights (a Hub model's config.json alone is downloaded), and the data are
random inputs of the micro-batch's shape, made in memory: what is measured is the IPUs and the host, not a data
pipeline. IPUTrainer compiles first, untimed, then runs --steps Trainer steps, each one host call of
`device_iterations` optimizer steps. DIR then holds what calibrate reads: the trainer's train_results.json and
all_results.json (`train_samples_per_second`), trainer_state.json, the model's config.json, ipu_config.json, and
ipu_run.json (the micro-batch, the lengths, the architecture and the IPU type, which the others do not hold). No
weights are saved. Without the Poplar SDK it stops before training, with one line.
"""

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Dict, Optional

import torch

from optimum_ipu_ext import IPUConfig, PoplarSDKNotFoundError

RUN_FILE = "ipu_run.json"  # what calibrate reads beside the trainer's files (optimum_ipu_ext/config/measured_runs.py)
# the architectures it makes no inputs for: without a loss to train on, or taking more than random ids and labels
UNSUPPORTED = {"BertModel": "no loss", "MPNetModel": "no loss", "T5EncoderModel": "no loss",
               "LxmertForQuestionAnswering": "its visual features", "Wav2Vec2ForPreTraining": "its masked time steps"}


class RandomInputs(torch.utils.data.Dataset):
    """`size` samples of random inputs and labels of the shape `architecture` trains on."""

    def __init__(self, architecture: str, config: Any, facts: Dict[str, Any], size: int):
        self.samples = [sample(architecture, config, facts, torch.Generator().manual_seed(index))
                        for index in range(min(size, 64))]
        self.size = size

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> Dict[str, torch.Tensor]:
        return self.samples[index % len(self.samples)]


def sample(architecture: str, config: Any, facts: Dict[str, Any],
           generator: torch.Generator) -> Dict[str, torch.Tensor]:
    """One training sample of `architecture` (its inputs as the placement knows them: text, an encoder-decoder's,
    images, audio, speech), random, its lengths `facts`'."""
    from optimum_ipu_ext.placement.models import ARCHITECTURES, MULTIPLE_CHOICES
    from optimum_ipu_ext.placement.models.rules import AUDIO, ENCODER_DECODER, IMAGE, TEXT

    kind = ARCHITECTURES[architecture].inputs
    length, labels = facts["sequence_length"], getattr(config, "num_labels", 2)

    def integers(high: int, *shape: int) -> torch.Tensor:
        return torch.randint(high, shape, generator=generator)

    if kind == TEXT:
        choices = (MULTIPLE_CHOICES,) if architecture.endswith("ForMultipleChoice") else ()
        found = {"input_ids": integers(config.vocab_size, *choices, length),
                 "attention_mask": torch.ones(*choices, length, dtype=torch.long)}
        if architecture == "BartForSequenceClassification":  # it classifies from each sentence's last end token
            found["input_ids"][..., -1] = config.eos_token_id
        if architecture.endswith("ForQuestionAnswering"):
            return {**found, "start_positions": integers(length), "end_positions": integers(length)}
        if architecture.endswith("ForPreTraining"):
            return {**found, "labels": integers(config.vocab_size, length), "next_sentence_label": integers(2)}
        if architecture.endswith(("ForMaskedLM", "LMHeadModel")):
            return {**found, "labels": found["input_ids"]}
        if architecture.endswith("ForTokenClassification"):
            return {**found, "labels": integers(labels, length)}
        return {**found, "labels": integers(MULTIPLE_CHOICES if choices else labels)}
    if kind == ENCODER_DECODER:
        return {"input_ids": integers(config.vocab_size, length),
                "attention_mask": torch.ones(length, dtype=torch.long),
                "labels": integers(config.vocab_size, facts["decoder_sequence_length"] or length)}
    if kind == IMAGE:
        return {"pixel_values": torch.randn(config.num_channels, config.image_size, config.image_size,
                                            generator=generator), "labels": integers(labels)}
    if kind == AUDIO:
        values = torch.randn(length, generator=generator)
        if architecture.endswith("ForCTC"):
            return {"input_values": values, "labels": integers(config.vocab_size, max(1, length // 640))}
        return {"input_values": values, "labels": integers(labels)}
    frames = 2 * config.max_source_positions  # Whisper's encoder takes these
    return {"input_features": torch.randn(config.num_mel_bins, frames, generator=generator),
            "labels": integers(config.vocab_size, facts["decoder_sequence_length"] or config.max_target_positions)}


def save_run(out: str, config: Any, ipu_config: Any, facts: Dict[str, Any]) -> None:
    """Beside the trainer's files in `out`: the model's config.json, ipu_config.json and ipu_run.json."""
    config.save_pretrained(out)
    ipu_config.save_pretrained(out)
    written = {**facts, "written_by": "examples/measure_ipu_trainer.py"}
    Path(out, RUN_FILE).write_text(json.dumps(written, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def model_class(architecture: str) -> Any:
    """The transformers (or optimum-graphcore) class named `architecture`."""
    import transformers

    found: Optional[Any] = getattr(transformers, architecture, None)
    if found is None:  # GroupBERT's are optimum-graphcore's own
        import optimum.graphcore

        found = getattr(optimum.graphcore, architecture)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", required=True, help="the IPU config: a file, a folder or a Hub name")
    parser.add_argument("--model", required=True, help="a folder holding the model's config.json, or a Hub model id")
    parser.add_argument("--architecture", help="the class to train (default: the one config.json names)")
    parser.add_argument("--micro-batch-size", type=int, required=True)
    parser.add_argument("--sequence-length", type=int, help="tokens; audio samples for HuBERT and Wav2Vec2")
    parser.add_argument("--decoder-sequence-length", type=int, help="an encoder-decoder's decoder tokens")
    parser.add_argument("--ipu", choices=("gc200", "bow"), default="gc200", help="the IPUs it runs on")
    parser.add_argument("--steps", type=int, default=20, help="Trainer steps (host calls) measured")
    parser.add_argument("--out", required=True, help="the output folder calibrate reads")
    args = parser.parse_args()

    from transformers import AutoConfig

    ipu_config = IPUConfig.from_pretrained(args.config)
    config = AutoConfig.from_pretrained(args.model)
    architecture = args.architecture or config.architectures[0]
    if architecture in UNSUPPORTED:
        sys.exit(f"{Path(__file__).name}: makes no inputs for {architecture} ({UNSUPPORTED[architecture]}): measure "
                 "it with a script of your own, and give calibrate its figures in a runs file")
    config.architectures = [architecture]
    if getattr(config, "pad_token_id", 0) is None:  # GPT-2 classifies a batch of several sentences by its padding
        config.pad_token_id = config.eos_token_id
    facts = {"micro_batch_size": args.micro_batch_size, "sequence_length": args.sequence_length,
             "decoder_sequence_length": args.decoder_sequence_length, "architecture": architecture, "ipu": args.ipu}
    model = model_class(architecture)(config)
    dataset = RandomInputs(architecture, config, facts,
                           args.steps * args.micro_batch_size * ipu_config.batch_size_factor())

    # IPUTrainer builds the options from the config itself; building them here first stops with one clear error
    # where the Poplar SDK is missing (optimum.graphcore imports poptorch, which ships with the SDK)
    ipu_config.to_options()
    from optimum.graphcore import IPUTrainer, IPUTrainingArguments

    training_args = IPUTrainingArguments(output_dir=args.out, per_device_train_batch_size=args.micro_batch_size,
                                         max_steps=args.steps, report_to="none")
    if ipu_config.seed:  # IPUTrainer sets the config's seed to the arguments' one: keep the config's build exactly
        training_args.seed = ipu_config.seed
    trainer = IPUTrainer(model=model, ipu_config=ipu_config, args=training_args, train_dataset=dataset)
    result = trainer.train()  # compiles for the IPU, untimed, then trains --steps steps
    trainer.save_metrics("train", result.metrics)
    trainer.save_state()
    save_run(args.out, config, ipu_config, facts)
    print(f"Measured {result.metrics['train_samples_per_second']:,.1f} samples a second; ipu-config calibrate "
          f"{args.out} reads it")


if __name__ == "__main__":
    try:
        main()
    except PoplarSDKNotFoundError as error:
        sys.exit(f"{Path(__file__).name}: needs the Poplar SDK ({error.name} is not installed): run it on an IPU "
                 "host with the SDK enabled; `ipu-config place CONFIG --model MODEL` times it on any machine")
