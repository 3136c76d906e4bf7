"""The arguments several `ipu-config` commands share, each declared once, and the argparse types of the others.

Imports only the standard library, so that building the parser (`--help`, usage errors) stays fast.
"""

import argparse
import json
from typing import Any, Callable, Optional, Tuple

SOURCE_HELP = "a JSON file, a directory holding ipu_config.json, or a Hub repository id"
POD_TYPE_HELP = ("for a file of optimum-graphcore 0.2.1-0.6.0: take the values given for this pod type (pod4, pod8, "
                 "pod16, pod32, pod64, pod128, pod256) where a setting has one per pod type (default: their "
                 "\"default\")")
SET_HELP = ("set a setting, written as in IPUConfig.update_from_string: true, 4, 0.1, [0.1 0.2], null, name; "
            "repeat it, or separate assignments with commas")
REVISION_HELP = "branch, tag or commit, for a Hub repository"
FORCE_HELP = "overwrite an existing ipu_config.json"
JSON_HELP = "print the same as JSON"
DEBUG_HELP = "show the traceback of an error"
TOKEN_NOTE = "The Hub token is the one `hf auth login` stores, or HF_TOKEN."
IPU_HELP = "time a step on GC200 IPUs (IPU-M2000, the default) or Bow IPUs (Bow-2000)"
CALIBRATION_HELP = ("time a step with the constants of FILE, a calibration `ipu-config calibrate` wrote (default: the "
                    "file OPTIMUM_IPU_EXT_CALIBRATION names, else the constants shipped in the package)")
RESERVE_HELP = ("the share of each IPU's memory kept for what is not counted (code, exchange buffers, temporaries); "
                "the verdict is 'fits' where every IPU leaves it, 'tight' within the IPU's memory (default 0.25)")


def assignment(text: str) -> str:
    """The argparse type of `--set`: `KEY=VALUE` (values are read and checked by the class later)."""
    key, equals, _ = text.partition("=")
    if not equals or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return text


def instance(text: str) -> Tuple[int, int]:
    """The argparse type of `--popdist`: `NUM_INSTANCES:INDEX`, two integers."""
    count, colon, index = text.partition(":")
    if not (colon and count.strip().isdecimal() and index.strip().isdecimal()):
        raise argparse.ArgumentTypeError(f"expected NUM_INSTANCES:INDEX, e.g. 4:1, got {text!r}")
    return int(count), int(index)


def import_source(text: str) -> Tuple[str, Optional[str]]:
    """The argparse type of what `import` reads: a builder, `PATH.py:FUNCTION` (split at the last colon), as
    `(path, function)`; any other path is a poptorch option file, `(path, None)`."""
    path, colon, function = text.rpartition(":")
    if (colon and path.strip().endswith(".py")) or text.strip().endswith(".py"):
        if not (colon and function.strip().isidentifier()):
            raise argparse.ArgumentTypeError(
                f"expected PATH.py:FUNCTION for a builder, e.g. builders/bert.py:get_options, got {text!r}"
            )
        return path, function.strip()
    return text, None


def share(text: str) -> float:
    """The argparse type of `--reserve`: a share of an IPU's memory, from 0 to less than 1."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"expected a share of an IPU's memory from 0 to less than 1, e.g. 0.25, got "
                                         f"{text!r}")
    return value


def positive(text: str) -> int:
    """The argparse type of a count (`plan --ipus`, `--top`, ...): a whole number from 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return value


