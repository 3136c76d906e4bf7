"""A placement as one self-contained HTML page (`place --html`): the picture, the text report's table as an HTML
table with each part of the on-chip memory, the pipeline's stages, the step's time and the JSON, for a CI artefact
or a review; and a plan as one (`plan_page`): its picture, its candidates' table and the best one's placement. No
script, no font, no style sheet or image from elsewhere: the page's own policy forbids loading any.

Drawn from the dicts the JSON holds (`Placement.to_dict()`, a plan's), as the pictures are.
"""

import json
from typing import Any, List, Mapping, Optional, Sequence

from ..estimate.memory import Verdict
from .generation_plan import generation_plan_svg, generation_plan_table, plan_title as generation_title
from .placement_picture import placement_svg
from .plan_picture import plan_svg
from .sentences import compress, plan_title, title_line
from .svg import HTML_MARK, esc
from .tables import placement_table, plan_table
from .view import PlacementView, generation_plan_view, placement_view, plan_view

# the plan table's columns of figures, right-aligned
NUMBERS = {"Rank", "IPUs a replica", "Replicas", "Micro-batch", "G", "Device iterations", "Largest IPU",
           "Samples a second", "Step, s", "Pipeline efficiency"}
# nothing loads from anywhere: the page's styles are its own, the picture is inline
POLICY = "default-src 'none'; style-src 'unsafe-inline'"
STYLE = """
body { font-family: "DejaVu Sans", Arial, Helvetica, sans-serif; color: #1a1a1a; margin: 24px; max-width: 1400px; }
h2 { font-size: 16px; margin: 28px 0 8px; }
p { margin: 4px 0; color: #444; }
figure { margin: 16px 0; overflow-x: auto; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid #cfcfcf; padding: 4px 8px; vertical-align: top; }
th { background: #f1f1f1; text-align: left; }
td.number { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.tight td.share { background: #fdf3d8; }
tr.over td.share { background: #fbe3e3; font-weight: bold; }
pre { background: #f6f6f6; padding: 12px; font-size: 12px; overflow-x: auto; }
"""


def _document(title: str, sections: Sequence[str]) -> str:
    """The page: its head (the generator's mark, the policy that loads nothing, the style) and `sections`."""
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        HTML_MARK,
        f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">',
        f"<title>{esc(title)}</title>",
        f"<style>{STYLE}</style>",
        "</head>",
        "<body>",
        *sections,
        "</body>",
        "</html>",
        "",
    ])


def plan_page(data: Mapping[str, Any]) -> str:
    """A plan as one HTML page: its picture (`plan_svg`), its candidates' table, then the best candidate's placement
    as `placement_page` shows it, and the plan's JSON.

    Args:
        data (`dict`): the JSON `plan --json` prints (`candidates`, `pareto`, `reference`).
    """
    plan = plan_view(data)
    headers, rows = plan_table(plan)
    sections = [f"<figure>{plan_svg(data)}</figure>", "<h2>Candidates</h2>",
                _table(headers, rows, {index for index, header in enumerate(headers) if header in NUMBERS})]
    best = plan.candidates[0].placement if plan.candidates else None
    if best is not None:
        sections += ["<h2>The best candidate's placement</h2>", *_placement_sections(best, None)[:-2]]
    sections += ["<details><summary>The plan as JSON (<code>plan --json</code>)</summary>",
                 f"<pre>{esc(json.dumps(data, indent=2))}</pre></details>"]
    title = f"Plan: {plan_title(plan)}"
    return _document(title, sections)


