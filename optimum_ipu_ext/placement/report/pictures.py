"""Pictures of a placement, as SVG: each IPU's on-chip memory as a stacked bar against the IPU's memory and what its
reserve leaves, its blocks, layers and share of the pace, the verdict, and the pipeline's schedule of one step; and
the same figures as table rows (`placement_table`) and lines (`summary_lines`) for a page or a model card
(`card_markdown`). A plan's candidates as points of speed against memory, its frontier, its best and the base
config (`plan_svg`, `plan_table`).

Drawn from data: each function takes the dict `Placement.to_dict()` gives (the JSON `place --json` prints, see
docs/placement.md "The JSON"), never the object, so that a saved JSON is drawn the same and a plan draws the
placements it holds. Hand-written SVG of a few shapes, every text escaped: nothing is imported but the standard
library and the report's helpers, so a command pays for a picture only when it draws one.
"""

import html
import math
from typing import Any, Iterator, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from ..hardware import IPU_TYPES
from .placement import BAR_PARTS, DOES_NOT_FIT, FITS, TIGHT, compress, gflop, mib, parts, seconds

MIB = 1 << 20
# the first line of every picture and page this module writes: `place` overwrites a file that has it
GENERATOR = "optimum-ipu-ext"
SVG_MARK = f"<!-- Generator: {GENERATOR} -->"
HTML_MARK = f'<meta name="generator" content="{GENERATOR}">'
FONT = "DejaVu Sans, Arial, Helvetica, sans-serif"
INK, MUTED, RULE, PAPER = "#1a1a1a", "#555555", "#c8c8c8", "#ffffff"

# each part of BAR_PARTS, in its order: its fill, its pattern (None, "stripes" or "dots") and the pattern's ink, and
# the colour of its letter. Neighbours in a bar differ in lightness (grey-scale: 22, 46, 76, 25, 81, 29 %), the
# pipeline's parts are striped and the update's dotted, and each part large enough carries its letter.
PART_STYLES = (
    ("#1b3a6b", None, None, "#ffffff"),
    ("#4a7bc0", None, None, "#ffffff"),
    ("#a9c6ec", None, None, "#10243f"),
    ("#7a3510", "stripes", "#a8582c", "#ffffff"),
    ("#f6c796", "stripes", "#e0a060", "#4a2000"),
    ("#5e3c99", "dots", "#9a7cd0", "#ffffff"),
)
# the verdict: its colour and its word on the badge
VERDICT_COLOURS = {FITS: "#2e7d32", TIGHT: "#a86400", DOES_NOT_FIT: "#c62828"}
DOES_NOT_RUN = "does not run"
# the schedule: forward, recomputation (striped) and backward, light to dark
FORWARD, RECOMPUTE, RECOMPUTE_INK, BACKWARD = "#a8dba8", "#e9b949", "#c7962a", "#1f5f3f"
IPU_LABELS = {"gc200": "GC200", "bow": "Bow"}


def esc(text: Any) -> str:
    """`text` escaped for XML and HTML, in content and in attributes."""
    return html.escape(str(text), quote=True)


def written_here(head: str) -> bool:
    """Whether a file that begins with `head` (its first kilobytes) is a picture or a page this package wrote."""
    return SVG_MARK in head or HTML_MARK in head


def _number(value: float) -> str:
    """A coordinate: to a tenth of a pixel, without a useless `.0`."""
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def _value(value: Any) -> str:
    return _number(value) if isinstance(value, float) else esc(value)


def element(tag: str, content: Optional[str] = None, **attributes: Any) -> str:
    """One element; `font_size=11` is written `font-size="11"`, a None attribute is left out, `content` is markup
    (escape text with `esc`)."""
    written = " ".join(f'{name.rstrip("_").replace("_", "-")}="{_value(value)}"'
                       for name, value in attributes.items() if value is not None)
    opening = f"<{tag} {written}" if written else f"<{tag}"
    return f"{opening}/>" if content is None else f"{opening}>{content}</{tag}>"


def text(x: float, y: float, content: str, size: float = 11, anchor: str = "start", fill: str = INK,
         weight: Optional[str] = None, **attributes: Any) -> str:
    """A line of text at (x, y), its baseline at y."""
    return element("text", esc(content), x=float(x), y=float(y), font_size=size, text_anchor=anchor, fill=fill,
                   font_weight=weight, **attributes)


def text_width(content: str, size: float, bold: bool = False) -> float:
    """About the width of `content` in the sans-serif face at `size` pixels, for layout (a little over, rather than
    under: capitals and digits are wider than small letters, spaces and stops narrower)."""
    ems = sum(0.7 if char.isupper() else 0.64 if char.isdigit() else 0.34 if char in " ,.:;'()[]-" else 0.57
              for char in content)
    return ems * size * (1.12 if bold else 1.0)


def wrap(content: str, width: float, size: float, separator: str = ", ", bold: bool = False) -> List[str]:
    """`content` in lines of at most `width` pixels, broken after `separator`, and where a piece is still too wide,
    between its words (a word wider than a line stays whole)."""
    words = content.split(separator)
    pieces = []
    for number, word in enumerate(words):
        piece = word + (separator.rstrip() if number < len(words) - 1 else "")
        pieces += [piece] if text_width(piece, size, bold) <= width or " " not in piece.strip() else piece.split()
    lines: List[str] = []
    for piece in pieces:
        if lines and text_width(lines[-1] + " " + piece, size, bold) <= width:
            lines[-1] += " " + piece
        else:
            lines.append(piece)
    return lines


