"""`Placement`: where optimum-graphcore 0.7.1 puts a model's blocks, layers and parameters on the IPUs of a config,
and the memory each IPU needs, as data and as text: one row per IPU, its blocks compressed (`Embedding, Encoder0-5`),
its parameters, its on-chip memory with a bar against the IPU's and its Streaming Memory; a verdict, and the
assumptions in one line."""

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple


@dataclass(frozen=True)
class IPUPlacement:
    """One IPU of the pipeline: its blocks (named as `poptorch.BeginBlock` is given them; None: a block upstream
    leaves unnamed), the indices of its layers in the layer list, its parameters and their bytes."""

    ipu: int
    blocks: Tuple[Optional[str], ...]
    layers: Tuple[int, ...]
    parameters: int
    on_chip_bytes: int
    streaming_bytes: int

    def to_dict(self) -> Dict[str, Any]:
        return {"ipu": self.ipu, "blocks": list(self.blocks), "layers": list(self.layers),
                "parameters": self.parameters, "on_chip_bytes": self.on_chip_bytes,
                "streaming_bytes": self.streaming_bytes}


@dataclass(frozen=True)
class Placement:
    """Where optimum-graphcore 0.7.1's `parallelize()` puts a model on the IPUs of a config, and the memory each
    IPU needs for its parameters (a lower bound: see `assumptions`). `str()` is a table to read; `to_dict()` and
    `to_json_string()` the same as data."""

    model: str
    architecture: str
    build: str
    layers_per_ipu: Tuple[int, ...]
    ipu_memory_bytes: int
    ipus: Tuple[IPUPlacement, ...]
    assumptions: str
    _planner: Any = field(repr=False, compare=False)

    @property
    def fits(self) -> bool:
        """Whether every IPU's on-chip bytes are within its memory."""
        return all(ipu.on_chip_bytes <= self.ipu_memory_bytes for ipu in self.ipus)

    def to_dict(self) -> Dict[str, Any]:
        return {
            "model": self.model,
            "architecture": self.architecture,
            "build": self.build,
            "layers_per_ipu": list(self.layers_per_ipu),
            "ipu_memory_bytes": self.ipu_memory_bytes,
            "fits": self.fits,
            "ipus": [ipu.to_dict() for ipu in self.ipus],
        }

    def to_json_string(self) -> str:
        return json.dumps(self.to_dict(), indent=2) + "\n"

    def __str__(self) -> str:
        return render(self)

    def parameter_ipus(self) -> Dict[str, Tuple[int, ...]]:
        """`{parameter: the IPUs it is on}`, named as `named_parameters()` names it: one IPU, where it is first used;
        in a generation build, where each executor (encoder, decoder) using it first uses it."""
        return self._planner.parameter_ipus(self.layers_per_ipu)

    def with_layers_per_ipu(self, layers_per_ipu: Sequence[int]) -> "Placement":
        """The placement of the same model and config with another `layers_per_ipu` (of the build's mode)."""
        return self._planner.placement(layers_per_ipu)

    def balanced(self) -> "Placement":
        """The placement with the `layers_per_ipu` (same number of IPUs) that makes the largest on-chip figure
        smallest, ties to the split closest to this one's, among the splits upstream accepts.

        Raises:
            PlacementError: for an architecture whose `parallelize()` places its layers itself (LXMERT).
        """
        return self._planner.balanced(self)


# --- text ------------------------------------------------------------------------------------------------------

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


def render(placement: Placement, style: Style = _plain) -> str:
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


def render_comparison(current: Placement, proposal: Placement, style: Style = _plain) -> str:
    """The balanced split beside the config's: each IPU's layers and on-chip memory, now and balanced."""
    largest_now = max(ipu.on_chip_bytes for ipu in current.ipus)
    largest = max(ipu.on_chip_bytes for ipu in proposal.ipus)
    if list(proposal.layers_per_ipu) == list(current.layers_per_ipu):
        return style("Balanced: the config's layers_per_ipu already makes the largest on-chip figure smallest.", "bold")
    rows = [("IPU", "Layers", "Balanced", "On chip, MiB", "Balanced, MiB")]
    for now, then in zip(current.ipus, proposal.ipus):
        rows.append((str(now.ipu), str(len(now.layers)), str(len(then.layers)), mib(now.on_chip_bytes),
                     mib(then.on_chip_bytes)))
    widths = [max(len(row[column]) for row in rows) for column in range(5)]
    lines = [style(f"Balanced: layers_per_ipu {list(proposal.layers_per_ipu)} (the config's: "
                   f"{list(current.layers_per_ipu)})", "bold")]
    for number, row in enumerate(rows):
        text = "  ".join(cell.rjust(width) for cell, width in zip(row, widths))
        lines.append(style(text, "bold") if number == 0 else text)
    verdict = "fits" if proposal.fits else "still does not fit"
    lines.append(f"The largest on-chip figure: {mib(largest)} MiB instead of {mib(largest_now)} MiB; it {verdict}.")
    return "\n".join(lines)