def generation_plan_page(data: Mapping[str, Any]) -> str:
    """A generation plan as one HTML page: its picture, its candidates' table, the best candidate's placement and
    the plan's JSON.

    Args:
        data (`dict`): the JSON `plan --generate --json` prints.
    """
    plan = generation_plan_view(data)
    headers, rows = generation_plan_table(plan)
    numbers = {index for index, header in enumerate(headers) if header not in ("layers_per_ipu", "Verdict")}
    sections = [f"<figure>{generation_plan_svg(data)}</figure>", "<h2>Candidates</h2>", _table(headers, rows, numbers)]
    if plan.candidates:
        sections += ["<h2>The best candidate's placement</h2>",
                     *_placement_sections(plan.candidates[0].placement, None)[:-2]]
    sections += ["<details><summary>The plan as JSON (<code>plan --generate --json</code>)</summary>",
                 f"<pre>{esc(json.dumps(data, indent=2))}</pre></details>"]
    return _document(f"Plan: {generation_title(plan)}", sections)


def placement_page(data: Mapping[str, Any], config: Optional[str] = None) -> str:
    """The placement as one HTML page: its picture (`placement_svg`, whose header says the model, the config, the
    shape and the verdict), its table, its stages, its step's time and its JSON.

    Args:
        data (`dict`): `Placement.to_dict()`, or the JSON `place --json` printed, read back.
        config (`str`, *optional*): where the config came from, named in the summary.
    """
    placement = placement_view(data)
    return _document(title_line(placement), _placement_sections(placement, config))


def _placement_sections(placement: PlacementView, config: Optional[str]) -> List[str]:
    """The picture, the tables and (the last two sections) the JSON of a placement."""
    sections = [
        f"<figure>{placement_svg(placement.data, config)}</figure>",
        "<h2>IPUs</h2>",
        _ipu_table(placement),
        "<p>" + esc("; ".join(f"{letter}: {name}" for name, letter in placement.bar_parts))
        + ". Backward FLOPs count the recomputation; pace: the IPU's cycle, as a share of the slowest IPU's.</p>",
        "<h2>Pipeline stages</h2>",
        _table(["Stage", "IPU", "Blocks", "Stash depth, micro-batches"],
               [[str(number), str(stage.ipu), compress(stage.blocks), str(stage.stash_depth)]
                for number, stage in enumerate(placement.stages)], {0, 1, 3}),
    ]
    if placement.time is not None:
        sections += ["<h2>A step's time</h2>",
                     _table(["Part", "Seconds"], [[name.replace("_", " "), f"{value:.4g}"]
                                                  for name, value in placement.time.parts.items()], {1})]
    return sections + ["<details><summary>The placement as JSON (<code>place --json</code>)</summary>",
                       f"<pre>{esc(json.dumps(placement.data, indent=2))}</pre></details>"]


# the class of an IPU's row, by its verdict: its share cell is marked where the IPU is tight or over its memory
_MARKS = {Verdict.FITS: "", Verdict.TIGHT: "tight", Verdict.DOES_NOT_FIT: "over"}


def _ipu_table(placement: PlacementView) -> str:
    """The text report's table, a row per IPU, its share cell marked where the IPU is tight or over."""
    headers, rows = placement_table(placement)
    numbers = {index for index, header in enumerate(headers) if header not in ("Blocks", "Layers")}
    marks = [_MARKS[ipu.verdict] for ipu in placement.ipus]
    return _table(headers, rows, numbers, marks, headers.index("Share"))


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], numbers: set,
           marks: Optional[Sequence[str]] = None, marked: int = -1) -> str:
    """An HTML table; the cells of the columns `numbers` right-aligned; row `i` of class `marks[i]`, its cell
    `marked` of class "share"."""
    lines: List[str] = ["<table>", "<tr>" + "".join(f"<th>{esc(header)}</th>" for header in headers) + "</tr>"]
    for number, row in enumerate(rows):
        mark = marks[number] if marks else ""
        cells = []
        for index, cell in enumerate(row):
            classes = " ".join(name for name, wanted in (("number", index in numbers), ("share", index == marked))
                               if wanted)
            cells.append(f'<td class="{classes}">{esc(cell)}</td>' if classes else f"<td>{esc(cell)}</td>")
        lines.append((f'<tr class="{mark}">' if mark else "<tr>") + "".join(cells) + "</tr>")
    lines.append("</table>")
    return "\n".join(lines)
