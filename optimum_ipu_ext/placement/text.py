"""The text of a `Placement`: one row per IPU, its blocks compressed (`Embedding, Encoder0-5`), its parameters, its
on-chip memory with a bar against the IPU's and its Streaming Memory; a verdict, and the assumptions in one line."""

import re
from typing import TYPE_CHECKING, Callable, List, Optional, Sequence, Tuple

if TYPE_CHECKING:
    from .placement import Placement

MIB = 1 << 20
BAR_WIDTH = 20

# `style(text, name)`: the text styled ("red", "bold", ...), as the CLI's `Stream.style` does; plain by default
Style = Callable[[str, str], str]


def _plain(text: str, name: str) -> str:
    return text


def compress(names: Sequence[Optional[str]]) -> str:
    """Block names, runs of consecutive numbers shortened: `Embedding, Encoder0-5`; unnamed blocks counted."""
    parts: List[str] = []
    run: Optional[Tuple[str, int, int]] = None  # (stem, first, last) of the run being read
    unnamed = 0
    for name in names:
        if name is None:
            unnamed += 1
            continue
        match = re.fullmatch(r"(.*?)(\d+)", name.strip())
        if match and run and match.group(1) == run[0] and int(match.group(2)) == run[2] + 1:
            run = (run[0], run[1], run[2] + 1)
            continue
        if run:
            parts.append(_run(run))
            run = None
        if match:
            run = (match.group(1), int(match.group(2)), int(match.group(2)))
        else:
            parts.append(name)
    if run:
        parts.append(_run(run))
    if unnamed:
        parts.append(f"{unnamed} unnamed" if parts else f"{unnamed} unnamed block{'s' if unnamed > 1 else ''}")
    return ", ".join(parts) or "-"


def _run(run: Tuple[str, int, int]) -> str:
    stem, first, last = run
    return f"{stem}{first}" if first == last else f"{stem}{first}-{last}"


def mib(size: int) -> str:
    return f"{size / MIB:,.1f}"


def bar(size: int, capacity: int) -> str:
    filled = min(BAR_WIDTH, round(BAR_WIDTH * size / capacity))
    return "[" + "#" * filled + "." * (BAR_WIDTH - filled) + "]"


def render(placement: "Placement", style: Style = _plain) -> str:
    """The placement as text; `style` colours the IPUs that are over their memory, on terminals."""
    capacity = placement.ipu_memory_bytes
    rows = [("IPU", "Blocks", "Parameters", f"On chip, MiB of {mib(capacity)}", "Streaming, MiB")]
    over = []
    for ipu in placement.ipus:
        share = f"{mib(ipu.on_chip_bytes):>9} {bar(ipu.on_chip_bytes, capacity)} {100 * ipu.on_chip_bytes / capacity:3.0f}%"
        rows.append((str(ipu.ipu), compress(ipu.blocks), f"{ipu.parameters:,}", share, mib(ipu.streaming_bytes)))
        if ipu.on_chip_bytes > capacity:
            over.append(ipu)
    widths = [max(len(row[column]) for row in rows) for column in range(5)]
    lines = [
        f"{style(placement.model, 'bold')}: {placement.architecture}, {placement.build}, "
        f"layers_per_ipu {list(placement.layers_per_ipu)}",
        "",
    ]
    for number, row in enumerate(rows):
        ipu = row[0].rjust(widths[0])
        if number and placement.ipus[number - 1] in over:
            ipu = style(ipu, "red")
        cells = [row[1].ljust(widths[1]), row[2].rjust(widths[2]), row[3].ljust(widths[3]), row[4].rjust(widths[4])]
        text = "  ".join([ipu, *cells]).rstrip()
        lines.append(style(text, "bold") if number == 0 else text)
    lines.append("")
    if over:
        named = ", ".join(style(f"IPU {ipu.ipu}", "red") + f" ({mib(ipu.on_chip_bytes)} MiB)" for ipu in over)
        lines.append(f"Does not fit: {named} over the {mib(capacity)} MiB of an IPU.")
    else:
        lines.append(f"Fits: every IPU's on-chip figure is within its {mib(capacity)} MiB.")
    lines.append(f"Assumes {placement.assumptions}.")
    return "\n".join(lines)
