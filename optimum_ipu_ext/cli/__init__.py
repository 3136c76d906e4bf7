# PYTHON_ARGCOMPLETE_OK (this marker lets argcomplete's global completion complete `ipu-config`)
"""`ipu-config`: review, check, compare, create and share IPU configurations from a terminal or a CI job.

Exit codes: 0 success, 1 invalid configuration or failed operation, 2 usage error. An error is one line on
stderr (`--debug` adds its traceback). Colour and progress indicators appear only on terminals.

May import every layer.
"""

import argparse
import json
import os
import sys
import traceback
from typing import Any, List, Optional, Sequence, Tuple

from .._version import __version__
from .output import PROG, Stream, one_line, recorded_warnings

__all__ = ["main"]


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


SOURCE_HELP = "a JSON file, a directory holding ipu_config.json, or a Hub repository id"
POD_TYPE_HELP = ("for a file of optimum-graphcore 0.2.1-0.6.0: take the values given for this pod type (pod4, pod8, "
                 "pod16, pod32, pod64, pod128, pod256) where a setting has one per pod type (default: their "
                 "\"default\")")
SET_HELP = ("set a setting, written as in IPUConfig.update_from_string: true, 4, 0.1, [0.1 0.2], null, name; "
            "repeat it, or separate assignments with commas")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Show, check, compare, create and share IPU configurations (ipu_config.json).",
        epilog="Exit codes: 0 success, 1 invalid configuration or failed operation, 2 usage error. "
        "Run `ipu-config COMMAND --help` for a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s (optimum-ipu-ext) {__version__}")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help="show the traceback of an error"
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

    def command(name: str, description: str, **kwargs) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=description, description=description, parents=[common], **kwargs)
        sub.set_defaults(parser=sub)
        return sub

    show = command("show", "Summarise a configuration and print the option calls to_options() makes.")
    show.add_argument("source", metavar="SOURCE", help=SOURCE_HELP)
    show.add_argument("--revision", help="branch, tag or commit, for a Hub repository")
    show.add_argument("--pod-type", metavar="POD", help=POD_TYPE_HELP)
    show.add_argument("--set", action="append", type=assignment, metavar="KEY=VALUE", help=SET_HELP)
    show.add_argument("--inference", action="store_true", help="show the inference build rather than training's")
    show.add_argument("--json", action="store_true", help="print the same as JSON")
    show.add_argument("--popdist", type=instance, metavar="NUM_INSTANCES:INDEX",
                      help="preview instance INDEX of `poprun --num-instances NUM_INSTANCES` (the job's replicas "
                      "are the config's replication factor)")

    place = command(
        "place",
        "Place a model on the config's IPUs as optimum-graphcore's parallelize() does: the blocks, layers and "
        "parameters of each IPU, the memory they need, and whether each IPU holds them.",
        epilog="MODEL is a Hub model id or a folder with its config.json; only the headers of its safetensors "
        "checkpoint are read. Exit codes: 0 placed, 1 a config that cannot be placed for this model (with --check: "
        "or an IPU over its memory), 2 usage error.",
    )
    place.add_argument("source", nargs="?", metavar="CONFIG", help=SOURCE_HELP)
    place.add_argument("--model", metavar="MODEL", help="a Hub model id, or a folder holding config.json (required)")
    place.add_argument("--list-architectures", action="store_true",
                       help="list the architectures optimum-graphcore 0.7.1 pipelines, which place takes")
    place.add_argument("--architecture", metavar="NAME",
                       help="the class to place, e.g. BertForQuestionAnswering (default: the one config.json names)")
    place.add_argument("--inference", action="store_true",
                       help="place the inference build (inference settings and parallelize kwargs, weights only)")
    place.add_argument("--fp32", action="store_true", help="weights in fp32, as IPUTrainer with fp32=True")
    place.add_argument("--json", action="store_true", help="print the placement as JSON")
    place.add_argument("--check", action="store_true", help="exit 1 if an IPU's on-chip bytes exceed its memory")
    place.add_argument("--micro-batch-size", type=int, metavar="B",
                       help="count the activations, the pipeline's stashes and the FLOPs of micro-batches of B "
                       "examples (default 1 when a sequence length is given)")
    place.add_argument("--sequence-length", type=int, metavar="S",
                       help="with the activations: S tokens (default 128); Wav2Vec2/HuBERT: S input samples at 16 kHz "
                       "(default 16000); Whisper: the feature extractor's frames; refused for images, whose size is "
                       "config.json's image_size")
    place.add_argument("--decoder-sequence-length", type=int, metavar="T",
                       help="with the activations: an encoder-decoder's decoder takes T tokens (default: S)")
    place.add_argument("--balance", nargs="?", const="memory", choices=("memory", "time"),
                       help="propose the layers_per_ipu that makes the largest on-chip figure smallest (memory, the "
                       "default), or the slowest IPU fastest among the splits that fit (time: needs the activations)")
    place.add_argument("--write", metavar="OUT_DIR", help="with --balance: write the config with the proposed split "
                       "to OUT_DIR/ipu_config.json")
    place.add_argument("--force", action="store_true", help="with --write: overwrite an existing ipu_config.json")
    place.add_argument("--set", action="append", type=assignment, metavar="KEY=VALUE", help=SET_HELP)
    place.add_argument("--revision", help="branch, tag or commit of CONFIG, for a Hub repository")
    place.add_argument("--pod-type", metavar="POD", help=POD_TYPE_HELP)
    place.add_argument("--model-revision", metavar="REVISION", help="branch, tag or commit of MODEL, on the Hub")

    validate = command("validate", "Check configurations: one line per problem, exit 1 if any.",
                       epilog="A directory without ipu_config.json stands for the *.json files it holds.")
    validate.add_argument("sources", nargs="+", metavar="SOURCE", help=SOURCE_HELP)
    validate.add_argument("--revision", help="branch, tag or commit, for Hub repositories")
    validate.add_argument("--pod-type", metavar="POD", help=POD_TYPE_HELP)
    validate.add_argument("--set", action="append", type=assignment, metavar="KEY=VALUE",
                          help=SET_HELP + "; applied to every source before it is checked")

    diff = command("diff", "Compare two configurations: the settings, then the option calls that differ.")
    diff.add_argument("a", metavar="A", help=SOURCE_HELP)
    diff.add_argument("b", metavar="B", help=SOURCE_HELP)
    diff.add_argument("--revision-a", metavar="REVISION", help="revision of A, for a Hub repository")
    diff.add_argument("--revision-b", metavar="REVISION", help="revision of B, for a Hub repository")
    diff.add_argument("--pod-type", metavar="POD", help=POD_TYPE_HELP + "; for both")
    diff.add_argument("--exit-code", action="store_true",
                      help="exit with 1 when a setting differs, 0 when none does (as `git diff --exit-code`)")

    new = command("new", "Write an ipu_config.json from a preset.")
    new.add_argument("preset", nargs="?", metavar="PRESET", help="a preset name (see --list)")
    new.add_argument("out_dir", nargs="?", metavar="OUT_DIR", help="the directory to write ipu_config.json to")
    new.add_argument("--list", action="store_true", help="list the presets")
    new.add_argument("--set", action="append", type=assignment, metavar="KEY=VALUE", help=SET_HELP)
    new.add_argument("--force", action="store_true", help="overwrite an existing ipu_config.json")

    import_ = command(
        "import", "Run a hand-written builder of poptorch.Options, or read a poptorch option file, and write the "
        "config that rebuilds its options.",
        epilog="Without the Poplar SDK, the builder or the file runs on the package's recorder, a stand-in for the "
        "option API of poptorch, popart and popdist (a process poprun did not launch). An option file is read as "
        "poptorch.Options.loadFromFile reads it (it runs as Python). Prints the settings that differ from "
        "optimum-graphcore's defaults.",
    )
    import_.add_argument("builder", type=import_source, metavar="SOURCE",
                         help="the training build: a builder, PATH.py:FUNCTION (its folder comes first on sys.path "
                         "while it runs), or a poptorch option file")
    import_.add_argument("out_dir", metavar="OUT_DIR", help="the directory to write ipu_config.json to")
    import_.add_argument("--arg", action="append", type=named_value, metavar="NAME=VALUE",
                         help="an attribute of the namespace passed as the builder's first argument; VALUE is read "
                         "as JSON (4, true, [1, 2], \"x\"), else kept as text; repeat it")
    import_.add_argument("--kwarg", action="append", type=named_value, metavar="NAME=VALUE",
                         help="a keyword argument of the builder, VALUE read as for --arg; repeat it")
    import_.add_argument("--inference", type=import_source, metavar="SOURCE",
                         help="a separate inference build: a builder, PATH.py:FUNCTION, called with the same --arg "
                         "and --kwarg, or a poptorch option file")
    import_.add_argument("--set", action="append", type=assignment, metavar="KEY=VALUE",
                         help="a setting the options cannot tell (layers_per_ipu, ...), written as for `show --set`")
    import_.add_argument("--force", action="store_true", help="overwrite an existing ipu_config.json")

    export = command(
        "export",
        "Write the options to_options() builds as a poptorch option file, for poptorch.Options.loadFromFile.",
        epilog="The file is for a plain poptorch.Options: under poprun, popdist.poptorch.Options sets the replicas "
        "and process of its instance itself (build those with IPUConfig.to_options()).",
    )
    export.add_argument("source", metavar="SOURCE", help=SOURCE_HELP)
    export.add_argument("-o", "--output", required=True, metavar="FILE", help="the option file to write")
    export.add_argument("--revision", help="branch, tag or commit, for a Hub repository")
    export.add_argument("--pod-type", metavar="POD", help=POD_TYPE_HELP)
    export.add_argument("--set", action="append", type=assignment, metavar="KEY=VALUE", help=SET_HELP)
    export.add_argument("--inference", action="store_true", help="write the inference build rather than training's")
    export.add_argument("--force", action="store_true", help="overwrite an existing FILE")

    command("schema", "Print the JSON Schema of ipu_config.json, for editors (draft 2020-12).",
            epilog="The same schema ships in the package as optimum_ipu_ext/ipu_config.schema.json.")

    token_note = "The Hub token is the one `hf auth login` stores, or HF_TOKEN."
    push_ = command("push", "Upload a configuration to a Hub repository, created if needed, keeping its model card.",
                    epilog=token_note + " Prints the URL of the commit or pull request, or that nothing changed.")
    push_.add_argument("source", metavar="SOURCE", help="a JSON file, or a directory holding ipu_config.json")
    push_.add_argument("repo_id", metavar="REPO_ID", help="the repository, e.g. my-org/bert-base-ipu")
    push_.add_argument("--private", action="store_true",
                       help="create the repository private; an error if it exists and is public")
    push_.add_argument("--revision", metavar="BRANCH", help="push to this branch, created if needed")
    push_.add_argument("--create-pr", action="store_true", help="open a pull request rather than commit")
    push_.add_argument("--commit-message", metavar="MESSAGE", help="the commit message")

    pull = command("pull", "Download the configuration of a Hub repository into a directory.",
                   epilog=token_note)
    pull.add_argument("repo_id", metavar="REPO_ID", help="the repository")
    pull.add_argument("out_dir", metavar="OUT_DIR", help="the directory to write ipu_config.json to")
    pull.add_argument("--revision", help="branch, tag or commit")
    pull.add_argument("--pod-type", metavar="POD", help=POD_TYPE_HELP)
    pull.add_argument("--force", action="store_true", help="overwrite an existing ipu_config.json")

    upgrade = command(
        "upgrade", "Rewrite configurations of earlier optimum-graphcore releases in place, in 0.7.1's terms, and say "
        "what changed.",
        epilog="Each FILE that changes is first copied to FILE.bak (refused if FILE.bak exists), unless --no-backup. "
        "A file already in 0.7.1's terms is left as it is. Exit codes: 0 every file upgraded or already current, 1 a "
        "file that cannot be read or upgraded (left untouched), 2 usage error.",
    )
    upgrade.add_argument("files", nargs="+", metavar="FILE", help="an ipu_config.json, or a directory holding one")
    upgrade.add_argument("--pod-type", metavar="POD", help=POD_TYPE_HELP)
    upgrade.add_argument("--no-backup", action="store_true", help="do not keep the original as FILE.bak")
    return parser


