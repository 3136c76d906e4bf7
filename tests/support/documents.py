"""The fenced blocks of the documentation, as the tests read them: each block with the marker on the line before it
(`<!-- not run: REASON -->`, `<!-- run: MODE, ... -->`), a ```python block's output (the ```text block right after
it), a console block's `$ command` lines with their output, and how an output is matched (`...` for any lines or any
text). tests/project/test_docs.py runs every block; tests/placement/report/test_documented_reports.py runs the
`place` and `plan` commands in its own process.
"""

import contextlib
import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from .doubles import installed

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```(\S*)\s*$")
MARKER = re.compile(r"^<!-- (not run: .+|run: .+) -->$")


@dataclass
class Block:
    path: Path
    line: int  # of the opening fence, counted from 1
    language: str
    text: str
    marker: Optional[str] = None
    output: Optional["Block"] = None  # the ```text block showing a python block's output

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    @property
    def modes(self) -> List[str]:
        if self.marker is None or self.marker.startswith("not run:"):
            return []
        return [mode.strip() for mode in self.marker[len("run:"):].split(",")]


def blocks(path: Path) -> List[Block]:
    """The fenced blocks of a Markdown file, each with the marker on the line before it."""
    found: List[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        end = next(i for i in range(index + 1, len(lines)) if lines[i] == "```")
        previous = next((lines[i] for i in range(index - 1, -1, -1) if lines[i].strip()), "")
        marker = MARKER.match(previous)
        block = Block(path, index + 1, opening.group(1), "\n".join(lines[index + 1:end]) + "\n",
                      marker.group(1) if marker else None)
        between = lines[found[-1].line:index] if found else []
        if found and block.language == "text" and found[-1].language == "python" and _only_blank_after_fence(between):
            found[-1].output = block
        else:
            found.append(block)
        index = end + 1
    return found


def _only_blank_after_fence(lines: List[str]) -> bool:
    """Whether nothing but the closing fence of the block before and blank lines stands between two blocks."""
    closing = lines.index("```") if "```" in lines else len(lines)
    return all(not line.strip() for line in lines[closing + 1:])


def matches(expected: List[str], actual: List[str]) -> bool:
    """Whether `actual` lines are `expected`, a line `...` standing for any number of lines and `...` within a line
    for any text."""
    if not expected:
        return not actual
    if expected[0] == "...":
        return any(matches(expected[1:], actual[start:]) for start in range(len(actual) + 1))
    return bool(actual) and _line_matches(expected[0], actual[0]) and matches(expected[1:], actual[1:])


def _line_matches(expected: str, actual: str) -> bool:
    pattern = ".*".join(re.escape(part) for part in expected.split("..."))
    return re.fullmatch(pattern, actual) is not None


def console_steps(text: str) -> List[Tuple[str, List[str]]]:
    """`(command, expected output lines)` for each `$ command` of a console block."""
    steps: List[Tuple[str, List[str]]] = []
    for line in text.replace("\\\n", " ").splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif steps:
            steps[-1][1].append(line)
        else:
            raise AssertionError(f"a console block starts with {line!r}, not with a `$ ` command")
    return steps


def exec_python(block: Block, namespace: Dict[str, Any]) -> str:
    """Run a ```python block in `namespace` (over the poptorch doubles where its marker says so): what it printed."""
    with contextlib.ExitStack() as stack:
        if "with the poptorch test doubles" in block.modes:
            stack.enter_context(installed(hardware_version=2))
        printed = stack.enter_context(contextlib.redirect_stdout(io.StringIO()))
        exec(compile(block.text, block.where, "exec"), namespace)
    return printed.getvalue()
