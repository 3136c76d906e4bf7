"""The runs a user measured, read for `ipu-config calibrate` (`read_measured_runs()`), each a
`placement.calibration.MeasuredRun`:

- an IPUTrainer output folder: `ipu_config.json`, the model's `config.json`, and `train_results.json` or
  `all_results.json` holding `train_samples_per_second` (JSON files only: `training_args.bin` is never unpickled,
  no weight is read). Its micro-batch is that of its own figures where they give it: a Trainer step is micro-batch x
  G x replicas x device iterations samples, and `train_samples_per_second / train_steps_per_second` is that step.
  What the folder does not hold (the sequence length, the IPU type) comes from its `ipu_run.json`, where the script
  that ran it wrote one (examples/measure_ipu_trainer.py does), or from the command line;
- a row of a runs file, for runs made any other way: CSV (a header line, then a run a line) or JSON (a list of rows,
  or an object holding them under "runs"), each row a run's config, model, micro-batch, lengths, IPU type and
  measured samples a second, or an output folder and what it does not hold. A calibration file `calibrate` wrote is a
  runs file too: its runs are read again, so that calibrations build on each other.

A value given on the command line applies to every run: it fills what a run does not say, and a run that says
otherwise is refused. Every refusal is a `MeasuredRunError` naming the run (the folder, or the file and its line or
index) and why.
"""

import csv
import json
import math
import os
from typing import Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from ..errors import MeasuredRunError, as_json, is_positive_whole
from ..placement.calibration import MeasuredRun
from ..placement.hardware import IPU_TYPES
from ..placement.models import ARCHITECTURES, architecture_of
from ..placement.models.rules import IMAGE, SPEECH_RECOGNITION
from ..settings.files import CONFIG_NAME

RUN_FILE = "ipu_run.json"
RESULT_FILES = ("train_results.json", "all_results.json")
MODEL_CONFIG = "config.json"
# the key `calibrate` writes in its calibration files, by which it knows them (and, in them, the runs it fitted on)
MARKER = "written_by"
MARKER_VALUE = "ipu-config calibrate"
RUNS_KEY = "measured_runs"
BUILDS = ("training", "inference")
# a micro-batch is read from a Trainer's figures where they give a whole number within this share, besides their
# rounding (to 3 decimals)
DERIVED_TOLERANCE = 0.005


class Result(NamedTuple):
    """A Trainer's result file: its name, what it holds, and its `train_samples_per_second`."""

    file: str
    data: Dict[str, Any]
    measured: float


class Facts(NamedTuple):
    """What a run is, beyond its config, model and measurement; None where not given."""

    micro_batch_size: Optional[int] = None
    sequence_length: Optional[int] = None
    decoder_sequence_length: Optional[int] = None
    architecture: Optional[str] = None
    ipu: Optional[str] = None


# --- the fields a run has, each with its check ---------------------------------------------------------------------

def _whole(value: Any) -> Optional[int]:
    if isinstance(value, str) and value.strip().isdecimal():
        value = int(value)
    return value if is_positive_whole(value) else None


def _number(value: Any) -> Optional[float]:
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        return None
    return float(value)


def _text(value: Any) -> Optional[str]:
    """`value`, a string (a blank one is not given: `_checked` leaves it out)."""
    return value.strip() if isinstance(value, str) else None


def _ipu(value: Any) -> Optional[str]:
    return value if value in IPU_TYPES else None


def _build(value: Any) -> Optional[str]:
    return value if value in BUILDS else None


def _path_or_object(value: Any) -> Any:
    return value if isinstance(value, dict) else _text(value)


WHOLE = "allowed values are positive whole numbers"
# `{field: (its check, which returns the value or None, and what it allows)}`
FIELDS: Dict[str, Tuple[Callable[[Any], Any], str]] = {
    "name": (_text, "a name for the run"),
    "folder": (_text, "an IPUTrainer output folder, relative to the runs file"),
    "config": (_path_or_object, "an ipu_config.json or its folder, relative to the runs file, a preset, or (JSON) "
                                "the settings as an object"),
    "model": (_path_or_object, "a folder holding config.json (or the file), relative to the runs file, a Hub "
                               "model id, or (JSON) the config.json values as an object"),
    "architecture": (_text, "the class the run trained, e.g. BertForPreTraining"),
    "micro_batch_size": (_whole, WHOLE),
    "sequence_length": (_whole, WHOLE),
    "decoder_sequence_length": (_whole, WHOLE),
    "ipu": (_ipu, "allowed values are " + ", ".join(f'"{name}"' for name in IPU_TYPES)),
    "build": (_build, 'allowed values are "training", "inference"'),
    "samples_per_second": (_number, "allowed values are positive numbers: the samples a second measured"),
    "source": (_text, "where the measurement comes from"),
}
# a run of a runs file gives either an output folder, or its config, model and measurement
MEASURED = ("config", "model", "samples_per_second")


