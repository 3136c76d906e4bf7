"""Configs from poptorch option files: `SettingsMixin.from_options_file`, `from_options_lines` and
`ipu-config import FILE`.

The lines run as `poptorch.Options.loadFromFile` runs them (see `option_files`), on the Poplar SDK's poptorch where
it imports, else on the recorder, one statement at a time: a line poptorch would refuse is an `OptionsFileError`
naming the file and the line, and each option is known by the line that last changed it, so that an option no
setting holds is refused naming that line. The options made are imported as `from_options` imports any.

A file runs as Python, as poptorch runs it: read only files you would run.
"""

import ast
import importlib
import io
import os
from typing import Any, Dict, List, NamedTuple, Sequence, Tuple, Union

from ..errors import OptionsFileError, UnsupportedOptionsError
from ..recorder import sdk_modules
from ..sdk.option_lines import code, lines_run
from ..settings.mode import INFERENCE, TRAINING, Mode
from .readback import full_state, import_options, name_in_mode, option_name

PathOrPaths = Union[str, "os.PathLike[str]", Sequence[Union[str, "os.PathLike[str]"]]]
Lines = Union[str, Sequence[str]]

_MISSING = object()


class OptionLines(NamedTuple):
    """The lines of an option file, or lines given as they are, and how errors name them (the file's path)."""

    where: str
    lines: List[str]


def read_option_file(path: Union[str, "os.PathLike[str]"]) -> OptionLines:
    """The lines of the option file `path`, read as poptorch opens it: as text in the locale's encoding."""
    where = str(os.fspath(path))
    try:
        with open(where) as file:  # as poptorch opens it
            return OptionLines(where, list(file))
    except FileNotFoundError:
        problem = "no such file or directory"
    except IsADirectoryError:
        problem = "a directory, not an option file"
    except UnicodeDecodeError as error:
        problem = (
            f"not {error.encoding} text, the encoding poptorch reads it in ({error.reason} at byte {error.start})"
        )
    except OSError as error:
        problem = f"cannot be read ({error.strerror or error})"
    raise OptionsFileError(where, problem)


def given_lines(lines: Lines, mode: Mode) -> OptionLines:
    """Lines given as they are (the list a YAML config holds), or one text of lines, split as a file's are."""
    if not isinstance(lines, str):
        if not isinstance(lines, Sequence) or not all(isinstance(line, str) for line in lines):
            raise TypeError(f"`{mode}` must be option lines: a list of strings, or a string, got {lines!r}")
        lines = "\n".join(lines)
    return OptionLines(f"the {mode} lines", list(io.StringIO(lines, newline=None)))


def run_lines(options: Any, poptorch: Any, source: OptionLines, mode: Mode, written: Dict[str, str]) -> int:
    """Runs the lines of `source` on `options` as `loadFromFile` runs a file's; `written` gets, for each option a
    line changes, where it did: `{state key: "run.cfg, line 4"}`. Returns how many lines ran."""
    run = lines_run(source.lines)
    text = code(run)
    try:  # poptorch compiles the lines as one: a line that does not compile runs none
        compile(text, source.where, "exec")
    except (SyntaxError, ValueError) as error:  # ValueError: a null character, before Python 3.12
        problem = f"{type(error).__name__}: {error.msg if isinstance(error, SyntaxError) else error}"
        if not getattr(error, "lineno", None):
            raise OptionsFileError(source.where, problem) from None
        failing = run[min(error.lineno, len(run)) - 1]
        raise OptionsFileError(source.where, problem, failing.line, failing.text) from None
    # as poptorch runs them: fresh globals (Python adds the builtins), and these names, no more
    file_globals: Dict[str, Any] = {}
    names: Dict[str, Any] = {"poptorch": poptorch, "options": options}
    before = full_state(options, mode)
    for statement in ast.parse(text).body:
        line = run[statement.lineno - 1]
        try:
            exec(compile(ast.Module([statement], type_ignores=[]), source.where, "exec"), file_globals, names)
            after = full_state(options, mode)
        except Exception as error:
            raise OptionsFileError(source.where, _problem(error), line.line, line.text) from error
        for key in set(before) | set(after):
            if before.get(key, _MISSING) != after.get(key, _MISSING):
                written[key] = f"{source.where}, line {line.line}"
        before = after
    return len(run)


def _problem(error: Exception) -> str:
    problem = f"{type(error).__name__}: {error}"
    if isinstance(error, NameError):
        problem += " (only `poptorch` is in scope in an option file)"
    return problem


def options_from_lines(sources: Sequence[OptionLines], mode: Mode) -> Tuple[Any, Dict[str, str]]:
    """A fresh `poptorch.Options` of the poptorch in use (call it under `sdk_modules()`) with the lines of `sources`
    run on it in turn, as repeated `loadFromFile` calls run files, and where each option was last changed (see
    `run_lines`).

    Raises:
        OptionsFileError: a line fails, or no source has a line to run (an empty file imports nothing).
    """
    poptorch = importlib.import_module("poptorch")
    options = poptorch.Options()
    written: Dict[str, str] = {}
    if not sum(run_lines(options, poptorch, source, mode, written) for source in sources):
        where = ", ".join(source.where for source in sources)
        raise OptionsFileError(where, "no option call, only blank lines and comments")
    return options, written


def import_located(
    config_class: type, options: Dict[Mode, Any], written: Dict[Mode, Dict[str, str]], overrides: Dict[str, Any]
) -> Any:
    """`from_options` of `options` (`{mode: poptorch.Options}`); an option no setting holds is refused saying where
    it was set (`written`, `{mode: {state key: where}}`)."""
    try:
        training, inference = options.get(TRAINING), options.get(INFERENCE)
        return import_options(config_class, training, inference, overrides)
    except UnsupportedOptionsError as error:
        locations = {
            name_in_mode(name, mode, options): where
            for mode, keys in written.items() for key, where in keys.items()
            for name in (key, option_name(key))  # a PopART option is named as itself or by the method writing it
        }
        raise error.located(locations) from None


def import_option_sources(
    config_class: type, sources: Dict[Mode, List[OptionLines]], overrides: Dict[str, Any]
) -> Any:
    """The config of `config_class` whose builds are those the lines of `sources` (`{mode: [OptionLines]}`) make."""
    if not sources:
        raise TypeError("option files or lines are needed for `training` or `inference`, or both")
    with sdk_modules():
        made = {mode: options_from_lines(mode_sources, mode) for mode, mode_sources in sources.items()}
        options = {mode: options for mode, (options, _) in made.items()}
        written = {mode: where for mode, (_, where) in made.items()}
        return import_located(config_class, options, written, overrides)


def option_file_sources(mode: Mode, paths: PathOrPaths) -> List[OptionLines]:
    """The files of `paths`, a path or a list of paths, read (see `read_option_file`)."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    elif not isinstance(paths, Sequence) or not paths:
        raise TypeError(f"`{mode}` must be the path of an option file, or a non-empty list of paths, got {paths!r}")
    return [read_option_file(path) for path in paths]
