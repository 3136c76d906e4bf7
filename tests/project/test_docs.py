"""Every command and snippet of the README and docs/ runs as written, so the documentation cannot rot.

The fenced blocks of each file run in order, in a fresh folder holding the repository's `configs/` and
`examples/`, sharing one Python namespace:

- ```python: run in this process; a ```text block right after it is its exact standard output.
- ```console: `$ command` lines, each followed by its exact output (standard output and error, as a terminal
  shows them); `...` on a line of its own stands for any number of lines.
- ```bash: each command must succeed.
- ```json / ```yaml: must parse. A ```text block that follows no ```python block is an illustration.

An HTML comment on the line before a fence changes how the block runs: `<!-- not run: REASON -->`,
`<!-- run: with the poptorch test doubles -->` (python: `poptorch` and `popart` are the test doubles, on an IPU),
`<!-- run: against a local test Hub -->` (a Hub server of the tests, with a write token in `HF_TOKEN`),
`<!-- run: in the checkout -->` (in the repository itself, for `make`). Several go in one comment, comma-separated.
"""

import ast
import builtins
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

import pytest
import yaml

from support.documents import ROOT, Block, blocks, console_steps, exec_python, matches
from support.hub_fixtures import hub_env

DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LANGUAGES = ("python", "console", "bash", "json", "yaml", "text")
RUN_MODES = ("with the poptorch test doubles", "against a local test Hub", "in the checkout")


def commands(text: str) -> List[str]:
    """The commands of a shell block: its lines, joined where one ends with a backslash, without comment lines."""
    joined = text.replace("\\\n", " ")
    return [line for line in joined.splitlines() if line.strip() and not line.lstrip().startswith("#")]


@dataclass
class Session:
    """What the blocks of one file share: their folder, their namespace and, once asked for, a test Hub."""

    folder: Path
    namespace: Dict[str, object] = field(default_factory=lambda: {"__name__": "__docs__"})
    hub_environment: Optional[Dict[str, str]] = None


def environment(session: Session, block: Block) -> Dict[str, str]:
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
               COLUMNS="120", NO_COLOR="1")
    # a block runs as in a fresh shell: under `make test` a nested `make` would print "Entering directory" lines
    for name in ("OPTIMUM_IPU_EXT_TEST_BASE", "MAKELEVEL", "MAKEFLAGS", "MFLAGS"):
        env.pop(name, None)
    if "against a local test Hub" in block.modes:
        env.update(session.hub_environment)
    return env


# Commands that change the machine (its packages, its login): a block holding one must be marked `not run`.
NEVER_RUN = re.compile(r"^\s*(pip|python\S* -m pip|hf auth|huggingface-cli|sudo|apt)\b")


def shell(session: Session, block: Block, command: str) -> subprocess.CompletedProcess:
    assert not NEVER_RUN.match(command), f"{block.where}: `{command}` changes this machine; mark the block not run"
    folder = ROOT if "in the checkout" in block.modes else session.folder
    return subprocess.run(["bash", "-c", command], cwd=str(folder), env=environment(session, block),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)


def run_python(session: Session, block: Block, monkeypatch) -> None:
    monkeypatch.chdir(session.folder)
    printed = exec_python(block, session.namespace)
    if block.output is not None:
        assert matches(block.output.text.splitlines(), printed.splitlines()), f"{block.where} printed:\n{printed}"


def run_block(session: Session, block: Block, monkeypatch) -> None:
    if block.language == "python":
        run_python(session, block, monkeypatch)
    elif block.language == "console":
        for command, expected in console_steps(block.text):
            result = shell(session, block, command)
            printed = f"{block.where}: `{command}` printed:\n{result.stdout}"
            assert matches(expected, result.stdout.splitlines()), printed
    elif block.language == "bash":
        for command in commands(block.text):
            result = shell(session, block, command)
            failed = f"{block.where}: `{command}` exited with {result.returncode}:\n{result.stdout}"
            assert result.returncode == 0, failed
    elif block.language == "json":
        json.loads(block.text)
    elif block.language == "yaml":
        yaml.safe_load(block.text)


