"""`ipu-config place`: a model placed on the config's IPUs, optionally balanced and written back."""

import argparse
import contextlib
import os
from typing import Any, Dict, List, Tuple

from ...errors import PlacementError, as_json
from ..arguments import (
    IPU_HELP,
    add_calibration_option,
    add_command_parser,
    add_force_option,
    add_generation_options,
    add_ipu_option,
    add_json_option,
    add_length_options,
    add_picture_options,
    add_pod_type_option,
    add_reserve_option,
    add_revision_option,
    add_set_option,
    add_source_argument,
)
from ..output import PROG, Stream, one_line, progress


def register(subparsers) -> None:
    parser = add_command_parser(
        subparsers,
        "place",
        "Place a model on the config's IPUs as optimum-graphcore's parallelize() does: the blocks, layers and "
        "parameters of each IPU, the memory they need, and whether each IPU holds them.",
        epilog="MODEL is a Hub model id or a folder with its config.json; only the headers of its safetensors "
        "checkpoint are read. Exit codes: 0 placed, 1 a config that cannot be placed for this model (with --check: "
        "or one that does not fit or is tight), 2 usage error.",
    )
    add_source_argument(parser, nargs="?", metavar="CONFIG")
    parser.add_argument("--model", metavar="MODEL", help="a Hub model id, or a folder holding config.json (required)")
    parser.add_argument("--list-architectures", action="store_true",
                        help="list the architectures optimum-graphcore 0.7.1 pipelines, which place takes")
    parser.add_argument("--architecture", metavar="NAME",
                        help="the class to place, e.g. BertForQuestionAnswering (default: the one config.json names)")
    parser.add_argument("--inference", action="store_true",
                        help="place the inference build (inference settings and parallelize kwargs, weights only)")
    parser.add_argument("--fp32", action="store_true", help="weights in fp32, as IPUTrainer with fp32=True")
    add_json_option(parser, help="print the placement as JSON")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 unless the verdict is 'fits' and poptorch runs the pipeline")
    parser.add_argument("--micro-batch-size", type=int, metavar="B",
                        help="count the activations, the pipeline's stashes and the FLOPs of micro-batches of B "
                        "examples (default 1 when a sequence length is given)")
    add_length_options(parser, int, help_prefix="with the activations: ")
    add_generation_options(parser, int, batch_help="with --generate: sequences a replica generates at once, the KV "
                           "caches' batch (default 1)")
    add_ipu_option(parser, help="with the activations: " + IPU_HELP)
    add_calibration_option(parser)
    add_reserve_option(parser)
    parser.add_argument("--balance", nargs="?", const="memory", choices=("memory", "time"),
                        help="propose the layers_per_ipu that makes the largest on-chip figure smallest (memory, the "
                        "default), or the slowest IPU fastest among the splits that fit (time: needs the activations)")
    parser.add_argument("--write", metavar="OUT_DIR", help="with --balance: write the config with the proposed split "
                        "to OUT_DIR/ipu_config.json")
    add_picture_options(parser,
                        svg_help="also draw the placement as an SVG picture in FILE: each IPU's memory as a stacked "
                        "bar, its blocks and pace, the verdict and the pipeline's schedule",
                        html_help="also write a self-contained HTML page to FILE: the picture, the tables and the "
                        "JSON")
    add_force_option(parser, help="with --write: overwrite an existing ipu_config.json; with --svg or --html: "
                     "overwrite a file that is not a picture or page place wrote (one it wrote is replaced anyway)")
    add_set_option(parser)
    add_revision_option(parser, help="branch, tag or commit of CONFIG, for a Hub repository")
    add_pod_type_option(parser)
    parser.add_argument("--model-revision", metavar="REVISION", help="branch, tag or commit of MODEL, on the Hub")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, out: Stream, err: Stream) -> int:
    from ...placement.models import ARCHITECTURES
    from ...placement.report.text import comparison_text
    from ...settings.mode import Mode
    from ..picture_files import picture_targets
    from ..sources import CONFIG_NAME, CommandError, refuse_to_overwrite

    if args.list_architectures:
        for name in ARCHITECTURES:
            out.write(name)
        return 0
    if args.source is None or args.model is None:
        args.parser.error("CONFIG and --model are required, unless --list-architectures is given")
    if args.write is not None and not args.balance:
        args.parser.error("--write saves the balanced split: give --balance too")
    target = os.path.join(args.write, CONFIG_NAME) if args.write is not None else None
    if target is not None:  # before placing: the model may be on the Hub
        refuse_to_overwrite(target, args.force)
    pictures = picture_targets(args)
    config = _config(args)
    mode = Mode.of(args.inference or args.generate)
    setting = mode.setting("layers_per_ipu")
    try:
        placer = _placer(args, config, err)
        current = placer.place()
    except PlacementError as error:
        if not (args.balance and error.setting == setting):
            raise CommandError(f"{args.source}: {one_line(error)}") from error
        # a split of the wrong size is balanced from an even one over the same IPUs
        ipus = getattr(config, mode.setting("ipus_per_replica"))
        err.write(f"{PROG}: note: {args.source}: {one_line(error)} Balancing from {as_json([-1] * ipus)}.")
        setattr(config, setting, [-1] * ipus)
        placer, current = None, None
    try:
        placer = placer or _placer(args, config, err)
        balanced = placer.balanced(current or placer.place(), args.balance) if args.balance else current
    except PlacementError as error:
        raise CommandError(f"{args.source}: {one_line(error)}") from error
    if target is not None:  # before any output: a reader may go away
        _write(config, setting, balanced, args)
    written = _write_pictures(pictures, balanced.to_dict(), args, balanced is not current)
    if args.json:
        out.write(balanced.to_json_string().rstrip("\n"))
    elif current is None:
        out.write(balanced.text(out.style))
    else:
        out.write(current.text(out.style))
        if args.balance:
            out.write()
            out.write(comparison_text(current.to_dict(), balanced.to_dict(), out.style, args.balance))
    if target is not None:
        err.write(f"Wrote {target} with {setting} {list(balanced.layers_per_ipu)}")
    for line in written:
        err.write(line)
    return 1 if args.check and not balanced.fits else 0


