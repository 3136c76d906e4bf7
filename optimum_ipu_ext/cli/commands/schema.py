"""`ipu-config schema`: the JSON Schema of ipu_config.json."""

import argparse

from ..arguments import add_command_parser
from ..output import Stream


def register(subparsers) -> None:
    parser = add_command_parser(
        subparsers,
        "schema",
        "Print the JSON Schema of ipu_config.json, for editors (draft 2020-12).",
        epilog="The same schema ships in the package as optimum_ipu_ext/ipu_config.schema.json.",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, out: Stream, err: Stream) -> int:
    from ...settings.documents import json_schema_string

    out.text(json_schema_string())
    return 0
