"""The time model's constants as a file: read and checked (`read_calibration()`), the one shipped in the package
(`shipped_calibration()`), and the one a caller asks for (`calibration_of()`): a `Calibration`, the path of a file
(`ipu-config calibrate` writes them), or nothing, which is the file the environment variable
`OPTIMUM_IPU_EXT_CALIBRATION` names, else the shipped one.

A calibration read from a file is known by its path, as given; the shipped one as "shipped". A file is read once in a
process for as long as it is unchanged (its size and modification time), so that a placement or a plan pays for it
once, whatever it times.
"""

import json
import math
import os
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Dict, Mapping, Optional, Tuple, Union

from ...errors import CalibrationFileError, as_json
from .timing import SHIPPED, Calibration

ENVIRONMENT = "OPTIMUM_IPU_EXT_CALIBRATION"
SHIPPED_FILE = Path(__file__).resolve().parents[1] / "data" / "calibration.json"
CONSTANTS = ("operation_cycles", "elementwise_cycles", "call_seconds")

CalibrationSource = Union[None, str, "os.PathLike[str]", Calibration]


def calibration_of(value: CalibrationSource = None) -> Calibration:
    """The calibration `value` asks for: itself (a `Calibration`), the file at its path, or (None) the file
    `OPTIMUM_IPU_EXT_CALIBRATION` names where it is set and not empty, else the shipped one.

    Raises:
        CalibrationFileError: for a file that cannot be read, naming the file and the key at fault.
        TypeError: for a value of another kind.
    """
    if isinstance(value, Calibration):
        return value
    if value is None:
        named = os.environ.get(ENVIRONMENT)
        return read_calibration(named, named_by=ENVIRONMENT) if named else shipped_calibration()
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"calibration must be the path of a calibration file or a Calibration, not "
                        f"{type(value).__name__}")
    return read_calibration(os.fspath(value))


@lru_cache(maxsize=None)
def shipped_calibration() -> Calibration:
    """The calibration shipped in the package, read once."""
    return _calibration(_json(str(SHIPPED_FILE), None), str(SHIPPED_FILE), SHIPPED, None)


def read_calibration(path: str, named_by: Optional[str] = None) -> Calibration:
    """The calibration in the file at `path`, named by its path; `named_by`: the environment variable that named it,
    for the messages.

    Raises:
        CalibrationFileError: for a missing file, one that is not a JSON object, or a key missing or of a value it
            does not allow, naming the file and the key.
    """
    try:
        status = os.stat(path)
    except OSError as error:
        problem = "no such file (`ipu-config calibrate` writes one)" if isinstance(error, FileNotFoundError) \
            else error.strerror or str(error)
        raise CalibrationFileError(path, problem, named_by=named_by) from None
    key = (path, named_by, status.st_size, status.st_mtime_ns)
    if key not in _READ:
        _READ[key] = _calibration(_json(path, named_by), path, path, named_by)
    return _READ[key]


# the calibrations read in this process, by path, variable, size and modification time
_READ: Dict[Tuple[str, Optional[str], int, int], Calibration] = {}


def _json(path: str, named_by: Optional[str]) -> Dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as reader:
            data = json.load(reader)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise CalibrationFileError(path, f"not valid JSON ({error})", named_by=named_by) from None
    except OSError as error:
        raise CalibrationFileError(path, error.strerror or str(error), named_by=named_by) from None
    if not isinstance(data, dict):
        raise CalibrationFileError(path, f"expected a JSON object, found {as_json(data)[:40]}", named_by=named_by)
    return data


class _Checked:
    """The values of one calibration file, each checked as it is taken, a failure naming the file and the key."""

    def __init__(self, data: Mapping[str, Any], path: str, named_by: Optional[str]):
        self.data, self.path, self.named_by = data, path, named_by

    def refuse(self, key: str, problem: str) -> CalibrationFileError:
        return CalibrationFileError(self.path, problem, key, self.named_by)

    def value(self, key: str, within: Optional[Mapping[str, Any]] = None) -> Any:
        """The value at `key` (dotted, as the messages say it) in `within` (default: the file's object)."""
        found = self.data if within is None else within
        name = key.rpartition(".")[2]
        if not isinstance(found, Mapping) or name not in found:
            raise self.refuse(key, "is missing")
        return found[name]

    def mapping(self, key: str) -> Mapping[str, Any]:
        value = self.value(key)
        if not isinstance(value, Mapping):
            raise self.refuse(key, f"is {as_json(value)}, expected a JSON object")
        return value

    def number(self, key: str, value: Any, within: Callable[[float], bool], allowed: str) -> float:
        """`value`, a finite number `within` allows."""
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or not within(value):
            raise self.refuse(key, f"is {as_json(value)}, expected {allowed}")
        return float(value)

    def whole(self, key: str, value: Any, least: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise self.refuse(key, f"is {as_json(value)}, expected a whole number from {least}")
        return value


def _calibration(data: Mapping[str, Any], path: str, name: str, named_by: Optional[str]) -> Calibration:
    """The calibration `data` (a file's object) holds, named `name`."""
    checked = _Checked(data, path, named_by)
    constants = checked.mapping("constants")
    values = [checked.number(f"constants.{key}", checked.value(f"constants.{key}", constants),
                             lambda value: value >= 0, "a number from 0") for key in CONSTANTS]
    band = checked.value("band")
    if not isinstance(band, list) or len(band) != 2:
        raise checked.refuse("band", f"is {as_json(band)}, expected [low, high]: the model's relative errors")
    low, high = (checked.number(f"band.{index}", item, lambda value: value > -1, "a relative error above -1")
                 for index, item in enumerate(band))
    if low > high:
        raise checked.refuse("band", f"is {as_json(band)}, expected its low error first")
    runs = checked.whole("runs", checked.value("runs"), 0)
    return Calibration(*values, (low, high), runs, _coverage(checked), name)


def _coverage(checked: _Checked) -> Dict[str, Any]:
    """What the runs of a calibration span: `model_types` (a list of names) and `rows` ([least, most] or null), each
    optional."""
    coverage = checked.mapping("coverage")
    types = coverage.get("model_types", [])
    if not isinstance(types, list) or not all(isinstance(item, str) for item in types):
        raise checked.refuse("coverage.model_types", f"is {as_json(types)}, expected a list of model types")
    rows = coverage.get("rows")
    if rows is not None:
        if not isinstance(rows, list) or len(rows) != 2:
            raise checked.refuse("coverage.rows", f"is {as_json(rows)}, expected [least, most] or null")
        least, most = (checked.whole(f"coverage.rows.{index}", item, 1) for index, item in enumerate(rows))
        if least > most:
            raise checked.refuse("coverage.rows", f"is {as_json(rows)}, expected the least first")
    return {"model_types": list(types), "rows": rows}

