"""The time model's constants fitted on measured runs, each run's IPU config built by the config class users hold:
`calibration_data()` fits them on the runs whose role is "fit" and gives each run's error (a fitted run's left out
of the fit), the band of those errors and what the runs cover; `write_shipped()` writes the constants shipped in the
package (placement/data/calibration.json) from the runs shipped beside them, as `scripts/fit_calibration.py` does.

`calibrate()` fits them on a user's runs (`ipu-config calibrate`): the constants those runs determine, the others
kept at the shipped values; each run's error before (the shipped constants), after, and left out of the fit; the
band of the errors left out where there are `BAND_RUNS` runs or more (else the shipped band); and the runs
themselves, so that the file it gives is a runs file too."""

from typing import Any, Dict, List, Mapping, Sequence, Tuple

from ..errors import MeasuredRunError
from ..placement.calibration import (
    CONSTANTS,
    SHIPPED,
    START,
    MeasuredRun,
    TimedRun,
    calibration_text,
    fastest_possible,
    fit,
    fit_determined,
    measured_seconds,
    percentile,
    read_runs,
    rows_of,
    shares,
    timed_run,
)
from .measured_runs import MARKER, MARKER_VALUE, RUNS_KEY


def run_settings(run: MeasuredRun) -> Dict[str, Any]:
    """The settings (`vars()`) of `run`'s IPU config, as `PlainIPUConfig` makes them."""
    from .plain import PlainIPUConfig

    return vars(PlainIPUConfig(**run.ipu_config))


def calibration_data(runs: Sequence[MeasuredRun], start: Sequence[float], name: str) -> Dict[str, Any]:
    """The calibration of `runs` as the file holds it: the constants fitted on those whose role is "fit" (from
    `start`), the error of each fitted run left out in turn, the band of those errors (their 10th and 90th
    percentiles), what the runs cover, and the error on each held-out run."""
    found = [(run, timed_run(run, run_settings(run))) for run in runs]
    fitted = [(run, timed) for run, timed in found if run.role == "fit"]
    constants = fit([(timed.step_seconds, measured_seconds(run, timed)) for run, timed in fitted], start)
    left_out = {}
    for run, timed in fitted:
        others = [(other_timed.step_seconds, measured_seconds(other, other_timed)) for other, other_timed in fitted
                  if other is not run]
        alone = fit(others, constants)
        left_out[run.name] = measured_seconds(run, timed) / timed.step_seconds(alone) - 1
    held_out = {run.name: measured_seconds(run, timed) / timed.step_seconds(constants) - 1
                for run, timed in found if run.role != "fit"}
    errors = list(left_out.values())
    rows = [count for count in (rows_of(run) for run, _ in fitted) if count is not None]
    return {"name": name,
            "constants": dict(zip(CONSTANTS, constants)),
            "band": [percentile(errors, 0.1), percentile(errors, 0.9)],
            "runs": len(fitted),
            "coverage": {"model_types": sorted({run.model["model_type"] for run, _ in fitted}),
                         "rows": [min(rows), max(rows)] if rows else None},
            "errors": {"left_out": left_out, "held_out": held_out}}


def write_shipped() -> Dict[str, Any]:
    """The shipped calibration, fitted again on the shipped runs and written over `SHIPPED`."""
    from ..settings.files import write_text_atomically

    data = calibration_data(read_runs(), START, "shipped")
    write_text_atomically(str(SHIPPED), calibration_text(data))
    return data


def errors_table(data: Mapping[str, Any], runs: Sequence[MeasuredRun]) -> str:
    """The runs of a calibration as a Markdown table: each one's role, build, measured samples a second and error
    (a fitted run's left out of the fit), as docs/placement.md shows them."""
    errors = {**data["errors"]["held_out"], **data["errors"]["left_out"]}
    lines = ["| run | role | IPU | micro-batch x length | measured, samples/s | model off by |",
             "| --- | --- | --- | --- | ---: | ---: |"]
    for run in runs:
        length = f" x {run.sequence_length:,}" if run.sequence_length else ""
        if run.decoder_sequence_length:
            length += f" / {run.decoder_sequence_length:,}"
        role = "fit, left out" if run.role == "fit" else "held out"
        lines.append(f"| {run.name} | {role} | {run.ipu} | {run.micro_batch_size}{length} | "
                     f"{run.measured_samples_per_second:,.1f} | {errors[run.name]:+.0%} |")
    return "\n".join(lines) + "\n"


# --- a user's runs ---------------------------------------------------------------------------------------------------

# the fewest runs whose errors, each left out of the fit in turn, make the band; fewer keep the shipped band, and say
# so in `band_from`
BAND_RUNS = 5
SHIPPED_BAND = "shipped"


