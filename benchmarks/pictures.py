"""What drawing a placement costs: start-to-exit time of `ipu-config place --svg FILE` (and `--html FILE`), against
its peer, the same `ipu-config place` without a picture, on the same model in the same run. The goal: a picture adds
at most 0.1 s.

Two placements of a bert-base-sized folder on the bundled preset: the parameters only, and with the activations
counted (`--micro-batch-size 8 --sequence-length 384`: the schedule of 132 cycles is drawn too); and of bert-large on
Graphcore's 4-IPU config, 16 micro-batches of 2 x 512 tokens (the picture of docs/placement.md). The commands run in
fresh interpreters, in alternation, with byte-code caches written on a first run as an installed package has them.
Then the drawing alone, in this process: `placement_svg` and `placement_page` of each placement's dict, the best of
50 calls. Prints the medians, the differences against the peer and the ratios.

    python benchmarks/pictures.py [--runs 10]
"""

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, NamedTuple, Tuple

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
PRESET = ROOT / "configs" / "pipelined-2ipu.json"
BERT_LARGE_CONFIG = TESTS / "data" / "published_configs" / "hub__Graphcore__bert-large-ipu@main.json"
SCRIPT = Path(sys.executable).with_name("ipu-config")
GOAL = 0.1  # seconds a picture may add to `place`

os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
from cli import benchmark_parser, medians, parsed  # noqa: E402  (benchmarks/cli.py: commands run in alternation, offline)


class Case(NamedTuple):
    """A placement: its config, model, placement keywords and `--set` changes."""

    config: Path
    model: str
    options: Dict[str, object]
    changes: Tuple[str, ...] = ()

    def arguments(self) -> List[str]:
        """Its `place` arguments."""
        flags = [part for key, value in self.options.items() for part in (f"--{key.replace('_', '-')}", str(value))]
        return ["place", str(self.config), "--model", self.model, *flags,
                *(part for change in self.changes for part in ("--set", change))]

    def placement(self) -> dict:
        """Its placement's dict, as `--json` prints it."""
        from optimum_ipu_ext import PlainIPUConfig

        config = PlainIPUConfig.from_json_file(str(self.config))
        for change in self.changes:
            key, value = change.split("=")
            setattr(config, key, int(value))
        return config.placement(self.model, **self.options).to_dict()


def cases(folder: str) -> Dict[str, Case]:
    """The placements timed."""
    sys.path.insert(0, str(TESTS))
    from support.placement_fixtures import bert_base

    model = bert_base(os.path.join(folder, "bert-base"))
    return {
        "bert-base": Case(PRESET, model, {}),
        "bert-base, micro-batch 8 x 384": Case(PRESET, model, {"micro_batch_size": 8, "sequence_length": 384}),
        "bert-large, micro-batch 2 x 512": Case(
            BERT_LARGE_CONFIG, str(TESTS / "full_size" / "bert-large-uncased"),
            {"architecture": "BertForPreTraining", "micro_batch_size": 2, "sequence_length": 512},
            ("gradient_accumulation_steps=16",)),
    }


def commands(timed: Dict[str, Case], folder: str) -> Dict[str, Tuple[str, List[str]]]:
    """`{name: (its peer's name, command)}`: each case without a picture (its own peer), with --svg, with --svg and
    --html."""
    found: Dict[str, Tuple[str, List[str]]] = {}
    picture, page = os.path.join(folder, "p.svg"), os.path.join(folder, "p.html")
    for name, case in timed.items():
        peer = f"place, {name} (peer)"
        found[peer] = (peer, [str(SCRIPT), *case.arguments()])
        found[f"place --svg, {name}"] = (peer, [str(SCRIPT), *case.arguments(), "--svg", picture])
        found[f"place --svg --html, {name}"] = (peer, [str(SCRIPT), *case.arguments(), "--svg", picture, "--html",
                                                       page])
    return found


def drawing_alone(timed: Dict[str, Case]) -> Dict[str, float]:
    """The best of 50 calls of each drawing function on each placement's dict, in this process, in seconds."""
    from optimum_ipu_ext.placement.report.page import placement_page
    from optimum_ipu_ext.placement.report.placement_picture import placement_svg

    found = {}
    for name, case in timed.items():
        placement = case.placement()
        for function in (placement_svg, placement_page):
            times = []
            for _ in range(50):
                start = time.perf_counter()
                function(placement)
                times.append(time.perf_counter() - start)
            found[f"{function.__name__}, {name}"] = min(times)
    return found


def main() -> None:
    args = parsed(benchmark_parser(__doc__, 10))
    with tempfile.TemporaryDirectory() as folder:
        placed = cases(folder)
        timed = commands(placed, folder)
        found = medians({name: command for name, (_, command) in timed.items()}, args.runs)
        alone = drawing_alone(placed)
    print(f"Whole process, median of {args.runs} runs, Python {sys.version.split()[0]}")
    for name, (peer, _) in timed.items():
        if name == peer:
            print(f"  {name:58} {found[name]:6.3f} s")
            continue
        added = found[name] - found[peer]
        verdict = "met" if added <= GOAL else "NOT met"
        print(f"  {name:58} {found[name]:6.3f} s  +{added:6.3f} s (goal <= {GOAL} s {verdict})  "
              f"ratio / peer {found[name] / found[peer]:5.3f}")
    print("In process, the best of 50 calls")
    for name, seconds in alone.items():
        print(f"  {name:58} {1000 * seconds:6.1f} ms")


if __name__ == "__main__":
    main()
