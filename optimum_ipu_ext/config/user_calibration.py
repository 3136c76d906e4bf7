"""A calibration of the time model on a user's runs (`ipu-config calibrate`): `calibrate()` fits the constants those
runs determine, the others kept at the shipped values; gives each run's error before (the shipped constants), after,
and left out of the fit; the band of the errors left out where there are `BAND_RUNS` runs or more (else the shipped
band); and the runs themselves, as rows of a runs file (`run_row()`), so that the calibration is a runs file too.
Each run's config is built by the config class (`calibration.run_settings()`); `measured_runs` reads the runs."""

from typing import Any, Dict, List, Sequence, Tuple

from ..errors import MeasuredRunError
from ..placement.calibration import (
    CONSTANTS,
    MeasuredRun,
    TimedRun,
    fastest_possible,
    fit_determined,
    measured_seconds,
    percentile,
    rows_of,
    shares,
    timed_run,
)
from ..placement.models import ARCHITECTURES
from .calibration import run_settings
from .measured_runs import MARKER, MARKER_VALUE, RUNS_KEY

# the fewest runs whose errors, each left out of the fit in turn, make the band; fewer keep the shipped band, and say
# so in `band_from`
BAND_RUNS = 5
SHIPPED_BAND, LEFT_OUT_BAND = "shipped", "left out"


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
        band, counted, band_from = [percentile(errors, 0.1), percentile(errors, 0.9)], len(found), LEFT_OUT_BAND
    else:
        band, counted, band_from = list(shipped.band), shipped.runs, SHIPPED_BAND
    rows = [count for count in (rows_of(run) for run in runs) if count is not None]
    return {MARKER: MARKER_VALUE, "name": name,
            "constants": dict(zip(CONSTANTS, determined.constants)), "fitted": list(determined.fitted),
            "kept": determined.kept, "band": band, "band_from": band_from, "runs": counted,
            "coverage": {"model_types": sorted({model_type(run) for run in runs}),
                         "rows": [min(rows), max(rows)] if rows else None},
            "errors": {"before": {run.name: error(timed, measured, start) for run, timed, measured in found},
                       "after": {run.name: error(timed, measured, determined.constants)
                                 for run, timed, measured in found},
                       "left_out": left_out},
            RUNS_KEY: [run_row(run) for run in runs]}


def model_type(run: MeasuredRun) -> str:
    """The model type of `run`'s model, its architecture's: a `config.json` gives the same, where it gives one (an
    early checkpoint's does not), as the time model tells a build outside a calibration's runs."""
    return ARCHITECTURES[run.architecture].model_types[0]


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
            ipus = f"IPU {bound.ipus[0]}" if len(bound.ipus) == 1 else \
                f"IPUs {', '.join(map(str, bound.ipus[:-1]))} and {bound.ipus[-1]}, one after the other"
            replicas = f"{bound.replicas} replica" + ("s" if bound.replicas > 1 else "")
            raise MeasuredRunError(
                run.name, f"{run.measured_samples_per_second:,.1f} samples a second is more than its IPUs can "
                f"compute: at their peak, {ipus} ({bound.flops / 1e9:,.1f} GFLOP a micro-batch of "
                f"{run.micro_batch_size}, forward, backward and recomputation) on {replicas} allow "
                f"{bound.samples_per_second:,.1f}. A resumed run's train_samples_per_second counts the samples of the "
                "whole schedule over this process's time")
        found.append((run, timed))
    return found


def run_row(run: MeasuredRun) -> Dict[str, Any]:
    """`run` as a row of a JSON runs file (`measured_runs.read_measured_runs()` reads it back)."""
    return {"name": run.name, "config": run.ipu_config, "model": run.model, "architecture": run.architecture,
            "build": run.build, "micro_batch_size": run.micro_batch_size, "sequence_length": run.sequence_length,
            "decoder_sequence_length": run.decoder_sequence_length, "ipu": run.ipu,
            "samples_per_second": run.measured_samples_per_second, "source": run.source}