def _ranges(numbers: Sequence[int]) -> str:
    """Runs of consecutive integers shortened: `0-2, 5`."""
    runs: List[List[int]] = []
    for number in numbers:
        if runs and number == runs[-1][1] + 1:
            runs[-1][1] = number
        else:
            runs.append([number, number])
    return ", ".join(str(first) if first == last else f"{first}-{last}" for first, last in runs)


def _percent(share: float) -> str:
    return f"{100 * share:.0f}%"


def _nice_step(largest: float, ticks: int = 6) -> float:
    """A round step (1, 2, 2.5 or 5 times a power of ten) that divides 0..largest into at most about `ticks`."""
    step = 1.0
    while largest / step > ticks:
        for factor in (2, 2.5, 2):
            step *= factor
            if largest / step <= ticks:
                break
    return step


# --- what the picture says, as text ----------------------------------------------------------------------------

def counted(placement: Mapping[str, Any]) -> bool:
    """Whether the placement counts the activations (a micro-batch was given)."""
    return placement["micro_batch_size"] is not None


def verdict_word(placement: Mapping[str, Any]) -> str:
    """The verdict as the badge shows it: "fits", "tight", "does not fit", or "does not run" where poptorch refuses
    the pipeline."""
    return DOES_NOT_RUN if placement["problems"] else placement["verdict"]


def ipu_state(placement: Mapping[str, Any], ipu: Mapping[str, Any]) -> Optional[str]:
    """DOES_NOT_FIT for an IPU over its memory, TIGHT for one over what the reserve leaves, else None."""
    memory = placement["ipu_memory_bytes"]
    if ipu["on_chip_bytes"] > memory:
        return DOES_NOT_FIT
    return TIGHT if ipu["on_chip_bytes"] > memory - placement["reserve_bytes"] else None


def title_line(placement: Mapping[str, Any]) -> str:
    """The model, its architecture and the build."""
    return f"{placement['model']}: {placement['architecture']}, {placement['build']}"


def shape_line(placement: Mapping[str, Any], config: Optional[str] = None) -> str:
    """The config (where it came from, if given), its split and the micro-batch the activations are counted for."""
    line = f"config {config}, " if config else ""
    line += f"layers_per_ipu {placement['layers_per_ipu']}"
    if not counted(placement):
        return line + "; no micro-batch given: the parameters' memory only"
    line += f", micro-batch {placement['micro_batch_size']}, sequence length {placement['sequence_length']}"
    if placement["decoder_sequence_length"] is not None:
        line += f", decoder sequence length {placement['decoder_sequence_length']}"
    return line


def pipeline_line(placement: Mapping[str, Any]) -> str:
    """The stages, the cycles of a step, the share of them every stage works, and the IPU that sets the pace."""
    stages = placement["stages"]
    ipus = ", ".join(str(stage["ipu"]) for stage in stages)
    slowest = placement["bottleneck_ipu"]
    pace = f"; IPU {slowest} computes the most and sets the pace" if slowest is not None else ""
    if placement["pipeline_cycles"] is None:
        return f"Not pipelined: the {len(stages)} stages (IPUs {ipus}) run one micro-batch at a time{pace}."
    return (f"Pipeline: {len(stages)} stages (IPUs {ipus}), {placement['pipeline_cycles']:,} cycles a step, "
            f"{100 * placement['pipeline_efficiency']:.1f}% of them with every stage busy{pace}.")


def time_line(placement: Mapping[str, Any]) -> Optional[str]:
    """A step's time, by part, and its samples (None: activations not counted)."""
    if placement["step_seconds"] is None:
        return None
    steps = ", ".join(f"{name.replace('_', ' ')} {seconds(value)}" for name, value in placement["step_parts"].items())
    ipu = IPU_LABELS.get(placement["ipu"], placement["ipu"])
    return (f"Time: {seconds(placement['step_seconds'])} a step on {ipu} IPUs ({steps}): "
            f"{placement['samples_per_step']:,} samples, {placement['samples_per_second']:,.1f} a second.")


def verdict_lines(placement: Mapping[str, Any]) -> List[str]:
    """The verdict and its reasons: the IPUs over their memory or their reserve, then what poptorch refuses."""
    memory, reserve = placement["ipu_memory_bytes"], placement["reserve_bytes"]
    leaves = f"the {mib(memory - reserve)} MiB a reserve of {mib(reserve)} MiB leaves of an IPU's {mib(memory)} MiB"
    verdict = placement["verdict"]
    if verdict == FITS:
        lines = [f"Fits: every IPU's on-chip figure is within {leaves}."]
    else:
        limit = memory if verdict == DOES_NOT_FIT else memory - reserve
        named = ", ".join(f"IPU {ipu['ipu']} ({mib(ipu['on_chip_bytes'])} MiB)" for ipu in placement["ipus"]
                          if ipu["on_chip_bytes"] > limit)
        over = f"the {mib(memory)} MiB of an IPU" if verdict == DOES_NOT_FIT else leaves
        lines = [f"{verdict.capitalize()}: {named} over {over}."]
    return lines + [f"Does not run: {problem}." for problem in placement["problems"]]


def summary_lines(placement: Mapping[str, Any], config: Optional[str] = None) -> List[str]:
    """What the picture's header and a page say in words: the shape, the pipeline, the time and the verdict."""
    lines = [shape_line(placement, config), pipeline_line(placement)]
    timed = time_line(placement)
    return lines + ([timed] if timed else []) + verdict_lines(placement)


