"""poptorch's own option files, read by `poptorch.Options.loadFromFile` (poptorch 3.4, `python/_options_config.py`):
one option call a line, written as in Python without the `options.` prefix (`deviceIterations(20)`,
`TensorLocations.numIOTiles(128)`, `_Popart.set("defaultBufferingDepth", 256)`).

poptorch strips each line, skips the blank ones and those that start with `#`, prefixes the others with `options.`
and runs them together as Python, with `poptorch` and the options as the only names in scope (a comment after a
call is Python's own). A `SyntaxError` is raised as poptorch's `ConfigFileError`, any other error as it comes.
This module holds that rule and the text of a file the package writes; running one is the shell's
(`option_file_import.py`, the recorder's `Options.loadFromFile`).
"""

import json
from typing import Iterable, List, NamedTuple, Optional

from .plan import OptionsPlan

PREFIX = "options."


class OptionLine(NamedTuple):
    """A line of an option file that poptorch runs: its number (from 1) and its text, stripped."""

    line: int
    text: str


def lines_run(lines: Iterable[str]) -> List[OptionLine]:
    """The lines poptorch runs, of the lines of an option file: those that are neither blank nor a comment."""
    run = []
    for number, line in enumerate(lines, start=1):
        text = line.strip()
        if text and not text.startswith("#"):
            run.append(OptionLine(number, text))
    return run


def code(lines: Iterable[OptionLine]) -> str:
    """The Python poptorch runs for `lines`: each prefixed with `options.`, one a line (line N of the code is the
    N-th line run, not line N of the file)."""
    return "\n".join(PREFIX + line.text for line in lines)


def options_file_text(plan: OptionsPlan, for_inference: bool, name: Optional[str], version: str) -> str:
    """The text of the option file of `plan`: a header of comments, then one call a line. ASCII only, so that
    poptorch reads it in whatever encoding the locale gives `open()`."""
    source = f"the IPU config {json.dumps(name)}" if name else "an IPU config"
    build = "inference" if for_inference else "training"
    header = [
        f"# poptorch options for {build}, from {source} (optimum-ipu-ext {version})",
        "# Load them into a plain poptorch.Options: options = poptorch.Options(); options.loadFromFile(path)",
        "# Not into popdist.poptorch.Options: under poprun it sets the replicas and process of its instance itself",
        "# (it refuses replicationFactor); build those with IPUConfig.to_options()",
    ]
    return "\n".join(header + plan.to_options_lines()) + "\n"
