"""`plan()` against Graphcore's own choices: for each model Graphcore published an IPU config and a run for, the plan
at the run's IPUs, lengths and global batch (micro-batch x G x replicas; the micro-batch left free), with Graphcore's
config, as the run built it, for `base`: that config is placed and timed by the same code as the plan's `reference`.
The plan's best is never slower than it. docs/placement.md's table "Against Graphcore's configs" is the one made
here, figures and all (`PYTHONPATH=tests python tests/placement/test_plan_against_graphcore.py` prints it).
"""

from pathlib import Path
from typing import Any, Callable, Dict, NamedTuple, Optional, Union

import pytest

from optimum_ipu_ext import IPUConfig, plan
from optimum_ipu_ext.placement.estimate.memory import Verdict
from support.corpus import FULL_SIZE, loaded
from support.published_runs import OPTIMUM_POD16, OPTIMUM_RUNS, PUBLISHED_RUNS

DOCUMENT = Path(__file__).resolve().parents[2] / "docs" / "placement.md"


class Case(NamedTuple):
    """A run of Graphcore's: its model (a folder of tests/full_size, or the values of a config.json), architecture,
    IPUs, micro-batch, G and lengths (`inputs`: as the table gives them), and its config as the run built it; `why`:
    the table's words on where the plan differs, with the figures of `Figures` (`{reference.x}`, `{best.x}`)."""

    name: str
    model: Union[str, Dict[str, Any]]
    architecture: str
    ipus: int
    micro_batch: int
    accumulation: int
    length: Optional[int]
    decoder_length: Optional[int]
    inputs: str
    config: Callable[[], Any]
    why: str

    @property
    def global_batch(self) -> int:
        return self.micro_batch * self.accumulation * self.config().replication_factor


def optimum_run(name: str, inputs: str, why: str) -> Case:
    """One of the measured optimum-graphcore runs of tests/support/published_runs.py (each with its source there)."""
    run = next(run for run in OPTIMUM_RUNS if run.name == name)
    return Case(name[3:].split(",")[0], run.model, run.architecture, 16, run.micro_batch,
                run.settings["gradient_accumulation_steps"], run.length, None, inputs,
                lambda: IPUConfig(**OPTIMUM_POD16, **run.settings), why)


