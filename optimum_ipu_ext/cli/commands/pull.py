"""`ipu-config pull`: the configuration of a Hub repository, written to a directory."""

import argparse

from ..arguments import TOKEN_NOTE, add_command_parser, add_force_option, add_pod_type_option, add_revision_option
from ..output import Stream


def register(subparsers) -> None:
    parser = add_command_parser(subparsers, "pull", "Download the configuration of a Hub repository into a directory.",
                                epilog=TOKEN_NOTE)
    parser.add_argument("repo_id", metavar="REPO_ID", help="the repository")
    parser.add_argument("out_dir", metavar="OUT_DIR", help="the directory to write ipu_config.json to")
    add_revision_option(parser, help="branch, tag or commit")
    add_pod_type_option(parser)
    add_force_option(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, out: Stream, err: Stream) -> int:
    from ...settings.sources import is_local
    from ..sources import CommandError, load, write_config

    if is_local(args.repo_id):
        raise CommandError(f"{args.repo_id}: a local path; pull takes a Hub repository id")
    target = write_config(load(args.repo_id, args.revision, pod_type=args.pod_type), args.out_dir, args.force)
    out.write(f"Pulled {args.repo_id}" + (f" at {args.revision}" if args.revision else "") + f" to {target}")
    return 0
