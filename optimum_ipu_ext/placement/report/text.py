"""A placement and a plan as text, for a terminal: a placement as a table of its IPUs with a bar of each one's
memory, its pipeline, its time and its verdict (`placement_text`), the balanced split beside the config's
(`comparison_text`), and a plan's best candidates (`plan_text`)."""

from typing import Any, Collection, List, Mapping, Sequence, Tuple

from ..estimate.memory import Verdict
from .sentences import (
    SWITCHES,
    Style,
    band_line,
    candidate_sentence,
    compress,
    generation_lines,
    gflop,
    memory_reason,
    mib,
    milliseconds,
    percent,
    pipeline_line,
    plain,
    plan_title,
    shape_clause,
    time_line,
)
from .tables import plan_table
from .view import BAR_PARTS, PlacementView, placement_view, plan_view

BAR_WIDTH = 20
# how a terminal shows each verdict
VERDICT_STYLES = {Verdict.FITS: "green", Verdict.TIGHT: "yellow", Verdict.DOES_NOT_FIT: "red"}
# the columns the text shows of a plan's table, and those left-aligned
PLAN_COLUMNS = ("Rank", "IPUs a replica", "Replicas", "layers_per_ipu", "Micro-batch", "G", "Device iterations",
                *(header for _, header, _ in SWITCHES), "Largest IPU", "Verdict", "Samples a second", "Step, s")
LEFT = {"layers_per_ipu", "Verdict"}


def bar(size: int, capacity: int) -> str:
    filled = min(BAR_WIDTH, round(BAR_WIDTH * size / capacity))
    return "[" + "#" * filled + "." * (BAR_WIDTH - filled) + "]"


def stacked_bar(sizes: Sequence[int], capacity: int, parts: Sequence[Tuple[str, str]] = BAR_PARTS) -> str:
    """A bar of `capacity`, each of `sizes` drawn with the letter of its part (of `parts`), the rest free."""
    cells, total, drawn = [], 0, 0
    for size, (_, letter) in zip(sizes, parts):
        total += size
        end = min(BAR_WIDTH, round(BAR_WIDTH * total / capacity))
        cells.append(letter * (end - drawn))
        drawn = end
    return "[" + "".join(cells) + "." * (BAR_WIDTH - drawn) + "]"


def _coloured(style: Style) -> Style:
    """`style`, a verdict's name given as the terminal's colour for it."""
    return lambda text, name: style(text, VERDICT_STYLES.get(name, name))


def _verdict_line(placement: PlacementView, style: Style) -> str:
    """The verdict, with its reasons, in one line: what poptorch refuses, the IPUs over their memory or reserve."""
    memory = memory_reason(placement, style)
    verdict = placement.verdict.value
    if placement.problems:
        return f"{style('Does not run', 'red')}: {'; '.join(placement.problems)}; memory {verdict}: {memory}."
    return f"{style(verdict.capitalize(), VERDICT_STYLES[verdict])}: {memory}."


def _columns(rows: List[List[str]], left: Collection[int]) -> Tuple[List[str], List[int]]:
    """The rows as lines of columns two spaces apart, each as wide as its widest cell, right-aligned but the columns
    `left`; and the columns' widths."""
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    return ["  ".join(cell.ljust(width) if column in left else cell.rjust(width)
                      for column, (cell, width) in enumerate(zip(row, widths))).rstrip() for row in rows], widths


def placement_text(data: Mapping[str, Any], style: Style = plain) -> str:
    """The placement (its dict, `Placement.to_dict()`, with its `assumptions`) as text; `style` colours the IPUs
    that are over their memory or their reserve, on terminals."""
    placement = placement_view(data)
    style = _coloured(style)
    capacity = placement.memory_bytes
    counted, generating = placement.counted, placement.generation is not None
    rows = [["IPU", "Blocks", "Parameters", f"On chip, MiB of {mib(capacity)}", "Streaming, MiB"]]
    if generating:
        rows[0] += ["KV caches, MiB", "Encoder, GFLOP", "A token, GFLOP"]
    elif counted:
        rows[0] += ["Forward, GFLOP", "Backward, GFLOP", "Pace"]
    for ipu in placement.ipus:
        drawn = stacked_bar(ipu.parts, capacity, placement.bar_parts) if counted else bar(ipu.on_chip_bytes, capacity)
        share = f"{mib(ipu.on_chip_bytes):>9} {drawn} {100 * ipu.on_chip_bytes / capacity:3.0f}%"
        row = [str(ipu.ipu), compress(ipu.blocks), f"{ipu.parameters:,}", share, mib(ipu.streaming_bytes)]
        if generating:
            part = ipu.generation
            row += [mib(part["kv_cache_bytes"] + part["cross_cache_bytes"]), gflop(part["encoder_flops"]),
                    gflop(part["token_flops"])]
        elif counted:
            row += [gflop(ipu.forward_flops), gflop(ipu.backward_flops + ipu.recompute_flops),
                    percent(ipu.cycle_seconds / placement.slowest_cycle)]
        rows.append(row)
    lines = [f"{style(placement.model, 'bold')}: {placement.architecture}, {placement.build}, "
             f"{shape_clause(placement)}", ""]
    table, widths = _columns(rows, (1, 3))
    lines.append(style(table[0], "bold"))
    for ipu, line in zip(placement.ipus, table[1:]):
        number = widths[0]  # the IPU's number, right-aligned, begins the line: it takes the IPU's verdict's colour
        lines.append(line if ipu.verdict == Verdict.FITS else style(line[:number], ipu.verdict.value) + line[number:])
    lines.append("")
    if generating:
        lines += generation_lines(placement)
    elif counted:
        lines.append(pipeline_line(placement))
        lines.append(time_line(placement))
    lines.append(_verdict_line(placement, style))
    legend = ", ".join(f"{letter} {name}" for name, letter in placement.bar_parts)
    if generating:
        lines.append(f"Bars: {legend} (of the IPU's largest step); KV caches: the self-attention's and the cross "
                     "caches; a token: one decoder step, the first's besides in --json.")
    elif counted:
        lines.append(f"Bars: {legend}; backward FLOPs count the recomputation; pace: the IPU's cycle, as a share of "
                     "the slowest IPU's.")
    lines.append(f"Assumes {data['assumptions']}.")
    return "\n".join(lines)