def _checked(where: str, field: str, value: Any) -> Any:
    """`value` of `field`, checked; None where it is not given (null, or an empty cell)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    check, allowed = FIELDS[field]
    found = check(value)
    if found is None:
        raise MeasuredRunError(where, f"`{field}={as_json(value)}` is invalid: {allowed}")
    return found


def _facts(where: str, values: Mapping[str, Any]) -> Facts:
    return Facts(*(_checked(where, field, values.get(field)) for field in Facts._fields))


def _merged(where: str, told: Sequence[Tuple[str, Facts]]) -> Facts:
    """The facts each of `told` (`(who says it, what it says)`) gives, refusing two that disagree."""
    found: Dict[str, Tuple[str, Any]] = {}
    for who, facts in told:
        for field, value in facts._asdict().items():
            if value is None:
                continue
            if field in found and found[field][1] != value:
                first, said = found[field]
                raise MeasuredRunError(where, f"{first} says `{field}={as_json(said)}` and {who} "
                                       f"`{field}={as_json(value)}`: give one")
            found.setdefault(field, (who, value))
    return Facts(**{field: value for field, (_, value) in found.items()})


# --- reading ---------------------------------------------------------------------------------------------------------

def read_measured_runs(sources: Sequence[str], given: Optional[Facts] = None) -> List[MeasuredRun]:
    """The runs of `sources`: output folders and runs files (`.csv`, `.json`), in order; `given`: what the command
    line says of every run.

    Raises:
        MeasuredRunError: naming the run and why it cannot be read.
    """
    given = given or Facts()
    runs: List[MeasuredRun] = []
    for source in sources:
        if os.path.isdir(source):
            runs.append(_folder_run(source, source, given, Supplied()))
        elif not os.path.exists(source):
            raise MeasuredRunError(source, "no such file or folder")
        elif source.lower().endswith(".csv"):
            runs += _csv_runs(source, given)
        elif source.lower().endswith(".json"):
            runs += _json_runs(source, given)
        else:
            raise MeasuredRunError(source, "a run is an IPUTrainer output folder, or a runs file: .csv or .json")
    return runs


def _load_json(where: str, path: str) -> Any:
    """The JSON of the file at `path` (a file: its callers know it is one, which may still refuse to be read)."""
    try:
        with open(path, encoding="utf-8") as reader:
            return json.load(reader)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise MeasuredRunError(where, f"{os.path.basename(path)} is not valid JSON ({error})") from None
    except OSError as error:
        raise MeasuredRunError(where, f"{os.path.basename(path)} cannot be read ({error.strerror})") from None


def _object(where: str, path: str) -> Dict[str, Any]:
    data = _load_json(where, path)
    if not isinstance(data, dict):
        raise MeasuredRunError(where, f"{os.path.basename(path)} holds {as_json(data)[:40]}, not a JSON object")
    return data


class Supplied(NamedTuple):
    """What a runs file's row gives of an output folder that does not hold it: its name and source, its IPU config
    and model (each as the row gives them, resolved), and what it says of the run."""

    told: Sequence[Tuple[str, Facts]] = ()
    name: Optional[str] = None
    source: Optional[str] = None
    config: Any = None
    model: Any = None


def _folder_run(folder: str, where: str, given: Facts, supplied: Supplied) -> MeasuredRun:
    """The run of an IPUTrainer output folder, what it does not hold `supplied` by a runs file's row."""
    if not os.path.isdir(folder):
        raise MeasuredRunError(where, f"{folder}: no such folder")
    result = _result(where, folder)
    own = os.path.join(folder, CONFIG_NAME)
    _not_both(where, own, "config", supplied.config)
    if supplied.config is None:
        settings = _config(where, own)
    elif isinstance(supplied.config, dict):
        settings = _config_values(where, supplied.config)
    else:
        settings = _config(where, supplied.config)
    _not_both(where, os.path.join(folder, MODEL_CONFIG), "model", supplied.model)
    model = _model(where, folder if supplied.model is None else supplied.model)
    told = supplied.told
    written = os.path.join(folder, RUN_FILE)
    facts = [*told, ("the command line", given)]
    if os.path.isfile(written):
        facts.append((RUN_FILE, _facts(f"{where}, {RUN_FILE}", _object(where, written))))
    derived = _derived_micro_batch(result, settings)
    if derived is not None:
        facts.append(derived)
    found = _merged(where, facts)
    figure = f"{result.file} (train_samples_per_second {result.data['train_samples_per_second']})"
    return _run(where, supplied.name or where, "training", model, settings, found, result.measured,
                supplied.source or f"{folder}: {figure}")


