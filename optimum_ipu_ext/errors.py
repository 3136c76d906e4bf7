"""The errors this package raises, and its warnings.

Every error about a configuration names the field, the value and what is allowed. They subclass
the built-in type that optimum-graphcore raises in the same situation (`ValueError`, `TypeError`,
`OSError`, `ImportError`), so code written against optimum-graphcore keeps catching them.
"""

import contextlib
import difflib
import json
import sys
import warnings
from typing import Any, Dict, Iterable, Iterator, Optional, Sequence, Type

# What a missing local path is called, by every command and the API
NO_SUCH_PATH = "no such file or directory"


class IPUConfigWarning(UserWarning):
    """Something the package did for the user that they may want to write otherwise (a dropped option, a replica
    count poprun overrides)."""


class ConfigMigrationWarning(IPUConfigWarning, FutureWarning):
    """A setting of an earlier optimum-graphcore release read in 0.7.1's terms (a key carried over or dropped, a
    per-pod-type value, ...): says which key became what, and the release that changed it (docs/compatibility.md)."""


# Modules whose frames stand between the user's line and a warning: the package's own (but the CLI's, whose commands
# are the user there) and the libraries that call back into it (the base classes and their type checks).
_CALLED_BACK_FROM = ("transformers", "optimum", "typeguard", "huggingface_hub")


def _between(frame: Any) -> bool:
    name = frame.f_globals.get("__name__", "")
    top = name.partition(".")[0]
    return (top == "optimum_ipu_ext" and not name.startswith("optimum_ipu_ext.cli")) or top in _CALLED_BACK_FROM


def warn(message: str, category: Type[Warning] = IPUConfigWarning) -> None:
    """`warnings.warn` at the user's line: the first frame, outwards from the caller, outside the package and the
    libraries calling back into it."""
    frame, stacklevel = sys._getframe(1), 2
    while frame.f_back is not None and _between(frame):
        frame, stacklevel = frame.f_back, stacklevel + 1
    warnings.warn(message, category, stacklevel=stacklevel)


@contextlib.contextmanager
def naming_source(source: str) -> Iterator[None]:
    """Adds ` (loading SOURCE)` to the message of a `ValueError` or `TypeError` (a refused setting) raised in the
    block: the file or repository the setting came from."""
    try:
        yield
    except (ValueError, TypeError) as error:
        error.args = (f"{error} (loading {source})",)
        raise


def is_positive_whole(value: Any) -> bool:
    """Whether `value` is a positive whole number (a bool is not one), as the settings and arguments that count
    something take it."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def as_json(value: Any) -> str:
    """A value as a config file writes it (`true`, `null`, `"everything"`, `[0.1, 0.2]`), for messages; inside it,
    Python's `repr` of what JSON cannot hold (`nan`, an object a caller passed)."""
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(map(as_json, value)) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{as_json(key if isinstance(key, str) else str(key))}: {as_json(item)}"
                               for key, item in value.items()) + "}"
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return repr(value)


class IPUConfigError(Exception):
    """Base class of every error raised by `optimum_ipu_ext`."""

    def __reduce__(self):
        # The constructors take an error's parts (field, value, ...), not its message, so the default pickling,
        # which calls the class with `args`, fails: rebuild from the message and the attributes instead, so
        # that errors cross process boundaries (multiprocessing, data loader workers).
        state = dict(vars(self))
        if isinstance(self, ImportError):
            state["name"] = self.name  # not in `vars`: a slot of ImportError
        return _rebuild_error, (type(self), self.args, state)


def _rebuild_error(error_class: type, args: tuple, state: dict) -> IPUConfigError:
    error = error_class.__new__(error_class)
    error.args = args
    for attribute, value in state.items():
        setattr(error, attribute, value)
    return error


class InvalidSettingError(IPUConfigError, ValueError):
    """A setting has a value outside what it allows.

    Attributes:
        field: the setting (or argument) named.
        value: its value, as given.
        allowed: what it allows.

    Example message: `output_mode="everything"` is invalid: allowed values are "all", "sum", "final", "default".
    """

    def __init__(self, field: str, value: Any, allowed: str):
        self.field = field
        self.value = value
        self.allowed = allowed
        super().__init__(f"`{field}={as_json(value)}` is invalid: {allowed}.")


