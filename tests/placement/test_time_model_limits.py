"""What no time model of the package's kinds of work can do, within what public measurements allow: put every
training run of the dataset within half of what it measured.

A step is made of kinds of work (`KINDS`): on each IPU a pipeline cycle's matrix products, operations, elementwise
work, exchange between IPUs and a fixed time; after the pipeline the update's arithmetic, Streaming Memory and the
replicas' reduction; the host's calls, its inputs and a fixed time a micro-batch and a sample. The shipped model is
each of its kinds at 1 and the three fixed times at 0. A mix gives each kind a multiple from 0 to `MOST`, but for the
two kinds public measurements pin (`RANGES`): the matrix products within the 25 % the sweep allows, and Streaming
Memory between 3 and 20 times slower than the IPU-Links (hardware.py). Its step is the shipped model's formula: the
slowest IPU's cycle times the cycles, the slowest update and reduction, and the host's part.

Whether some mix puts runs within a bound is a mixed-integer linear feasibility problem (which IPU is the slowest
is the integer part), solved by scipy's `milp` on each run's parts as shares of its measured step. No mix puts every
training run within 60 %; one puts them within 70 %. Free of Streaming Memory's range, a mix comes within 52 % (none
within 50 %), its Streaming Memory slower than Graphcore's range. So a model whose constants meet the held-out goal
(those runs within 50 %) is off by more than 60 % on a fitted run, and a least-squares fit is no nearer a run it
leaves out than one it fits: the goals "no fitted run, left out, beyond 50 %" and "held-out runs within the same
bounds" are not both met by constants within what the hardware is measured to do. docs/placement.md says so
(`PYTHONPATH=tests python tests/placement/test_time_model_limits.py` prints each least bound).
"""

import functools
from typing import Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

import pytest

from optimum_ipu_ext.config.calibration import run_settings
from optimum_ipu_ext.placement.calibration import measured_seconds, read_runs, timed_run
from optimum_ipu_ext.placement.hardware import IPU_LINK_BYTES_PER_SECOND, STREAMING_BYTES_PER_SECOND

# a cycle's kinds, the update's, the reduction's and the host's
KINDS = ("matrix products", "operations", "elementwise work", "exchange between IPUs", "a fixed time a cycle",
         "the update's arithmetic", "Streaming Memory", "the replicas' reduction",
         "host calls", "inputs from the host", "a fixed time a micro-batch", "a fixed time a sample")
CYCLE, UPDATE, REDUCTION, HOST = slice(0, 5), slice(5, 7), slice(7, 8), slice(8, 12)
# the shipped model: each of its kinds at 1, the fixed times it does not have at 0
SHIPPED = tuple(0.0 if kind.startswith("a fixed time") else 1.0 for kind in KINDS)
# a kind's multiple at most, but for those public measurements pin: the matrix products within the sweep's 25 %,
# Streaming Memory between 3 and 20 times slower than the IPU-Links ("between 3x and 20x slower", hardware.py)
MOST = 100.0
RANGES = {"matrix products": (0.8, 1 / 0.75),
          "Streaming Memory": (STREAMING_BYTES_PER_SECOND / (IPU_LINK_BYTES_PER_SECOND / 3),
                               STREAMING_BYTES_PER_SECOND / (IPU_LINK_BYTES_PER_SECOND / 20))}
# the unit of each fixed time: a millisecond a cycle and a micro-batch, a microsecond a sample
UNITS = {"a fixed time a cycle": 1e-3, "a fixed time a micro-batch": 1e-3, "a fixed time a sample": 1e-6}


class Parts(NamedTuple):
    """A run's step by kind, each at a multiple of 1: per IPU its cycle's kinds, its update's and its reduction's;
    the host's kinds; the pipeline's cycles; and the measured step's seconds."""

    name: str
    cycle: Tuple[Tuple[float, ...], ...]
    update: Tuple[Tuple[float, ...], ...]
    reduction: Tuple[Tuple[float, ...], ...]
    host: Tuple[float, ...]
    cycles: int
    measured: float

    def step(self, multiples: Sequence[float]) -> float:
        """The step of the mix `multiples` (`KINDS`' order)."""
        def slowest(per_ipu: Sequence[Sequence[float]], kinds: slice) -> float:
            return max(_dot(parts, multiples[kinds]) for parts in per_ipu)

        return (self.cycles * slowest(self.cycle, CYCLE) + slowest(self.update, UPDATE)
                + slowest(self.reduction, REDUCTION) + _dot(self.host, multiples[HOST]))


