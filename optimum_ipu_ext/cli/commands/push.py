"""`ipu-config push`: a local configuration uploaded to a Hub repository."""

import argparse

from ..arguments import TOKEN_NOTE, add_command_parser, add_revision_option
from ..output import Stream


def register(subparsers) -> None:
    parser = add_command_parser(
        subparsers, "push", "Upload a configuration to a Hub repository, created if needed, keeping its model card.",
        epilog=TOKEN_NOTE + " Prints the URL of the commit or pull request, or that nothing changed.",
    )
    parser.add_argument("source", metavar="SOURCE", help="a JSON file, or a directory holding ipu_config.json")
    parser.add_argument("repo_id", metavar="REPO_ID", help="the repository, e.g. my-org/bert-base-ipu")
    parser.add_argument("--private", action="store_true",
                        help="create the repository private; an error if it exists and is public")
    add_revision_option(parser, help="push to this branch, created if needed", metavar="BRANCH")
    parser.add_argument("--create-pr", action="store_true", help="open a pull request rather than commit")
    parser.add_argument("--commit-message", metavar="MESSAGE", help="the commit message")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, out: Stream, err: Stream) -> int:
    from ..sources import load_local, push

    config = load_local(args.source)
    url = push(config, args.repo_id, args.private, args.revision, args.create_pr, args.commit_message)
    branch = f" (branch {args.revision})" if args.revision else ""
    if url is None:
        pull_request = "; no pull request opened" if args.create_pr else ""
        out.write(f"no change: {args.repo_id}{branch} already holds this config{pull_request}")
    else:
        out.write(f"Pushed {args.source} to {args.repo_id}{branch}: {url}")
    return 0
