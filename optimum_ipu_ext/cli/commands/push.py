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
    parser.add_argument("--model", metavar="MODEL", help="also show on the model card where this model goes on the "
                        "config's IPUs: the picture of its placement (ipu_config_placement.svg, committed beside the "
                        "card) and its table; a Hub model id or a folder, as place takes it")
    parser.add_argument("--architecture", metavar="NAME", help="with --model: the class to place (default: the one "
                        "config.json names)")
    parser.add_argument("--micro-batch-size", type=int, metavar="B", help="with --model: count the activations, "
                        "stashes and FLOPs of micro-batches of B examples, as place does")
    parser.add_argument("--sequence-length", type=int, metavar="S", help="with --model: the micro-batch's length, "
                        "as place takes it")
    parser.add_argument("--decoder-sequence-length", type=int, metavar="T", help="with --model: an "
                        "encoder-decoder's decoder length, as place takes it")
    parser.set_defaults(func=run)


PLACEMENT_OPTIONS = ("architecture", "micro_batch_size", "sequence_length", "decoder_sequence_length")


def run(args: argparse.Namespace, out: Stream, err: Stream) -> int:
    from ..sources import load_local, push

    options = {name: getattr(args, name) for name in PLACEMENT_OPTIONS}
    given = [name for name, value in options.items() if value is not None]
    if given and args.model is None:
        args.parser.error(f"--{given[0].replace('_', '-')} places a model on the card: give --model too")
    config = load_local(args.source)
    url = push(config, args.repo_id, args.private, args.revision, args.create_pr, args.commit_message,
               args.model, options)
    branch = f" (branch {args.revision})" if args.revision else ""
    if url is None:
        pull_request = "; no pull request opened" if args.create_pr else ""
        out.write(f"no change: {args.repo_id}{branch} already holds this config{pull_request}")
    else:
        out.write(f"Pushed {args.source} to {args.repo_id}{branch}: {url}")
    return 0
