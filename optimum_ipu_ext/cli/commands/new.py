"""`ipu-config new`: an ipu_config.json written from a preset."""

import argparse
import json

from ..arguments import add_command_parser, add_force_option, add_set_option
from ..output import Stream


def register(subparsers) -> None:
    parser = add_command_parser(subparsers, "new", "Write an ipu_config.json from a preset.")
    parser.add_argument("preset", nargs="?", metavar="PRESET", help="a preset name (see --list)")
    parser.add_argument("out_dir", nargs="?", metavar="OUT_DIR", help="the directory to write ipu_config.json to")
    parser.add_argument("--list", action="store_true", help="list the presets")
    add_set_option(parser)
    add_force_option(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, out: Stream, err: Stream) -> int:
    from ...config.plain import PlainIPUConfig
    from ...settings.sources import presets
    from ..sources import apply_updates, write_config

    available = presets()
    if args.list:
        for name in available:
            out.write(name)
        return 0
    if args.preset is None or args.out_dir is None:
        args.parser.error("PRESET and OUT_DIR are required, unless --list is given")
    name = args.preset[: -len(".json")] if args.preset.endswith(".json") else args.preset
    if name not in available:
        args.parser.error(f"argument PRESET: unknown preset {args.preset!r}; the presets are {', '.join(available)}")
    config = PlainIPUConfig.from_dict(json.loads(available[name]))
    apply_updates(config, args.set or (), name)
    out.write(f"Wrote {write_config(config, args.out_dir, args.force)} from the preset {name}")
    return 0
