"""The reports `place` and `plan` print, against the documentation: each `ipu-config place` and `ipu-config plan`
command of the documents below, run by `main()` in this process after the document's Python blocks before it, prints
what the document shows. tests/project/test_docs.py runs the same commands in a shell, as a user does; here the code
that writes the reports (`report/text.py`, `tables.py`, `sentences.py`, `view.py`, `generation_plan.py`) runs where
mutation testing sees it.
"""

import re
import shlex
import shutil
import subprocess
import sys

import pytest

from support.cli_helpers import run
from support.documents import ROOT, blocks, console_steps, exec_python, matches

DOCUMENTS = ["docs/placement.md", "docs/generation.md", "docs/calibration.md"]
# a command `main()` runs: `place` or `plan`, with nothing for a shell to do
IN_PROCESS = re.compile(r"^ipu-config (place|plan) [^|<>;&$`]*$")
# the blocks run here: those run in the docs' folder, with the doubles or without
RUN_HERE = {"with the poptorch test doubles"}


def _runs_here(block) -> bool:
    return block.marker is None or (block.marker.startswith("run:") and set(block.modes) <= RUN_HERE)


def _shell(command: str) -> None:
    """A command the reports do not print, for what it leaves in the folder."""
    subprocess.run(["bash", "-c", command], check=True, capture_output=True, text=True,
                   env={"PATH": f"{sys.executable.rpartition('/')[0]}:/usr/bin:/bin"})


@pytest.mark.parametrize("document", DOCUMENTS)
def test_place_and_plan_print_what_the_document_shows(document, tmp_path, monkeypatch, capsys):
    for name in ("configs", "examples"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.setenv("NO_COLOR", "1")
    namespace = {"__name__": "__docs__"}
    compared = 0
    for block in blocks(ROOT / document):
        if not _runs_here(block):
            continue
        if block.language == "python":
            exec_python(block, namespace)
        elif block.language == "console":
            for command, expected in console_steps(block.text):
                if not IN_PROCESS.match(command):
                    _shell(command)
                    continue
                capsys.readouterr()  # what the blocks before printed
                _, out, err = run(capsys, *shlex.split(command)[1:])
                assert matches(expected, (out + err).splitlines()), f"{block.where}: `{command}` printed:\n{out}{err}"
                compared += 1
    assert compared, "no command of the document compared"