class SettingTypeError(IPUConfigError, TypeError, ValueError):
    """A setting has a value of the wrong type.

    Also a `ValueError`, as optimum-graphcore raises either depending on the field.
    """

    def __init__(self, field: str, value: Any, expected: str):
        self.field = field
        self.value = value
        self.allowed = expected
        super().__init__(f"`{field}={as_json(value)}` is {_json_type(value)}, expected {expected}.")


def _json_type(value: Any) -> str:
    """What a value is, in the words of JSON: `a string`, `a number`, `null`, `an object`."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "an integer" if isinstance(value, int) else "a number"
    names = {str: "a string", list: "an array", tuple: "an array", dict: "an object"}
    other = f"a Python `{type(value).__name__}`"
    return next((name for kind, name in names.items() if isinstance(value, kind)), other)


class IncompatibleSettingsError(InvalidSettingError):
    """Two settings that must agree do not (for example a per-IPU list and `ipus_per_replica`)."""


class UnsupportedOptionsError(IPUConfigError, ValueError):
    """`IPUConfig.from_options` was given `poptorch.Options` that no config rebuilds: names every such option.

    Attributes:
        options: `{option: what the given options hold and the settings cannot}`, an option being a `toDict()` key
            (`"log_dir"`) or the `poptorch.Options` method whose state `toDict()` omits (`"setExecutionStrategy"`).
        locations: `{option: where it was set}` for options read from option files (`"run.cfg, line 4"`).

    Example message: ``No IPU config rebuilds these options: `log_dir` ('/logs' given, '.' rebuilt).``
    """

    def __init__(self, options: Dict[str, str], locations: Optional[Dict[str, str]] = None):
        self.options = dict(options)
        self.locations = {option: where for option, where in (locations or {}).items() if option in self.options}
        listed = "; ".join(
            f"`{option}` ({self.locations[option] + ': ' if option in self.locations else ''}{problem})"
            for option, problem in sorted(self.options.items())
        )
        super().__init__(f"No IPU config rebuilds these options: {listed}.")

    def located(self, locations: Dict[str, str]) -> "UnsupportedOptionsError":
        """The same error, saying where each option was set (`{option: "run.cfg, line 4"}`, options it does not
        name ignored)."""
        return type(self)(self.options, {**self.locations, **locations})

    def __reduce__(self):
        return type(self), (self.options, self.locations)


class UnknownSettingError(IPUConfigError, ValueError):
    """A key that no release of the IPU configuration ever had."""

    def __init__(self, key: str, known: Iterable[str], source: Optional[str] = None):
        self.field = key
        self.suggestion = next(iter(difflib.get_close_matches(key, list(known), n=1)), None)
        hint = f" Did you mean `{self.suggestion}`?" if self.suggestion else ""
        where = f" in {source}" if source else ""
        super().__init__(f"Unknown IPU config key `{key}`{where}.{hint}")


class ConfigFileError(IPUConfigError, OSError):
    """A configuration file that cannot be read as a JSON object."""

    def __init__(self, path: str, problem: str):
        self.path = path
        self.problem = problem
        super().__init__(f"Cannot load the IPU config file '{path}': {problem}.")


class ModelFileError(IPUConfigError, OSError):
    """A file of a model (its `config.json`, a checkpoint's safetensors header or index) that cannot be read.

    Attributes:
        path: the file.
        problem: what is wrong with it.

    Example message: ``Cannot read the model file 'my-model/model.safetensors': truncated: the header says 4096 bytes,
    the file holds 100 after it.``
    """

    def __init__(self, path: str, problem: str):
        self.path = path
        self.problem = problem
        super().__init__(f"Cannot read the model file '{path}': {problem}.")


class OptionsFileError(ConfigFileError):
    """A poptorch option file (or a list of option lines) that cannot be read: missing, not text, a line poptorch
    would refuse (a `SyntaxError`, which poptorch raises as its own `ConfigFileError`, an unknown method, a wrong
    call), or no call at all.

    Attributes:
        path: the file, or what stands for the lines (`"the training lines"`).
        line: the number of the line that fails, from 1 (`None`: the file as a whole).
        text: that line, as written.
        problem: what is wrong, e.g. `AttributeError: Invalid attribute deviceIteration.`

    Example message: ``Cannot read the poptorch options of run.cfg, line 3 (`deviceIteration(4)`): AttributeError:
    Invalid attribute deviceIteration.``
    """

    def __init__(self, path: str, problem: str, line: Optional[int] = None, text: Optional[str] = None):
        self.path = path
        self.problem = problem
        self.line = line
        self.text = text
        at = "" if line is None else f", line {line}" + (f" (`{text}`)" if text else "")
        end = "" if problem.endswith(".") else "."
        OSError.__init__(self, f"Cannot read the poptorch options of {path}{at}: {problem}{end}")


class OutputExistsError(IPUConfigError, FileExistsError):
    """A file the package was asked to write exists, and overwriting it was not asked for."""

    def __init__(self, path: str, how: str):
        self.path = path
        OSError.__init__(self, f"'{path}' exists: {how} to overwrite it")


# --- placing a model on the IPUs of a config ----------------------------------------------------------------


class PlacementError(IPUConfigError, ValueError):
    """A config that cannot be placed for a model, as optimum-graphcore's `parallelize()` refuses it (a
    `ValueError`, as upstream's `IncompatibleIPUConfigError` is).

    Attributes:
        model: the model, as given (a Hub id, a folder, or the `_name_or_path` of a config).
        setting: the setting that cannot be placed (`layers_per_ipu`, ...), or `None` when the model itself cannot.
        problem: what is wrong.

    Example message: ``Cannot place my-org/my-model with `layers_per_ipu`: it places 11 layers and the model has
    12 (num_hidden_layers).``
    """

    def __init__(self, model: str, problem: str, setting: Optional[str] = None):
        self.model = model
        self.setting = setting
        self.problem = problem
        on = f" with `{setting}`" if setting else ""
        super().__init__(f"Cannot place {model}{on}: {problem}.")


class CalibrationFileError(IPUConfigError, ValueError):
    """A calibration file of the time model (`--calibration FILE`, `OPTIMUM_IPU_EXT_CALIBRATION`, `calibration=`) that
    cannot be read: missing, not JSON, or a key missing or of a value it does not allow.

    Attributes:
        path: the file, as given.
        key: the key at fault, dotted (`constants.call_seconds`); `None` for the file as a whole.
        problem: what is wrong.
        named_by: the environment variable that named the file, if one did.

    Example message: ``Cannot read the calibration file 'mine.json': `constants.call_seconds` is "fast", expected a
    number from 0.``
    """

    def __init__(self, path: str, problem: str, key: Optional[str] = None, named_by: Optional[str] = None):
        self.path = path
        self.key = key
        self.problem = problem
        self.named_by = named_by
        at = f"`{key}` " if key else ""
        by = f" (named by {named_by})" if named_by else ""
        super().__init__(f"Cannot read the calibration file '{path}'{by}: {at}{problem}.")


class MeasuredRunError(IPUConfigError, ValueError):
    """A measured run `ipu-config calibrate` cannot fit on: an output folder without a result, a model or architecture
    the placement does not know, a config that does not place, a throughput the IPUs' peak does not allow, a row of a
    runs file with a value it does not take.

    Attributes:
        run: the run, as its reader names it (a folder, or a runs file with its line or index).
        problem: what is wrong, and what to do.

    Example message: ``Cannot calibrate on runs.csv, line 3: `micro_batch_size="two"` is invalid: allowed values are
    positive whole numbers.``
    """

    def __init__(self, run: str, problem: str):
        self.run = run
        self.problem = problem
        end = "" if problem.endswith(".") else "."
        super().__init__(f"Cannot calibrate on {run}: {problem}{end}")


class ArchitectureError(PlacementError):
    """The model's architecture has no pipelined version in optimum-graphcore 0.7.1, or its `config.json` names
    several architectures or none (`--architecture` / `architecture=` picks one).

    Example message: ``Cannot place albert-base-v2: AlbertForMaskedLM has no pipelined version in
    optimum-graphcore 0.7.1; model type "albert" has no pipelined architecture; these have: ...``
    """


class HubError(IPUConfigError, OSError):
    """Loading an IPU config from the Hugging Face Hub, or pushing one, failed.

    Names the repository, the revision and what happened. An `OSError`, as transformers raises for Hub failures.
    """

    def __init__(self, repo_id: str, problem: str, action: str, revision: Optional[str] = None):
        self.repo_id = repo_id
        self.revision = revision
        self.problem = problem
        at = f" at revision '{revision}'" if revision else ""
        end = "" if problem.endswith("?") else "."  # a question (did you mean ...?) ends the message itself
        OSError.__init__(self, f"Cannot {action} Hub repository '{repo_id}'{at}: {problem}{end}")


class HubRepositoryNotFoundError(HubError):
    """The repository does not exist, or it is private and no token that can read it was given."""


class HubRevisionNotFoundError(HubError):
    """No branch, tag or commit of the repository has that name."""


class HubFileNotFoundError(HubError):
    """The repository has no IPU config file at that revision."""


class HubAccessDeniedError(HubError):
    """The Hub rejected the token, the token may not write to the repository, or the repository is gated."""


class HubUnavailableError(HubError):
    """The Hub answered with a server error, could not be reached, cut the connection or is switched off (offline
    mode), and the cache holds no copy to fall back on."""


class HubVisibilityError(HubError):
    """A push asked for a private repository (`private=True`, `--private`) and the repository exists and is public.
    Nothing is uploaded: a push never changes who can see a repository."""

    def __init__(self, repo_id: str, action: str, endpoint: str):
        problem = (
            "it is public, and a private repository was asked for (`private=True`, `--private`); "
            f"nothing was uploaded. Make it private first (on {endpoint}/{repo_id}/settings, or with "
            f"`HfApi().update_repo_settings('{repo_id}', private=True)`), or push without `private`"
        )
        super().__init__(repo_id, problem, action)


class HubConfigFileError(HubError, ConfigFileError):
    """The IPU config file on the Hub is not a JSON object. Also a `ConfigFileError`, as a local file would be."""

    def __init__(self, repo_id: str, problem: str, action: str, revision: Optional[str], path: str):
        self.path = path
        HubError.__init__(self, repo_id, problem, action, revision)


class PoplarSDKNotFoundError(IPUConfigError, ImportError):
    """`to_options()` needs poptorch, which ships only with Graphcore's Poplar SDK."""

    def __init__(self, missing: str):
        super().__init__(
            f"`to_options()` needs `{missing}`, which ships only with Graphcore's Poplar SDK and is not installed "
            "here. Enable the SDK (source its `enable.sh` and install its poptorch wheel) to build the options, or "
            "call `options_plan()` to review the option calls `to_options()` would make, on any machine.",
            name=missing,
        )


class BuilderError(IPUConfigError, RuntimeError):
    """A builder function (`path.py:function`, run by `ipu-config import` or `recorder.run_builder`) could not be
    loaded or called, raised, or returned something other than `poptorch.Options`.

    Attributes:
        builder: the builder, as `path.py:function`.
        problem: what happened, e.g. `raised KeyError: 'replicas'`.
        parameters: where the builder raised after it was given a namespace as its first argument and read none of
            its attributes, its parameters (which were most likely meant as keyword arguments); else empty.

    Example message: ``builders/training.py:get_options raised KeyError: 'replicas'``
    """

    def __init__(self, builder: str, problem: str, parameters: Sequence[str] = ()):
        self.builder = builder
        self.problem = problem
        self.parameters = tuple(parameters)
        hint = ""
        if self.parameters:
            hint = (f"; it was given an argparse.Namespace as its first argument and read none of its attributes: "
                    f"give its parameters ({', '.join(self.parameters)}) in `kwargs`")
        super().__init__(f"{builder} {problem}{hint}")
