"""A plan as one SVG picture (`plan_svg`): each candidate a point of its samples a second against the share of its
memory its largest IPU holds on chip, the frontier of speed against memory, the best and the base config."""

import math
from typing import Any, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from ..estimate.memory import Verdict
from .sentences import candidate_label, percent, plan_calibration_note, plan_request, plan_title
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
)
from .view import DOES_NOT_RUN, CandidateView, plan_view

PLAN_WIDTH, PLAN_PLOT_HEIGHT = 860, 380
PLAN_LEFT, PLAN_RIGHT = 84, 40  # the speed axis's labels; room right of the plot


def plan_svg(data: Mapping[str, Any]) -> str:
    """A plan as one SVG picture: each candidate a point of its samples a second against the share of its memory its
    largest IPU holds on chip, its shape the verdict; the frontier of speed against memory drawn through the
    candidates on it (`pareto`), the best (the first) and the base config (`reference`: the config whose other
    settings the plan keeps, often Graphcore's) marked and named; the lines of what the reserve leaves and of the
    IPU's memory.

    Args:
        data (`dict`): the JSON `plan --json` prints: `candidates` (best first; each with `largest_share`,
            `samples_per_second`, `verdict`, its settings and its `placement`), `pareto` (indices into
            `candidates`) and `reference` (a candidate's dict, or None).
    """
    plan = plan_view(data)
    candidates = plan.candidates
    reference = plan.reference
    timed = [(index, candidate) for index, candidate in enumerate(candidates)
             if candidate.samples_per_second is not None]
    points = [candidate for _, candidate in timed] + ([reference] if reference else [])
    first = (candidates or [reference])[0]
    placement = first.placement if first else None
    reserve = placement.reserve_bytes / placement.memory_bytes if placement else 0.25
    widest = max([1.1, *(point.largest_share * 1.05 for point in points)])
    x_step = nice_step(widest * 100, 8) / 100
    x_top = x_step * -(-widest // x_step)
    fastest = max([1.0, *(point.samples_per_second for point in points)]) * 1.1
    y_step = nice_step(fastest)
    y_top = y_step * -(-fastest // y_step)
    top = 108.0
    plot_width = PLAN_WIDTH - PLAN_LEFT - PLAN_RIGHT
    scale = _PlanScale(PLAN_LEFT, top, plot_width, x_top, y_top)
    body: List[str] = []
    title = f"Plan: {plan_title(plan)}"
    body.append(text(MARGIN, 34, f"Plan: {plan.model}: {plan.architecture}", 17, weight="bold",
                     data_role="title"))
    body.append(text(MARGIN, 56, f"On {plan_request(plan)}: {len(candidates)} candidates, {len(plan.pareto)} on "
                     f"the frontier of speed against memory; the best first.{plan_calibration_note(plan)}", 12,
                     fill=MUTED))
    if len(timed) < len(candidates):
        body.append(text(MARGIN, 73, f"{len(candidates) - len(timed)} without a time (no activations counted) are "
                         "not drawn.", 12, fill=MUTED))
    body.append(_plan_axes(scale, x_step, y_step, reserve))
    frontier = sorted((candidates[index] for index in plan.pareto if candidates[index].samples_per_second),
                      key=lambda candidate: candidate.largest_share)
    if frontier:
        path = " ".join(f"{'M' if index == 0 else 'L'}{coordinate(scale.x(point.largest_share))},"
                        f"{coordinate(scale.y(point.samples_per_second))}" for index, point in enumerate(frontier))
        body.append(element("path", d=path, fill="none", stroke=INK, stroke_width=1.4, stroke_dasharray="5 3",
                            data_role="frontier"))
    for index, candidate in reversed(timed):  # the best drawn last, on top
        body.append(_plan_point(scale, candidate, index, index in plan.pareto, index == 0))
    if reference:
        body.append(_plan_point(scale, reference, None, False, False))
    named = [(str(index + 1), candidate, ("the best: " if index == 0 else "") + candidate_label(candidate))
             for index, candidate in timed if index == 0 or index in plan.pareto]
    if reference:
        named.append(("base", reference, f"the base config: {candidate_label(reference)}"))
    body += _plan_tags(scale, named)
    bottom = _plan_legend(body, top + PLAN_PLOT_HEIGHT + 58, reference is not None)
    bottom = _plan_key(body, named, bottom + 14)
    height = bottom + MARGIN
    return picture(PLAN_WIDTH, height, title, "plan", title, body)


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
        pieces.append(text(scale.x(share), bottom + 16, percent(share), 10, "middle", MUTED))
        share += x_step
    speed = 0.0
    while speed <= scale.y_top + 1e-9:
        pieces.append(element("line", x1=scale.left - 4, y1=scale.y(speed), x2=right, y2=scale.y(speed),
                              stroke="#e6e6e6"))
        pieces.append(text(scale.left - 8, scale.y(speed) + 4, f"{speed:,.0f}", 10, "end", MUTED))
        speed += y_step
    for share, label, dash in ((1 - reserve, f"what the reserve leaves, {percent(1 - reserve)}", "6 4"),
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


def marker(kind: str, x: float, y: float, size: float = 6.0, **attributes: Any) -> str:
    """A point: "fits" a filled circle, "tight" a filled triangle, "does not fit" a cross, "does not run" an open
    circle, "best" a star, "reference" an open diamond."""
    if kind == Verdict.FITS.value:
        return element("circle", cx=x, cy=y, r=size, fill=VERDICT_COLOURS[Verdict.FITS], stroke=PAPER,
                       stroke_width=1.0, **attributes)
    if kind == Verdict.TIGHT.value:
        return element("path", d=f"M{coordinate(x)},{coordinate(y - size * 1.2)} l{coordinate(size * 1.1)},"
                                 f"{coordinate(size * 2)} h{coordinate(-size * 2.2)} z",
                       fill=VERDICT_COLOURS[Verdict.TIGHT], stroke=PAPER, stroke_width=1.0, **attributes)
    if kind == Verdict.DOES_NOT_FIT.value:
        arm = size * 0.9
        return element("path", d=f"M{coordinate(x - arm)},{coordinate(y - arm)} "
                                 f"l{coordinate(2 * arm)},{coordinate(2 * arm)} "
                                 f"M{coordinate(x - arm)},{coordinate(y + arm)} "
                                 f"l{coordinate(2 * arm)},{coordinate(-2 * arm)}",
                       stroke=VERDICT_COLOURS[Verdict.DOES_NOT_FIT], stroke_width=2.4, fill="none", **attributes)
    if kind == "best":
        corners = []
        for corner in range(10):
            radius = size * 1.9 if corner % 2 == 0 else size * 0.8
            angle = math.radians(-90 + 36 * corner)
            corners.append(f"{coordinate(x + radius * math.cos(angle))},{coordinate(y + radius * math.sin(angle))}")
        return element("polygon", points=" ".join(corners), fill="none", stroke=INK, stroke_width=1.6, **attributes)
    if kind == "reference":
        reach = size * 1.6
        return element("path", d=f"M{coordinate(x)},{coordinate(y - reach)} "
                                 f"l{coordinate(reach)},{coordinate(reach)} l{coordinate(-reach)},{coordinate(reach)} "
                                 f"l{coordinate(-reach)},{coordinate(-reach)} z",
                       fill="none", stroke="#6a1b9a", stroke_width=2.0, **attributes)
    return element("circle", cx=x, cy=y, r=size, fill=PAPER, stroke=MUTED, stroke_width=1.6, **attributes)


def _plan_point(scale: _PlanScale, candidate: CandidateView, index: Optional[int], pareto: bool,
                best: bool) -> str:
    """One candidate (index None: the reference): its marker, the best's star round it, its figures in a tooltip."""
    x, y = scale.x(candidate.largest_share), scale.y(candidate.samples_per_second)
    kind = candidate.verdict_word
    tip = (f"{candidate_label(candidate)}: {candidate.samples_per_second:,.1f} samples a second, the largest IPU "
           f"{percent(candidate.largest_share)} of its memory, {kind}")
    pieces = [element("title", esc(tip)), marker(kind, x, y)]
    if best:
        pieces.append(marker("best", x, y))
    if index is None:
        pieces.append(marker("reference", x, y))
    return element("g", "".join(pieces), data_candidate=index if index is not None else "reference",
                   data_share=f"{candidate.largest_share:.4f}",
                   data_samples=f"{candidate.samples_per_second:.1f}", data_verdict=kind,
                   data_pareto="true" if pareto else None, data_best="true" if best else None)


def _plan_tags(scale: _PlanScale, named: Sequence[Tuple[str, CandidateView, str]]) -> List[str]:
    """A short tag beside each named point (its number in the key), above and right of it."""
    return [text(scale.x(candidate.largest_share) + 7, scale.y(candidate.samples_per_second) - 7, tag, 10,
                 fill=INK, weight="bold", data_role="tag") for tag, candidate, _ in named]


def _plan_key(body: List[str], named: Sequence[Tuple[str, CandidateView, str]], y: float) -> float:
    """A line for each named point: its tag, what it is and its figures; returns the y below."""
    for tag, candidate, label in named:
        figures = (f"{candidate.samples_per_second:,.1f} samples a second, the largest IPU "
                   f"{percent(candidate.largest_share)} of its memory")
        body.append(text(MARGIN, y, tag, 11, weight="bold", data_role="key-tag"))
        body.append(text(MARGIN + 30, y, f"{label}: {figures}", 11, data_role="key"))
        y += 16
    return y


def _plan_legend(body: List[str], y: float, reference: bool) -> float:
    """The markers' meanings; returns the y below."""
    items = [*((verdict.value, verdict.value) for verdict in Verdict), (DOES_NOT_RUN, DOES_NOT_RUN),
             ("best", "the best"), *([("reference", "the base config")] if reference else [])]
    x = float(MARGIN)
    for kind, label in items:
        body.append(marker(kind, x + 8, y, 5.0))
        body.append(text(x + 22, y + 4, label, 11, data_role="legend"))
        x += 22 + text_width(label, 11) + 18
    y += 22
    body.append(element("line", x1=float(MARGIN), y1=y, x2=MARGIN + 24.0, y2=y, stroke=INK, stroke_width=1.4,
                        stroke_dasharray="5 3"))
    body.append(text(MARGIN + 30, y + 4, "the frontier: no candidate is faster with as much memory left; numbers: "
                     "the candidates' ranks", 11, data_role="legend"))
    return y + 14
