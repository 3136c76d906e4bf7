"""`ipu-config upgrade`: configurations of earlier optimum-graphcore releases rewritten in 0.7.1's terms."""

import argparse

from ..arguments import add_command_parser, add_pod_type_option
from ..output import PROG, Stream, one_line


def register(subparsers) -> None:
    parser = add_command_parser(
        subparsers,
        "upgrade",
        "Rewrite configurations of earlier optimum-graphcore releases in place, in 0.7.1's terms, and say what "
        "changed.",
        epilog="Each FILE that changes is first copied to FILE.bak (refused if FILE.bak exists), unless --no-backup. "
        "A file already in 0.7.1's terms is left as it is. Exit codes: 0 every file upgraded or already current, 1 a "
        "file that cannot be read or upgraded (left untouched), 2 usage error.",
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help="an ipu_config.json, or a directory holding one")
    add_pod_type_option(parser)
    parser.add_argument("--no-backup", action="store_true", help="do not keep the original as FILE.bak")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, out: Stream, err: Stream) -> int:
    from ..sources import CommandError, upgrade_file

    failed = 0
    for source in args.files:
        try:
            out.write(upgrade_file(source, args.pod_type, backup=not args.no_backup))
        except (CommandError, OSError, ValueError, TypeError) as error:
            err.write(f"{PROG}: {err.style('error', 'red')}: {one_line(error)}")
            failed += 1
    return 1 if failed else 0
