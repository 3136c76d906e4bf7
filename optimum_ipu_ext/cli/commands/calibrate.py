"""`ipu-config calibrate`: the time model's constants refitted on the user's own runs, written as a calibration file
that `place --calibration`, `plan --calibration` and `OPTIMUM_IPU_EXT_CALIBRATION` take."""

import argparse
import json
import os
from typing import Any, Dict, List, Mapping

from ..arguments import add_command_parser, add_force_option, add_json_option, positive
from ..output import Stream

CONSTANT_WORDS = {"operation_cycles": "cycles an operation", "elementwise_cycles": "cycles an element",
                  "call_seconds": "seconds a host call"}


def register(subparsers) -> None:
    parser = add_command_parser(
        subparsers,
        "calibrate",
        "Refit the time model's constants on your own runs: IPUTrainer output folders, or runs files (CSV, JSON) "
        "of runs made any other way. Prints each run's error before and after, and with --output writes the "
        "calibration that place and plan take (--calibration FILE, or OPTIMUM_IPU_EXT_CALIBRATION).",
        epilog="A folder holds ipu_config.json, the model's config.json and train_results.json or all_results.json "
        "(JSON only: training_args.bin is never unpickled); what it does not hold comes from its ipu_run.json or from "
        "the options, which apply to every run given. Exit codes: 0 calibrated, 1 a run that cannot be used (named, "
        "with why) or a file in the way, 2 usage error.",
    )
    parser.add_argument("runs", nargs="+", metavar="RUN",
                        help="an IPUTrainer output folder, or a runs file (.csv or .json; a calibration calibrate "
                        "wrote is one too)")
    parser.add_argument("--micro-batch-size", type=positive, metavar="B",
                        help="the micro-batch of the runs (default: what each folder's figures or ipu_run.json say)")
    parser.add_argument("--sequence-length", type=positive, metavar="S",
                        help="the runs' inputs: S tokens; HuBERT/Wav2Vec2: S audio samples at 16 kHz (needed where a "
                        "run does not say it and its model takes one; not for images or Whisper)")
    parser.add_argument("--decoder-sequence-length", type=positive, metavar="T",
                        help="the runs' inputs: an encoder-decoder's decoder takes T tokens (default: S)")
    parser.add_argument("--architecture", metavar="NAME",
                        help="the class the runs trained, e.g. BertForPreTraining (default: the one config.json "
                        "names)")
    parser.add_argument("--ipu", choices=("gc200", "bow"),
                        help="the IPUs the runs ran on (default: what ipu_run.json says, else gc200)")
    parser.add_argument("--output", "-o", metavar="FILE", help="write the calibration to FILE")
    add_force_option(parser, help="with --output: overwrite a file that is not a calibration calibrate wrote (one "
                     "it wrote is replaced anyway)")
    add_json_option(parser, help="print the calibration as JSON, as --output writes it")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace, out: Stream, err: Stream) -> int:
    from ...config.measured_runs import RUNS_KEY, Facts, read_measured_runs
    from ...config.user_calibration import calibrate
    from ...placement.calibration import calibration_text
    from ...settings.files import write_text_atomically

    if args.output is not None:  # before the work: a file in the way is refused at once
        _check_output(args.output, args.force)
    given = Facts(args.micro_batch_size, args.sequence_length, args.decoder_sequence_length, args.architecture,
                  args.ipu)
    runs = read_measured_runs(args.runs, given)
    data = calibrate(runs, args.output or "")
    text = calibration_text(data, exact=(RUNS_KEY,))  # the runs as measured
    if args.output is not None:  # before any output: a reader may go away
        write_text_atomically(args.output, text)
    if args.json:
        out.write(text.rstrip("\n"))
    else:
        out.write(report(data, out.style))
        if args.output is None:
            out.write()
            out.write("Save it: add --output FILE, then give place and plan --calibration FILE (or set "
                      "OPTIMUM_IPU_EXT_CALIBRATION=FILE).")
    if args.output is not None:
        err.write(f"Wrote {args.output}: place and plan take it as --calibration {args.output}")
    return 0