def _not_both(where: str, path: str, field: str, supplied: Any) -> None:
    """Refuses a row supplying `field` for a folder that holds it, at `path`."""
    if supplied is not None and os.path.isfile(path):
        raise MeasuredRunError(where, f"the folder holds its {os.path.basename(path)}, and the row gives `{field}` "
                               "too: give one")


def _result(where: str, folder: str) -> Result:
    """The first result file of the folder holding `train_samples_per_second`, and that figure."""
    for file in RESULT_FILES:
        path = os.path.join(folder, file)
        if not os.path.isfile(path):
            continue
        data = _object(where, path)
        if "train_samples_per_second" in data:
            measured = _number(data["train_samples_per_second"])
            if measured is None:
                raise MeasuredRunError(where, f"{file} holds `train_samples_per_second="
                                       f"{as_json(data['train_samples_per_second'])}`, not a positive number")
            return Result(file, data, measured)
    present = [file for file in RESULT_FILES if os.path.isfile(os.path.join(folder, file))]
    if present:
        raise MeasuredRunError(where, f"{' and '.join(present)} hold no train_samples_per_second: the folder of a "
                               "training run holds it")
    raise MeasuredRunError(where, "the folder holds no train_results.json or all_results.json: IPUTrainer writes them "
                           "where the training script calls trainer.save_metrics(\"train\", ...)")


def _derived_micro_batch(result: Result, settings: Mapping[str, Any]) -> Optional[Tuple[str, Facts]]:
    """The micro-batch a Trainer's figures give: samples a step over G x replicas x device iterations; None where
    they do not give a whole number."""
    from .plain import PlainIPUConfig

    steps = _number(result.data.get("train_steps_per_second"))
    if steps is None:
        return None
    config = PlainIPUConfig(**settings)
    factor = config.batch_size_factor()
    samples = result.measured / steps
    micro_batch = round(samples / factor)
    # the figures are rounded to 3 decimals: a step's samples are known to half a thousandth of a step a second
    if micro_batch < 1 or abs(samples / factor / micro_batch - 1) > DERIVED_TOLERANCE + 0.0005 / steps:
        return None
    who = (f"{result.file} ({samples:,.0f} samples a step, G {config.gradient_accumulation_steps} x "
           f"{config.replication_factor} replicas x {config.device_iterations} device iterations)")
    return who, Facts(micro_batch_size=micro_batch)


def _config(where: str, path: str) -> Dict[str, Any]:
    """The settings of the IPU config file at `path`, in optimum-graphcore 0.7.1's terms, checked by the class."""
    from ..settings.files import read_config_file
    from ..settings.migration import migrate
    from ..settings.sources import local_config_file
    from .plain import PlainIPUConfig

    try:
        raw = read_config_file(local_config_file(path))
        config = PlainIPUConfig(**migrate(raw).config)
    except (ValueError, TypeError, OSError) as error:
        problem = "no ipu_config.json" if isinstance(error, OSError) and not os.path.exists(path) else str(error)
        raise MeasuredRunError(where, f"its IPU config ({os.path.basename(path)}): {problem}") from None
    return {name: value for name, (value, _) in config.non_default_settings().items()}


def _model(where: str, model: Any) -> Dict[str, Any]:
    """The `config.json` values of `model` (a folder, a file, a Hub id or the values themselves)."""
    from ..errors import IPUConfigError
    from ..placement.source.model import read_model

    if isinstance(model, dict):
        return dict(model)
    try:
        return dict(read_model(model).config)
    except (IPUConfigError, OSError) as error:
        raise MeasuredRunError(where, f"its model: {error}") from None


def _run(where: str, name: str, build: str, model: Dict[str, Any], settings: Dict[str, Any], facts: Facts,
         measured: float, source: str) -> MeasuredRun:
    """The run, its architecture and micro-batch checked, its lengths required where the model takes them."""
    from ..errors import PlacementError

    try:
        architecture = architecture_of(where, model, facts.architecture)
    except PlacementError as error:
        raise MeasuredRunError(where, error.problem) from None
    if facts.micro_batch_size is None:
        raise MeasuredRunError(where, "its micro-batch is not known: give --micro-batch-size (or, in a runs file, "
                               "micro_batch_size)")
    kind = ARCHITECTURES[architecture.name].inputs
    if facts.sequence_length is None and kind not in (IMAGE, SPEECH_RECOGNITION):
        raise MeasuredRunError(where, f"its sequence length is not known: {architecture.name} takes one (tokens; "
                               "audio samples for HuBERT and Wav2Vec2): give --sequence-length (or, in a runs file, "
                               "sequence_length)")
    return MeasuredRun(name, "fit", build, model, architecture.name, settings, facts.micro_batch_size,
                       facts.sequence_length, facts.decoder_sequence_length, facts.ipu or "gc200", measured, source)


