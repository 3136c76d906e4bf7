"""Speed of everyday config operations, against optimum-graphcore 0.7.1's own `IPUConfig` in the same run.

optimum-graphcore's class is loaded by file path with the test doubles of poptorch/popart standing in
for the Poplar SDK (its `to_options` then builds options on the doubles, as ours does).
Prints, per operation, the best time of each and the ratio ours/theirs (below 1: we are faster). The two sides
are timed in alternation, so that a busy machine slows both alike.

The last lines are the floor of any build of these options: the plan's calls written out by hand as a function
(the printed plan, drawing its temporary file name as `to_options()` does), with no reading, checking or planning
of a config. With a seed, both builds pay poptorch's `randomSeed`, which calls `torch.manual_seed`; the output says
how much of the peer's time that is.

    python benchmarks/config_ops.py [--repeat 15] [--number 200]
"""

import argparse
import importlib.util
import sys
import tempfile
import timeit
from pathlib import Path
from typing import Any, Callable, Tuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from optimum_ipu_ext import IPUConfig  # noqa: E402
from optimum_ipu_ext.sdk.plan import OptionsPlan, TempFile  # noqa: E402
from support.doubles import installed, load_upstream_ipu_configuration  # noqa: E402

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


def hand_written_build(plan: OptionsPlan, path: Path) -> Callable[[], Any]:
    """The calls of `plan` as a function in a module of its own (at `path`), as one writes a build by hand."""
    lines = str(plan).replace(TempFile().render(), "draw_temporary_name()").splitlines()
    imports = [line for line in lines if line.startswith("import ")]
    body = [f"    {line}" for line in lines if line and not line.startswith("import ")]
    source = "\n".join([*imports, "", "", "def build():", *body, "    return opts", ""])
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.draw_temporary_name = lambda: TempFile().resolve({})
    return module.build


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
    seeded_build = (lambda: ours.to_options(compile_only=True), lambda: theirs.to_options(compile_only=True))
    unseeded_build = (
        lambda: ours_unseeded.to_options(compile_only=True), lambda: theirs_unseeded.to_options(compile_only=True)
    )
    print(f"{'operation':34} {'ours (us)':>10} {'optimum-graphcore (us)':>23} {'ratio':>7}  goal")
    with installed():
        floor = hand_written_build(ours.options_plan(compile_only=True), Path(directory, "seeded.py"))
        unseeded_plan = ours_unseeded.options_plan(compile_only=True)
        floor_unseeded = hand_written_build(unseeded_plan, Path(directory, "unseeded.py"))
        operations = {
            "construct from dict": (lambda: IPUConfig.from_dict(CONFIG), lambda: theirs_class.from_dict(CONFIG)),
            "save to JSON": (lambda: ours.save_pretrained(directory), lambda: theirs.save_pretrained(directory)),
            "build the options plan": (lambda: ours.options_plan(compile_only=True), seeded_build[1]),
            "build poptorch.Options (doubles)": seeded_build,
            "build poptorch.Options, no seed": unseeded_build,
            # called through a lambda, as the builds are: torch.manual_seed costs more the deeper the stack
            "floor: the calls by hand": (lambda: floor(), seeded_build[1]),
            "floor: the calls by hand, no seed": (lambda: floor_unseeded(), unseeded_build[1]),
        }
        times = {}
        for name, (our_call, their_call) in operations.items():
            our_time, their_time = times[name] = best_of_both(our_call, their_call, args.repeat, args.number)
            ratio = our_time / their_time
            goal = GOALS.get(name)
            verdict = "" if goal is None else f"<= {goal:.2f} {'met' if ratio <= goal else 'NOT met'}"
            print(f"{name:34} {our_time:10.1f} {their_time:23.1f} {ratio:7.2f}  {verdict}")
    seeding = times["build poptorch.Options (doubles)"][1] - times["build poptorch.Options, no seed"][1]
    print(f"torch.manual_seed in randomSeed: about {seeding:.0f} us of the peer's seeded build "
          f"({seeding / times['build poptorch.Options (doubles)'][1]:.0%}), paid by every build with a seed")


if __name__ == "__main__":
    main()
