"""What a plan costs: start-to-exit time of `ipu-config plan` for BERT-large pre-training on 16 IPUs at 128 tokens
(global batch 16,384), against a single `ipu-config place` of Graphcore's BERT-large config on the same model, in
the same run: how many placements' time a whole plan takes. The goal: a plan in at most 1 s.

Then the search alone, in this process, against brute force over the same space: every build the plan searches
(replica size, micro-batch, checkpoints, optimizer place) with every split, each placed by `place()`, as
tests/placement/test_planning.py checks the plan. That is BERT-base on 4 IPUs at 128 tokens (global batch 64), a
space small enough to place in full.

The tools that search a parallel config elsewhere run trials: DeepSpeed's autotuner and NeMo's auto-configurator
train each candidate for a few steps on the hardware, Alpa compiles each stage; on an IPU each trial is a compile of
tens of minutes. There is no process to time against them here: a plan places and times its candidates from the
model's config.json, without compiling or running anything.

    python benchmarks/plan.py [--runs 5]
"""

import itertools
import os
import sys
import time
from pathlib import Path
from typing import Dict, List

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
BERT_LARGE = TESTS / "full_size" / "bert-large-uncased"
BERT_LARGE_CONFIG = TESTS / "data" / "published_configs" / "hub__Graphcore__bert-large-ipu@main.json"
SCRIPT = Path(sys.executable).with_name("ipu-config")
GOAL = 1.0  # seconds for a whole plan

os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
from cli import benchmark_parser, medians, parsed  # noqa: E402  (benchmarks/cli.py: commands run in alternation, offline)

PLAN = "ipu-config plan, bert-large pre-training, 16 IPUs"
PLACE = "ipu-config place, bert-large, Graphcore's config (peer)"


def commands() -> Dict[str, List[str]]:
    return {
        PLAN: [str(SCRIPT), "plan", "--model", str(BERT_LARGE), "--architecture", "BertForPreTraining", "--ipus",
               "16", "--global-batch-size", "16384", "--sequence-length", "128"],
        PLACE: [str(SCRIPT), "place", str(BERT_LARGE_CONFIG), "--model", str(BERT_LARGE), "--architecture",
                "BertForPreTraining", "--sequence-length", "128"],
    }


def brute_force(model: Dict, ipus: int, batch: int, length: int) -> float:
    """The fastest build and split that fits, each of the space placed by `place()`, each build running as many
    steps a host call as its even split's step asks (`TimeModel.fewest_steps_per_call`, the plan's rule); returns
    its samples a second. (`in_process` puts tests/ on the path, for `support.splits`.)"""
    from optimum_ipu_ext import PlainIPUConfig
    from optimum_ipu_ext.placement.planning import replica_sizes
    from support.splits import compositions

    layers = model["num_hidden_layers"]
    fastest = 0.0
    for size in replica_sizes(ipus):
        replicas = ipus // size
        for micro_batch in (1 << power for power in range(batch.bit_length())):
            accumulation, remainder = divmod(batch, micro_batch * replicas)
            if remainder or not accumulation:
                continue
            for checkpoints, offchip in itertools.product((False, True), repeat=2):
                settings = dict(ipus_per_replica=size, replication_factor=replicas,
                                gradient_accumulation_steps=accumulation, recompute_checkpoint_every_layer=checkpoints,
                                optimizer_state_offchip=offchip, replicated_tensor_sharding=replicas > 1)
                even = PlainIPUConfig(**settings, layers_per_ipu=[-1] * size).placer(
                    model, micro_batch_size=micro_batch, sequence_length=length)
                settings["device_iterations"] = even.configured.cost_model.time.fewest_steps_per_call(
                    even.place().time)
                for split in compositions(layers, size):
                    config = PlainIPUConfig(**settings, layers_per_ipu=split)
                    placement = config.placement(model, micro_batch_size=micro_batch, sequence_length=length)
                    if placement.fits:
                        fastest = max(fastest, placement.time.samples_per_second)
    return fastest


def in_process() -> Dict[str, float]:
    """Seconds of the plan and of brute force over the same space, and the two answers' samples a second."""
    sys.path.insert(0, str(TESTS))
    from optimum_ipu_ext import PlainIPUConfig, plan
    from support.placement_fixtures import BERT_BASE

    model = dict(BERT_BASE, architectures=["BertForPreTraining"])
    plan(model, 4, global_batch_size=64, sequence_length=128, base=PlainIPUConfig())  # imports, caches
    start = time.perf_counter()
    best = plan(model, 4, global_batch_size=64, sequence_length=128, base=PlainIPUConfig()).best
    planned = time.perf_counter() - start
    start = time.perf_counter()
    fastest = brute_force(model, 4, 64, 128)
    return {"plan": planned, "brute force": time.perf_counter() - start, "plan best": best.samples_per_second,
            "brute force best": fastest}


def main() -> None:
    args = parsed(benchmark_parser(__doc__, 5))
    found = medians(commands(), args.runs)
    print(f"Whole process, median of {args.runs} runs, Python {sys.version.split()[0]}")
    for name, median in found.items():
        verdict = f"  goal <= {GOAL:.2f} s {'met' if median <= GOAL else 'NOT met'}" if name == PLAN else ""
        print(f"  {name:60} {median:6.3f} s{verdict}")
    print(f"  {'ratio plan / place (placements a plan costs)':60} {found[PLAN] / found[PLACE]:6.2f}")
    searched = in_process()
    print("The search alone, bert-base on 4 IPUs, global batch 64 x 128 tokens, in process")
    print(f"  {'plan()':60} {searched['plan']:6.3f} s  best {searched['plan best']:,.1f} samples a second")
    print(f"  {'every build and split placed by place() (peer)':60} {searched['brute force']:6.3f} s  best "
          f"{searched['brute force best']:,.1f} samples a second")
    print(f"  {'ratio plan / brute force':60} {searched['plan'] / searched['brute force']:6.3f}")

if __name__ == "__main__":
    main()
