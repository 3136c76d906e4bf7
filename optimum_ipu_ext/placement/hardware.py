"""Every constant of the IPU hardware, with its public source, in one place: the IPUs, their memory and links, and
the measured speed of a matrix product by its shape (`matmul_cycles`). The time model's fitted constants are data
(placement/data/calibration.json, `estimate.timing.Calibration`)."""

import math
from functools import lru_cache
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple


class IPUType(NamedTuple):
    """An IPU generation: its name as `--ipu` takes it, as it is written, and its clock (the time model counts an
    IPU's work in cycles)."""

    name: str
    label: str
    clock_hz: float


# GC200 (IPU-M2000) and Bow IPU (Bow-2000): the same tile, memory and links, a faster clock: MLPerf Training v1.0 /
# v2.0 system descriptions (mlcommons training_results_v2.0, Graphcore/systems/*.json: "1.33 GHz", "1.85 GHz")
GC200 = IPUType("gc200", "GC200", 1.33e9)
BOW = IPUType("bow", "Bow", 1.85e9)
IPU_TYPES: Dict[str, IPUType] = {ipu.name: ipu for ipu in (GC200, BOW)}

# 1,472 tiles of 624 KiB (638,976 bytes) on either: "tiles only have 638976 bytes of memory" (Graphcore's Memory and
# Performance Optimisation guide, 6.1), 897.0 MiB in all, PopVision's "Max Memory" line
TILES = 1472
TILE_BYTES = 638_976
IPU_MEMORY_BYTES = TILES * TILE_BYTES

# What the placement does not count on an IPU (code, vertex state, exchange buffers, the temporaries
# `matmul_proportion` allows) is kept as a reserve, a share of its memory: a placement fits where every IPU's
# on-chip figure leaves it. Calibrated on the PopVision profile of the split that ran out of memory in
# optimum-graphcore's translation notebook (`notebooks/images/*_oom.png`; docs/placement.md, "The verdict"), whose
# IPUs of layers hold 322 and 489 MiB, 113 and 212 MiB (13% and 24%) more than the placement counts
# (tests/placement/test_calibration.py)
RESERVE = 0.25

# IPU-Links join the IPUs of a Pod of up to 64: "IPU-Link - 512Gbps for communication within Bow Pods"; Pods are
# joined by their machines' Gateway-Links: "GW-Link - 2x 100Gbps Gateway-Links for communication between Bow Pods",
# one machine's pair shared by its 4 IPUs (Bow-2000 datasheet, Overview; the IPU-M2000's are the same)
IPU_LINK_BYTES_PER_SECOND = 512e9 / 8
GATEWAY_LINK_BYTES_PER_SECOND = 2 * 100e9 / 8 / 4
POD_IPUS = 64

# Streaming Memory, which the optimizer state kept off chip is read from and written back to at each weight update:
# "2 DDR4-2400 DIMM DRAM" on each machine's IPU-Gateway (IPU-M2000 and Bow-2000 datasheets, technical
# specifications), 2 x 19.2 GB/s shared by its 4 IPUs. Graphcore publishes no measured figure; its popxl-addons
# tutorial (examples/mnist/4_Remote_Variables, April 2022) put it "between 3x and 20x slower" than the IPU-Links.
STREAMING_BYTES_PER_SECOND = 2 * 19.2e9 / 4

# The host's link to the IPUs of an IPU-M2000 or Bow-2000, which its 4 IPUs share: "2x 100Gbps" RoCEv2 (IPU-M2000
# datasheet), of which the inputs of a step take one
HOST_LINK_BYTES_PER_SECOND = 100e9 / 8