def placement_table(placement: Mapping[str, Any]) -> Tuple[List[str], List[List[str]]]:
    """The text report's table as data: its headers and one row of strings per IPU, each part of the on-chip memory
    in a column of its own (MiB to a tenth, as `--json` gives the bytes)."""
    memory = placement["ipu_memory_bytes"]
    headers = ["IPU", "Blocks", "Layers", "Parameters", f"On chip, MiB of {mib(memory)}", "Share",
               *(f"{letter}, MiB" for _, letter in BAR_PARTS), "Streaming, MiB"]
    timed = counted(placement)
    if timed:
        headers += ["Forward, GFLOP", "Backward, GFLOP", "Pace"]
        slowest = max(_flops(ipu) for ipu in placement["ipus"]) or 1
    rows = []
    for ipu in placement["ipus"]:
        row = [str(ipu["ipu"]), compress(ipu["blocks"]), _ranges(ipu["layers"]) or "-", f"{ipu['parameters']:,}",
               mib(ipu["on_chip_bytes"]), _percent(ipu["on_chip_bytes"] / memory), *map(mib, parts(ipu)),
               mib(ipu["streaming_bytes"])]
        if timed:
            row += [gflop(ipu["forward_flops"]), gflop(ipu["backward_flops"] + ipu["recompute_flops"]),
                    _percent(_flops(ipu) / slowest)]
        rows.append(row)
    return headers, rows


def card_markdown(placement: Mapping[str, Any], picture: str, config: Optional[str] = None) -> str:
    """The placement for a model card: a heading, the picture (the repository's file `picture`), the table, the
    pipeline, the time and the verdict, and the command that places it again.

    Args:
        placement (`dict`): `Placement.to_dict()`.
        picture (`str`): the path of the picture in the repository, beside the card.
        config (`str`, *optional*): the config as `place` reads it again (the repository's id).
    """
    headers, rows = placement_table(placement)
    right = {header for header in headers if header not in ("Blocks", "Layers")}
    verdicts = verdict_lines(placement)
    command = f"ipu-config place {config or 'CONFIG'} --model {placement['model']} --architecture " \
              f"{placement['architecture']}"
    if counted(placement):
        command += f" --micro-batch-size {placement['micro_batch_size']} --sequence-length " \
                   f"{placement['sequence_length']}"
        if placement["decoder_sequence_length"] is not None:
            command += f" --decoder-sequence-length {placement['decoder_sequence_length']}"
    if placement["build"] == "inference":
        command += " --inference"
    lines = [
        f"### Placement of `{placement['model']}`",
        "",
        f"Where optimum-graphcore 0.7.1 puts {placement['architecture']} ({placement['build']}) on these IPUs, and "
        f"the memory each needs: {shape_line(placement)}.",
        "",
        f"![{esc(title_line(placement))}: each IPU's on-chip memory, the verdict and the pipeline's schedule]"
        f"({picture})",
        "",
        "| " + " | ".join(headers) + " |",
        "| " + " | ".join("---:" if header in right else "---" for header in headers) + " |",
        *("| " + " | ".join(text.replace("|", "\\|") for text in row) + " |" for row in rows),
        "",
        ", ".join(f"{letter}: {name}" for letter, name in legend_names()) + ".",
        "",
        *(part for line in summary_lines(placement)[1:] if line not in verdicts for part in (line, "")),
        *(part for line in verdicts for part in (f"**{line}**", "")),
        f"Placed by optimum-ipu-ext, without an IPU; again with `{command}`.",
    ]
    return "\n".join(lines) + "\n"


def legend_names() -> List[Tuple[str, str]]:
    """`(letter, name)` of each part of a bar."""
    return [(letter, name) for name, letter in BAR_PARTS]


def _flops(ipu: Mapping[str, Any]) -> int:
    return ipu["forward_flops"] + ipu["backward_flops"] + ipu["recompute_flops"]


# --- the placement's picture -----------------------------------------------------------------------------------

MARGIN = 24
AXIS = 64  # the memory axis's labels
LINE_LABELS = 206  # right of the bars: the names of the memory's lines
COLUMN, WIDEST_COLUMN = 132, 210
BAR = 46
PLOT_HEIGHT = 300


def placement_svg(placement: Mapping[str, Any], config: Optional[str] = None) -> str:
    """The placement as one SVG picture: a header (model, config, shape, time, verdict), a legend, each IPU's
    on-chip memory as a stacked bar under the lines of the IPU's memory and of what its reserve leaves, with its
    blocks, layers, parameters, Streaming Memory and share of the pace; below, where the activations are counted
    and the build is pipelined, the schedule of one step.

    Args:
        placement (`dict`): `Placement.to_dict()`, or the JSON `place --json` printed, read back.
        config (`str`, *optional*): where the config came from, named in the header.
    """
    count = len(placement["ipus"])
    width = max(800, 2 * MARGIN + AXIS + count * COLUMN + LINE_LABELS)
    column = min(WIDEST_COLUMN, (width - 2 * MARGIN - AXIS - LINE_LABELS) / count)
    body: List[str] = []
    y = _header(body, placement, config, width)
    y = _legend(body, placement, y, width)
    y = _memory_panel(body, placement, y, column)
    if counted(placement) and placement["pipeline_cycles"] is not None:
        y = _schedule_panel(body, placement, y + 18, width)
    height = y + MARGIN
    return "\n".join([
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_number(width)}" height="{_number(height)}" '
        f'viewBox="0 0 {_number(width)} {_number(height)}" font-family="{FONT}" role="img" '
        f'aria-label="{esc(title_line(placement))}" data-kind="placement">',
        SVG_MARK,
        element("title", esc(f"{title_line(placement)}: placement on the IPUs")),
        _definitions(),
        element("rect", x=0, y=0, width=float(width), height=float(height), fill=PAPER),
        *body,
        "</svg>",
        "",
    ])


