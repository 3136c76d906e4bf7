"""What calibrating costs, and what a calibration costs `place`.

- `ipu-config calibrate` of 20 runs, whole process (goal: under 2 s): the five IPUTrainer output folders of
  tests/data/trainer_runs and 15 training runs of the shipped dataset (placement/data/measured_runs.json: MLPerf,
  PaddleNLP and the notebooks' runs, as rows of a JSON runs file). It places each run, fits the constants the runs
  determine, and fits them again 20 times, each run left out in turn. Its peer: the same 20 runs placed by
  `ipu-config place`, one process each, as comparing them with the model by hand would take.
- `ipu-config place --calibration FILE`, whole process, against the same `place` without it (its peer), on a
  bert-base-sized folder with the activations counted (a step timed): the goal is that it adds nothing measurable.
  Then in this process: `placement()` with `calibration=` the file, and without, the best of 50 calls each.
- `ipu-config plan --trials 4` of BERT-large pre-training on 16 IPUs (tests/full_size), against the same plan
  without trials (its peer): what choosing the trials adds.

The commands run in fresh interpreters, in alternation, with byte-code caches written on a first run as an
installed package has them. Prints the medians, the goals and the ratios.

    python benchmarks/calibration.py [--runs 5]
"""

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
DATA = TESTS / "data" / "trainer_runs"
PRESET = ROOT / "configs" / "pipelined-2ipu.json"
SCRIPT = Path(sys.executable).with_name("ipu-config")
RUNS = 20
GOAL = 2.0  # seconds `calibrate` may take on 20 runs

os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
from cli import benchmark_parser, medians, parsed  # noqa: E402  (benchmarks/cli.py: commands run in alternation, offline)


def runs_file(folder: str) -> List[Dict[str, object]]:
    """A JSON runs file of 20 runs in `folder` (the five Hub folders, 15 shipped runs); returns the rows."""
    from optimum_ipu_ext.config.user_calibration import run_row
    from optimum_ipu_ext.placement.calibration import read_runs

    hub = json.loads((DATA / "runs.json").read_text(encoding="utf-8"))["runs"]
    hub = [dict(row, folder=str(DATA / row["folder"])) for row in hub]
    shipped = [run_row(run) for run in read_runs() if run.build == "training"][:RUNS - len(hub)]
    rows = hub + shipped
    Path(folder, "runs.json").write_text(json.dumps({"runs": rows}), encoding="utf-8")
    return rows


def place_commands(folder: str, rows: List[Dict[str, object]]) -> List[List[str]]:
    """`ipu-config place` of each run: its config and model written as files, with its micro-batch."""
    from optimum_ipu_ext.config.measured_runs import read_measured_runs

    commands = []
    for index, run in enumerate(read_measured_runs([os.path.join(folder, "runs.json")])):
        here = Path(folder, f"run-{index:02}")
        (here / "model").mkdir(parents=True)
        (here / "model" / "config.json").write_text(json.dumps(run.model), encoding="utf-8")
        (here / "ipu_config.json").write_text(json.dumps(run.ipu_config), encoding="utf-8")
        lengths = ["--sequence-length", str(run.sequence_length)] if run.sequence_length else []
        commands.append([str(SCRIPT), "place", str(here / "ipu_config.json"), "--model", str(here / "model"),
                         "--architecture", run.architecture, "--micro-batch-size", str(run.micro_batch_size),
                         *lengths, "--ipu", run.ipu])
    return commands


def all_of(commands: List[List[str]]) -> List[str]:
    """One command running `commands` one after the other (the peer of calibrate: 20 processes)."""
    import shlex

    return ["sh", "-c", " && ".join(" ".join(shlex.quote(word) for word in command) + " > /dev/null"
                                    for command in commands)]


def in_process(model: str, calibration: str) -> Dict[str, float]:
    """The best of 50 calls of `placement()` with and without `calibration=`."""
    from optimum_ipu_ext import PlainIPUConfig

    config = PlainIPUConfig.from_json_file(str(PRESET))
    found = {}
    for name, options in (("placement()", {}), ("placement(calibration=FILE)", {"calibration": calibration})):
        times = []
        for _ in range(50):
            start = time.perf_counter()
            config.placement(model, micro_batch_size=8, sequence_length=384, **options)
            times.append(time.perf_counter() - start)
        found[name] = min(times)
    return found


def main() -> None:
    args = parsed(benchmark_parser(__doc__, 5))
    sys.path.insert(0, str(TESTS))
    from support.placement_fixtures import bert_base

    with tempfile.TemporaryDirectory() as folder:
        rows = runs_file(folder)
        calibration = os.path.join(folder, "calibration.json")
        calibrate = [str(SCRIPT), "calibrate", os.path.join(folder, "runs.json"), "--output", calibration, "--force"]
        model = bert_base(os.path.join(folder, "bert-base"))
        place = [str(SCRIPT), "place", str(PRESET), "--model", model, "--micro-batch-size", "8", "--sequence-length",
                 "384"]
        commands = {
            f"ipu-config calibrate, {RUNS} runs": calibrate,
            f"ipu-config place of each run, {RUNS} processes (peer)": all_of(place_commands(folder, rows)),
        }
        found = medians(commands, args.runs)
        compared = medians({"ipu-config place --calibration FILE": [*place, "--calibration", calibration],
                            "ipu-config place (peer)": place}, 3 * args.runs)
        planned = [str(SCRIPT), "plan", "--model", str(TESTS / "full_size" / "bert-large-uncased"), "--architecture",
                   "BertForPreTraining", "--ipus", "16", "--global-batch-size", "16384", "--sequence-length", "128"]
        trials = medians({"ipu-config plan --trials 4": [*planned, "--trials", "4"],
                          "ipu-config plan (peer)": planned}, args.runs)
        alone = in_process(model, calibration)
    print(f"Whole process, median of {args.runs} runs, Python {sys.version.split()[0]}")
    ours, peer = found[f"ipu-config calibrate, {RUNS} runs"], found[f"ipu-config place of each run, {RUNS} processes "
                                                                      "(peer)"]
    for name, median in found.items():
        print(f"  {name:60} {median:6.3f} s")
    print(f"  {'goal: calibrate <= ' + format(GOAL, '.1f') + ' s':60} {'met' if ours <= GOAL else 'NOT met'}")
    print(f"  {'ratio calibrate / peer':60} {ours / peer:6.2f}")
    print(f"Whole process, median of {3 * args.runs} runs")
    for name, median in compared.items():
        print(f"  {name:60} {median:6.3f} s")
    calibrated, bare = compared["ipu-config place --calibration FILE"], compared["ipu-config place (peer)"]
    print(f"  {'--calibration adds':60} {calibrated - bare:+6.3f} s")
    print(f"  {'ratio place --calibration / place':60} {calibrated / bare:6.2f}")
    print(f"Whole process, median of {args.runs} runs")
    for name, median in trials.items():
        print(f"  {name:60} {median:6.3f} s")
    print(f"  {'ratio plan --trials 4 / plan':60} "
          f"{trials['ipu-config plan --trials 4'] / trials['ipu-config plan (peer)']:6.2f}")
    print("In process, the best of 50 calls")
    for name, seconds in alone.items():
        print(f"  {name:60} {1e3 * seconds:6.2f} ms")
    print(f"  {'ratio placement(calibration=FILE) / placement()':60} "
          f"{alone['placement(calibration=FILE)'] / alone['placement()']:6.2f}")


if __name__ == "__main__":
    main()