def _dot(parts: Sequence[float], multiples: Sequence[float]) -> float:
    return sum(part * multiple for part, multiple in zip(parts, multiples))


def parts_of(run) -> Parts:
    """`run`'s step by kind, each kind's seconds read from the package's own time model: its constants set to 0 one
    at a time, and Streaming Memory's bytes to none."""
    timed = timed_run(run, run_settings(run))
    time = timed.cost_model.time
    shipped = time.calibration
    at = {name: time._replace(calibration=shipped._replace(**values)) for name, values in {
        "no constants": {"operation_cycles": 0.0, "elementwise_cycles": 0.0, "call_seconds": 0.0},
        "operations": {"elementwise_cycles": 0.0, "call_seconds": 0.0},
        "elementwise": {"operation_cycles": 0.0, "call_seconds": 0.0}}.items()}
    cycle, update, reduction = [], [], []
    for load in timed.loads:
        work = load.work
        streamed = timed.cost_model.memory.parameters(load.trained, load.frozen).optimizer.streaming
        fixed = at["no constants"].cycle_seconds(work)
        matrix_products = work.operations.matmul_cycles / time.ipu.clock_hz
        cycle.append((matrix_products, at["operations"].cycle_seconds(work) - fixed,
                      at["elementwise"].cycle_seconds(work) - fixed, fixed - matrix_products,
                      UNITS["a fixed time a cycle"]))
        whole = time.ipu_time(work, load.trained, streamed)
        unstreamed = time.ipu_time(work, load.trained, 0)
        update.append((unstreamed.update_seconds, whole.update_seconds - unstreamed.update_seconds))
        reduction.append((whole.reduction_seconds,))
    inputs = at["no constants"].host_seconds()
    host = (time.host_seconds() - inputs, inputs, time.job.micro_batches * UNITS["a fixed time a micro-batch"],
            timed.step().samples_per_step * UNITS["a fixed time a sample"])
    return Parts(run.name, tuple(cycle), tuple(update), tuple(reduction), host, timed.cycles,
                 measured_seconds(run, timed))


@functools.lru_cache(maxsize=None)
def training_runs() -> Tuple[Parts, ...]:
    return tuple(parts_of(run) for run in read_runs() if run.build == "training")


def within(runs: Sequence[Parts], bound: float, ranges: Mapping[str, Tuple[float, float]] = RANGES
           ) -> Optional[Tuple[float, ...]]:
    """A mix (`KINDS`' multiples, each from 0 to `MOST` but for `ranges`) whose step is within `bound` of each run's
    measured one (measured over modelled, less one), or None where there is none."""
    import numpy
    from scipy.optimize import Bounds, LinearConstraint, milp

    kinds = len(KINDS)
    low, high = numpy.zeros(kinds), numpy.full(kinds, MOST)
    for kind, (least, most) in ranges.items():
        low[KINDS.index(kind)], high[KINDS.index(kind)] = least, most
    # the variables: the multiples; then for each run its slowest cycle's, update's and reduction's share of its
    # measured step, and for each of the three and each IPU whether that IPU is the slowest
    starts, count = [], kinds
    for run in runs:
        starts.append(count)
        count += 3 + 3 * len(run.cycle)
    rows: List[numpy.ndarray] = []
    lows: List[float] = []
    highs: List[float] = []

    def add(coefficients: Dict[int, float], least: float, most: float, kinds_of: slice, parts: Sequence[float]
            ) -> None:
        row = numpy.zeros(count)
        for index, value in coefficients.items():
            row[index] += value
        row[kinds_of][:len(parts)] += numpy.asarray(parts)
        rows.append(row)
        lows.append(least)
        highs.append(most)

    for run, start in zip(runs, starts):
        ipus = len(run.cycle)
        # the step, as a share of the measured one: the three slowest parts and the host's
        add({start: 1, start + 1: 1, start + 2: 1}, 1 / (1 + bound), 1 / (1 - bound) if bound < 1 else numpy.inf,
            HOST, numpy.asarray(run.host) / run.measured)
        for part, (kinds_of, per_ipu, times) in enumerate(((CYCLE, run.cycle, run.cycles), (UPDATE, run.update, 1),
                                                           (REDUCTION, run.reduction, 1))):
            shares = [times * numpy.asarray(values) / run.measured for values in per_ipu]
            # a slowest part is at least each IPU's, and at most the one its binary chooses: `large`, the most any
            # IPU's part can be, frees the others
            large = max(float(share @ high[kinds_of]) for share in shares)
            slowest, chosen = start + part, start + 3 + ipus * part
            for ipu, share in enumerate(shares):
                add({slowest: 1}, 0.0, numpy.inf, kinds_of, -share)
                add({slowest: 1, chosen + ipu: large}, -numpy.inf, large, kinds_of, -share)
            add({chosen + ipu: 1 for ipu in range(ipus)}, 1, 1, HOST, ())
    lower, upper = numpy.zeros(count), numpy.full(count, numpy.inf)
    lower[:kinds], upper[:kinds] = low, high
    integral = numpy.zeros(count)
    for run, start in zip(runs, starts):
        integral[start + 3:start + 3 + 3 * len(run.cycle)] = 1
        upper[start + 3:start + 3 + 3 * len(run.cycle)] = 1
    found = milp(numpy.zeros(count), constraints=LinearConstraint(numpy.array(rows), lows, highs),
                 integrality=integral, bounds=Bounds(lower, upper))
    if found.status not in (0, 2):
        raise RuntimeError(f"the solver did not settle whether runs are within {bound}: {found.message}")
    return None if found.x is None else tuple(float(value) for value in found.x[:kinds])


