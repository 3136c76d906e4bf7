"""`ipu-config show`: a configuration's summary and the option calls its build makes."""

import argparse
import json

from ..arguments import (
    add_command_parser,
    add_json_option,
    add_pod_type_option,
    add_revision_option,
    add_set_option,
    add_source_argument,
    instance,
)
from ..output import Stream


def register(subparsers) -> None:
    parser = add_command_parser(subparsers, "show",
                                "Summarise a configuration and print the option calls to_options() makes.")
    add_source_argument(parser)
    add_revision_option(parser)
    add_pod_type_option(parser)
    add_set_option(parser)
    parser.add_argument("--inference", action="store_true", help="show the inference build rather than training's")
    add_json_option(parser)
    parser.add_argument("--popdist", type=instance, metavar="NUM_INSTANCES:INDEX",
                        help="preview instance INDEX of `poprun --num-instances NUM_INSTANCES` (the job's replicas "
                        "are the config's replication factor)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, out: Stream, err: Stream) -> int:
    from ...sdk.popdist import PopDistLaunch
    from ...settings.mode import Mode
    from ..reports import render_summary, summary
    from ..sources import load

    config = load(args.source, args.revision, args.set or (), args.pod_type)
    launch = None
    if args.popdist is not None:
        num_instances, instance_index = args.popdist
        replicas = getattr(config, Mode.of(args.inference).setting("replication_factor"))
        launch = PopDistLaunch(num_replicas=replicas, num_instances=num_instances, instance_index=instance_index)
    data = summary(config, args.source, args.inference, popdist=launch)
    if args.json:
        out.write(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        render_summary(data, str(config.options_plan(for_inference=args.inference, popdist=launch)), out)
    return 0
