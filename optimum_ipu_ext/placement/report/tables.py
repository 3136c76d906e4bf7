"""A placement's and a plan's tables as rows of strings, for the formats that show a table (text, page, model
card): each writes the rows its own way."""

from typing import List, Tuple

from .sentences import SWITCHES, compress, gflop, mib, percent, ranges
from .view import PlacementView, PlanView

Table = Tuple[List[str], List[List[str]]]


def placement_table(placement: PlacementView) -> Table:
    """Its headers and one row per IPU, each part of the on-chip memory in a column of its own (MiB to a tenth, as
    `--json` gives the bytes)."""
    memory = placement.memory_bytes
    headers = ["IPU", "Blocks", "Layers", "Parameters", f"On chip, MiB of {mib(memory)}", "Share",
               *(f"{letter}, MiB" for _, letter in placement.bar_parts), "Streaming, MiB"]
    if placement.counted:
        headers += ["Forward, GFLOP", "Backward, GFLOP", "Pace"]
    rows = []
    for ipu in placement.ipus:
        row = [str(ipu.ipu), compress(ipu.blocks), ranges(ipu.layers) or "-", f"{ipu.parameters:,}",
               mib(ipu.on_chip_bytes), percent(ipu.on_chip_bytes / memory), *map(mib, ipu.parts),
               mib(ipu.streaming_bytes)]
        if placement.counted:
            row += [gflop(ipu.forward_flops), gflop(ipu.backward_flops + ipu.recompute_flops),
                    percent(ipu.cycle_seconds / placement.slowest_cycle)]
        rows.append(row)
    return headers, rows


def plan_table(plan: PlanView) -> Table:
    """Its candidates as rows, best first, then the reference (rank "base"): their settings, the largest IPU's share
    of its memory, the verdict, the speed and whether they are on the frontier. A training plan's show the
    accumulation and the switches, an inference plan's the device iterations."""
    training = plan.training
    headers = ["Rank", "IPUs a replica", "Replicas", "layers_per_ipu", "Micro-batch",
               *(["G", *(header for _, header, _ in SWITCHES)] if training else ["Device iterations"]),
               "Largest IPU", "Verdict", "Samples a second", "Step, s", "Pipeline efficiency", "Frontier"]
    listed = [(str(index + 1), candidate, index in plan.pareto) for index, candidate in enumerate(plan.candidates)]
    if plan.reference:
        listed.append(("base", plan.reference, False))
    rows = []
    for rank, candidate, frontier in listed:
        build = candidate.build
        speed, step = candidate.samples_per_second, candidate.step_seconds
        efficiency = candidate.pipeline_efficiency
        chosen = ([str(build["gradient_accumulation_steps"]), *("yes" if build[name] else "no"
                                                                for name, _, _ in SWITCHES)] if training
                  else [str(build["device_iterations"])])
        rows.append([rank, str(build["ipus_per_replica"]), str(build["replication_factor"]),
                     str(build["layers_per_ipu"]), str(candidate.micro_batch_size), *chosen,
                     percent(candidate.largest_share), candidate.verdict_word,
                     "-" if speed is None else f"{speed:,.1f}", "-" if step is None else f"{step:.3g}",
                     "-" if efficiency is None else f"{100 * efficiency:.1f}%", "yes" if frontier else ""])
    return headers, rows
