"""Speed of everyday config operations, against optimum-graphcore 0.7.1's own `IPUConfig` in the same run.

optimum-graphcore's class is loaded by file path with the test doubles of poptorch/popart standing in
for the Poplar SDK (its `to_options` then builds options on the doubles, as ours does).
Prints, per operation, the best time of each and the ratio ours/theirs (below 1: we are faster). The two sides
are timed in alternation, so that a busy machine slows both alike.

    python benchmarks/config_ops.py [--repeat 7] [--number 200]
"""

import argparse
import sys
import tempfile
import timeit
from pathlib import Path
from typing import Tuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from doubles import installed, load_upstream_ipu_configuration  # noqa: E402

from optimum_ipu_ext import IPUConfig  # noqa: E402

CONFIG = {
    "layers_per_ipu": [3, 5, 4, 4],
    "matmul_proportion": [0.15, 0.3, 0.3, 0.3],
    "replication_factor": 4,
    "gradient_accumulation_steps": 64,
    "device_iterations": 2,
    "replicated_tensor_sharding": True,
    "output_mode": "all",
    "seed": 42,
    "executable_cache_dir": "./exec",
}
GOALS = {
    "construct from dict": 0.5,
    "save to JSON": 1.0,
    "build the options plan": 1.0,
    "build poptorch.Options (doubles)": 0.8,
    "build poptorch.Options, no seed": 0.8,
}


def best_of_both(ours, theirs, repeat: int, number: int) -> Tuple[float, float]:
    """Best time per call of each, in microseconds, timed in alternation."""
    our_times, their_times = [], []
    for _ in range(repeat):
        our_times.append(timeit.timeit(ours, number=number))
        their_times.append(timeit.timeit(theirs, number=number))
    return min(our_times) / number * 1e6, min(their_times) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--number", type=int, default=200)
    args = parser.parse_args()

    theirs_class = load_upstream_ipu_configuration().IPUConfig
    ours, theirs = IPUConfig(**CONFIG), theirs_class(**CONFIG)
    unseeded = dict(CONFIG, seed=None)
    ours_unseeded, theirs_unseeded = IPUConfig(**unseeded), theirs_class(**unseeded)
    directory = tempfile.mkdtemp()
    operations = {
        "construct from dict": (lambda: IPUConfig.from_dict(CONFIG), lambda: theirs_class.from_dict(CONFIG)),
        "save to JSON": (lambda: ours.save_pretrained(directory), lambda: theirs.save_pretrained(directory)),
        "build the options plan": (
            lambda: ours.options_plan(compile_only=True),
            lambda: theirs.to_options(compile_only=True),
        ),
        "build poptorch.Options (doubles)": (
            lambda: ours.to_options(compile_only=True),
            lambda: theirs.to_options(compile_only=True),
        ),
        # poptorch's randomSeed calls torch.manual_seed, which costs both sides the same (about half the peer's time)
        "build poptorch.Options, no seed": (
            lambda: ours_unseeded.to_options(compile_only=True),
            lambda: theirs_unseeded.to_options(compile_only=True),
        ),
    }
    # the floor of any build of these options: the printed plan run as Python, the same calls with no planning
    floors = {
        "floor: the calls alone": compile(str(ours.options_plan(compile_only=True)), "<plan>", "exec"),
        "floor: the calls alone, no seed": compile(str(ours_unseeded.options_plan(compile_only=True)), "<plan>", "exec"),
    }
    operations["floor: the calls alone"] = (lambda: exec(floors["floor: the calls alone"], {}),
                                            operations["build poptorch.Options (doubles)"][1])
    operations["floor: the calls alone, no seed"] = (lambda: exec(floors["floor: the calls alone, no seed"], {}),
                                                     operations["build poptorch.Options, no seed"][1])
    print(f"{'operation':34} {'ours (us)':>10} {'optimum-graphcore (us)':>23} {'ratio':>7}  goal")
    with installed():
        for name, (our_call, their_call) in operations.items():
            our_time, their_time = best_of_both(our_call, their_call, args.repeat, args.number)
            ratio = our_time / their_time
            goal = GOALS.get(name)
            verdict = "" if goal is None else f"<= {goal:.2f} {'met' if ratio <= goal else 'NOT met'}"
            print(f"{name:34} {our_time:10.1f} {their_time:23.1f} {ratio:7.2f}  {verdict}")


if __name__ == "__main__":
    main()