# The speed of a dense fp16 matrix product Y[m x n] = W[m x k] X[k x n] on one Bow IPU at 1.85 GHz, by the size of W
# (m = k) and the rows n, in TFLOPS: Graphcore's PopSparse benchmark (graphcore-research/sparsity-benchmarks,
# `analysis/Analysis.ipynb`, figure `dense_ipu_gpu`, cycles from the profile at an available memory proportion of
# 0.6; arXiv 2303.16999), read off the plot to about 3 %. None: no point measured, or hidden under the GPU's curve.
MATMUL_SWEEP_ROWS = (4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768)
MATMUL_SWEEP_TFLOPS = {
    1024: (6, None, 20, None, 46, None, 89, None, 120, 153, 180, 206, 223, 223),
    2048: (13, None, 45, None, 83, None, 134, None, 166, 200, 211, 229, 239, None),
    4096: (18, None, 61, None, 130, None, 175, None, 209, 223, None, None, None, None),
    8192: (22, None, 72, None, 157, None, 223, None, None, None, None, None, None, None),
}
MATMUL_SWEEP_CLOCK_HZ = 1.85e9


# the sweep as `_matmul_cycles` takes it: the items of MATMUL_SWEEP_TFLOPS, (size, TFLOPS by rows)
Sweep = Tuple[Tuple[int, Tuple[Optional[float], ...]], ...]
# of each size of W, (log2 of the rows, square root of the FLOPs a cycle) at each point measured
Measured = Dict[int, List[Tuple[float, float]]]


def _measured(sweep: Sweep) -> Measured:
    return {size: [(math.log2(n), math.sqrt(tflops * 1e12 / MATMUL_SWEEP_CLOCK_HZ))
                   for n, tflops in zip(MATMUL_SWEEP_ROWS, row) if tflops is not None]
            for size, row in sweep}


def _sweep_rate(measured: Measured, size: int, rows: float) -> float:
    """The FLOPs a cycle of the sweep's product with W of `size` x `size`, at `rows` rows: between the rows measured,
    the square root of the rate linear in the logarithm of the rows (the sweep's own curvature: each point is within
    a fifth of what its neighbours give, tests/placement/test_calibration.py); beyond the most measured, as the
    nearest smaller size's row rises from there (none: flat), up to the fastest point measured; below the fewest, the
    same time as at the fewest."""
    points, position = measured[size], math.log2(rows)
    if position <= points[0][0]:
        return points[0][1] ** 2 * 2 ** (position - points[0][0])
    if position <= points[-1][0]:
        return _interpolated(points, position) ** 2
    smaller = [other for other in sorted(measured) if other < size and measured[other][-1][0] >= position]
    if not smaller:
        return points[-1][1] ** 2
    shape = measured[smaller[-1]]
    fastest = max(root for row in measured.values() for _, root in row) ** 2
    return min(fastest, (points[-1][1] * _interpolated(shape, position) / _interpolated(shape, points[-1][0])) ** 2)


def _interpolated(points: Sequence[Tuple[float, float]], x: float) -> float:
    """The piecewise-linear function through `points` (x ascending) at `x`, within them."""
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        if x <= x1:
            return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return points[-1][1]


def matmul_cycles(batch: int, m: int, k: int, n: int) -> float:
    """The cycles an IPU takes for `batch` products Y[m x n] = W[m x k] X[k x n], at the sweep's rate for the size of
    W (`batch` x m x k elements, as a square W of that size; between the sizes measured log-log, clamped to them)
    and its rows n."""
    return _matmul_cycles(batch, m, k, n, tuple(MATMUL_SWEEP_TFLOPS.items()))


@lru_cache(maxsize=4096)
def _matmul_cycles(batch: int, m: int, k: int, n: int, sweep: Sweep) -> float:
    """`matmul_cycles` on `sweep`, worked out once for each shape (a model's layers repeat theirs)."""
    measured = _measured(sweep)
    sizes = sorted(measured)
    elements = max(1, batch * m * k)
    position = min(max(math.log2(elements) / 2, math.log2(sizes[0])), math.log2(sizes[-1]))
    rates = [(math.log2(size), math.log2(_sweep_rate(measured, size, max(1, n)))) for size in sizes]
    return 2 * batch * m * k * n / 2 ** _interpolated(rates, position)

# A call of a compiled PopTorch model from the host, with next to no work: 0.50 ms (graphcore-research/notebooks,
# `sparsity_benchmarks/SpMM.ipynb`, a 5 x 5 by 5 x 4 product timed over 2,000 calls); an inference step's host part
POPTORCH_CALL_SECONDS = 0.5e-3
