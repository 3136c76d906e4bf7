"""Start-to-exit time of `ipu-config place` on a local bert-base-sized model (config.json and a safetensors
checkpoint), against the peer's way to the same answer: building the model with transformers and calling
optimum-graphcore 0.7.1's own `to_pipelined()` and `parallelize()` (poptorch stood in by the test doubles, as the
reference placements of the tests run it) on the IPU-host stack. With the activations counted
(`--micro-batch-size 8 --sequence-length 384`), the peer builds the model and runs one training forward pass of
that micro-batch under PyTorch's accounting (`saved_tensors_hooks`, `FlopCounterMode`), in this interpreter's stack.

Then of `ipu-config place` on full-size models known by their config.json alone (tests/full_size: bert-large,
gpt2-medium, t5-small, flan-t5-xl, whisper-small, wav2vec2-base), sized by the formulas of their architecture, against
the way it sized them before: the same command with the model transformers builds on the meta device
(tests/support/meta_models.py), which imports torch and transformers.

`ipu-config place` reads the checkpoint's header only, or the config.json alone, and imports neither torch nor
transformers. Both sides read the same config.json and the bundled preset (the peer without the settings
optimum-graphcore does not know). They run in fresh interpreters, in alternation, with byte-code caches written on
a first run as an installed package has them. Prints the medians, the goal and the ratios.

    python benchmarks/placement.py [--runs 5] [--peer-python .venv/host/bin/python]
"""

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Dict, List

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
FULL_SIZE = TESTS / "full_size"
PRESET = ROOT / "configs" / "pipelined-2ipu.json"
SCRIPT = Path(sys.executable).with_name("ipu-config")
MODELS = ("bert-large-uncased", "gpt2-medium", "t5-small", "flan-t5-xl", "whisper-small", "wav2vec2-base")
GOALS = {"ipu-config place, bert-base": 0.3, "ipu-config place --balance, bert-base": 0.3,
         "ipu-config place --micro-batch-size 8 --sequence-length 384, bert-base": 0.5,
         **{f"ipu-config place, {model}": 0.3 for model in MODELS}}
# each of ours, and its peer
PEERS = {"ipu-config place, bert-base": "build + parallelize(), bert-base (peer)",
         "ipu-config place --balance, bert-base": "build + parallelize(), bert-base (peer)",
         "ipu-config place --micro-batch-size 8 --sequence-length 384, bert-base":
             "build + one forward pass under PyTorch's accounting (peer)",
         **{f"ipu-config place, {model}": f"meta device, {model}" for model in MODELS}}

# byte-code caches are written on the warm-up run, as an installed package has them
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
from cli import benchmark_parser, medians, parsed  # noqa: E402  (benchmarks/cli.py: commands run in alternation, offline)

# The peer: optimum-graphcore's package stood in as the IPU-host tests stand it in (its real modules, the poptorch
# doubles), then the model transformers builds, pipelined and parallelized.
PEER = """
import importlib, os, sys, types
sys.path.insert(0, sys.argv[1])
from support.doubles import installed, load_upstream_ipu_configuration
upstream = load_upstream_ipu_configuration()
package = types.ModuleType("optimum.graphcore")
package.__path__ = [os.path.dirname(upstream.__file__)]
package.IPUConfig, package.ipu_configuration = upstream.IPUConfig, upstream
sys.modules["optimum.graphcore"], sys.modules["optimum.graphcore.ipu_configuration"] = package, upstream
with installed():
    modeling_utils = importlib.import_module("optimum.graphcore.modeling_utils")
    importlib.import_module("optimum.graphcore.models.bert")
    import transformers
    config = transformers.AutoConfig.from_pretrained(sys.argv[2])
    model = getattr(transformers, config.architectures[0])(config)
    pipelined = modeling_utils.to_pipelined(model, upstream.IPUConfig.from_pretrained(sys.argv[3]))
    pipelined.parallelize()
"""


