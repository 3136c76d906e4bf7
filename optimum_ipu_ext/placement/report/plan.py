"""A plan as text (`ipu-config plan`): what it is for, the best build in a sentence, the first candidates as a table
(the columns of `pictures.plan_table`), the frontier of speed against memory, and the base config timed the same
way. Drawn from the dict `Plan.to_dict()` gives, as the pictures are."""

from typing import Any, List, Mapping

from .pictures import SWITCHES, candidate_label, plan_table, plan_title

# the columns the text shows of `plan_table`'s, and those left-aligned
TEXT_COLUMNS = ("Rank", "IPUs a replica", "Replicas", "layers_per_ipu", "Micro-batch", "G", "Device iterations",
                *(header for _, header, _ in SWITCHES), "Largest IPU", "Verdict", "Samples a second", "Step, s")
LEFT = {"layers_per_ipu", "Verdict"}


def plan_text(plan: Mapping[str, Any], top: int = 10) -> str:
    """The plan as text, its table the `top` best candidates and the base config."""
    candidates = plan["candidates"]
    verdicts = [candidate["verdict"] for candidate in candidates]
    fitting = sum(candidate["fits"] for candidate in candidates)
    lines = [plan_title(plan), f"{len(candidates)} builds searched: {fitting} fit, {verdicts.count('tight')} tight, "
             f"{verdicts.count('does not fit')} do not fit.", ""]
    best = candidates[0] if candidates and candidates[0]["fits"] else None
    if best is None:
        lines.append("No build fits: the nearest are first below.")
    else:
        lines.append(f"Best: {_sentence(best)}.")
    headers, rows = plan_table(plan)
    shown = [index for index, header in enumerate(headers) if header in TEXT_COLUMNS]
    table = [[headers[index] for index in shown]]
    # the candidates' rows, then the base config's (the last of `rows`, where there is one)
    listed = rows[:min(top, len(candidates))] + rows[len(candidates):]
    table += [[row[index] for index in shown] for row in listed]
    widths = [max(len(row[column]) for row in table) for column in range(len(shown))]
    lines.append("")
    for row in table:
        lines.append("  ".join(cell.ljust(width) if headers[shown[column]] in LEFT else cell.rjust(width)
                               for column, (cell, width) in enumerate(zip(row, widths))).rstrip())
    if len(candidates) > top:
        lines.append(f"... and {len(candidates) - top} more (--top, --json).")
    if plan["pareto"]:
        frontier = ", ".join(f"#{index + 1} {candidates[index]['samples_per_second']:,.1f}/s at "
                             f"{100 * candidates[index]['largest_share']:.0f}%"
                             + (" (tight)" if candidates[index]["verdict"] == "tight" else "")
                             for index in plan["pareto"])
        lines += ["", f"Speed against memory (the frontier): {frontier}."]
    reference = plan.get("reference")
    if reference is not None:
        lines.append(f"The base config (base in the table): {_sentence(reference)}, {reference['verdict']}.")
    return "\n".join(lines)


def _sentence(candidate: Mapping[str, Any]) -> str:
    """A candidate's build and figures in a sentence."""
    parts: List[str] = [candidate_label(candidate), f"layers_per_ipu {candidate['layers_per_ipu']}"]
    if (candidate.get("embedding_serialization_factor") or 1) > 1:
        parts.append(f"serialization factor {candidate['embedding_serialization_factor']}")
    return (", ".join(parts) + f": {candidate['samples_per_second']:,.1f} samples a second, "
            f"{candidate['step_seconds']:.3g} s a step, the largest IPU {100 * candidate['largest_share']:.0f}% "
            "of its memory")