def published_run(name: str, file: str, micro_batch: int, length: Optional[int], ipus: int, accumulation: int,
                  inputs: str, why: str, **settings: Any) -> Case:
    """A published config (tests/data/published_configs) at the micro-batch and lengths of its run
    (`PUBLISHED_RUNS`), on the run's IPUs (`--n_ipu`: replicas = IPUs / IPUs of a replica) with its G and its other
    overrides."""
    _, model, architecture, _, _, decoder_length = next(
        run for run in PUBLISHED_RUNS if run[0] == file and run[3:5] == (micro_batch, length))

    def config():
        built = loaded(file)
        for setting, value in dict(settings, gradient_accumulation_steps=accumulation,
                                   replication_factor=ipus // built.ipus_per_replica).items():
            setattr(built, setting, value)
        return built

    return Case(name, model, architecture, ipus, micro_batch, accumulation, length, decoder_length, inputs, config,
                why)


# the runs of Graphcore's configs whose IPUs and G are known; ViT-base's published run (`PUBLISHED_RUNS`) is O4
CASES = [
    # O1: huggingface.co/Graphcore/bert-base-uncased @c134b71 (all_results.json, ipu_config.json)
    optimum_run(
        "O1 BERT-base pre-training", "16,384 (8 x 512 x 4), 512 tokens",
        "Only the micro-batch: at 1, the pipeline's ramp of 2 x 4 cycles holds 8 samples, not 64. IPU 0 keeps no "
        "layer: its MLM head computes {best.ipu0:.0f} GFLOP a sample, a layer's IPU {best.busiest:.0f}, and a layer "
        "more there would pace the pipeline. The embedding is not serialized: micro-batch 1 fits without."),
    # O2: optimum-graphcore @26811003, notebooks/introduction_to_optimum_graphcore.ipynb (its printed config)
    optimum_run(
        "O2 BERT-large SQuAD, Graphcore", "256 (1 x 64 x 4), 384 tokens",
        "Replicas of 8 IPUs, 3 layers on each: the busiest IPU computes {best.busiest:.0f} GFLOP a cycle, not "
        "{reference.busiest:.0f} ({best.cycles} cycles take {best.pipeline:.3f} s, {reference.cycles} took "
        "{reference.pipeline:.3f} s). The state fits on chip on 8 IPUs: no Streaming Memory round trip "
        "({reference.update:.3f} s a step)."),
    # O3: huggingface.co/Graphcore/gpt2-wikitext-103 @e76c1eb (train_results.json, the model card's command)
    optimum_run(
        "O3 GPT-2 small WikiText-103", "512 (1 x 128 x 4), 1,024 tokens",
        "Graphcore's pipeline is paced by IPU 0, whose tied head computes {reference.ipu0:.0f} GFLOP a cycle to a "
        "layer IPU's {reference.layer:.0f}; replicas of 2 IPUs, 4 layers beside the head: {best.cycles} cycles of "
        "{best.busiest:.0f} GFLOP take {best.pipeline:.3f} s, not {reference.pipeline:.3f} s. The state on chip "
        "saves {reference.update:.3f} s a step."),
    # O4: huggingface.co/jimypbr/cifar10_outputs (train_results.json), Graphcore/vit-base-ipu @b1115b3
    optimum_run(
        "O4 ViT-base CIFAR-10", "8,704 (17 x 128 x 4), 224 x 224 images",
        "One IPU a replica holds the whole model ({best.share:.0f} % of its memory, the state sharded over 16 "
        "replicas): poptorch recomputes nothing without a pipeline (a quarter of a pipelined IPU's FLOPs) and there "
        "is no ramp: {best.pipeline:.3f} s of computing a step, not {reference.pipeline:.3f} s."),
    # O5: huggingface.co/Graphcore/roberta-base-squad2 @fddddad (train_results.json, the model card's command)
    optimum_run(
        "O5 RoBERTa-base SQuAD v2", "256 (4 x 16 x 4), 384 tokens",
        "IPU 0 holds only the embedding and computes nothing in Graphcore's split: 3 layers on each IPU share the "
        "work by 4, not 3, and micro-batch 1 makes G 64, the ramp's 6 cycles a smaller share ({best.efficiency:.0f} "
        "% of the cycles busy, not {reference.efficiency:.0f} %). The step's overhead of 0.121 s is most of both."),
    # optimum-graphcore @b8cd6e09 examples/language-modeling/README.md, BERT-large pre-training phase 1 and 2
    published_run(
        "BERT-large pre-training, phase 1", "hub__Graphcore__bert-large-ipu@main.json", 8, 128, 16, 2048,
        "65,536 (8 x 2,048 x 4), 128 tokens",
        "The same pace: the 7-layer IPUs compute {best.busiest_sample:.1f} GFLOP a sample in both ([4, 6, 7, 7] "
        "ties with [3, 7, 7, 7] and needs less memory). The state on chip saves {reference.update:.3f} s a step, "
        "micro-batch 1 a shorter ramp.", matmul_proportion=[0.14, 0.19, 0.19, 0.19]),
    published_run(
        "BERT-large pre-training, phase 2", "hub__Graphcore__bert-large-ipu@main.json", 2, 512, 16, 2048,
        "16,384 (2 x 2,048 x 4), 512 tokens",
        "As in phase 1: the same pace ({best.busiest_sample:.0f} GFLOP a sample), the state on chip "
        "({reference.update:.3f} s a step), a shorter ramp.", matmul_proportion=[0.14, 0.19, 0.19, 0.19]),
    # optimum-graphcore @b8cd6e09 examples/language-modeling/README.md, run_clm.py with gpt2-medium
    published_run(
        "GPT-2 medium, WikiText-2", "hub__Graphcore__gpt2-medium-ipu@4063b4ba.json", 1, 1024, 16, 256,
        "1,024 (1 x 256 x 4), 1,024 tokens",
        "Graphcore's build but the optimizer state on chip, where it fits ({best.share:.0f} % of the fullest IPU, "
        "not {reference.share:.0f} %): the model saves its Streaming Memory round trip, {reference.update:.3f} s a "
        "step."),
    # optimum-graphcore @b8cd6e09 examples/audio-classification/README.md, SUPERB keyword spotting
    published_run(
        "HuBERT-base, keyword spotting", "hub__Graphcore__hubert-base-ipu@main.json", 2, 16000, 16, 16,
        "128 (2 x 16 x 4), 1 s of audio",
        "A step computes little: the overhead of 0.121 s is {reference.overhead_share:.0f} % of Graphcore's, whose "
        "IPU 0, the feature extractor's convolutions and no layer, paces the pipeline ({reference.ipu0:.0f} GFLOP a "
        "cycle, the layers' IPUs at most {reference.layer:.0f}). One IPU a replica recomputes nothing and has no ramp "
        "({best.pipeline:.4f} s of computing a step, not {reference.pipeline:.4f} s) and keeps the state on chip "
        "({reference.update:.4f} s saved), for {best.reduction:.4f} s of summing the gradients over 16 replicas."),
    # optimum-graphcore @b8cd6e09 examples/speech-pretraining/README.md, the base model
    published_run(
        "Wav2Vec2-base pre-training", "hub__Graphcore__wav2vec2-base-ipu@main.json", 1, 249600, 16, 32,
        "128 (1 x 32 x 4), 15.6 s of audio",
        "Graphcore's IPU 0 holds 6 of the feature extractor's 7 convolutions (the layer list counts them: 23 "
        "layers) and computes {reference.ipu0:.0f} GFLOP a cycle, its others {reference.rest}; replicas of 2 IPUs, "
        "the convolutions and 3 encoder layers on one, split the work nearly evenly ({best.all}), and their pipeline "
        "of 2 stages ramps for 2 cycles, not 6."),
    # optimum-graphcore @b8cd6e09 notebooks/mt5_translation.ipynb: 4 IPUs (n_ipu), G = 128 / replicas
    published_run(
        "MT5-small translation", "hub__Graphcore__mt5-small-ipu@main.json", 1, 128, 4, 128,
        "128 (1 x 128 x 1), 128 tokens each way",
        "Graphcore's IPU 3 holds the untied LM head alone and paces the pipeline ({reference.busiest:.0f} GFLOP a "
        "cycle, the layers' IPUs {reference.layered}); 2 replicas of 2 IPUs, the head beside 7 decoder layers "
        "({best.busiest:.0f}), take half the cycles each ({best.cycles}, not {reference.cycles}) and shard the "
        "optimizer state, still in Streaming Memory, over 2: its round trip takes {best.update:.3f} s a step, not "
        "{reference.update:.3f} s. The embedding is serialized in 4 on IPU 0, not split in 8 over IPUs 0 and 1."),
]


class Figures:
    """What the table's words quote of a candidate: the GFLOP of a micro-batch on its busiest IPU, on IPU 0, on the
    busiest other, a sample's on the busiest, each IPU's (all, those after IPU 0, those with layers), a step's parts in
    seconds, its cycles, the share of them every IPU is busy and of the step the overhead takes, and its fullest IPU's
    share of memory (%)."""

    def __init__(self, candidate):
        placement, time = candidate.placement, candidate.placement.time
        flops = [ipu.work.flops / 1e9 for ipu in placement.ipus]
        self.busiest, self.ipu0, self.layer = max(flops), flops[0], max(flops[1:], default=0.0)
        self.busiest_sample = self.busiest / candidate.micro_batch_size
        self.all = ", ".join(f"{value:.0f}" for value in flops)
        self.rest = ", ".join(f"{value:.0f}" for value in flops[1:])
        self.layered = " and ".join(f"{value:.0f}" for value, ipu in zip(flops, placement.ipus) if ipu.layers)
        self.cycles = placement.schedule.cycles
        self.efficiency = 100 * placement.schedule.efficiency
        self.pipeline, self.update = time.pipeline_seconds, time.weight_update_seconds
        self.reduction, self.overhead_share = time.reduction_seconds, 100 * time.overhead_seconds / time.step_seconds
        self.share = 100 * candidate.largest_share


def planned(name: str):
    case = next(case for case in CASES if case.name == name)
    model = case.model if isinstance(case.model, dict) else str(FULL_SIZE / case.model)
    return plan(model, case.ipus, global_batch_size=case.global_batch, sequence_length=case.length,
                decoder_sequence_length=case.decoder_length, architecture=case.architecture, base=case.config())


def build(candidate) -> str:
    """A candidate's build as the table gives it."""
    settings = candidate.build
    place = "off chip" if settings["optimizer_state_offchip"] else "on chip"
    ipus = settings["ipus_per_replica"]
    return (f"{ipus} IPU{'s' if ipus > 1 else ''} x {settings['replication_factor']}: "
            f"{list(settings['layers_per_ipu'])}, micro-batch {candidate.micro_batch_size}, "
            f"G {settings['gradient_accumulation_steps']}, state {place}")


def row(case: Case) -> str:
    found = planned(case.name)
    reference, best = found.reference, found.best
    speed = (f"{best.samples_per_second / reference.samples_per_second:.3f} "
             f"({reference.samples_per_second:,.0f} to {best.samples_per_second:,.0f})")
    why = case.why.format(reference=Figures(reference), best=Figures(best))
    return f"| {case.name} | {case.ipus} | {case.inputs} | {build(reference)} | {build(best)} | {speed} | {why} |"


HEADER = ("| model, run | IPUs | global batch (micro-batch x G x replicas), inputs | Graphcore's config "
          "| the plan's best | speed-up (samples a second) | where they differ, and why |\n"
          "| --- | --- | --- | --- | --- | --- | --- |")


def table() -> str:
    return "\n".join([HEADER, *(row(case) for case in CASES)])


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_graphcore_s_config_is_timed_as_the_plan_s_reference_and_the_best_is_never_slower(case):
    found = planned(case.name)
    reference = found.reference
    assert reference is not None  # the config runs on the plan's IPUs and batch
    assert (reference.micro_batch_size, reference.build["gradient_accumulation_steps"]) == (
        case.micro_batch, case.accumulation)
    assert reference.verdict != Verdict.DOES_NOT_FIT and not reference.placement.problems
    assert found.best is not None
    assert found.best.samples_per_second >= reference.samples_per_second


def test_the_plan_takes_micro_batch_1_for_every_run():
    """The time model has no efficiency gain for a larger micro-batch (docs/placement.md owns it as its limit)."""
    assert {planned(case.name).best.micro_batch_size for case in CASES} == {1}


def test_the_documentation_gives_this_table():
    assert table() in DOCUMENT.read_text(encoding="utf-8")


if __name__ == "__main__":
    print(table())
