"""`ipu-config plan`: the fastest builds of a model on a number of IPUs that fit, best first; the best written as a
config."""

import argparse
import contextlib
import json
import os
from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional

from ..arguments import (
    add_calibration_option,
    add_command_parser,
    add_force_option,
    add_generation_options,
    add_ipu_option,
    add_json_option,
    add_length_options,
    add_picture_options,
    add_reserve_option,
    add_revision_option,
    positive,
    seconds,
)
from ..output import PROG, Stream, progress

if TYPE_CHECKING:
    from ...placement.planning import Plan

# the option that gives each argument of `plan()` whose values the API checks: its errors name the argument
OPTIONS = {"ipus": "--ipus", "pod": "--pod", "global_batch_size": "--global-batch-size",
           "micro_batch_size": "--micro-batch-size", "max_latency": "--max-latency"}


def register(subparsers) -> None:
    parser = add_command_parser(
        subparsers,
        "plan",
        "Find the fastest builds of a model on a number of IPUs that fit: the IPUs of a replica and the replicas, "
        "the split, the micro-batch and the gradient accumulation, checkpoints, the optimizer state's place; each "
        "placed and timed as place does it, best first. --write saves the best as an ipu_config.json.",
        epilog="MODEL is a Hub model id or a folder with its config.json. Exit codes: 0 a build fits, 1 none fits "
        "(the plan is printed all the same) or the model cannot be planned, 2 usage error.",
    )
    parser.add_argument("--model", required=True, metavar="MODEL",
                        help="a Hub model id, or a folder holding config.json")
    ipus = parser.add_mutually_exclusive_group(required=True)
    ipus.add_argument("--ipus", type=positive, metavar="N", help="the IPUs in all, a power of two")
    ipus.add_argument("--pod", metavar="POD", help="the IPUs of a Pod, by its name: pod4, pod16, pod64, ...")
    parser.add_argument("--global-batch-size", type=positive, metavar="N",
                        help="the samples of a training step: micro-batch x gradient accumulation x replicas "
                        "(required for training, refused with --inference)")
    parser.add_argument("--micro-batch-size", type=positive, metavar="B",
                        help="search this micro-batch alone (default: each power of two the global batch allows)")
    add_length_options(parser, positive)
    parser.add_argument("--architecture", metavar="NAME",
                        help="the class to plan for, e.g. BertForPreTraining (default: the one config.json names)")
    add_ipu_option(parser)
    add_calibration_option(parser)
    add_reserve_option(parser)
    parser.add_argument("--from", dest="base", metavar="CONFIG",
                        help="a config (a JSON file, a directory holding ipu_config.json, or a Hub repository id) "
                        "whose other settings the candidates keep; where its IPUs and batch are the plan's, it is "
                        "placed and timed too, as rank base (default: optimum-graphcore's defaults)")
    parser.add_argument("--inference", action="store_true",
                        help="plan the inference build: the replicas and the device iterations, weights only")
    parser.add_argument("--fp32", action="store_true", help="weights in fp32, as IPUTrainer with fp32=True")
    add_generation_options(parser, positive, batch_help="with --generate: plan for batches of B sequences a replica "
                           "alone (default: each power of two that fits)")
    parser.add_argument("--max-latency", type=seconds, metavar="SECONDS",
                        help="with --generate: the most a token may take; the builds that meet it first, the most "
                        "tokens a second first (default: the most tokens a second)")
    add_revision_option(parser, help="branch, tag or commit of MODEL, on the Hub")
    add_json_option(parser, help="print the plan as JSON: every candidate with its config and its placement")
    parser.add_argument("--top", type=positive, default=10, metavar="K",
                        help="show the K best candidates in the table (default 10)")
    parser.add_argument("--write", metavar="OUT_DIR",
                        help="write the best candidate's config to OUT_DIR/ipu_config.json (refused where none fits); "
                        "with --trials, each trial's to OUT_DIR/NAME/ipu_config.json with its command")
    parser.add_argument("--trials", type=positive, metavar="K",
                        help="the K builds worth measuring to calibrate the time model: the best, and those whose "
                        "order against it the model is least sure of; with --write, each with the command that "
                        "measures it (examples/measure_ipu_trainer.py), whose output folder calibrate reads")
    add_picture_options(parser,
                        svg_help="also draw the plan as an SVG picture in FILE: each candidate's samples a second "
                        "against its largest IPU's share of its memory, the frontier, the best and rank base",
                        html_help="also write a self-contained HTML page to FILE: the picture, the candidates' "
                        "table, the best one's placement and the JSON")
    add_force_option(parser, help="with --write: overwrite an existing ipu_config.json; with --svg or --html: "
                     "overwrite a file that is not a picture or page plan wrote (one it wrote is replaced anyway)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, out: Stream, err: Stream) -> int:
    from ..picture_files import picture_targets, write_pictures
    from ..sources import CONFIG_NAME, CommandError, refuse_to_overwrite, write_config

    if args.generate:
        return _generation(args, out, err)
    _check_request(args)
    target = os.path.join(args.write, CONFIG_NAME) if args.write is not None and args.trials is None else None
    if target is not None:  # before planning: the model may be on the Hub
        refuse_to_overwrite(target, args.force)
    pictures = picture_targets(args)
    found = _plan(args, _base(args), err)
    data = found.to_dict()
    best = found.best
    if target is not None and best is not None:  # before any output: a reader may go away
        write_config(best.ipu_config, args.write, args.force)
    commands = _trial_commands(args, found)
    if args.trials is not None and args.write is not None and best is not None:
        _write_trials(args, found, commands)
    written = write_pictures(pictures, lambda kind: _drawing(kind, data))
    if args.json:
        out.write(json.dumps(data, indent=2))
    else:
        _report(args, found, data, commands, out)
    if args.base is not None and found.reference is None:
        err.write(f"{PROG}: note: {args.base} is not timed beside the candidates (no row base): its IPUs or batch "
                  "are not the plan's, or it cannot be placed; the candidates keep its other settings.")
    if target is not None and best is not None:
        err.write(f"Wrote {target}: the best build, rank 1")
    if commands and args.write is not None:
        err.write(f"Wrote {len(commands)} trial{'s' if len(commands) > 1 else ''} to {args.write}: each folder's "
                  "ipu_config.json and command.txt")
    for path in written:
        err.write(f"Wrote {path}")
    if best is None:
        if args.write is not None:
            what = f"{target} is not written" if target else "no trial is written"
            raise CommandError(f"no build fits, so {what}: the plan lists the builds nearest to fitting first")
        return 1
    return 0


def _check_request(args: argparse.Namespace) -> None:
    """A usage error for an option a training or inference plan does not take, or lacks."""
    from ..arguments import generation_request

    if args.max_latency is not None:
        args.parser.error("argument --max-latency: is for the generation build: give --generate too")
    generation_request(args)  # a generation option without --generate is a usage error
    if args.inference and args.global_batch_size is not None:
        args.parser.error("argument --global-batch-size: not allowed with --inference: an inference plan chooses "
                          "the replicas and the device iterations of a step")
    if not args.inference and args.global_batch_size is None:
        args.parser.error("the following argument is required for a training plan: --global-batch-size (the "
                          "samples of a step); or give --inference")
    if args.inference and args.trials is not None:
        args.parser.error("argument --trials: not allowed with --inference: calibrate fits training runs")


def _report(args: argparse.Namespace, found: "Plan", data: Dict[str, Any], commands: Mapping[str, str],
            out: Stream) -> None:
    """The plan as text, then its trials, or how to save the best."""
    from ...placement.report.text import plan_text

    out.write(plan_text(data, args.top))
    if found.trials:
        out.write()
        out.write(_trials_text(args, found, commands))
    elif found.best is not None and args.write is None:
        out.write()
        out.write("Save the best: add --write OUT_DIR (it writes OUT_DIR/ipu_config.json).")


def _generation(args: argparse.Namespace, out: Stream, err: Stream) -> int:
    """`plan --generate`: the builds that serve the model's generation, best first."""
    from ...placement.report.generation_plan import generation_plan_svg, generation_plan_text
    from ...placement.report.page import generation_plan_page
    from ..arguments import generation_request
    from ..picture_files import picture_targets, write_pictures
    from ..sources import CONFIG_NAME, CommandError, refuse_to_overwrite, write_config

    if args.global_batch_size is not None:
        args.parser.error("argument --global-batch-size: not allowed with --generate: a generation plan searches the "
                          "batch (--batch-size fixes it)")
    if args.trials is not None:
        args.parser.error("argument --trials: not allowed with --generate: calibrate fits training runs")
    asked = generation_request(args)
    target = os.path.join(args.write, CONFIG_NAME) if args.write is not None else None
    if target is not None:
        refuse_to_overwrite(target, args.force)
    pictures = picture_targets(args)
    base = _base(args)
    if args.kwarg:
        base.inference_parallelize_kwargs = {**(base.inference_parallelize_kwargs or {}), **dict(args.kwarg)}
    found = _plan(args, base, err, generate=asked, max_latency=args.max_latency)
    data = found.to_dict()
    best = found.best
    if target is not None and best is not None:
        write_config(best.ipu_config, args.write, args.force)
    written = write_pictures(pictures, lambda kind: generation_plan_svg(data) if kind == "svg"
                             else generation_plan_page(data))
    out.write(json.dumps(data, indent=2) if args.json else generation_plan_text(data, args.top))
    if target is not None and best is not None:
        err.write(f"Wrote {target}: the best build, rank 1")
    for path in written:
        err.write(f"Wrote {path}")
    if best is None:
        if target is not None:
            raise CommandError(f"no build fits{' and meets --max-latency' if args.max_latency else ''}, so {target} "
                               "is not written: the plan lists the nearest first")
        return 1
    return 0


def _base(args: argparse.Namespace):
    """The config whose other settings the candidates keep: `--from`'s, read as `place` reads its CONFIG, else the
    defaults, without transformers."""
    if args.base is None:
        from ...config.plain import PlainIPUConfig

        return PlainIPUConfig()
    from ..sources import load

    return load(args.base)


def _plan(args: argparse.Namespace, base, err: Stream, **generation: Any) -> "Plan":
    """The plan of `--model`, a Hub model read behind a spinner (`generation`: `plan()`'s `generate` and
    `max_latency`); a value the API refuses is a usage error naming its option."""
    from ...config.planning import plan
    from ...errors import InvalidSettingError, as_json
    from ...settings.sources import is_local
    from ..sources import get_token, quiet_client

    hub = not is_local(args.model)
    if hub:
        quiet_client()
    arguments: Dict[str, Any] = {
        "ipus": args.ipus, "pod": args.pod, "global_batch_size": args.global_batch_size,
        "micro_batch_size": args.micro_batch_size, "sequence_length": args.sequence_length,
        "decoder_sequence_length": args.decoder_sequence_length, "architecture": args.architecture, "ipu": args.ipu,
        "reserve": args.reserve, "base": base, "inference": args.inference, "fp32": args.fp32,
        "revision": args.revision, "token": get_token() if hub else None, "calibration": args.calibration,
        "trials": args.trials or 0, **generation,
    }
    try:
        with progress(err, f"Planning {args.model}") if hub else contextlib.nullcontext():
            return plan(args.model, **arguments)
    except InvalidSettingError as error:
        option: Optional[str] = OPTIONS.get(error.field)
        if option is None or arguments.get(error.field) != error.value:
            raise
        args.parser.error(f"argument {option}: {as_json(error.value)} is invalid: {error.allowed}")


def _drawing(kind: str, data: Dict[str, Any]) -> str:
    """The plan's picture (`svg`) or page (`html`)."""
    if kind == "svg":
        from ...placement.report.plan_picture import plan_svg

        return plan_svg(data)
    from ...placement.report.page import plan_page

    return plan_page(data)


# --- trials ----------------------------------------------------------------------------------------------------------

# what measures a trial: the example script of the checkout, for this many optimizer steps
MEASURE_SCRIPT = "examples/measure_ipu_trainer.py"
TRIAL_STEPS = 20
COMMAND_FILE = "command.txt"


def _trial_commands(args: argparse.Namespace, found: "Plan") -> Dict[str, str]:
    """`{trial's name: the command measuring it}`, its files under `--write`'s folder (else OUT_DIR)."""
    import shlex

    from ...placement.models import ARCHITECTURES
    from ...placement.models.rules import ENCODER_DECODER, IMAGE, SPEECH_RECOGNITION

    folder = args.write or "OUT_DIR"
    commands = {}
    for trial in found.trials:
        shape = trial.candidate.placement.shape
        kind = ARCHITECTURES[found.architecture].inputs
        lengths = [] if kind in (IMAGE, SPEECH_RECOGNITION) else ["--sequence-length", str(shape.sequence_length)]
        if kind == ENCODER_DECODER:
            lengths += ["--decoder-sequence-length", str(shape.decoder_sequence_length)]
        here = os.path.join(folder, trial.name)
        words = ["python", MEASURE_SCRIPT, "--config", os.path.join(here, CONFIG_FILE), "--model", args.model,
                 "--architecture", found.architecture, "--micro-batch-size", str(trial.candidate.micro_batch_size),
                 *lengths, "--ipu", args.ipu, "--steps", str(TRIAL_STEPS), "--out", os.path.join(here, "run")]
        commands[trial.name] = " ".join(shlex.quote(word) for word in words)
    return commands


CONFIG_FILE = "ipu_config.json"


def _write_trials(args: argparse.Namespace, found: "Plan", commands: Mapping[str, str]) -> None:
    """Each trial's config and command in its folder under `--write`'s, none written where any is in the way."""
    from ...settings.files import write_text_atomically
    from ..sources import CommandError

    targets = [os.path.join(args.write, trial.name, name) for trial in found.trials
               for name in (CONFIG_FILE, COMMAND_FILE)]
    if not args.force:
        present = [path for path in targets if os.path.exists(path)]
        if present:
            raise CommandError(f"{present[0]}: exists; pass --force to overwrite it (no trial was written)")
    for trial in found.trials:
        here = os.path.join(args.write, trial.name)
        os.makedirs(here, exist_ok=True)
        trial.candidate.ipu_config.save_pretrained(here)
        write_text_atomically(os.path.join(here, COMMAND_FILE), commands[trial.name] + "\n")


def _trials_text(args: argparse.Namespace, found: "Plan", commands: Mapping[str, str]) -> str:
    """The trials, a line each with what it differs from the best in, then how to measure them and calibrate."""
    count = len(found.trials)
    lines = [f"Trials: {count} build{'s' if count > 1 else ''} worth measuring, the best and those whose order "
             "against it the model is least sure of (their speeds within its band of the best's, their steps "
             "spending other shares on what calibrate fits):"]
    for trial in found.trials:
        what = ", ".join(trial.differs) if trial.rank != 1 else "the best"
        if trial.rank is None:
            what = "the best with one optimizer step a host call"
        lines.append(f"  {trial.name}: {trial.candidate.samples_per_second:,.1f} samples a second; {what}")
    folder = args.write or "OUT_DIR"
    if args.write is None:
        lines.append(f"Write them: add --write OUT_DIR (each OUT_DIR/NAME/{CONFIG_FILE} and {COMMAND_FILE}).")
    command = os.path.join(folder, "NAME", COMMAND_FILE)
    lines.append(f"Measure each, from the checkout on an IPU host: the command in {command}, {TRIAL_STEPS} steps; "
                 "then:")
    lines.append(f"  ipu-config calibrate {os.path.join(folder, '*', 'run')} --output calibration.json")
    lines.append("  and plan again with --calibration calibration.json")
    return "\n".join(lines)

