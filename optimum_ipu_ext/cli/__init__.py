# PYTHON_ARGCOMPLETE_OK (this marker lets argcomplete's global completion complete `ipu-config`)
"""`ipu-config`: review, check, compare, create and share IPU configurations from a terminal or a CI job.

Exit codes: 0 success, 1 invalid configuration or failed operation, 2 usage error. An error is one line on
stderr (`--debug` adds its traceback). Colour and progress indicators appear only on terminals.

May import every layer.
"""

import argparse
import os
import sys
import traceback
from typing import List, Optional, Sequence

from .._version import __version__
from .arguments import add_debug_option
from .commands import COMMANDS
from .output import PROG, Stream, one_line, recorded_warnings

__all__ = ["main"]


def build_parser() -> argparse.ArgumentParser:
    """The parser of `ipu-config` and of each of its commands."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Show, check, compare, create and share IPU configurations (ipu_config.json).",
        epilog="Exit codes: 0 success, 1 invalid configuration or failed operation, 2 usage error. "
        "Run `ipu-config COMMAND --help` for a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s (optimum-ipu-ext) {__version__}")
    add_debug_option(parser)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for command in COMMANDS:
        command.register(subparsers)
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
    out, err = Stream(sys.stdout), Stream(sys.stderr)
    messages: List[str] = []
    failure = None
    try:
        with recorded_warnings() as messages:
            return args.func(args, out, err)
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