def new_session(tmp_path: Path, request, monkeypatch, document: List[Block]) -> Session:
    session = Session(tmp_path / "docs")
    session.folder.mkdir()
    for name in ("configs", "examples"):
        shutil.copytree(ROOT / name, session.folder / name, ignore=shutil.ignore_patterns("__pycache__"))
    if any("against a local test Hub" in block.modes for block in document):
        server = request.getfixturevalue("hub_client")
        session.hub_environment = dict(hub_env(server, tmp_path / "hf_home"), HF_TOKEN=server.write_token)
        # transformers 4.x prints a one-time cache migration notice when it first meets a Hub cache without its
        # version file: as on a machine where it has run before, the file is there
        cache = Path(session.hub_environment["HF_HUB_CACHE"])
        cache.mkdir(parents=True, exist_ok=True)
        (cache / "version.txt").write_text("1")
        monkeypatch.setenv("HF_TOKEN", server.write_token)
    return session


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_block_runs_as_written(path, tmp_path, request, monkeypatch):
    document = blocks(path)
    session = new_session(tmp_path, request, monkeypatch, document)
    for block in document:
        if block.marker is None or not block.marker.startswith("not run:"):
            run_block(session, block, monkeypatch)


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_block_is_of_a_kind_the_runner_knows(path):
    for block in blocks(path):
        assert block.language in LANGUAGES, f"{block.where}: ```{block.language}"
        assert all(mode in RUN_MODES for mode in block.modes), f"{block.where}: {block.marker}"
        if block.marker is not None and block.marker.startswith("not run:"):
            assert block.marker[len("not run:"):].strip(), f"{block.where}: say why it is not run"


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_name_a_python_block_uses_is_defined(path):
    """Also the blocks that are not run: each name is defined in the block or an earlier one, or is a builtin."""
    defined = set(dir(builtins))
    for block in blocks(path):
        if block.language != "python":
            continue
        undefined = undefined_names(block.text, defined)
        assert not undefined, f"{block.where} uses names it never defines: {', '.join(sorted(undefined))}"
        defined |= bound_names(block.text)


def bound_names(code: str) -> set:
    names = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return names


def undefined_names(code: str, defined: set) -> set:
    bound = bound_names(code) | defined
    return {node.id for node in ast.walk(ast.parse(code))
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in bound}


def test_the_install_line_pins_the_torch_the_makefile_uses():
    pinned = re.search(r"^TORCH := (torch==\S+)$", (ROOT / "Makefile").read_text(), re.MULTILINE).group(1)
    install = next(block for block in blocks(ROOT / "README.md") if block.language == "bash")
    assert re.findall(r"pip install (torch\S*)", install.text) == [pinned] == ["torch==2.13.0"]


# The runner itself: what it finds in a document and how it compares output

def test_the_runner_reads_blocks_their_markers_and_the_output_of_python(tmp_path):
    document = tmp_path / "doc.md"
    document.write_text(textwrap.dedent("""\
        Intro.

        ```python
        print(1)
        ```

        ```text
        1
        ```

        <!-- not run: needs an IPU -->
        ```bash
        poprun python train.py
        ```

        <!-- run: against a local test Hub, with the poptorch test doubles -->

        ```console
        $ ipu-config show org/cfg
        ...
        ```

        ```text
        an illustration
        ```
        """))
    found = blocks(document)
    assert [(block.line, block.language, block.marker) for block in found] == [
        (3, "python", None), (12, "bash", "not run: needs an IPU"),
        (18, "console", "run: against a local test Hub, with the poptorch test doubles"), (23, "text", None),
    ]
    assert found[0].output.text == "1\n" and found[2].modes == ["against a local test Hub",
                                                                 "with the poptorch test doubles"]
    assert found[1].modes == [] and found[3].output is None


@pytest.mark.parametrize("expected, actual, result", [
    (["a", "b"], ["a", "b"], True),
    (["a", "b"], ["a", "c"], False),
    (["a"], ["a", "b"], False),
    (["a", "...", "z"], ["a", "b", "c", "z"], True),
    (["a", "...", "z"], ["a", "z"], True),
    (["a", "...", "z"], ["a", "b"], False),
    (["...", "x", "..."], ["a", "x", "b"], True),
    (["..."], [], True),
    (["Pushed to org/x: ..."], ["Pushed to org/x: http://hub/commit/1"], True),
    (["Pushed to org/x: ..."], ["Pushed to org/y: http://hub/commit/1"], False),
    (["a.b"], ["axb"], False),
    ([], [], True),
])
def test_an_ellipsis_line_stands_for_any_lines(expected, actual, result):
    assert matches(expected, actual) is result


def test_shell_blocks_join_continued_lines_and_skip_comments():
    assert commands("# first\nmake demo  # the job\nipu-config show \\\n    x.json\n") == [
        "make demo  # the job", "ipu-config show      x.json"]
    assert console_steps("$ a\nout\n\n$ b \\\n  c\n") == [("a", ["out", ""]), ("b    c", [])]
    with pytest.raises(AssertionError, match="not with a `\\$ ` command"):
        console_steps("output first\n$ a\n")


@pytest.mark.parametrize("command", ["pip install -e .", "  pip install torch", "python -m pip install x",
                                     "python3 -m pip install x", "hf auth login", "sudo make install"])
def test_commands_that_change_the_machine_are_never_run(command, tmp_path):
    block = Block(ROOT / "README.md", 1, "bash", command)
    with pytest.raises(AssertionError, match="changes this machine; mark the block not run"):
        shell(Session(tmp_path), block, command)


def test_a_name_no_block_defines_is_found():
    assert undefined_names("trainer = IPUTrainer(model=model, args=args)\n", {"IPUTrainer"}) == {"model", "args"}
    assert undefined_names("import os\nfor name in os.listdir():\n    print(name)\n", {"print"}) == set()
    assert undefined_names("def f(x):\n    return x + y\n", set()) == {"y"}


def test_the_readme_stays_at_most_400_lines():
    """The README is the way in; detail goes to docs/."""
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 400
