"""`ipu-config export`: the options a configuration builds, written as a poptorch option file."""

import argparse

from ..arguments import (
    add_command_parser,
    add_force_option,
    add_pod_type_option,
    add_revision_option,
    add_set_option,
    add_source_argument,
)
from ..output import Stream


def register(subparsers) -> None:
    parser = add_command_parser(
        subparsers,
        "export",
        "Write the options to_options() builds as a poptorch option file, for poptorch.Options.loadFromFile.",
        epilog="The file is for a plain poptorch.Options: under poprun, popdist.poptorch.Options sets the replicas "
        "and process of its instance itself (build those with IPUConfig.to_options()).",
    )
    add_source_argument(parser)
    parser.add_argument("-o", "--output", required=True, metavar="FILE", help="the option file to write")
    add_revision_option(parser)
    add_pod_type_option(parser)
    add_set_option(parser)
    parser.add_argument("--inference", action="store_true", help="write the inference build rather than training's")
    add_force_option(parser, help="overwrite an existing FILE")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, out: Stream, err: Stream) -> int:
    from ..sources import load, refuse_to_overwrite

    refuse_to_overwrite(args.output, args.force)  # before loading: the source may be on the Hub
    config = load(args.source, args.revision, args.set or (), args.pod_type)
    path = config.to_options_file(args.output, for_inference=args.inference, overwrite=args.force, name=args.source)
    out.write(f"Wrote {path}: the {'inference' if args.inference else 'training'} build of {args.source}, for "
              "poptorch.Options().loadFromFile")
    return 0
