"""A placement as the section of a model card that shows it (`card_markdown`), in Markdown: the picture, the table,
the pipeline, the time, the verdict, and the command that places it again."""

from typing import Any, Mapping, Optional

from .sentences import shape_line, summary_lines, title_line, verdict_lines
from .svg import esc
from .tables import placement_table
from .view import PlacementView, placement_view


def card_markdown(data: Mapping[str, Any], picture: str, config: Optional[str] = None) -> str:
    """The placement for a model card: a heading, the picture (the repository's file `picture`), the table, the
    pipeline, the time and the verdict, and the command that places it again.

    Args:
        data (`dict`): `Placement.to_dict()`.
        picture (`str`): the path of the picture in the repository, beside the card.
        config (`str`, *optional*): the config as `place` reads it again (the repository's id).
    """
    placement = placement_view(data)
    headers, rows = placement_table(placement)
    right = {header for header in headers if header not in ("Blocks", "Layers")}
    verdicts = verdict_lines(placement)
    lines = [
        f"### Placement of `{placement.model}`",
        "",
        f"Where optimum-graphcore 0.7.1 puts {placement.architecture} ({placement.build}) on these IPUs, and "
        f"the memory each needs: {shape_line(placement)}.",
        "",
        f"![{esc(title_line(placement))}: each IPU's on-chip memory, the verdict and the pipeline's schedule]"
        f"({picture})",
        "",
        "| " + " | ".join(headers) + " |",
        "| " + " | ".join("---:" if header in right else "---" for header in headers) + " |",
        *("| " + " | ".join(text.replace("|", "\\|") for text in row) + " |" for row in rows),
        "",
        ", ".join(f"{letter}: {name}" for name, letter in placement.bar_parts) + ".",
        "",
        *(part for line in summary_lines(placement)[1:] if line not in verdicts for part in (line, "")),
        *(part for line in verdicts for part in (f"**{line}**", "")),
        f"Placed by optimum-ipu-ext, without an IPU; again with `{_command(placement, config)}`.",
    ]
    return "\n".join(lines) + "\n"


def _command(placement: PlacementView, config: Optional[str]) -> str:
    """The `ipu-config place` command that places it again."""
    command = (f"ipu-config place {config or 'CONFIG'} --model {placement.model} --architecture "
               f"{placement.architecture}")
    if placement.counted:
        command += f" --micro-batch-size {placement.micro_batch_size} --sequence-length {placement.sequence_length}"
        if placement.decoder_sequence_length is not None:
            command += f" --decoder-sequence-length {placement.decoder_sequence_length}"
    if placement.build == "inference":
        command += " --inference"
    return command
