"""`ipu-config diff`: the settings, then the option calls, that differ between two configurations."""

import argparse

from ..arguments import POD_TYPE_HELP, add_command_parser, add_pod_type_option, add_source_argument
from ..output import Stream


def register(subparsers) -> None:
    parser = add_command_parser(subparsers, "diff",
                                "Compare two configurations: the settings, then the option calls that differ.")
    add_source_argument(parser, dest="a", metavar="A")
    add_source_argument(parser, dest="b", metavar="B")
    parser.add_argument("--revision-a", metavar="REVISION", help="revision of A, for a Hub repository")
    parser.add_argument("--revision-b", metavar="REVISION", help="revision of B, for a Hub repository")
    add_pod_type_option(parser, help=POD_TYPE_HELP + "; for both")
    parser.add_argument("--exit-code", action="store_true",
                        help="exit with 1 when a setting differs, 0 when none does (as `git diff --exit-code`)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, out: Stream, err: Stream) -> int:
    from ..reports import render_diff
    from ..sources import load

    a, b = load(args.a, args.revision_a, pod_type=args.pod_type), load(args.b, args.revision_b, pod_type=args.pod_type)
    differ = render_diff(args.a, args.b, a, b, out)
    return 1 if differ and args.exit_code else 0
