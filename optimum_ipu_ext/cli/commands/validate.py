"""`ipu-config validate`: one line per problem of each configuration, exit 1 if any."""

import argparse
import os
from typing import List, Sequence

from ..arguments import (
    SET_HELP,
    add_command_parser,
    add_pod_type_option,
    add_revision_option,
    add_set_option,
    add_source_argument,
)
from ..output import PROG, Stream, recorded_warnings


def register(subparsers) -> None:
    parser = add_command_parser(subparsers, "validate", "Check configurations: one line per problem, exit 1 if any.",
                                epilog="A directory without ipu_config.json stands for the *.json files it holds.")
    add_source_argument(parser, dest="sources", nargs="+")
    add_revision_option(parser, help="branch, tag or commit, for Hub repositories")
    add_pod_type_option(parser)
    add_set_option(parser, help=SET_HELP + "; applied to every source before it is checked")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, out: Stream, err: Stream) -> int:
    from ..reports import problems
    from ..sources import parsed_updates

    sources = expand(args.sources)
    updates = parsed_updates(args.set or ())
    invalid = 0
    for source in sources:
        with recorded_warnings() as messages:
            found = problems(source, args.revision, updates, args.pod_type)
        for message in messages:
            err.write(f"{PROG}: warning: {source}: {message}")
        for line in found:
            out.write(out.style(line, "red"))
        invalid += bool(found)
    if invalid:
        err.write(f"{invalid} of {len(sources)} IPU config(s) invalid")
        return 1
    err.write(err.style(f"{len(sources)} IPU config(s) valid", "green"))
    return 0


def expand(sources: Sequence[str]) -> List[str]:
    """Each source, except that a directory without `ipu_config.json` stands for the JSON files it holds."""
    from ..sources import CONFIG_NAME

    expanded = []
    for source in sources:
        if os.path.isdir(source) and not os.path.isfile(os.path.join(source, CONFIG_NAME)):
            found = sorted(os.path.join(source, name) for name in os.listdir(source) if name.endswith(".json"))
            expanded += found or [source]
        else:
            expanded.append(source)
    return expanded
