"""The time model's constants fitted on measured runs, each run's IPU config built by the config class users hold:
`calibration_data()` fits them on the runs whose role is "fit" and gives each run's error (a fitted run's left out
of the fit), the band of those errors and what the runs cover; `write_shipped()` writes the constants shipped in the
package (placement/data/calibration.json) from the runs shipped beside them, as `scripts/fit_calibration.py` does."""

from typing import Any, Dict, Mapping, Sequence

from ..placement.calibration import (
    CONSTANTS,
    SHIPPED,
    START,
    MeasuredRun,
    calibration_text,
    fit,
    measured_seconds,
    percentile,
    read_runs,
    rows_of,
    timed_run,
)


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