def _definitions() -> str:
    """The patterns of the striped and dotted parts, and of recomputation."""
    patterns = []
    for letter_style, (_, letter) in zip(PART_STYLES, BAR_PARTS):
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


def _header(body: List[str], placement: Mapping[str, Any], config: Optional[str], width: float) -> float:
    """The title, the badge of the verdict and the summary lines, the verdict's in its colour; returns the y below
    them."""
    word = verdict_word(placement)
    colour = VERDICT_COLOURS[DOES_NOT_FIT] if word == DOES_NOT_RUN else VERDICT_COLOURS[placement["verdict"]]
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
        ink = MUTED if line not in verdicts else VERDICT_COLOURS[DOES_NOT_FIT] if line.startswith("Does not run") \
            else VERDICT_COLOURS[placement["verdict"]]
        for piece in wrap(line, width - 2 * MARGIN, 12, " ", line in verdicts):
            body.append(text(MARGIN, y, piece, 12, fill=ink, weight="bold" if line in verdicts else None))
            y += 17
    return y + 4


def _legend(body: List[str], placement: Mapping[str, Any], y: float, width: float) -> float:
    """A swatch and the name of each part the bars show, then the two lines; returns the y below."""
    present = [any(parts(ipu)[index] for ipu in placement["ipus"]) for index in range(len(BAR_PARTS))]
    items: List[Tuple[str, str]] = []
    x = float(MARGIN)
    for index, (name, letter) in enumerate(BAR_PARTS):
        if not present[index]:
            continue
        label = f"{letter} {name}"
        items.append((_swatch(index, x, y, 14), text(x + 19, y + 11, label, 11, data_role="legend")))
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


def _swatch(index: int, x: float, y: float, size: float) -> str:
    fill, pattern, _, _ = PART_STYLES[index]
    paint = f"url(#part-{BAR_PARTS[index][1]})" if pattern else fill
    return element("rect", x=x, y=y, width=size, height=size, fill=paint, stroke=INK, stroke_width=0.6)


def _memory_panel(body: List[str], placement: Mapping[str, Any], top: float, column: float) -> float:
    """The memory axis, the bands and lines of the IPU's memory and reserve, and a column per IPU; returns the y
    below."""
    memory, reserve = placement["ipu_memory_bytes"], placement["reserve_bytes"]
    ipus = placement["ipus"]
    largest = max([memory, *(ipu["on_chip_bytes"] for ipu in ipus)]) / MIB
    step = _nice_step(largest * 1.08)
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


def _ipu_column(placement: Mapping[str, Any], ipu: Mapping[str, Any], left: float, column: float, base: float,
                scale: float) -> str:
    """One IPU: its stacked bar with each part's letter and MiB beside it, its total over it, and its labels under
    the axis."""
    bar_x = left + max(10.0, (column - BAR - 62) / 2)
    pieces = []
    below, labels = 0, []
    for index, size in enumerate(parts(ipu)):
        if not size:
            continue
        letter = BAR_PARTS[index][1]
        bottom, top = base - below / MIB * scale, base - (below + size) / MIB * scale
        fill, pattern, _, ink = PART_STYLES[index]
        title = element("title", esc(f"IPU {ipu['ipu']}, {BAR_PARTS[index][0]}: {mib(size)} MiB"))
        pieces.append(element("rect", title, x=bar_x, y=top, width=float(BAR), height=bottom - top,
                              fill=f"url(#part-{letter})" if pattern else fill, data_part=letter, data_mib=mib(size)))
        if bottom - top >= 13:
            pieces.append(text(bar_x + BAR / 2, (top + bottom) / 2 + 4, letter, 11, "middle", ink, "bold",
                               data_letter=letter))
        labels.append([(top + bottom) / 2 + 4, f"{letter} {mib(size)}"])
        below += size
    if labels:
        labels[0][0] = min(labels[0][0], base - 2)
    for number in range(1, len(labels)):  # bottom up: each label at least a line above the one below
        labels[number][0] = min(labels[number][0], labels[number - 1][0] - 12)
    pieces += [text(bar_x + BAR + 6, y, label, 10, fill=MUTED, data_label=label.split()[0]) for y, label in labels]
    state = ipu_state(placement, ipu)
    colour = VERDICT_COLOURS.get(state, INK)
    top_y = base - ipu["on_chip_bytes"] / MIB * scale
    pieces.append(element("rect", x=bar_x, y=top_y, width=float(BAR), height=base - top_y, fill="none", stroke=INK,
                          stroke_width=0.8))
    pieces.append(text(bar_x + BAR / 2, top_y - 6, mib(ipu["on_chip_bytes"]), 11, "middle", colour, "bold",
                       data_role="on-chip"))
    pieces += _column_labels(placement, ipu, left + column / 2, column, base, state)
    return element("g", "".join(pieces), data_ipu=ipu["ipu"], data_on_chip_mib=mib(ipu["on_chip_bytes"]))


def _column_lines(placement: Mapping[str, Any], ipu: Mapping[str, Any], column: float,
                  state: Optional[str]) -> Iterator[Tuple[str, float, Optional[str], str]]:
    """Each line under an IPU's bar: (text, size, weight, role)."""
    memory = placement["ipu_memory_bytes"]
    yield f"IPU {ipu['ipu']}", 13, "bold", "ipu"
    share = f"{mib(ipu['on_chip_bytes'])} MiB, {_percent(ipu['on_chip_bytes'] / memory)}"
    yield share, 11, "bold", "share"
    if state is not None:
        yield ("over the IPU's memory" if state == DOES_NOT_FIT else "in the reserve"), 10, "bold", "state"
    if counted(placement):
        slowest = max(_flops(other) for other in placement["ipus"]) or 1
        marked = " (slowest)" if placement["bottleneck_ipu"] == ipu["ipu"] else ""
        yield f"pace {_percent(_flops(ipu) / slowest)}{marked}", 10, "bold" if marked else None, "pace"
    yield f"{ipu['parameters']:,} parameters", 10, None, "parameters"
    yield f"streaming {mib(ipu['streaming_bytes'])} MiB", 10, None, "streaming"
    yield (f"layers {_ranges(ipu['layers'])}" if ipu["layers"] else "no layers"), 10, None, "layers"
    for piece in wrap(compress(ipu["blocks"]), column - 10, 10):
        yield piece, 10, None, "blocks"


