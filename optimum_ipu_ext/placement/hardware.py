"""Every constant of the IPU hardware and of the time model, with its public source, in one place.

The time model's two calibrated constants (`COMPUTE_EFFICIENCY`, `STEP_OVERHEAD_SECONDS`) are derived from
Graphcore's MLPerf Training v2.0 language-model runs by tests/placement/test_calibration.py, which recomputes them from
the measured throughput of the result logs and fails when they drift; docs/placement.md says how close the model
comes on each run.
"""

from typing import Dict, NamedTuple


class IPUType(NamedTuple):
    """An IPU generation: its name as `--ipu` takes it, as it is written, its clock and its fp16.16 peak (matrix
    products accumulating in fp16)."""

    name: str
    label: str
    clock_hz: float
    peak_flops: float


# GC200 (IPU-M2000) and Bow IPU (Bow-2000): the same tile, memory and links, a faster clock. Clocks: MLPerf Training
# v1.0 / v2.0 system descriptions (mlcommons training_results_v2.0, Graphcore/systems/*.json: "1.33 GHz",
# "1.85 GHz"); peaks: "1 petaFLOPS FP16.16" for the 4 IPUs of an IPU-M2000 (IPU-POD64 datasheet: 15.978 petaFLOPS
# for 64) and "1.4 petaFLOPS FP16.16" for those of a Bow-2000 (Bow-2000 datasheet, Overview).
GC200 = IPUType("gc200", "GC200", 1.33e9, 250e12)
BOW = IPUType("bow", "Bow", 1.85e9, 350e12)
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

# Calibrated on Graphcore's MLPerf Training v2.0 language-model runs on Bow Pod16, Pod64, Pod128 and Pod256
# (tests/placement/test_calibration.py): the share of the fp16.16 peak the slowest IPU's forward, backward and
# recomputation FLOPs run at, and the time each optimizer step takes besides the pipeline, the off-chip transfers
# and the gradient reduction (the host's part, the weight update's arithmetic, synchronisation)
COMPUTE_EFFICIENCY = 0.382
STEP_OVERHEAD_SECONDS = 0.121