def seconds(text: str) -> float:
    """The argparse type of a time (`--max-latency`): seconds, above 0."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected seconds above 0, e.g. 0.05, got {text!r}")
    return value


def named_value(text: str) -> Tuple[str, Any]:
    """The argparse type of `--arg` and `--kwarg`: `NAME=VALUE`, VALUE read as JSON (4, true, [1, 2], "x"), else
    kept as text."""
    name, equals, value = text.partition("=")
    if not equals or not name.strip().isidentifier():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE with NAME a Python name, got {text!r}")
    try:
        return name.strip(), json.loads(value)
    except ValueError:
        return name.strip(), value


def add_debug_option(parser: argparse.ArgumentParser, default: Any = False) -> None:
    """`--debug`; a command's parser gives it the default `argparse.SUPPRESS`, so that it keeps the one given
    before the command."""
    parser.add_argument("--debug", action="store_true", default=default, help=DEBUG_HELP)


def add_command_parser(subparsers, name: str, description: str, **kwargs) -> argparse.ArgumentParser:
    """The parser of command `name`, with `--debug`; the parsed arguments carry it as `parser`, for usage errors
    found after parsing."""
    parser = subparsers.add_parser(name, help=description, description=description, **kwargs)
    add_debug_option(parser, default=argparse.SUPPRESS)
    parser.set_defaults(parser=parser)
    return parser


def add_source_argument(parser: argparse.ArgumentParser, dest: str = "source", metavar: str = "SOURCE",
                        **kwargs) -> None:
    """A configuration to read: a file, a directory, a preset or a Hub repository."""
    parser.add_argument(dest, metavar=metavar, help=SOURCE_HELP, **kwargs)


def add_set_option(parser: argparse.ArgumentParser, help: str = SET_HELP) -> None:
    """`--set KEY=VALUE`, repeatable: the settings to change."""
    parser.add_argument("--set", action="append", type=assignment, metavar="KEY=VALUE", help=help)


def add_force_option(parser: argparse.ArgumentParser, help: str = FORCE_HELP) -> None:
    """`--force`: overwrite what the command writes."""
    parser.add_argument("--force", action="store_true", help=help)


def add_revision_option(parser: argparse.ArgumentParser, help: str = REVISION_HELP,
                        metavar: Optional[str] = None) -> None:
    """`--revision`: the branch, tag or commit of a Hub repository."""
    parser.add_argument("--revision", metavar=metavar, help=help)


def add_json_option(parser: argparse.ArgumentParser, help: str = JSON_HELP) -> None:
    """`--json`: print the report as JSON."""
    parser.add_argument("--json", action="store_true", help=help)


def add_picture_options(parser: argparse.ArgumentParser, svg_help: str, html_help: str) -> None:
    """`--svg FILE` and `--html FILE`: the picture and the page to write (`cli.picture_files`)."""
    parser.add_argument("--svg", metavar="FILE", help=svg_help)
    parser.add_argument("--html", metavar="FILE", help=html_help)


def add_ipu_option(parser: argparse.ArgumentParser, help: str = IPU_HELP) -> None:
    """`--ipu {gc200,bow}`: the IPU generation a step is timed on."""
    parser.add_argument("--ipu", choices=("gc200", "bow"), default="gc200", help=help)


def add_length_options(parser: argparse.ArgumentParser, kind: Callable[[str], int], help_prefix: str = "") -> None:
    """`--sequence-length S` and `--decoder-sequence-length T`: the lengths of a micro-batch's inputs, read with
    `kind`."""
    parser.add_argument("--sequence-length", type=kind, metavar="S",
                        help=help_prefix + "S tokens (default 128); Wav2Vec2/HuBERT: S input samples at 16 kHz "
                        "(default 16000); Whisper: the feature extractor's frames; refused for images, whose size is "
                        "config.json's image_size")
    parser.add_argument("--decoder-sequence-length", type=kind, metavar="T",
                        help=help_prefix + "an encoder-decoder's decoder takes T tokens (default: S)")


def add_calibration_option(parser: argparse.ArgumentParser, help: str = CALIBRATION_HELP) -> None:
    """`--calibration FILE`: the time model's constants (`placement.estimate.calibration_file`)."""
    parser.add_argument("--calibration", metavar="FILE", help=help)


def add_reserve_option(parser: argparse.ArgumentParser, help: str = RESERVE_HELP) -> None:
    """`--reserve SHARE`: the share of each IPU's memory a placement keeps for what it does not count."""
    parser.add_argument("--reserve", type=share, metavar="SHARE", help=help)


def add_pod_type_option(parser: argparse.ArgumentParser, help: str = POD_TYPE_HELP) -> None:
    """`--pod-type POD`: which of an earlier release's per-pod-type values to take."""
    parser.add_argument("--pod-type", metavar="POD", help=help)


def add_generation_options(parser: argparse.ArgumentParser, kind: Callable[[str], int], batch_help: str) -> None:
    """`--generate` and what generate() is called with (`--batch-size`, `--num-beams`, `--max-length`), and
    `--kwarg NAME=VALUE`, a keyword argument of the generation build's `parallelize()`."""
    parser.add_argument("--generate", action="store_true",
                        help="the generation build, as optimum-graphcore's pipelines generate with it: the encoder "
                        "and the decoder on IPUs of their own, a KV cache on each decoder layer, token by token "
                        "(implies --inference)")
    parser.add_argument("--batch-size", type=kind, metavar="B", help=batch_help)
    parser.add_argument("--num-beams", type=kind, metavar="N", help="with --generate: beams a sequence (default: the "
                        "model's generation config's, config.json num_beams)")
    parser.add_argument("--max-length", type=kind, metavar="L", help="with --generate: tokens generated up to, the "
                        "KV caches' length (default: config.json max_length, else 20)")
    parser.add_argument("--kwarg", action="append", type=named_value, metavar="NAME=VALUE",
                        help="with --generate: a keyword argument of parallelize() for the generation build, set in "
                        "inference_parallelize_kwargs (use_cross_cache=true, on_device_generation_steps=16, "
                        "use_encoder_output_buffer=true, ...); repeat it")


def generation_request(args: argparse.Namespace) -> Any:
    """What `--generate` asks for (`IPUConfig.placement(generate=...)`), or False; a generation option without
    `--generate`, or a micro-batch's option with it, is a usage error."""
    given = {"batch_size": args.batch_size, "num_beams": args.num_beams, "max_length": args.max_length}
    if not args.generate:
        named = [f"--{name.replace('_', '-')}" for name, value in given.items() if value is not None]
        if args.kwarg:
            named.append("--kwarg")
        if named:
            args.parser.error(f"argument {named[0]}: is for the generation build: give --generate too")
        return False
    for option in ("micro_batch_size", "decoder_sequence_length"):
        if getattr(args, option, None) is not None:
            args.parser.error(f"argument --{option.replace('_', '-')}: not allowed with --generate: a generation "
                              "build runs --batch-size sequences, up to --max-length tokens")
    return {name: value for name, value in given.items() if value is not None}
