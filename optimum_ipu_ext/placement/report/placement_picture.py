"""A placement as one SVG picture (`placement_svg`): each IPU's on-chip memory as a stacked bar against the IPU's
memory and what its reserve leaves, its blocks, layers and share of the pace, the verdict, and the pipeline's
schedule of one step."""

from typing import Any, Iterator, List, Mapping, Optional, Sequence, Tuple

from ..estimate.memory import Verdict
from .sentences import MIB, compress, mib, percent, ranges, summary_lines, title_line, verdict_lines
from .svg import (
    INK,
    MARGIN,
    MUTED,
    PAPER,
    VERDICT_COLOURS,
    coordinate,
    element,
    esc,
    nice_step,
    picture,
    text,
    text_width,
    wrap,
)
from .view import DOES_NOT_RUN, IPUView, PlacementView, placement_view

# each part of a placement's bars (BAR_PARTS, or GENERATION_BAR_PARTS), in its order: its fill, its pattern (None,
# "stripes" or "dots") and the pattern's ink, and the colour of its letter. Neighbours in a bar differ in lightness
# (grey-scale: 22, 46, 76, 25, 81, 29 %), the pipeline's parts (a generation build's encoder output and state) are
# striped and the update's (the working activations) dotted, and each part large enough carries its letter.
PART_STYLES = (
    ("#1b3a6b", None, None, "#ffffff"),
    ("#4a7bc0", None, None, "#ffffff"),
    ("#a9c6ec", None, None, "#10243f"),
    ("#7a3510", "stripes", "#a8582c", "#ffffff"),
    ("#f6c796", "stripes", "#e0a060", "#4a2000"),
    ("#5e3c99", "dots", "#9a7cd0", "#ffffff"),
)
# the schedule: forward, recomputation (striped) and backward, light to dark
FORWARD, RECOMPUTE, RECOMPUTE_INK, BACKWARD = "#a8dba8", "#e9b949", "#c7962a", "#1f5f3f"

AXIS = 64  # the memory axis's labels
LINE_LABELS = 206  # right of the bars: the names of the memory's lines
COLUMN, WIDEST_COLUMN = 132, 210
BAR = 46
PLOT_HEIGHT = 300


def placement_svg(data: Mapping[str, Any], config: Optional[str] = None) -> str:
    """The placement as one SVG picture: a header (model, config, shape, time, verdict), a legend, each IPU's
    on-chip memory as a stacked bar under the lines of the IPU's memory and of what its reserve leaves, with its
    blocks, layers, parameters, Streaming Memory and share of the pace; below, where the activations are counted
    and the build is pipelined, the schedule of one step.

    Args:
        data (`dict`): `Placement.to_dict()`, or the JSON `place --json` printed, read back.
        config (`str`, *optional*): where the config came from, named in the header.
    """
    placement = placement_view(data)
    count = len(placement.ipus)
    width = max(800, 2 * MARGIN + AXIS + count * COLUMN + LINE_LABELS)
    column = min(WIDEST_COLUMN, (width - 2 * MARGIN - AXIS - LINE_LABELS) / count)
    body: List[str] = []
    y = _header(body, placement, config, width)
    y = _legend(body, placement, y, width)
    y = _memory_panel(body, placement, y, column)
    if placement.counted and placement.cycles is not None:
        y = _schedule_panel(body, placement, y + 18, width)
    height = y + MARGIN
    return picture(width, height, title_line(placement), "placement",
                   f"{title_line(placement)}: placement on the IPUs", body, _definitions(placement))


def _definitions(placement: PlacementView) -> str:
    """The patterns of the striped and dotted parts, and of recomputation."""
    patterns = []
    for letter_style, (_, letter) in zip(PART_STYLES, placement.bar_parts):
        fill, pattern, ink, _ = letter_style
        if pattern is not None:
            patterns.append(_pattern(f"part-{letter}", fill, pattern, ink))
    patterns.append(_pattern("recompute", RECOMPUTE, "stripes", RECOMPUTE_INK))
    return element("defs", "".join(patterns))


def _pattern(name: str, fill: str, kind: str, ink: str) -> str:
    ground = element("rect", width=6, height=6, fill=fill)
    mark = (element("path", d="M-1,1 l2,-2 M0,6 l6,-6 M5,7 l2,-2", stroke=ink, stroke_width=1.6) if kind == "stripes"
            else element("circle", cx=3, cy=3, r=1.3, fill=ink))
    return element("pattern", ground + mark, id=name, width=6, height=6, patternUnits="userSpaceOnUse")


