"""A generation plan (`plan --generate`) as text (`generation_plan_text`: its best build, its table, the frontier of
latency against throughput) and as one SVG picture (`generation_plan_svg`: each build a point of the job's tokens a
second against the latency of a token, the frontier, the latency asked for), both read off its view."""

from typing import Any, List, Mapping

from ..estimate.memory import Verdict
from .plan_picture import marker
from .sentences import generation_band_line, milliseconds, percent, seconds
from .svg import INK, MARGIN, MUTED, coordinate, element, esc, nice_step, picture, text
from .tables import Table
from .view import GenerationCandidateView, GenerationPlanView, generation_plan_view

WIDTH, PLOT_HEIGHT, LEFT, RIGHT = 860, 380, 84, 40
# the table's columns left-aligned
LEFT_COLUMNS = {"layers_per_ipu", "Verdict"}


def candidate_label(candidate: GenerationCandidateView) -> str:
    """A build in a few words: IPUs a replica x replicas, the batch, the tokens a call."""
    build = candidate.build
    ipus, steps = build["ipus_per_replica"], build["on_device_generation_steps"]
    calls = f"{steps} tokens a call on the device" if steps else "a token a call from the host"
    return (f"{ipus} IPU{'s' if ipus > 1 else ''} x {build['replication_factor']}, batch {build['batch_size']}, "
            f"{calls}")


def candidate_sentence(candidate: GenerationCandidateView) -> str:
    """A build and its figures in a sentence."""
    return (f"{candidate_label(candidate)}, layers_per_ipu {candidate.build['layers_per_ipu']}: "
            f"{candidate.job_tokens_per_second:,.1f} tokens a second (the job), "
            f"{milliseconds(candidate.token_seconds)} ms a token, {seconds(candidate.first_token_seconds)} to the "
            f"first token, the largest IPU {percent(candidate.largest_share)} of its memory")


def plan_title(plan: GenerationPlanView) -> str:
    asked = [f"{plan.ipus} {plan.ipu.label} IPUs"]
    asked += [f"{name} {value:,}" for name, value in (("batch", plan.batch_size), ("beams", plan.num_beams),
                                                      ("max_length", plan.max_length)) if value is not None]
    if plan.max_latency is not None:
        asked.append(f"at most {milliseconds(plan.max_latency)} ms a token")
    return f"{plan.model}: {plan.architecture} generating on {', '.join(asked)}"


def generation_plan_table(plan: GenerationPlanView) -> Table:
    """Its candidates as rows, best first."""
    headers = ["Rank", "IPUs a replica", "Replicas", "layers_per_ipu", "Batch", "On-device steps", "Largest IPU",
               "Verdict", "First token, s", "A token, ms", "Tokens a second", "Frontier"]
    rows = []
    for index, candidate in enumerate(plan.candidates):
        build = candidate.build
        rows.append([str(index + 1), str(build["ipus_per_replica"]), str(build["replication_factor"]),
                     str(build["layers_per_ipu"]), str(build["batch_size"]),
                     str(build["on_device_generation_steps"]), percent(candidate.largest_share),
                     candidate.verdict.value, f"{candidate.first_token_seconds:.3g}",
                     f"{1000 * candidate.token_seconds:.3g}", f"{candidate.job_tokens_per_second:,.1f}",
                     "yes" if index in plan.frontier else ""])
    return headers, rows


def generation_plan_text(data: Mapping[str, Any], top: int = 10) -> str:
    """The plan (its dict, `GenerationPlan.to_dict()`) as text, its table the `top` best candidates."""
    plan = generation_plan_view(data)
    candidates = plan.candidates
    verdicts = [candidate.verdict for candidate in candidates]
    lines = [plan_title(plan), f"{len(candidates)} builds searched: {verdicts.count(Verdict.FITS)} fit, "
             f"{verdicts.count(Verdict.TIGHT)} tight, {verdicts.count(Verdict.DOES_NOT_FIT)} do not fit.", ""]
    first = candidates[0] if candidates else None
    if first is None or not first.fits:
        lines.append("No build fits: the nearest are first below.")
    elif plan.max_latency is not None and first.token_seconds > plan.max_latency:
        lines.append(f"No build that fits makes a token in {milliseconds(plan.max_latency)} ms: the fastest first "
                     "below.")
    else:
        lines.append(f"Best: {candidate_sentence(first)}.")
    headers, rows = generation_plan_table(plan)
    shown = [headers[:-1], *(row[:-1] for row in rows[:top])]
    widths = [max(len(row[column]) for row in shown) for column in range(len(shown[0]))]
    lines.append("")
    lines += ["  ".join(cell.ljust(width) if header in LEFT_COLUMNS else cell.rjust(width)
                        for cell, width, header in zip(row, widths, headers)).rstrip() for row in shown]
    if len(candidates) > top:
        lines.append(f"... and {len(candidates) - top} more (--top, --json).")
    if plan.frontier:
        points = ", ".join(f"#{index + 1} {candidates[index].job_tokens_per_second:,.1f}/s at "
                           f"{milliseconds(candidates[index].token_seconds)} ms" for index in plan.frontier)
        lines += ["", f"Latency against throughput (the frontier): {points}."]
    band = generation_band_line(first.placement.generation) if first is not None else None
    return "\n".join(lines + ([band] if band else []))