# `ipu-config place` sizing a model known by its config.json alone on the meta device, as it did before the formulas
META_DEVICE = """
import sys
sys.path.insert(0, sys.argv[1])
from support.meta_models import built_on_the_meta_device
from optimum_ipu_ext.cli import main
from optimum_ipu_ext.placement import placement
placement.parameter_shapes = built_on_the_meta_device
sys.exit(main(sys.argv[2:]))
"""


# The peer of the activations: the model transformers builds, one training forward pass of a micro-batch of 8 x 384
# tokens, every tensor autograd keeps counted once and every FLOP counted
ACCOUNTING_PEER = """
import sys
import torch, transformers
from torch.utils.flop_counter import FlopCounterMode
config = transformers.AutoConfig.from_pretrained(sys.argv[1])
model = getattr(transformers, config.architectures[0])(config).train()
kept = {}
def pack(tensor):
    kept[tensor.untyped_storage().data_ptr()] = tensor.untyped_storage().nbytes()
    return tensor
ids = torch.randint(0, config.vocab_size, (8, 384))
with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor), FlopCounterMode(display=False) as flops:
    model(input_ids=ids, labels=ids)
print(sum(kept.values()), flops.get_total_flops())
"""


def bert_base(folder: str) -> str:
    sys.path.insert(0, str(TESTS))
    from support.placement_fixtures import bert_base as write

    return write(folder)


def peer_config(folder: str) -> str:
    """The preset without the settings this package adds, which optimum-graphcore rejects."""
    from optimum_ipu_ext.settings.table import EXTENSION_SETTINGS

    settings = {key: value for key, value in json.loads(PRESET.read_text()).items() if key not in EXTENSION_SETTINGS}
    path = os.path.join(folder, "peer_ipu_config.json")
    with open(path, "w", encoding="utf-8") as writer:
        json.dump(settings, writer)
    return path


def main() -> None:
    parser = benchmark_parser(__doc__, 5)
    parser.add_argument("--peer-python", default=str(ROOT / ".venv" / "host" / "bin" / "python"),
                        help="the Python of the IPU-host stack, which has optimum-graphcore 0.7.1's models")
    args = parsed(parser)
    if not Path(args.peer_python).exists():
        raise SystemExit(f"{args.peer_python} not found: build the IPU-host stack (make .venv/host/bin/python)")
    with tempfile.TemporaryDirectory() as folder:
        found = measure(args, folder)
    print(f"Whole process, median of {args.runs} runs, Python {sys.version.split()[0]}")
    for name, median in found.items():
        goal = GOALS.get(name)
        verdict = f"  goal <= {goal:.2f} s {'met' if median <= goal else 'NOT met'}" if goal else ""
        print(f"  {name:72} {median:6.3f} s{verdict}")
    for name, peer in PEERS.items():
        print(f"  {'ratio ' + name + ' / peer':72} {found[name] / found[peer]:6.3f}")


def measure(args: argparse.Namespace, folder: str) -> Dict[str, float]:
    """The median seconds of each command, run in alternation."""
    model = bert_base(os.path.join(folder, "bert-base"))
    commands: Dict[str, List[str]] = {
        "ipu-config place, bert-base": [str(SCRIPT), "place", str(PRESET), "--model", model],
        "ipu-config place --balance, bert-base": [str(SCRIPT), "place", str(PRESET), "--model", model, "--balance"],
        "build + parallelize(), bert-base (peer)": [args.peer_python, "-c", PEER, str(TESTS), model,
                                                    peer_config(folder)],
        "ipu-config place --micro-batch-size 8 --sequence-length 384, bert-base": [
            str(SCRIPT), "place", str(PRESET), "--model", model,
            "--micro-batch-size", "8", "--sequence-length", "384"],
        "build + one forward pass under PyTorch's accounting (peer)": [sys.executable, "-c", ACCOUNTING_PEER, model],
    }
    for name in MODELS:
        place = ["place", str(PRESET), "--model", str(FULL_SIZE / name)]
        commands[f"ipu-config place, {name}"] = [str(SCRIPT), *place]
        commands[f"meta device, {name}"] = [sys.executable, "-c", META_DEVICE, str(TESTS), *place]
    return medians(commands, args.runs)


if __name__ == "__main__":
    main()