def _header(body: List[str], placement: PlacementView, config: Optional[str], width: float) -> float:
    """The title, the badge of the verdict and the summary lines, the verdict's in its colour; returns the y below
    them."""
    word = placement.verdict_word
    colour = VERDICT_COLOURS[Verdict.DOES_NOT_FIT] if word == DOES_NOT_RUN else VERDICT_COLOURS[placement.verdict]
    badge = max(118.0, text_width(word.upper(), 15, True) + 28)
    body.append(element("g", element("rect", x=float(width - MARGIN - badge), y=14, width=badge, height=30, rx=4,
                                     fill=colour)
                        + text(width - MARGIN - badge / 2, 35, word.upper(), 15, "middle", PAPER, "bold"),
                        data_verdict=word))
    y = 34.0
    for piece in wrap(title_line(placement), width - 2 * MARGIN - badge - 16, 17, " ", True):
        body.append(text(MARGIN, y, piece, 17, weight="bold", data_role="title"))
        y += 22
    y = max(y, 52.0) + 4
    verdicts = verdict_lines(placement)
    for line in summary_lines(placement, config):
        ink = (MUTED if line not in verdicts
               else VERDICT_COLOURS[Verdict.DOES_NOT_FIT] if line.startswith("Does not run")
               else VERDICT_COLOURS[placement.verdict])
        for piece in wrap(line, width - 2 * MARGIN, 12, " ", line in verdicts):
            body.append(text(MARGIN, y, piece, 12, fill=ink, weight="bold" if line in verdicts else None))
            y += 17
    return y + 4


def _legend(body: List[str], placement: PlacementView, y: float, width: float) -> float:
    """A swatch and the name of each part the bars show, then the two lines; returns the y below."""
    present = [any(ipu.parts[index] for ipu in placement.ipus) for index in range(len(placement.bar_parts))]
    items: List[Tuple[str, str]] = []
    x = float(MARGIN)
    for index, (name, letter) in enumerate(placement.bar_parts):
        if not present[index]:
            continue
        label = f"{letter} {name}"
        items.append((_swatch(index, letter, x, y, 14), text(x + 19, y + 11, label, 11, data_role="legend")))
        x += 19 + text_width(label, 11) + 14
        if x > width - 240:
            x, y = float(MARGIN), y + 20
    body.extend(piece for item in items for piece in item)
    for dash, label in ((None, "an IPU's memory"), ("6 4", "what the reserve leaves")):
        if x > width - 200:
            x, y = float(MARGIN), y + 20
        body.append(element("line", x1=x, y1=y + 7.0, x2=x + 22, y2=y + 7.0, stroke=INK, stroke_width=1.6,
                            stroke_dasharray=dash))
        body.append(text(x + 27, y + 11, label, 11, data_role="legend"))
        x += 27 + text_width(label, 11) + 14
    return y + 46


def _swatch(index: int, letter: str, x: float, y: float, size: float) -> str:
    fill, pattern, _, _ = PART_STYLES[index]
    paint = f"url(#part-{letter})" if pattern else fill
    return element("rect", x=x, y=y, width=size, height=size, fill=paint, stroke=INK, stroke_width=0.6)


