"""Start-to-exit time of `ipu-config show` and `validate` on local files, against loading the same files with
optimum-graphcore 0.7.1's own `IPUConfig` and against `python -c pass` (the floor: the interpreter alone).

`ipu-config` runs on the package's core for local files, which imports neither transformers nor torch. The peer
is a `python -c` that loads each file with optimum-graphcore's class (loaded by file path with the test doubles of
poptorch/popart standing in for the Poplar SDK, as the other benchmarks load it). The files are the preset
without the settings optimum-graphcore does not know, so both sides read the same files. All commands run in
fresh interpreters of this Python, offline, output discarded, in alternation. Prints the medians, the goals
and the ratios ours/peer and ours/floor.

    python benchmarks/cli.py [--runs 10]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
PRESET = ROOT / "configs" / "pipelined-2ipu.json"
SCRIPT = Path(sys.executable).with_name("ipu-config")
PEER = (
    "import sys; sys.path.insert(0, sys.argv[1]); from support.doubles import load_upstream_ipu_configuration; "
    "cls = load_upstream_ipu_configuration().IPUConfig\n"
    "for path in sys.argv[2:]: cls.from_pretrained(path)"
)
GOALS = {"ipu-config validate, 1 file": 0.15, "ipu-config validate, 100 files": 0.5}
OURS = ("ipu-config show", "ipu-config show --json", "ipu-config validate")


def benchmark_parser(description: str, runs: int) -> argparse.ArgumentParser:
    """A benchmark's command line: `--runs`, default `runs`; add a benchmark's own options, then `parsed()`."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=runs, help="runs of each command (after one warm-up run)")
    return parser


def parsed(parser: argparse.ArgumentParser) -> argparse.Namespace:
    """The benchmark's arguments, once `ipu-config`, which it times, is found beside this Python."""
    args = parser.parse_args()
    if not SCRIPT.exists():
        raise SystemExit(f"{SCRIPT} not found: install the package in this environment (pip install -e .)")
    return args


def shared_files(directory: str, count: int) -> List[str]:
    """`count` copies of the preset without the settings this package adds, which optimum-graphcore rejects."""
    from optimum_ipu_ext.settings.table import EXTENSION_SETTINGS

    settings = {key: value for key, value in json.loads(PRESET.read_text()).items() if key not in EXTENSION_SETTINGS}
    paths = []
    for index in range(count):
        folder = os.path.join(directory, f"config-{index:03}")
        os.makedirs(folder)
        paths.append(os.path.join(folder, "ipu_config.json"))
        with open(paths[-1], "w", encoding="utf-8") as writer:
            json.dump({**settings, "gradient_accumulation_steps": index + 1}, writer)
    return paths


def seconds(command: List[str]) -> float:
    """Wall time of one run of `command`, which must succeed."""
    environment = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    start = time.perf_counter()
    result = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=environment)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited with {result.returncode}:\n{result.stderr.decode()}")
    return elapsed


def medians(commands: Dict[str, List[str]], runs: int) -> Dict[str, float]:
    """The median wall time of each command over `runs` runs, after one warm-up run each, run in alternation."""
    times: Dict[str, List[float]] = {name: [] for name in commands}
    for command in commands.values():
        seconds(command)
    for _ in range(runs):
        for name, command in commands.items():
            times[name].append(seconds(command))
    return {name: statistics.median(values) for name, values in times.items()}


def main() -> None:
    args = parsed(benchmark_parser(__doc__, 10))

    paths = shared_files(tempfile.mkdtemp(), 100)
    commands: Dict[str, List[str]] = {
        "python -c pass (floor)": [sys.executable, "-c", "pass"],
        "ipu-config show, 1 file": [str(SCRIPT), "show", paths[0]],
        "ipu-config show --json, 1 file": [str(SCRIPT), "show", paths[0], "--json"],
        "ipu-config validate, 1 file": [str(SCRIPT), "validate", paths[0]],
        "ipu-config validate, 100 files": [str(SCRIPT), "validate", *paths],
        "optimum-graphcore load, 1 file (peer)": [sys.executable, "-c", PEER, str(TESTS), paths[0]],
        "optimum-graphcore load, 100 files (peer)": [sys.executable, "-c", PEER, str(TESTS), *paths],
    }
    found = medians(commands, args.runs)

    print(f"Whole process, median of {args.runs} runs, Python {sys.version.split()[0]}")
    for name, median in found.items():
        goal = GOALS.get(name)
        verdict = "" if goal is None else f"  goal <= {goal:.2f} s {'met' if median <= goal else 'NOT met'}"
        print(f"  {name:48} {median:6.3f} s{verdict}")
    floor = found["python -c pass (floor)"]
    for name in (f"{command}, 1 file" for command in OURS):
        peer = found["optimum-graphcore load, 1 file (peer)"]
        print(f"  {'ratio ' + name + ' / peer':48} {found[name] / peer:6.2f}")
        print(f"  {'ratio ' + name + ' / floor':48} {found[name] / floor:6.2f}")
    name = "ipu-config validate, 100 files"
    print(f"  {'ratio ' + name + ' / peer':48} {found[name] / found['optimum-graphcore load, 100 files (peer)']:6.2f}")
    print(f"  {'ratio ' + name + ' / floor':48} {found[name] / floor:6.2f}")


if __name__ == "__main__":
    main()