def comparison_text(current: Mapping[str, Any], proposal: Mapping[str, Any], style: Style = plain,
                    objective: str = "memory") -> str:
    """The balanced split (`proposal`, a placement's dict) beside the config's (`current`): each IPU's layers and
    on-chip memory, now and balanced; balanced for `objective` "time", each IPU's FLOPs too."""
    now_view, then_view = placement_view(current), placement_view(proposal)
    timed = objective == "time"
    goal = "the slowest IPU fastest among the splits that fit" if timed else "the largest on-chip figure smallest"
    if then_view.layers_per_ipu == now_view.layers_per_ipu:
        return style(f"Balanced: the config's layers_per_ipu already makes {goal}.", "bold")
    rows = [["IPU", "Layers", "Balanced", "On chip, MiB", "Balanced, MiB"]]
    if timed:
        rows[0] += ["Cycle, ms", "Balanced, ms"]
    for now, then in zip(now_view.ipus, then_view.ipus):
        row = [str(now.ipu), str(len(now.layers)), str(len(then.layers)), mib(now.on_chip_bytes),
               mib(then.on_chip_bytes)]
        if timed:
            row += [milliseconds(now.cycle_seconds), milliseconds(then.cycle_seconds)]
        rows.append(row)
    table, _ = _columns(rows, ())
    lines = [style(f"Balanced: layers_per_ipu {list(then_view.layers_per_ipu)} (the config's: "
                   f"{list(now_view.layers_per_ipu)})", "bold"), style(table[0], "bold"), *table[1:]]
    verdict = {Verdict.FITS: "fits", Verdict.TIGHT: "is tight", Verdict.DOES_NOT_FIT: "still does not fit"}[
        then_view.verdict]
    largest_now = max(ipu.on_chip_bytes for ipu in now_view.ipus)
    largest = max(ipu.on_chip_bytes for ipu in then_view.ipus)
    summary = f"The largest on-chip figure: {mib(largest)} MiB instead of {mib(largest_now)} MiB"
    if timed:
        summary = (f"The slowest IPU: {milliseconds(then_view.slowest_cycle)} ms a cycle instead of "
                   f"{milliseconds(now_view.slowest_cycle)}; " + summary[0].lower() + summary[1:])
    lines.append(f"{summary}; it {verdict}.")
    return "\n".join(lines)


def plan_text(data: Mapping[str, Any], top: int = 10) -> str:
    """The plan (its dict, `Plan.to_dict()`) as text, its table the `top` best candidates and the base config."""
    plan = plan_view(data)
    candidates = plan.candidates
    verdicts = [candidate.verdict for candidate in candidates]
    fitting = sum(candidate.fits for candidate in candidates)
    lines = [plan_title(plan), f"{len(candidates)} builds searched: {fitting} fit, {verdicts.count(Verdict.TIGHT)} "
             f"tight, {verdicts.count(Verdict.DOES_NOT_FIT)} do not fit.", ""]
    if candidates and candidates[0].fits:
        lines.append(f"Best: {candidate_sentence(candidates[0])}.")
    else:
        lines.append("No build fits: the nearest are first below.")
    headers, rows = plan_table(plan)
    shown = [index for index, header in enumerate(headers) if header in PLAN_COLUMNS]
    # the candidates' rows, then the base config's (the last of `rows`, where there is one)
    listed = rows[:min(top, len(candidates))] + rows[len(candidates):]
    table, _ = _columns([[headers[index] for index in shown], *([row[index] for index in shown] for row in listed)],
                        [column for column, index in enumerate(shown) if headers[index] in LEFT])
    lines += ["", *table]
    if len(candidates) > top:
        lines.append(f"... and {len(candidates) - top} more (--top, --json).")
    if plan.pareto:
        frontier = ", ".join(f"#{index + 1} {candidates[index].samples_per_second:,.1f}/s at "
                             f"{percent(candidates[index].largest_share)}"
                             + (" (tight)" if candidates[index].verdict == Verdict.TIGHT else "")
                             for index in plan.pareto)
        lines += ["", f"Speed against memory (the frontier): {frontier}."]
    if plan.reference is not None:
        lines.append(f"The base config (base in the table): {candidate_sentence(plan.reference)}, "
                     f"{plan.reference.verdict.value}.")
    band = band_line(plan)
    if band:
        lines.append(band)
    return "\n".join(lines)