def _column_labels(placement: Mapping[str, Any], ipu: Mapping[str, Any], centre: float, column: float, base: float,
                   state: Optional[str]) -> List[str]:
    labels, y = [], base + 18
    for line, size, weight, role in _column_lines(placement, ipu, column, state):
        colour = VERDICT_COLOURS[state] if state and role in ("share", "state") else (INK if weight else MUTED)
        if role == "blocks":
            colour = INK
        labels.append(text(centre, y, line, size, "middle", colour, weight, data_role=role))
        if role == "pace":
            share = _flops(ipu) / (max(_flops(other) for other in placement["ipus"]) or 1)
            labels.append(element("rect", x=centre - 30, y=y + 3, width=60.0, height=4.0, fill="#e4e4e4"))
            labels.append(element("rect", x=centre - 30, y=y + 3, width=60 * share, height=4.0, fill=MUTED))
            y += 6
        y += size + 4
    return labels


def _labels_height(placement: Mapping[str, Any], column: float) -> float:
    """The height of the tallest stack of labels under the bars."""
    tallest = 0.0
    for ipu in placement["ipus"]:
        lines = list(_column_lines(placement, ipu, column, ipu_state(placement, ipu)))
        tallest = max(tallest, sum(size + 4 for _, size, _, _ in lines) + (6 if counted(placement) else 0))
    return tallest + 18


# --- the schedule ----------------------------------------------------------------------------------------------

# the most cycles drawn one by one: a longer step shows its ramps, and the steady cycles between them as a gap
MOST_CYCLES = 40
HIDDEN_AT_LEAST = 10  # fewer steady cycles than this are drawn rather than hidden
ROW_LABEL = 150
TRACK = 13


def schedule(placement: Mapping[str, Any]) -> Optional[Tuple[int, int, bool]]:
    """`(stages, micro-batches, training)` of the pipeline's step, from its cycles and efficiency; None where the
    build is not pipelined, or its stages do not run as one pipeline (a generation build's encoder and decoder run as
    two)."""
    cycles, efficiency = placement["pipeline_cycles"], placement["pipeline_efficiency"]
    if cycles is None:
        return None
    batches = round(efficiency * cycles)
    training = placement["build"] == "training"
    fill = cycles - batches
    stages = fill // 2 + 1 if training else fill + 1
    if stages != len(placement["stages"]):
        return None
    return stages, batches, training


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