def calibrate(runs: Sequence[MeasuredRun], name: str) -> Dict[str, Any]:
    """The calibration of a user's `runs` as its file holds it, named `name`: the constants they determine (the
    others the shipped ones), why each other is kept, the band, what the runs cover, each run's error before, after
    and left out, and the runs.

    Raises:
        MeasuredRunError: naming a run given twice, whose config does not place or that poptorch would not run, or
            whose throughput is above what its IPUs' peak allows.
    """
    from ..placement.estimate.calibration_file import shipped_calibration

    shipped = shipped_calibration()
    start = tuple(getattr(shipped, constant) for constant in CONSTANTS)
    found = [(run, timed, measured_seconds(run, timed)) for run, timed in _timed(runs)]
    spent = {run.name: shares(timed, start) for run, timed, _ in found}  # at the shipped constants, for every fit
    determined = fit_determined([(timed, measured) for _, timed, measured in found], start, list(spent.values()))

    def error(timed: TimedRun, measured: float, constants: Sequence[float]) -> float:
        return measured / timed.step_seconds(constants) - 1

    left_out = {}
    if len(found) > 1:
        for run, timed, measured in found:
            others = [(other_run, other_timed, other) for other_run, other_timed, other in found
                      if other_run is not run]
            alone = fit_determined([(other_timed, other) for _, other_timed, other in others], start,
                                   [spent[other_run.name] for other_run, _, _ in others])
            left_out[run.name] = error(timed, measured, alone.constants)
    if len(found) >= BAND_RUNS:
        errors = list(left_out.values())
        band, counted, band_from = [percentile(errors, 0.1), percentile(errors, 0.9)], len(found), "left out"
    else:
        band, counted, band_from = list(shipped.band), shipped.runs, SHIPPED_BAND
    rows = [count for count in (rows_of(run) for run in runs) if count is not None]
    return {MARKER: MARKER_VALUE, "name": name,
            "constants": dict(zip(CONSTANTS, determined.constants)), "fitted": list(determined.fitted),
            "kept": determined.kept, "band": band, "band_from": band_from, "runs": counted,
            "coverage": {"model_types": sorted({run.model.get("model_type", "") for run in runs} - {""}),
                         "rows": [min(rows), max(rows)] if rows else None},
            "errors": {"before": {run.name: error(timed, measured, start) for run, timed, measured in found},
                       "after": {run.name: error(timed, measured, determined.constants)
                                 for run, timed, measured in found},
                       "left_out": left_out},
            RUNS_KEY: [run_row(run) for run in runs]}


def _timed(runs: Sequence[MeasuredRun]) -> List[Tuple[MeasuredRun, TimedRun]]:
    """Each run placed as `place` places it, refusing a run given twice, one that does not place or that poptorch
    would not run, and one faster than its IPUs allow."""
    from ..errors import PlacementError

    found = []
    names = set()
    for run in runs:
        if run.name in names:
            raise MeasuredRunError(run.name, "given twice: each run counts once")
        names.add(run.name)
        try:
            timed = timed_run(run, run_settings(run))
        except PlacementError as error:
            raise MeasuredRunError(run.name, f"it cannot be placed: {error}") from None
        problems = timed.placement.problems
        if problems:
            raise MeasuredRunError(run.name, f"poptorch would not run its config: {problems[0]}")
        bound = fastest_possible(run, timed)
        if run.measured_samples_per_second > bound.samples_per_second:
            ipus = " and ".join(str(ipu) for ipu in bound.ipus)
            raise MeasuredRunError(
                run.name, f"{run.measured_samples_per_second:,.1f} samples a second is more than its IPUs can "
                f"compute: at their peak, IPU {ipus} ({bound.flops / 1e9:,.1f} GFLOP a micro-batch of "
                f"{run.micro_batch_size}, forward, backward and recomputation) on {bound.replicas} replica"
                f"{'s' if bound.replicas > 1 else ''} allow {bound.samples_per_second:,.1f}. A resumed run's "
                "train_samples_per_second counts the samples of the whole schedule over this process's time")
        found.append((run, timed))
    return found


def run_row(run: MeasuredRun) -> Dict[str, Any]:
    """`run` as a row of a JSON runs file (`measured_runs.read_measured_runs()` reads it back)."""
    return {"name": run.name, "config": run.ipu_config, "model": run.model, "architecture": run.architecture,
            "build": run.build, "micro_batch_size": run.micro_batch_size, "sequence_length": run.sequence_length,
            "decoder_sequence_length": run.decoder_sequence_length, "ipu": run.ipu,
            "samples_per_second": run.measured_samples_per_second, "source": run.source}