def generation_plan_svg(data: Mapping[str, Any]) -> str:
    """A generation plan as one SVG picture: each candidate a point of the job's tokens a second against the
    latency of a token, its shape the verdict; the frontier drawn through the candidates on it, the best marked,
    the latency asked for a line."""
    plan = generation_plan_view(data)
    candidates = plan.candidates
    slowest = max([0.001, *(candidate.token_seconds for candidate in candidates),
                   *([plan.max_latency] if plan.max_latency else [])]) * 1.1 * 1000
    fastest = max([1.0, *(candidate.job_tokens_per_second for candidate in candidates)]) * 1.1
    x_step, y_step = nice_step(slowest), nice_step(fastest)
    x_top, y_top = x_step * -(-slowest // x_step), y_step * -(-fastest // y_step)
    top, width = 90.0, WIDTH - LEFT - RIGHT

    def at(candidate_ms: float, speed: float):
        return LEFT + candidate_ms / x_top * width, top + PLOT_HEIGHT - speed / y_top * PLOT_HEIGHT

    bottom = top + PLOT_HEIGHT
    body: List[str] = [text(MARGIN, 34, f"Plan: {plan.model}: {plan.architecture}, generating", 17, weight="bold",
                            data_role="title"),
                       text(MARGIN, 56, f"{plan_title(plan)}: {len(candidates)} candidates, {len(plan.frontier)} on "
                            "the frontier of latency against throughput; the best first.", 12, fill=MUTED),
                       element("rect", x=float(LEFT), y=top, width=float(width), height=float(PLOT_HEIGHT),
                               fill="#fafafa")]
    tick = 0.0
    while tick <= x_top + 1e-9:
        x, _ = at(tick, 0)
        body += [element("line", x1=x, y1=top, x2=x, y2=bottom + 4, stroke="#e6e6e6"),
                 text(x, bottom + 16, f"{tick:g}", 10, "middle", MUTED)]
        tick += x_step
    tick = 0.0
    while tick <= y_top + 1e-9:
        _, y = at(0, tick)
        body += [element("line", x1=LEFT - 4.0, y1=y, x2=float(LEFT + width), y2=y, stroke="#e6e6e6"),
                 text(LEFT - 8, y + 4, f"{tick:,.0f}", 10, "end", MUTED)]
        tick += y_step
    body += [text(LEFT + width / 2, bottom + 34, "a token, ms", 11, "middle"),
             text(MARGIN, top - 10, "tokens a second, the job", 11)]
    if plan.max_latency is not None:
        x, _ = at(1000 * plan.max_latency, 0)
        body.append(element("line", x1=x, y1=top, x2=x, y2=bottom, stroke=INK, stroke_width=1.4,
                            stroke_dasharray="6 4", data_line="max-latency"))
    frontier = [candidates[index] for index in plan.frontier]
    if frontier:
        path = " ".join(f"{'M' if index == 0 else 'L'}{coordinate(at(1000 * point.token_seconds, 0)[0])},"
                        f"{coordinate(at(0, point.job_tokens_per_second)[1])}" for index, point in enumerate(frontier))
        body.append(element("path", d=path, fill="none", stroke=INK, stroke_width=1.4, stroke_dasharray="5 3",
                            data_role="frontier"))
    for index in reversed(range(len(candidates))):  # the best drawn last, on top
        candidate = candidates[index]
        x, y = at(1000 * candidate.token_seconds, candidate.job_tokens_per_second)
        tip = f"#{index + 1} {candidate_sentence(candidate)}, {candidate.verdict.value}"
        pieces = [element("title", esc(tip)), marker(candidate.verdict.value, x, y)]
        if index == 0 and candidate.fits:
            pieces.append(marker("best", x, y))
        body.append(element("g", "".join(pieces), data_candidate=index, data_verdict=candidate.verdict.value,
                            data_frontier="true" if index in plan.frontier else None))
    y = bottom + 60
    for index in plan.frontier:
        body.append(text(MARGIN, y, f"#{index + 1} {candidate_sentence(candidates[index])}", 11, data_role="key"))
        y += 16
    height = y + MARGIN
    title = f"Plan: {plan_title(plan)}"
    return picture(WIDTH, height, title, "generation plan", title, body)