# --- runs files ----------------------------------------------------------------------------------------------------


def _csv_runs(path: str, given: Facts) -> List[MeasuredRun]:
    try:
        with open(path, encoding="utf-8", newline="") as reader:
            rows = list(csv.reader(reader))
    except (OSError, UnicodeDecodeError) as error:
        raise MeasuredRunError(path, f"cannot be read ({error})") from None
    if not rows:
        raise MeasuredRunError(path, "holds no header line: the first line names the columns")
    header = [cell.strip() for cell in rows[0]]
    runs = []
    for number, cells in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in cells):
            continue
        where = f"{path}, line {number}"
        if len(cells) > len(header):
            raise MeasuredRunError(where, f"{len(cells)} cells, and the header names {len(header)} columns")
        runs.append(_row_run(path, where, dict(zip(header, cells)), given))
    return runs


def _json_runs(path: str, given: Facts) -> List[MeasuredRun]:
    data = _load_json(path, path)
    if isinstance(data, dict):
        rows = data.get(RUNS_KEY if data.get(MARKER) == MARKER_VALUE else "runs")
    else:
        rows = data
    if not isinstance(rows, list):
        raise MeasuredRunError(path, "a JSON runs file holds a list of runs, or an object holding them under "
                               "\"runs\"")
    runs = []
    for index, row in enumerate(rows):
        where = f"{path}, run {index + 1}"
        if not isinstance(row, dict):
            raise MeasuredRunError(where, f"is {as_json(row)[:40]}, not a JSON object")
        runs.append(_row_run(path, where, row, given))
    return runs


def _row_run(path: str, where: str, row: Mapping[str, Any], given: Facts) -> MeasuredRun:
    """The run of one row of the runs file at `path`."""
    unknown = [field for field in row if field not in FIELDS]
    if unknown:
        raise MeasuredRunError(where, f"unknown field {as_json(unknown[0])}: the fields are {', '.join(FIELDS)}")
    values = {field: _checked(where, field, row.get(field)) for field in FIELDS}
    base = os.path.dirname(os.path.abspath(path))
    told = [("the row", Facts(*(values[field] for field in Facts._fields)))]
    config, model = values["config"], values["model"]
    config = config if config is None or isinstance(config, dict) else _config_path(base, config)
    model = model if model is None or isinstance(model, dict) else _model_path(base, model)
    if values["folder"] is not None:
        if values["samples_per_second"] is not None or values["build"] not in (None, "training"):
            wrong = "samples_per_second" if values["samples_per_second"] is not None else "build"
            raise MeasuredRunError(where, f"gives an output folder and `{wrong}`: the folder holds the measurement "
                                   "of a training run")
        folder = values["folder"]
        shown = os.path.normpath(os.path.join(os.path.dirname(path), folder))  # an absolute folder is itself
        return _folder_run(_relative(base, folder), where, given,
                           Supplied(told, values["name"] or shown, values["source"], config, model))
    missing = [field for field in MEASURED if values[field] is None]
    if missing:
        raise MeasuredRunError(where, f"gives no `{missing[0]}`: a run gives its {', '.join(MEASURED)}, or an output "
                               "folder (`folder`)")
    settings = _config_values(where, config) if isinstance(config, dict) else _config(where, config)
    model = _model(where, model)
    facts = _merged(where, [*told, ("the command line", given)])
    return _run(where, values["name"] or where, values["build"] or "training", model, settings, facts,
                values["samples_per_second"], values["source"] or where)


def _relative(base: str, path: str) -> str:
    """`path` relative to the folder `base` (an absolute path is itself)."""
    return os.path.join(base, path)


def _config_path(base: str, value: str) -> str:
    """The file a row's config names: a path relative to the runs file, else a bundled preset."""
    from ..settings.sources import is_local, preset_file

    local = _relative(base, value)
    if os.path.exists(local) or is_local(value) or not os.path.isfile(preset_file(value)):
        return local
    return preset_file(value)


def _model_path(base: str, value: str) -> str:
    """The model a row names: a path relative to the runs file where one is there (or looks like a path), else a Hub
    model id."""
    from ..settings.sources import is_local

    local = _relative(base, value)
    return local if os.path.exists(local) or is_local(value) else value


def _config_values(where: str, values: Dict[str, Any]) -> Dict[str, Any]:
    """The settings a row gives as an object, checked by the class."""
    from ..settings.migration import migrate
    from .plain import PlainIPUConfig

    try:
        config = PlainIPUConfig(**migrate(values).config)
    except (ValueError, TypeError) as error:
        raise MeasuredRunError(where, f"its IPU config: {error}") from None
    return {name: value for name, (value, _) in config.non_default_settings().items()}
