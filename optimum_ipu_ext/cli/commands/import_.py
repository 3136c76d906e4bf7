"""`ipu-config import`: the config that rebuilds the options of a hand-written builder or a poptorch option file."""

import argparse
import json
import os
import warnings
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

from ...errors import BuilderError, UnsupportedOptionsError
from ..arguments import add_command_parser, add_force_option, add_set_option, import_source, named_value
from ..output import PROG, Stream

if TYPE_CHECKING:
    from ...settings.mode import Mode

Source = Tuple[str, Optional[str]]  # what `import_source` reads: (path, function), function None for an option file


def register(subparsers) -> None:
    parser = add_command_parser(
        subparsers,
        "import",
        "Run a hand-written builder of poptorch.Options, or read a poptorch option file, and write the config that "
        "rebuilds its options.",
        epilog="Without the Poplar SDK, the builder or the file runs on the package's recorder, a stand-in for the "
        "option API of poptorch, popart and popdist (a process poprun did not launch). An option file is read as "
        "poptorch.Options.loadFromFile reads it (it runs as Python). Prints the settings that differ from "
        "optimum-graphcore's defaults.",
    )
    parser.add_argument("builder", type=import_source, metavar="SOURCE",
                        help="the training build: a builder, PATH.py:FUNCTION (its folder comes first on sys.path "
                        "while it runs), or a poptorch option file")
    parser.add_argument("out_dir", metavar="OUT_DIR", help="the directory to write ipu_config.json to")
    parser.add_argument("--arg", action="append", type=named_value, metavar="NAME=VALUE",
                        help="an attribute of the namespace passed as the builder's first argument; VALUE is read "
                        "as JSON (4, true, [1, 2], \"x\"), else kept as text; repeat it")
    parser.add_argument("--kwarg", action="append", type=named_value, metavar="NAME=VALUE",
                        help="a keyword argument of the builder, VALUE read as for --arg; repeat it")
    parser.add_argument("--inference", type=import_source, metavar="SOURCE",
                        help="a separate inference build: a builder, PATH.py:FUNCTION, called with the same --arg "
                        "and --kwarg, or a poptorch option file")
    add_set_option(parser, help="a setting the options cannot tell (layers_per_ipu, ...), written as for `show --set`")
    add_force_option(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, out: Stream, err: Stream) -> int:
    from ...config.plain import PlainIPUConfig
    from ...options.option_file_import import import_located, option_file_sources, options_from_lines
    from ...recorder import sdk_modules
    from ...settings.mode import INFERENCE, TRAINING
    from ...settings.schema import parse_update_string
    from ...settings.table import SETTINGS
    from ..reports import differences_from_defaults, render_differences
    from ..sources import CONFIG_NAME, refuse_to_overwrite, write_config

    # before the builder runs: it may take a while
    refuse_to_overwrite(os.path.join(args.out_dir, CONFIG_NAME), args.force)
    sources = dict(_given({TRAINING: args.builder, INFERENCE: args.inference}))
    if (args.arg or args.kwarg) and all(function is None for _, function in sources.values()):
        args.parser.error("--arg and --kwarg are passed to a builder (PATH.py:FUNCTION); an option file takes none")
    overrides = parse_update_string(",".join(args.set), SETTINGS) if args.set else {}
    files = {mode: option_file_sources(mode, path) for mode, (path, function) in sources.items() if function is None}
    names = " and ".join(f"{path}{':' + function if function else ''} ({mode})"
                         for mode, (path, function) in sources.items())
    with sdk_modules() as recorded:
        options, written = {}, {}
        for mode, (path, function) in sources.items():
            if function is None:
                options[mode], written[mode] = options_from_lines(files[mode], mode)
            else:
                options[mode] = _run_builder(path, function, args)
        try:
            with warnings.catch_warnings(record=True) as dropped:
                warnings.simplefilter("always")
                config = import_located(PlainIPUConfig, options, written, overrides)
        except UnsupportedOptionsError as error:
            err.write(f"{PROG}: {err.style('error', 'red')}: no IPU config rebuilds these options of {names}:")
            for option, problem in sorted(error.options.items()):
                where = f"{error.locations[option]}: " if option in error.locations else ""
                err.write(f"  {where}{option}: {problem}")
            return 1
    written_to = write_config(config, args.out_dir, args.force)  # before any output: a reader may go away
    for warning in dropped:
        err.write(f"{PROG}: warning: {warning.message}")
    out.write(f"Imported {names}, run on {'the recorder (no Poplar SDK here)' if recorded else 'poptorch'}")
    out.write()
    render_differences(differences_from_defaults(config), out)
    out.write()
    out.write(f"Wrote {written_to}")
    return 0


def _given(sources: Dict["Mode", Optional[Source]]) -> List[Tuple["Mode", Source]]:
    """The (mode, (path, function)) of the sources given, function `None` for an option file."""
    return [(mode, source) for mode, source in sources.items() if source is not None]


def _run_builder(path: str, function: str, args: argparse.Namespace):
    """The options of the builder, called with `--arg` and `--kwarg`; where it fails after being given a namespace
    whose attributes it never read, the error says to pass its parameters with `--kwarg`."""
    from ...recorder import run_builder
    from ..sources import CommandError

    arguments = None if args.arg is None else dict(args.arg)
    try:
        return run_builder(path, function, arguments, dict(args.kwarg or ()))
    except BuilderError as error:
        if not error.parameters:
            raise
        given = [f"--kwarg {name}={_typed(value)}" for name, value in (arguments or {}).items()
                 if name in error.parameters]
        example = f", here {' '.join(given)}" if given else f" (it takes {', '.join(error.parameters)})"
        raise CommandError(
            f"{error.builder} {error.problem}; it was given an argparse.Namespace as its first argument"
            f"{' (--arg)' if arguments else ''} and read none of its attributes: pass its parameters with "
            f"--kwarg NAME=VALUE{example}"
        ) from error


def _typed(value) -> str:
    """A value of `--arg` as typed: JSON, or the text that is not JSON."""
    if isinstance(value, str):
        try:
            json.loads(value)
        except ValueError:
            return value
    return json.dumps(value)
