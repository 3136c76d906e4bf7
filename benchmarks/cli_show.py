"""Start-to-exit time of `ipu-config show` on a local file, against a `python -c` that only loads the same file
with optimum-graphcore 0.7.1's own `IPUConfig`, in the same run.

optimum-graphcore's class is loaded by file path with the test doubles of poptorch/popart standing in for the
Poplar SDK, as the core benchmark loads it. The file is the preset `configs/pipelined-2ipu.json` without the
settings optimum-graphcore does not know, so both sides read the same file. Both run in fresh interpreters of
this Python, offline, with output discarded; the runs alternate. Prints the median of each and the ratios
ours/peer (below 1: `ipu-config show` takes less time than the bare load).

    python benchmarks/cli_show.py [--runs 10]
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
    "import sys; sys.path.insert(0, sys.argv[1]); from doubles import load_upstream_ipu_configuration; "
    "load_upstream_ipu_configuration().IPUConfig.from_pretrained(sys.argv[2])"
)


def shared_file(directory: str) -> str:
    """The preset without the settings this package adds, which optimum-graphcore's class rejects."""
    from optimum_ipu_ext.settings import EXTENSION_SETTINGS

    settings = {key: value for key, value in json.loads(PRESET.read_text()).items() if key not in EXTENSION_SETTINGS}
    path = os.path.join(directory, "ipu_config.json")
    with open(path, "w", encoding="utf-8") as writer:
        json.dump(settings, writer)
    return path


def seconds(command: List[str]) -> float:
    """Wall time of one run of `command`, which must succeed."""
    environment = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    start = time.perf_counter()
    result = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=environment)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited with {result.returncode}:\n{result.stderr.decode()}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10, help="runs of each command (after one warm-up run)")
    args = parser.parse_args()
    if not SCRIPT.exists():
        raise SystemExit(f"{SCRIPT} not found: install the package in this environment (pip install -e .)")

    path = shared_file(tempfile.mkdtemp())
    commands: Dict[str, List[str]] = {
        "ipu-config show": [str(SCRIPT), "show", path],
        "ipu-config show --json": [str(SCRIPT), "show", path, "--json"],
        "optimum-graphcore load (peer)": [sys.executable, "-c", PEER, str(TESTS), path],
    }
    times: Dict[str, List[float]] = {name: [] for name in commands}
    for command in commands.values():
        seconds(command)
    for _ in range(args.runs):
        for name, command in commands.items():
            times[name].append(seconds(command))
    medians = {name: statistics.median(values) for name, values in times.items()}
    peer = medians["optimum-graphcore load (peer)"]

    print(f"Whole process, median of {args.runs} runs, Python {sys.version.split()[0]}, file {path}")
    for name, median in medians.items():
        print(f"  {name:36} {median:6.3f} s")
    for name in ("ipu-config show", "ipu-config show --json"):
        label = f"ratio {name} / peer"
        print(f"  {label:36} {medians[name] / peer:6.2f}")


if __name__ == "__main__":
    main()