def _memory_panel(body: List[str], placement: PlacementView, top: float, column: float) -> float:
    """The memory axis, the bands and lines of the IPU's memory and reserve, and a column per IPU; returns the y
    below."""
    memory, reserve = placement.memory_bytes, placement.reserve_bytes
    ipus = placement.ipus
    largest = max([memory, *(ipu.on_chip_bytes for ipu in ipus)]) / MIB
    step = nice_step(largest * 1.08)
    scale_top = step * -(-largest * 1.08 // step)
    scale = PLOT_HEIGHT / scale_top  # pixels a MiB
    left, right = MARGIN + AXIS, MARGIN + AXIS + column * len(ipus)
    base = top + PLOT_HEIGHT

    def at(size_mib: float) -> float:
        return base - size_mib * scale

    group = [element("rect", x=float(left), y=at(scale_top), width=float(right - left), height=float(PLOT_HEIGHT),
                     fill="#fafafa"),
             element("rect", x=float(left), y=at(scale_top), width=float(right - left),
                     height=at(memory / MIB) - at(scale_top), fill="#fbe3e3", data_band="over"),
             element("rect", x=float(left), y=at(memory / MIB), width=float(right - left),
                     height=at((memory - reserve) / MIB) - at(memory / MIB), fill="#fdf3d8", data_band="reserve")]
    tick = 0.0
    while tick <= scale_top + 1e-9:
        group.append(element("line", x1=float(left - 4), y1=at(tick), x2=float(right), y2=at(tick), stroke="#e6e6e6"))
        group.append(text(left - 8, at(tick) + 4, f"{tick:,.0f}", 10, "end", MUTED))
        tick += step
    group.append(text(MARGIN, at(scale_top) - 10, "On chip, MiB", 11, fill=MUTED))
    body.append(element("g", "".join(group), data_role="axis"))
    for index, ipu in enumerate(ipus):
        body.append(_ipu_column(placement, ipu, left + index * column, column, base, scale))
    for size, label, dash, role in ((memory, "an IPU's memory", None, "memory"),
                                    (memory - reserve, f"left by a reserve of {mib(reserve)} MiB", "6 4", "reserve")):
        y = at(size / MIB)
        body.append(element("g", element("line", x1=float(left), y1=y, x2=float(right + 6), y2=y, stroke=INK,
                                         stroke_width=1.6, stroke_dasharray=dash)
                            + text(right + 10, y - 6 if role == "memory" else y + 13, f"{mib(size)} MiB", 11,
                                   weight="bold")
                            + text(right + 10, y - 19 if role == "memory" else y + 26, label, 10, fill=MUTED),
                            data_line=role, data_mib=mib(size)))
    body.append(element("line", x1=float(left), y1=base, x2=float(right), y2=base, stroke=INK, stroke_width=1.2,
                        data_line="base"))
    return base + _labels_height(placement, column)


def _ipu_column(placement: PlacementView, ipu: IPUView, left: float, column: float, base: float,
                scale: float) -> str:
    """One IPU: its stacked bar with each part's letter and MiB beside it, its total over it, and its labels under
    the axis."""
    bar_x = left + max(10.0, (column - BAR - 62) / 2)
    pieces = []
    below, labels = 0, []
    for index, size in enumerate(ipu.parts):
        if not size:
            continue
        name, letter = placement.bar_parts[index]
        bottom, top = base - below / MIB * scale, base - (below + size) / MIB * scale
        fill, pattern, _, ink = PART_STYLES[index]
        title = element("title", esc(f"IPU {ipu.ipu}, {name}: {mib(size)} MiB"))
        pieces.append(element("rect", title, x=bar_x, y=top, width=float(BAR), height=bottom - top,
                              fill=f"url(#part-{letter})" if pattern else fill, data_part=letter, data_mib=mib(size)))
        if bottom - top >= 13:
            pieces.append(text(bar_x + BAR / 2, (top + bottom) / 2 + 4, letter, 11, "middle", ink, "bold",
                               data_letter=letter))
        labels.append([(top + bottom) / 2 + 4, f"{letter} {mib(size)}"])
        below += size
    if labels:
        labels[0][0] = min(labels[0][0], base - 2)
    for index in range(1, len(labels)):  # bottom up: each label at least a line above the one below
        labels[index][0] = min(labels[index][0], labels[index - 1][0] - 12)
    pieces += [text(bar_x + BAR + 6, y, label, 10, fill=MUTED, data_label=label.split()[0]) for y, label in labels]
    state = _state(ipu)
    colour = VERDICT_COLOURS.get(state, INK)
    top_y = base - ipu.on_chip_bytes / MIB * scale
    pieces.append(element("rect", x=bar_x, y=top_y, width=float(BAR), height=base - top_y, fill="none", stroke=INK,
                          stroke_width=0.8))
    pieces.append(text(bar_x + BAR / 2, top_y - 6, mib(ipu.on_chip_bytes), 11, "middle", colour, "bold",
                       data_role="on-chip"))
    pieces += _column_labels(placement, ipu, left + column / 2, column, base, state)
    return element("g", "".join(pieces), data_ipu=ipu.ipu, data_on_chip_mib=mib(ipu.on_chip_bytes))


def _state(ipu: IPUView) -> Optional[Verdict]:
    """The IPU's verdict where it is over its memory or its reserve, else None."""
    return None if ipu.verdict == Verdict.FITS else ipu.verdict


def _column_lines(placement: PlacementView, ipu: IPUView, column: float,
                  state: Optional[Verdict]) -> Iterator[Tuple[str, float, Optional[str], str]]:
    """Each line under an IPU's bar: (text, size, weight, role)."""
    memory = placement.memory_bytes
    yield f"IPU {ipu.ipu}", 13, "bold", "ipu"
    share = f"{mib(ipu.on_chip_bytes)} MiB, {percent(ipu.on_chip_bytes / memory)}"
    yield share, 11, "bold", "share"
    if state is not None:
        yield ("over the IPU's memory" if state == Verdict.DOES_NOT_FIT else "in the reserve"), 10, "bold", "state"
    if placement.counted:
        marked = " (slowest)" if placement.bottleneck_ipu == ipu.ipu else ""
        yield (f"pace {percent(ipu.cycle_seconds / placement.slowest_cycle)}{marked}", 10, "bold" if marked else None,
               "pace")
    yield f"{ipu.parameters:,} parameters", 10, None, "parameters"
    yield f"streaming {mib(ipu.streaming_bytes)} MiB", 10, None, "streaming"
    yield (f"layers {ranges(ipu.layers)}" if ipu.layers else "no layers"), 10, None, "layers"
    for piece in wrap(compress(ipu.blocks), column - 10, 10):
        yield piece, 10, None, "blocks"


def _column_labels(placement: PlacementView, ipu: IPUView, centre: float, column: float, base: float,
                   state: Optional[Verdict]) -> List[str]:
    labels, y = [], base + 18
    for line, size, weight, role in _column_lines(placement, ipu, column, state):
        colour = VERDICT_COLOURS[state] if state and role in ("share", "state") else (INK if weight else MUTED)
        if role == "blocks":
            colour = INK
        labels.append(text(centre, y, line, size, "middle", colour, weight, data_role=role))
        if role == "pace":
            share = ipu.cycle_seconds / placement.slowest_cycle
            labels.append(element("rect", x=centre - 30, y=y + 3, width=60.0, height=4.0, fill="#e4e4e4"))
            labels.append(element("rect", x=centre - 30, y=y + 3, width=60 * share, height=4.0, fill=MUTED))
            y += 6
        y += size + 4
    return labels


def _labels_height(placement: PlacementView, column: float) -> float:
    """The height of the tallest stack of labels under the bars."""
    tallest = 0.0
    for ipu in placement.ipus:
        lines = list(_column_lines(placement, ipu, column, _state(ipu)))
        tallest = max(tallest, sum(size + 4 for _, size, _, _ in lines) + (6 if placement.counted else 0))
    return tallest + 18


# --- the schedule ----------------------------------------------------------------------------------------------

# the most cycles drawn one by one: a longer step shows its ramps, and the steady cycles between them as a gap
MOST_CYCLES = 40
HIDDEN_AT_LEAST = 10  # fewer steady cycles than this are drawn rather than hidden
ROW_LABEL = 150
TRACK = 13


def cycle_work(stage: int, stages: int, batches: int, cycle: int, training: bool) -> Tuple[Optional[int],
                                                                                            Optional[int]]:
    """The micro-batches stage `stage` runs forward and backward in `cycle` (None: none): forward stage k takes
    micro-batch m in cycle m + k, its backward in cycle m + 2(S-1) - k."""
    forward = cycle - stage
    backward = cycle - (2 * (stages - 1) - stage)
    return (forward if 0 <= forward < batches else None,
            backward if training and 0 <= backward < batches else None)


def drawn_cycles(cycles: int, fill: int) -> List[Optional[int]]:
    """The cycles drawn, None for the gap that stands for steady ones: all of them, or the ramps and a few steady
    cycles at each end."""
    if cycles <= MOST_CYCLES:
        return list(range(cycles))
    edge = max(fill + 3, (MOST_CYCLES - 1) // 2)
    if 2 * edge + HIDDEN_AT_LEAST > cycles:
        return list(range(cycles))
    return [*range(edge), None, *range(cycles - edge, cycles)]


def _schedule_panel(body: List[str], placement: PlacementView, top: float, width: float) -> float:
    """Stages over the cycles of one step: each stage's row a track of forward work over a track of backward work
    (with its recomputation); the rows of the IPU that sets the pace marked. Returns the y below."""
    found = placement.schedule
    stages = placement.stages
    if found is None:
        body.append(text(MARGIN, top + 14, "Schedule: the encoder and the decoder run as pipelines of their own; "
                         "not drawn.", 12, fill=MUTED))
        return top + 24
    count, batches, cycles, training = found.stages, found.micro_batches, found.cycles, found.training
    fill = found.fill
    columns = drawn_cycles(cycles, fill)
    left = MARGIN + ROW_LABEL
    cell = min(34.0, (width - MARGIN - left) / (len(columns) + (1.5 if None in columns else 0)))
    kind = "one micro-batch forward and one backward" if training else "one micro-batch forward"
    heading = (f"One step: {count} stages, {batches:,} micro-batches, {cycles:,} cycles "
               f"({batches:,} + {'2 x ' if training else ''}({count} - 1)); each cycle every stage runs {kind}")
    body.append(text(MARGIN, top + 12, "Pipeline schedule", 14, weight="bold"))
    lines = wrap(heading, width - 2 * MARGIN, 11, " ")
    for number, line in enumerate(lines):
        body.append(text(MARGIN, top + 30 + 15 * number, line, 11, fill=MUTED))
    grid_top = top + 47 + 15 * len(lines)
    xs = _column_positions(columns, left, cell)
    body.append(_phases(columns, xs, cell, cycles, fill, grid_top - 14, batches))
    row = 2 * TRACK + 9
    slowest = placement.bottleneck_ipu
    for number, stage in enumerate(stages):
        y = grid_top + number * row
        ipu = placement.ipus[stage.ipu]
        recomputes = training and ipu.recompute_flops > 0
        share = ipu.recompute_flops / (ipu.recompute_flops + ipu.backward_flops) if recomputes else 0.0
        marked = stage.ipu == slowest
        label = f"stage {number}, IPU {stage.ipu}"
        cells = [text(MARGIN, y + TRACK - 2, label, 11, fill=INK, weight="bold" if marked else None)]
        if marked:
            cells.append(text(MARGIN, y + 2 * TRACK - 1, "slowest IPU", 10,
                              fill=VERDICT_COLOURS[Verdict.DOES_NOT_FIT], weight="bold"))
            cells.append(element("rect", x=float(left - 6), y=y - 2.0, width=3.0, height=float(row - 5),
                                 fill=VERDICT_COLOURS[Verdict.DOES_NOT_FIT]))
        for cycle, x in zip(columns, xs):
            if cycle is None:
                continue
            forward, backward = cycle_work(number, count, batches, cycle, training)
            cells += _cell(x, y, cell, forward, backward, share, training)
        body.append(element("g", "".join(cells), data_stage=number, data_ipu=stage.ipu,
                            data_slowest="true" if marked else None))
    bottom = grid_top + len(stages) * row
    body.append(_cycle_axis(columns, xs, cell, bottom, cycles))
    return _schedule_legend(body, bottom + 34, training, placement)


def _column_positions(columns: Sequence[Optional[int]], left: float, cell: float) -> List[float]:
    xs, x = [], float(left)
    for cycle in columns:
        xs.append(x)
        x += cell * (1.5 if cycle is None else 1)
    return xs


def _cell(x: float, y: float, cell: float, forward: Optional[int], backward: Optional[int], share: float,
          training: bool) -> List[str]:
    """A stage's work in one cycle: forward above, recomputation then backward below; a blank where it idles."""
    pieces = [element("rect", x=x + 0.5, y=y, width=cell - 1, height=float(TRACK), fill="#f3f3f3")]
    if training:
        pieces.append(element("rect", x=x + 0.5, y=y + TRACK + 1.0, width=cell - 1, height=float(TRACK),
                              fill="#f3f3f3"))
    labelled = cell >= 17
    if forward is not None:
        pieces.append(element("rect", x=x + 0.5, y=y, width=cell - 1, height=float(TRACK), fill=FORWARD,
                              data_work="forward", data_micro_batch=forward))
        if labelled:
            pieces.append(text(x + cell / 2, y + TRACK - 3, str(forward + 1), 8.5, "middle", INK))
    if backward is not None:
        recompute = (cell - 1) * share
        low = y + TRACK + 1.0
        if recompute:
            pieces.append(element("rect", x=x + 0.5, y=low, width=recompute, height=float(TRACK),
                                  fill="url(#recompute)", data_work="recompute", data_micro_batch=backward))
        pieces.append(element("rect", x=x + 0.5 + recompute, y=low, width=cell - 1 - recompute, height=float(TRACK),
                              fill=BACKWARD, data_work="backward", data_micro_batch=backward))
        if labelled:
            pieces.append(text(x + 0.5 + recompute + (cell - 1 - recompute) / 2, low + TRACK - 3, str(backward + 1),
                               8.5, "middle", PAPER))
    return pieces


def _phases(columns: Sequence[Optional[int]], xs: Sequence[float], cell: float, cycles: int, fill: int, y: float,
            batches: int) -> str:
    """Brackets over the ramp-up, the cycles with every stage busy and the ramp-down."""
    spans = [("ramp-up", 0, min(fill, cycles)), ("ramp-down", max(cycles - fill, 0), cycles)]
    if batches > fill:
        spans.insert(1, ("every stage busy", fill, cycles - fill))
    pieces = []
    for label, first, end in spans:
        drawn = [x for cycle, x in zip(columns, xs) if cycle is not None and first <= cycle < end]
        gap = [x for cycle, x in zip(columns, xs) if cycle is None]
        if label == "every stage busy" and gap:
            drawn += [gap[0], gap[0] + 0.5 * cell]
        if not drawn:
            continue
        start, stop = min(drawn) + 1, max(drawn) + cell - 1
        pieces.append(element("path", d=f"M{coordinate(start)},{coordinate(y + 6)} v-5 H{coordinate(stop)} v5",
                              fill="none", stroke=MUTED, stroke_width=1.0))
        span = f"{label}, {end - first:,} cycle{'s' if end - first != 1 else ''}"
        if text_width(span, 10) > stop - start:
            span = label if text_width(label, 10) <= stop - start else ""
        pieces.append(text((start + stop) / 2, y - 4, span, 10, "middle", MUTED))
    return element("g", "".join(pieces), data_role="phases")


def _cycle_axis(columns: Sequence[Optional[int]], xs: Sequence[float], cell: float, y: float, cycles: int) -> str:
    """The cycle numbers under the grid, and the gap's count of steady cycles."""
    every = 1 if cell >= 22 else 5 if cell >= 8 else 10
    pieces = []
    for number, (cycle, x) in enumerate(zip(columns, xs)):
        if cycle is None:
            hidden = columns[number + 1] - columns[number - 1] - 1
            pieces.append(text(x + 0.75 * cell, y - 30, "...", 12, "middle", MUTED, "bold"))
            pieces.append(text(x + 0.75 * cell, y + 12, f"{hidden:,} more", 9, "middle", MUTED))
            continue
        if (cycle + 1) % every == 0 or cycle == 0 or cycle == cycles - 1:
            pieces.append(text(x + cell / 2, y + 12, str(cycle + 1), 9, "middle", MUTED))
    pieces.append(text(xs[-1] + cell, y + 26, "cycle", 10, "end", MUTED))
    return element("g", "".join(pieces), data_role="cycles")


def _schedule_legend(body: List[str], y: float, training: bool, placement: PlacementView) -> float:
    """The three kinds of work, and what a cycle lasts; returns the y below."""
    x = float(MARGIN)
    kinds = [(FORWARD, "forward (its micro-batch)")]
    if training:
        kinds += [("url(#recompute)", "recomputation"), (BACKWARD, "backward")]
    kinds.append(("#f3f3f3", "idle"))
    for paint, label in kinds:
        body.append(element("rect", x=x, y=y, width=14.0, height=float(TRACK), fill=paint, stroke=INK,
                            stroke_width=0.6))
        body.append(text(x + 19, y + 11, label, 11))
        x += 19 + text_width(label, 11) + 16
    slowest = placement.bottleneck_ipu
    note = (f"A cycle lasts as long as IPU {slowest}, the slowest, takes for its work "
            f"(marked: its stages).")
    body.append(text(MARGIN, y + 32, note, 11, fill=MUTED))
    return y + 40