def _worst(runs: Sequence[Parts], multiples: Sequence[float]) -> float:
    return max(abs(run.measured / run.step(multiples) - 1) for run in runs)


def test_the_kinds_at_the_shipped_multiples_give_the_step_place_prints():
    runs = [run for run in read_runs() if run.build == "training"]
    assert [parts.name for parts in training_runs()] == [run.name for run in runs]
    for run, parts in zip(runs, training_runs()):
        assert parts.step(SHIPPED) == pytest.approx(timed_run(run, run_settings(run)).step().step_seconds, rel=1e-9)


def test_each_kind_moves_the_step_of_some_run():
    """Each kind is a part of a step: its multiple doubled (a fixed time the model has not, set to 1) makes some
    run's step longer."""
    for index, kind in enumerate(KINDS):
        moved = list(SHIPPED)
        moved[index] = 2 * moved[index] or 1.0
        assert any(parts.step(moved) > parts.step(SHIPPED) for parts in training_runs()), kind


def test_the_ranges_are_the_sweep_s_and_graphcore_s_for_streaming_memory():
    assert RANGES["matrix products"] == (0.8, pytest.approx(4 / 3))
    least, most = RANGES["Streaming Memory"]
    assert STREAMING_BYTES_PER_SECOND / least == pytest.approx(IPU_LINK_BYTES_PER_SECOND / 3)
    assert STREAMING_BYTES_PER_SECOND / most == pytest.approx(IPU_LINK_BYTES_PER_SECOND / 20)


def test_no_mix_within_the_ranges_puts_every_training_run_within_60_percent():
    assert within(training_runs(), 0.6) is None


def test_a_mix_within_the_ranges_puts_every_training_run_within_70_percent():
    multiples = within(training_runs(), 0.7)
    assert multiples is not None and _worst(training_runs(), multiples) <= 0.7 + 1e-4
    for kind, (least, most) in RANGES.items():
        assert least - 1e-9 <= multiples[KINDS.index(kind)] <= most + 1e-9


def test_free_of_streaming_memory_s_range_a_mix_comes_within_52_percent_and_none_within_50():
    free = {"matrix products": RANGES["matrix products"]}
    multiples = within(training_runs(), 0.52, free)
    assert multiples is not None and _worst(training_runs(), multiples) <= 0.52 + 1e-4
    assert multiples[KINDS.index("Streaming Memory")] > RANGES["Streaming Memory"][1]
    assert within(training_runs(), 0.5, free) is None


def least_bound(ranges: Mapping[str, Tuple[float, float]]) -> float:
    """The least bound a mix puts every training run within, to a tenth of a percent."""
    met, missed = 0.99, 0.0
    while met - missed > 0.001:
        middle = (met + missed) / 2
        if within(training_runs(), middle, ranges) is None:
            missed = middle
        else:
            met = middle
    return met


if __name__ == "__main__":
    print(f"within the ranges: {least_bound(RANGES):.1%}")
    print(f"free of Streaming Memory's: {least_bound({'matrix products': RANGES['matrix products']}):.1%}")
