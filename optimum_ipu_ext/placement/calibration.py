"""The time model's constants fitted on measured runs: each run placed and timed by the code `place` times with, at
any constants (an operation's cycles, an element's cycles, a host call's seconds), and the constants those with
the least relative squares of the modelled steps against the measured ones, none negative.

`MeasuredRun` is a run with its measurement and `timed_run()` the run ready to be timed; `fit()` gives the constants
of some runs.
`config.calibration` fits the shipped constants on the shipped runs, with the model's error on each, and writes them
as the file `estimate.timing.Calibration` reads.
"""

import json
import math
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from .estimate.cost import CostModel, IPULoad
from .estimate.timing import StepTime, product_rows
from .models import architecture_of, resolve_shape

DATA = Path(__file__).resolve().parent / "data"
RUNS_FILE = DATA / "measured_runs.json"
CONSTANTS = ("operation_cycles", "elementwise_cycles", "call_seconds")


class MeasuredRun(NamedTuple):
    """A run: its name, whether the shipped constants are fitted on it ("fit") or only checked against it
    ("held-out"), its build, model (`config.json` values), architecture, IPU config settings, micro-batch, lengths,
    IPU type, measured samples a second and source."""

    name: str
    role: str
    build: str
    model: Dict[str, Any]
    architecture: str
    ipu_config: Dict[str, Any]
    micro_batch_size: int
    sequence_length: Optional[int]
    decoder_sequence_length: Optional[int]
    ipu: str
    measured_samples_per_second: float
    source: str = ""
    note: str = ""


def read_runs(path: Optional[str] = None) -> List[MeasuredRun]:
    """The runs of a dataset file (default: the one shipped)."""
    data = json.loads(Path(path or RUNS_FILE).read_text(encoding="utf-8"))
    models = data["models"]
    return [MeasuredRun(run["name"], run["role"], run["build"], models[run["model"]], run["architecture"],
                        run["ipu_config"], run["micro_batch_size"], run.get("sequence_length"),
                        run.get("decoder_sequence_length"), run["ipu"], run["measured_samples_per_second"],
                        run.get("source", ""), run.get("note", "")) for run in data["runs"]]


class TimedRun(NamedTuple):
    """A run placed as `place` places it, to be timed at any constants: its cost model, what each of its IPUs holds,
    keeps and computes, and its pipeline's cycles (None: not pipelined)."""

    cost_model: CostModel
    loads: Tuple[IPULoad, ...]
    cycles: Optional[int]

    def step(self, constants: Optional[Sequence[float]] = None) -> StepTime:
        """The step as `place` times it, with `constants` (`CONSTANTS`' order; None: the calibration's own)."""
        time = self.cost_model.time
        calibration = time.calibration._replace(**dict(zip(CONSTANTS, constants or ())))
        cost_model = self.cost_model._replace(time=time._replace(calibration=calibration))
        return cost_model.step([cost_model.ipu(load) for load in self.loads], self.cycles)

    def step_seconds(self, constants: Sequence[float]) -> float:
        return self.step(constants).step_seconds


def timed_run(run: MeasuredRun, settings: Mapping[str, Any]) -> TimedRun:
    """`run`, its IPU config's settings (`vars()`) `settings`, placed as `place` places it."""
    from .placer import model_placer

    inference = run.build == "inference"
    placer = model_placer(settings, dict(run.model), run.architecture, inference, False, None, None,
                          (run.micro_batch_size, run.sequence_length, run.decoder_sequence_length), run.ipu)
    placement = placer.place()
    configured = placer.configured
    layout = configured.layout()
    loads = configured.loads(layout, placement.stages, configured.first_uses(layout))
    return TimedRun(configured.cost_model, tuple(loads), placement.schedule.cycles)


StepSeconds = Callable[[Sequence[float]], float]


def fit(found: Sequence[Tuple[StepSeconds, float]], start: Sequence[float]) -> Tuple[float, ...]:
    """The constants (none negative) with the least squares of the relative errors of the steps `found`, each
    `(its seconds at given constants, its measured seconds)`. A step is linear in the constants but for which IPU
    is the slowest: each round takes it as linear where the round before left the constants (from `start`), until
    they no longer change."""
    import numpy

    constants = tuple(start)
    for _ in range(20):
        rows = [_linearized(step_seconds, constants, start) for step_seconds, _ in found]
        design = numpy.array([[slope / seconds for slope in slopes] for (slopes, _), (_, seconds) in zip(rows, found)])
        target = numpy.array([1 - rest / seconds for (_, rest), (_, seconds) in zip(rows, found)])
        fitted = _non_negative_least_squares(design, target)
        if all(math.isclose(new, old, rel_tol=1e-7, abs_tol=1e-15) for new, old in zip(fitted, constants)):
            break
        constants = fitted
    return constants


def _linearized(step_seconds: StepSeconds, constants: Sequence[float], scale: Sequence[float]
                ) -> Tuple[List[float], float]:
    """The slope of `step_seconds` along each constant at `constants` (a step of a millionth of the larger of it and
    `scale`, or of 1 where both are 0), and the seconds left at all constants 0 along those slopes."""
    at = step_seconds(constants)
    slopes = []
    for index, (value, size) in enumerate(zip(constants, scale)):
        step = 1e-6 * (max(abs(value), abs(size)) or 1.0)
        moved = [*constants[:index], value + step, *constants[index + 1:]]
        slopes.append((step_seconds(moved) - at) / step)
    return slopes, at - sum(slope * value for slope, value in zip(slopes, constants))


def _non_negative_least_squares(design, target) -> Tuple[float, ...]:
    """The least squares solution of `design` x = `target` with x >= 0, by trying every set of the few unknowns."""
    import itertools

    import numpy

    columns = design.shape[1]
    best, chosen = None, (0.0,) * columns
    for count in range(1, columns + 1):
        for subset in itertools.combinations(range(columns), count):
            solution, *_ = numpy.linalg.lstsq(design[:, subset], target, rcond=None)
            if (solution < 0).any():
                continue
            full = numpy.zeros(columns)
            full[list(subset)] = solution
            residual = float(((design @ full - target) ** 2).sum())
            if best is None or residual < best:
                best, chosen = residual, tuple(float(value) for value in full)
    return chosen


def measured_seconds(run: MeasuredRun, timed: TimedRun) -> float:
    """The seconds of `run`'s step, as measured."""
    return timed.step().samples_per_step / run.measured_samples_per_second


def percentile(values: Sequence[float], share: float) -> float:
    """The `share` percentile of `values`, between the nearest ranks."""
    ordered = sorted(values)
    position = share * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def rows_of(run: MeasuredRun) -> Optional[int]:
    """The rows a matrix product of a text model's layers takes in `run` (None: not a text model)."""
    row = architecture_of(run.name, run.model, run.architecture)
    shape = resolve_shape(run.name, row.name, row.config(run.model), run.micro_batch_size, run.sequence_length,
                          run.decoder_sequence_length)
    return product_rows(row.inputs, shape)


# where a fit of the shipped constants starts: the slowest IPUs of each run are taken at these, then at each round's
START = (10000.0, 0.003, 0.05)
SHIPPED = DATA / "calibration.json"


def calibration_text(data: Mapping[str, Any]) -> str:
    """A calibration as its file holds it, its figures to 6 significant digits."""
    return json.dumps(_rounded(data), indent=1, sort_keys=True) + "\n"


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return float(f"{value:.6g}")
    if isinstance(value, dict):
        return {key: _rounded(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_rounded(item) for item in value]
    return value