def _check_output(path: str, force: bool) -> None:
    """Refuses an output whose folder is missing, that is a folder, or a file calibrate did not write (unless
    `force`)."""
    from ...config.measured_runs import MARKER, MARKER_VALUE
    from ..sources import CommandError

    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise CommandError(f"{path}: is a folder; --output takes the file to write")
    if not os.path.isdir(folder):
        raise CommandError(f"{path}: its folder {folder} does not exist")
    if os.path.exists(path) and not force:
        try:
            with open(path, encoding="utf-8") as reader:
                ours = json.load(reader).get(MARKER) == MARKER_VALUE
        except (OSError, ValueError, AttributeError):
            ours = False
        if not ours:
            raise CommandError(f"{path}: exists and is not a calibration calibrate wrote; pass --force to overwrite "
                               "it")


def report(data: Mapping[str, Any], style=lambda text, name: text) -> str:
    """The calibration `data` as text: its constants against the shipped ones, each run's error before, after and
    left out of the fit, and the band a speed is good to."""
    from ...config.user_calibration import BAND_RUNS, LEFT_OUT_BAND
    from ...placement.estimate.calibration_file import shipped_calibration

    shipped = shipped_calibration()
    errors = data["errors"]
    count = len(errors["before"])
    lines: List[str] = [style(f"Calibrated on {count} run{'s' if count != 1 else ''}: "
                              f"{_fitted_words(data['fitted'])}.", "bold"), ""]
    width = max(len(name) for name in CONSTANT_WORDS)
    lines.append(f"{'Constant':<{width}}  {'Shipped':>10}  {'Now':>10}")
    for name, value in data["constants"].items():
        note = "fitted" if name in data["fitted"] else f"kept: {data['kept'][name]}"
        lines.append(f"{name:<{width}}  {_constant(getattr(shipped, name)):>10}  {_constant(value):>10}  {note}")
    lines.append("")
    lines += _runs_table(data)
    lines.append("")
    lines.append("Errors: the model's samples a second over the measured, less one (+50%: the model 1.5 times as "
                 "fast as the run); before: the shipped constants; after: these; left out: these fitted without "
                 "the run.")
    low, high = data["band"]
    band = (f"Band: runs measure {1 / (1 + high):.2f} to {1 / (1 + low):.2f} times the model's figure ({low:+.0%} to "
            f"{high:+.0%}, ")
    if data["band_from"] == LEFT_OUT_BAND:
        lines.append(band + "the 10th and 90th percentiles of the errors left out); place and plan print it.")
    else:
        lines.append(band + f"the shipped calibration's, on its {data['runs']} runs): {count} "
                     f"run{'s are' if count != 1 else ' is'} too few to measure a band of "
                     f"{'their' if count != 1 else 'its'} own ({BAND_RUNS} or more).")
    return "\n".join(lines)


def _constant(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.4g}"


def _fitted_words(fitted: List[str]) -> str:
    if not fitted:
        return "no constant fitted, every one kept at the shipped value"
    named = [f"{name} ({CONSTANT_WORDS[name]})" for name in fitted]
    listed = named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]
    return f"{listed} fitted"


def _runs_table(data: Mapping[str, Any]) -> List[str]:
    errors: Dict[str, Dict[str, float]] = data["errors"]
    rows = [(run["name"], f"{run['samples_per_second']:,.1f}", *(
        f"{errors[kind][run['name']]:+.0%}" if run["name"] in errors[kind] else "-"
        for kind in ("before", "after", "left_out"))) for run in data["measured_runs"]]
    headers = ("Run", "Measured/s", "Before", "After", "Left out")
    widths = [max(len(header), *(len(row[index]) for row in rows)) for index, header in enumerate(headers)]

    def line(cells) -> str:
        return "  ".join([f"{cells[0]:<{widths[0]}}", *(f"{cell:>{width}}" for cell, width in
                                                         zip(cells[1:], widths[1:]))]).rstrip()

    return [line(headers), *(line(row) for row in rows)]