def _schedule_panel(body: List[str], placement: Mapping[str, Any], top: float, width: float) -> float:
    """Stages over the cycles of one step: each stage's row a track of forward work over a track of backward work
    (with its recomputation); the rows of the IPU that sets the pace marked. Returns the y below."""
    found = schedule(placement)
    stages = placement["stages"]
    if found is None:
        body.append(text(MARGIN, top + 14, "Schedule: the encoder and the decoder run as pipelines of their own; "
                         "not drawn.", 12, fill=MUTED))
        return top + 24
    count, batches, training = found
    cycles = placement["pipeline_cycles"]
    fill = cycles - batches
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
    slowest = placement["bottleneck_ipu"]
    for number, stage in enumerate(stages):
        y = grid_top + number * row
        ipu = placement["ipus"][stage["ipu"]]
        recomputes = training and ipu["recompute_flops"] > 0
        share = ipu["recompute_flops"] / (ipu["recompute_flops"] + ipu["backward_flops"]) if recomputes else 0.0
        marked = stage["ipu"] == slowest
        label = f"stage {number}, IPU {stage['ipu']}"
        cells = [text(MARGIN, y + TRACK - 2, label, 11, fill=INK, weight="bold" if marked else None)]
        if marked:
            cells.append(text(MARGIN, y + 2 * TRACK - 1, "slowest IPU", 10, fill=VERDICT_COLOURS[DOES_NOT_FIT],
                              weight="bold"))
            cells.append(element("rect", x=float(left - 6), y=y - 2.0, width=3.0, height=float(row - 5),
                                 fill=VERDICT_COLOURS[DOES_NOT_FIT]))
        for cycle, x in zip(columns, xs):
            if cycle is None:
                continue
            forward, backward = cycle_work(number, count, batches, cycle, training)
            cells += _cell(x, y, cell, forward, backward, share, training)
        body.append(element("g", "".join(cells), data_stage=number, data_ipu=stage["ipu"],
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
        pieces.append(element("path", d=f"M{_number(start)},{_number(y + 6)} v-5 H{_number(stop)} v5",
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


def _schedule_legend(body: List[str], y: float, training: bool, placement: Mapping[str, Any]) -> float:
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
    slowest = placement["bottleneck_ipu"]
    note = (f"A cycle lasts as long as IPU {slowest}, which computes the most, takes for its work "
            f"(marked: its stages).")
    body.append(text(MARGIN, y + 32, note, 11, fill=MUTED))
    return y + 40


# --- a plan's candidates ---------------------------------------------------------------------------------------

PLAN_WIDTH, PLAN_PLOT_HEIGHT = 860, 380
PLAN_LEFT, PLAN_RIGHT = 84, 40  # the speed axis's labels; room right of the plot


# a plan's training builds: what each turns on, by the column that shows it
SWITCHES = (("recompute_checkpoint_every_layer", "Checkpoint every layer", "checkpoints"),
            ("optimizer_state_offchip", "State off chip", "state off chip"),
            ("replicated_tensor_sharding", "RTS", "RTS"))


def _training(plan: Mapping[str, Any]) -> bool:
    return plan.get("build", "training") == "training"


def plan_table(plan: Mapping[str, Any]) -> Tuple[List[str], List[List[str]]]:
    """A plan's candidates as table rows, best first, then the reference (rank "base"): their settings, the largest
    IPU's share of its memory, the verdict, the speed and whether they are on the frontier. A training plan's show
    the accumulation and the switches, an inference plan's the device iterations."""
    training = _training(plan)
    headers = ["Rank", "IPUs a replica", "Replicas", "layers_per_ipu", "Micro-batch",
               *(["G", *(header for _, header, _ in SWITCHES)] if training else ["Device iterations"]),
               "Largest IPU", "Verdict", "Samples a second", "Step, s", "Pipeline efficiency", "Frontier"]
    listed = [(str(index + 1), candidate, index in plan["pareto"]) for index, candidate in
              enumerate(plan["candidates"])]
    if plan.get("reference"):
        listed.append(("base", plan["reference"], False))
    rows = []
    for rank, candidate, frontier in listed:
        problems = candidate["placement"]["problems"] if candidate.get("placement") else []
        speed, step = candidate["samples_per_second"], candidate["step_seconds"]
        efficiency = candidate["pipeline_efficiency"]
        build = ([str(candidate["gradient_accumulation_steps"]),
                  *("yes" if candidate[name] else "no" for name, _, _ in SWITCHES)] if training
                 else [str(candidate["device_iterations"])])
        rows.append([rank, str(candidate["ipus_per_replica"]), str(candidate["replication_factor"]),
                     str(candidate["layers_per_ipu"]), str(candidate["micro_batch_size"]), *build,
                     _percent(candidate["largest_share"]), DOES_NOT_RUN if problems else candidate["verdict"],
                     "-" if speed is None else f"{speed:,.1f}", "-" if step is None else f"{step:.3g}",
                     "-" if efficiency is None else f"{100 * efficiency:.1f}%", "yes" if frontier else ""])
    return headers, rows


def plan_title(plan: Mapping[str, Any]) -> str:
    """What a plan is for, in a line: the model, its architecture, then `plan_request`."""
    return f"{plan['model']}: {plan['architecture']} on {plan_request(plan)}"


def plan_request(plan: Mapping[str, Any]) -> str:
    """The IPUs, the batch and the lengths a plan is for."""
    what = f"global batch {plan['global_batch_size']:,}" if plan["build"] == "training" else "inference"
    lengths = [f"{name} {plan[key]:,}" for name, key in (("sequence length", "sequence_length"),
                                                          ("decoder length", "decoder_sequence_length"))
               if plan[key] is not None]
    return ", ".join([f"{plan['ipus']} {IPU_TYPES[plan['ipu']].label} IPUs", what, *lengths])


def candidate_label(candidate: Mapping[str, Any]) -> str:
    """A candidate in a few words: IPUs a replica x replicas, micro-batch, accumulation (or device iterations), and
    what it turns on."""
    ipus = candidate["ipus_per_replica"]
    label = (f"{ipus} IPU{'s' if ipus > 1 else ''} x {candidate['replication_factor']}, micro-batch "
             f"{candidate['micro_batch_size']}")
    if "gradient_accumulation_steps" not in candidate:
        return label + f", {candidate['device_iterations']} device iterations"
    flags = [word for name, _, word in SWITCHES if candidate[name]]
    return label + f", G {candidate['gradient_accumulation_steps']}" + (f", {', '.join(flags)}" if flags else "")


def plan_svg(plan: Mapping[str, Any]) -> str:
    """A plan as one SVG picture: each candidate a point of its samples a second against the share of its memory its
    largest IPU holds on chip, its shape the verdict; the frontier of speed against memory drawn through the
    candidates on it (`pareto`), the best (the first) and the base config (`reference`: the config whose other
    settings the plan keeps, often Graphcore's) marked and named; the lines of what the reserve leaves and of the
    IPU's memory.

    Args:
        plan (`dict`): the JSON `plan --json` prints: `candidates` (best first; each with `largest_share`,
            `samples_per_second`, `verdict`, its settings and its `placement`), `pareto` (indices into
            `candidates`) and `reference` (a candidate's dict, or None).
    """
    candidates = plan["candidates"]
    reference = plan.get("reference")
    timed = [(index, candidate) for index, candidate in enumerate(candidates)
             if candidate["samples_per_second"] is not None]
    points = [candidate for _, candidate in timed] + ([reference] if reference else [])
    first = (candidates or [reference])[0]
    placement = first["placement"] if first else None
    reserve = placement["reserve_bytes"] / placement["ipu_memory_bytes"] if placement else 0.25
    widest = max([1.1, *(point["largest_share"] * 1.05 for point in points)])
    x_step = _nice_step(widest * 100, 8) / 100
    x_top = x_step * -(-widest // x_step)
    fastest = max([1.0, *(point["samples_per_second"] for point in points)]) * 1.1
    y_step = _nice_step(fastest)
    y_top = y_step * -(-fastest // y_step)
    top = 108.0
    plot_width = PLAN_WIDTH - PLAN_LEFT - PLAN_RIGHT
    scale = _PlanScale(PLAN_LEFT, top, plot_width, x_top, y_top)
    body: List[str] = []
    title = f"Plan: {plan_title(plan)}"
    body.append(text(MARGIN, 34, f"Plan: {plan['model']}: {plan['architecture']}", 17, weight="bold",
                     data_role="title"))
    body.append(text(MARGIN, 56, f"On {plan_request(plan)}: {len(candidates)} candidates, {len(plan['pareto'])} on "
                     "the frontier of speed against memory; the best first.", 12, fill=MUTED))
    if len(timed) < len(candidates):
        body.append(text(MARGIN, 73, f"{len(candidates) - len(timed)} without a time (no activations counted) are "
                         "not drawn.", 12, fill=MUTED))
    body.append(_plan_axes(scale, x_step, y_step, reserve))
    frontier = sorted((candidates[index] for index in plan["pareto"] if candidates[index]["samples_per_second"]),
                      key=lambda candidate: candidate["largest_share"])
    if frontier:
        path = " ".join(f"{'M' if number == 0 else 'L'}{_number(scale.x(point['largest_share']))},"
                        f"{_number(scale.y(point['samples_per_second']))}" for number, point in enumerate(frontier))
        body.append(element("path", d=path, fill="none", stroke=INK, stroke_width=1.4, stroke_dasharray="5 3",
                            data_role="frontier"))
    for index, candidate in reversed(timed):  # the best drawn last, on top
        body.append(_plan_point(scale, candidate, index, index in plan["pareto"], index == 0))
    if reference:
        body.append(_plan_point(scale, reference, None, False, False))
    named = [(str(index + 1), candidate, ("the best: " if index == 0 else "") + candidate_label(candidate))
             for index, candidate in timed if index == 0 or index in plan["pareto"]]
    if reference:
        named.append(("base", reference, f"the base config: {candidate_label(reference)}"))
    body += _plan_tags(scale, named)
    bottom = _plan_legend(body, top + PLAN_PLOT_HEIGHT + 58, reference is not None)
    bottom = _plan_key(body, named, bottom + 14)
    height = bottom + MARGIN
    return "\n".join([
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{PLAN_WIDTH}" height="{_number(height)}" '
        f'viewBox="0 0 {PLAN_WIDTH} {_number(height)}" font-family="{FONT}" role="img" aria-label="{esc(title)}" '
        'data-kind="plan">',
        SVG_MARK,
        element("title", esc(title)),
        element("rect", x=0, y=0, width=float(PLAN_WIDTH), height=float(height), fill=PAPER),
        *body,
        "</svg>",
        "",
    ])


class _PlanScale(NamedTuple):
    """Where a share and a speed are drawn."""

    left: float
    top: float
    width: float
    x_top: float
    y_top: float

    def x(self, share: float) -> float:
        return self.left + share / self.x_top * self.width

    def y(self, speed: float) -> float:
        return self.top + PLAN_PLOT_HEIGHT - speed / self.y_top * PLAN_PLOT_HEIGHT


def _plan_axes(scale: _PlanScale, x_step: float, y_step: float, reserve: float) -> str:
    """The plot, its bands (the reserve's, and past the memory), its gridlines and ticks, and the two lines."""
    bottom = scale.top + PLAN_PLOT_HEIGHT
    right = scale.left + scale.width
    pieces = [element("rect", x=scale.left, y=scale.top, width=scale.width, height=float(PLAN_PLOT_HEIGHT),
                      fill="#fafafa"),
              element("rect", x=scale.x(1 - reserve), y=scale.top, width=scale.x(1) - scale.x(1 - reserve),
                      height=float(PLAN_PLOT_HEIGHT), fill="#fdf3d8", data_band="reserve"),
              element("rect", x=scale.x(1), y=scale.top, width=right - scale.x(1), height=float(PLAN_PLOT_HEIGHT),
                      fill="#fbe3e3", data_band="over")]
    share = 0.0
    while share <= scale.x_top + 1e-9:
        pieces.append(element("line", x1=scale.x(share), y1=scale.top, x2=scale.x(share), y2=bottom + 4,
                              stroke="#e6e6e6"))
        pieces.append(text(scale.x(share), bottom + 16, _percent(share), 10, "middle", MUTED))
        share += x_step
    speed = 0.0
    while speed <= scale.y_top + 1e-9:
        pieces.append(element("line", x1=scale.left - 4, y1=scale.y(speed), x2=right, y2=scale.y(speed),
                              stroke="#e6e6e6"))
        pieces.append(text(scale.left - 8, scale.y(speed) + 4, f"{speed:,.0f}", 10, "end", MUTED))
        speed += y_step
    for share, label, dash in ((1 - reserve, f"what the reserve leaves, {_percent(1 - reserve)}", "6 4"),
                               (1.0, "an IPU's memory", None)):
        pieces.append(element("line", x1=scale.x(share), y1=scale.top, x2=scale.x(share), y2=bottom, stroke=INK,
                              stroke_width=1.4, stroke_dasharray=dash, data_line="reserve" if dash else "memory"))
        pieces.append(text(scale.x(share) + (-4 if dash else 4), scale.top + 12, label, 10, "end" if dash else "start",
                           MUTED))
    pieces.append(element("line", x1=scale.left, y1=bottom, x2=right, y2=bottom, stroke=INK, stroke_width=1.2))
    pieces.append(element("line", x1=scale.left, y1=scale.top, x2=scale.left, y2=bottom, stroke=INK,
                          stroke_width=1.2))
    pieces.append(text(scale.left + scale.width / 2, bottom + 34, "the largest IPU's on-chip share of its memory",
                       11, "middle"))
    pieces.append(text(MARGIN, scale.top - 10, "samples a second", 11))
    return element("g", "".join(pieces), data_role="axes")


def _marker(kind: str, x: float, y: float, size: float = 6.0, **attributes: Any) -> str:
    """A point: "fits" a filled circle, "tight" a filled triangle, "does not fit" a cross, "does not run" an open
    circle, "best" a star, "reference" an open diamond."""
    if kind == FITS:
        return element("circle", cx=x, cy=y, r=size, fill=VERDICT_COLOURS[FITS], stroke=PAPER, stroke_width=1.0,
                       **attributes)
    if kind == TIGHT:
        return element("path", d=f"M{_number(x)},{_number(y - size * 1.2)} l{_number(size * 1.1)},"
                                 f"{_number(size * 2)} h{_number(-size * 2.2)} z",
                       fill=VERDICT_COLOURS[TIGHT], stroke=PAPER, stroke_width=1.0, **attributes)
    if kind == DOES_NOT_FIT:
        arm = size * 0.9
        return element("path", d=f"M{_number(x - arm)},{_number(y - arm)} l{_number(2 * arm)},{_number(2 * arm)} "
                                 f"M{_number(x - arm)},{_number(y + arm)} l{_number(2 * arm)},{_number(-2 * arm)}",
                       stroke=VERDICT_COLOURS[DOES_NOT_FIT], stroke_width=2.4, fill="none", **attributes)
    if kind == "best":
        corners = []
        for corner in range(10):
            radius = size * 1.9 if corner % 2 == 0 else size * 0.8
            angle = math.radians(-90 + 36 * corner)
            corners.append(f"{_number(x + radius * math.cos(angle))},{_number(y + radius * math.sin(angle))}")
        return element("polygon", points=" ".join(corners), fill="none", stroke=INK, stroke_width=1.6, **attributes)
    if kind == "reference":
        reach = size * 1.6
        return element("path", d=f"M{_number(x)},{_number(y - reach)} l{_number(reach)},{_number(reach)} "
                                 f"l{_number(-reach)},{_number(reach)} l{_number(-reach)},{_number(-reach)} z",
                       fill="none", stroke="#6a1b9a", stroke_width=2.0, **attributes)
    return element("circle", cx=x, cy=y, r=size, fill=PAPER, stroke=MUTED, stroke_width=1.6, **attributes)


def _plan_point(scale: _PlanScale, candidate: Mapping[str, Any], index: Optional[int], pareto: bool,
                best: bool) -> str:
    """One candidate (index None: the reference): its marker, the best's star round it, its figures in a tooltip."""
    x, y = scale.x(candidate["largest_share"]), scale.y(candidate["samples_per_second"])
    problems = candidate["placement"]["problems"] if candidate.get("placement") else []
    kind = DOES_NOT_RUN if problems else candidate["verdict"]
    tip = (f"{candidate_label(candidate)}: {candidate['samples_per_second']:,.1f} samples a second, the largest IPU "
           f"{_percent(candidate['largest_share'])} of its memory, {kind}")
    pieces = [element("title", esc(tip)), _marker(kind, x, y)]
    if best:
        pieces.append(_marker("best", x, y))
    if index is None:
        pieces.append(_marker("reference", x, y))
    return element("g", "".join(pieces), data_candidate=index if index is not None else "reference",
                   data_share=f"{candidate['largest_share']:.4f}",
                   data_samples=f"{candidate['samples_per_second']:.1f}", data_verdict=kind,
                   data_pareto="true" if pareto else None, data_best="true" if best else None)


def _plan_tags(scale: _PlanScale, named: Sequence[Tuple[str, Mapping[str, Any], str]]) -> List[str]:
    """A short tag beside each named point (its number in the key), above and right of it."""
    return [text(scale.x(candidate["largest_share"]) + 7, scale.y(candidate["samples_per_second"]) - 7, tag, 10,
                 fill=INK, weight="bold", data_role="tag") for tag, candidate, _ in named]


def _plan_key(body: List[str], named: Sequence[Tuple[str, Mapping[str, Any], str]], y: float) -> float:
    """A line for each named point: its tag, what it is and its figures; returns the y below."""
    for tag, candidate, label in named:
        figures = (f"{candidate['samples_per_second']:,.1f} samples a second, the largest IPU "
                   f"{_percent(candidate['largest_share'])} of its memory")
        body.append(text(MARGIN, y, tag, 11, weight="bold", data_role="key-tag"))
        body.append(text(MARGIN + 30, y, f"{label}: {figures}", 11, data_role="key"))
        y += 16
    return y


def _plan_legend(body: List[str], y: float, reference: bool) -> float:
    """The markers' meanings; returns the y below."""
    items = [(FITS, "fits"), (TIGHT, "tight"), (DOES_NOT_FIT, "does not fit"), (DOES_NOT_RUN, "does not run"),
             ("best", "the best"), *([("reference", "the base config")] if reference else [])]
    x = float(MARGIN)
    for kind, label in items:
        body.append(_marker(kind, x + 8, y, 5.0))
        body.append(text(x + 22, y + 4, label, 11, data_role="legend"))
        x += 22 + text_width(label, 11) + 18
    y += 22
    body.append(element("line", x1=float(MARGIN), y1=y, x2=MARGIN + 24.0, y2=y, stroke=INK, stroke_width=1.4,
                        stroke_dasharray="5 3"))
    body.append(text(MARGIN + 30, y + 4, "the frontier: no candidate is faster with as much memory left; numbers: "
                     "the candidates' ranks", 11, data_role="legend"))
    return y + 14