def complete(parser: argparse.ArgumentParser) -> None:
    """Answers the shell's request for completions (argcomplete's protocol) and exits, if argcomplete is installed.

    Called only when the shell asks (`_ARGCOMPLETE` is set), so that completion costs nothing on other runs.
    """
    try:
        import argcomplete
    except ImportError:
        return
    argcomplete.autocomplete(parser)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """The `ipu-config` console script. Returns the exit code (argparse exits with 2 on usage errors)."""
    parser = build_parser()
    if "_ARGCOMPLETE" in os.environ:
        complete(parser)
    args = parser.parse_args(argv)
    from . import commands  # imported once the arguments are valid, so that --help and usage errors answer at once

    run = getattr(commands, f"command_{args.command}")
    out, err = Stream(sys.stdout), Stream(sys.stderr)
    messages: List[str] = []
    failure = None
    try:
        with recorded_warnings() as messages:
            return run(args, out, err)
    except KeyboardInterrupt:
        return 130
    except Exception as error:
        failure = error
        return 1
    finally:
        for message in messages:
            err.write(f"{PROG}: warning: {message}")
        if failure is not None:
            if args.debug:
                err.text("".join(traceback.format_exception(type(failure), failure, failure.__traceback__)))
            err.write(f"{PROG}: {err.style('error', 'red')}: {one_line(failure)}")