def _config(args: argparse.Namespace):
    """CONFIG, with `--set` and `--kwarg` applied; `args.generating`: what `--generate` asks for."""
    from ..arguments import generation_request
    from ..sources import load

    args.generating = generation_request(args)
    config = load(args.source, args.revision, args.set or (), args.pod_type)
    if args.kwarg:
        config.inference_parallelize_kwargs = {**(config.inference_parallelize_kwargs or {}), **dict(args.kwarg)}
    return config


def _write(config, setting: str, balanced, args: argparse.Namespace) -> None:
    """The config with the balanced split written to `--write`; a generation build's with the kwargs upstream's
    pipelines generate with (they add `for_generation` themselves)."""
    from ..sources import write_config

    setattr(config, setting, list(balanced.layers_per_ipu))
    if balanced.generation is not None:
        config.inference_parallelize_kwargs = {name: value for name, value in balanced.generation.kwargs.items()
                                               if name != "for_generation"}
    write_config(config, args.write, args.force)


def _write_pictures(pictures: List[Tuple[str, str]], placement: Dict[str, Any], args: argparse.Namespace,
                    balanced: bool) -> List[str]:
    """Each picture (`svg`) or page (`html`) of the placement, written whole; returns the lines that say so."""
    from ..picture_files import write_pictures

    label = args.source + (f" with {', '.join(args.set)}" if args.set else "")
    label += f", balanced for {args.balance}" if balanced else ""

    def draw(kind: str) -> str:
        if kind == "svg":
            from ...placement.report.placement_picture import placement_svg

            return placement_svg(placement, label)
        from ...placement.report.page import placement_page

        return placement_page(placement, label)

    return [f"Wrote {path}" + (" (the balanced split's)" if balanced else "")
            for path in write_pictures(pictures, draw)]


def _placer(args: argparse.Namespace, config, err: Stream):
    """The placer of `--model` under `config`, a Hub model read behind a spinner."""
    from ...settings.sources import is_local
    from ..sources import get_token, quiet_client

    hub = not is_local(args.model)
    if hub:
        quiet_client()
    with progress(err, f"Reading {args.model}") if hub else contextlib.nullcontext():
        return config.placer(args.model, architecture=args.architecture, for_inference=args.inference,
                             fp32=args.fp32, revision=args.model_revision, token=get_token() if hub else None,
                             micro_batch_size=args.micro_batch_size, sequence_length=args.sequence_length,
                             decoder_sequence_length=args.decoder_sequence_length, ipu=args.ipu,
                             reserve=args.reserve, calibration=args.calibration, generate=args.generating)
