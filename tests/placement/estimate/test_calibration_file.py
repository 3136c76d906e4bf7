"""`placement/estimate/calibration_file.py`: a calibration read from its file and checked, each malformed key refused
naming the file and the key; the shipped one; the one a caller asks for (a `Calibration`, a path, else the file
`OPTIMUM_IPU_EXT_CALIBRATION` names, else the shipped one); a file read once while it is unchanged, and as UTF-8 in
any locale."""

import json
import os
from pathlib import Path

import pytest

from optimum_ipu_ext import CalibrationFileError
from optimum_ipu_ext.placement.estimate import calibration_file
from optimum_ipu_ext.placement.estimate.calibration_file import (
    ENVIRONMENT,
    SHIPPED_FILE,
    calibration_of,
    read_calibration,
    shipped_calibration,
)
from optimum_ipu_ext.placement.estimate.timing import Calibration
from support.processes import run_in_c_locale

DATA = {"name": "mine", "constants": {"operation_cycles": 1000.0, "elementwise_cycles": 0.5, "call_seconds": 0.05},
        "band": [-0.2, 0.5], "runs": 10, "coverage": {"model_types": ["bert", "gpt2"], "rows": [256, 4096]},
        "errors": {"left_out": {}}}


def written(tmp_path, data, name="calibration.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8")
    return str(path)


def test_a_calibration_is_read_from_its_file_and_named_by_its_path(tmp_path):
    path = written(tmp_path, DATA)
    assert read_calibration(path) == Calibration(1000.0, 0.5, 0.05, (-0.2, 0.5), 10,
                                                 {"model_types": ["bert", "gpt2"], "rows": [256, 4096]}, path)


def test_what_coverage_leaves_out_covers_nothing(tmp_path):
    path = written(tmp_path, dict(DATA, coverage={}))
    assert read_calibration(path).coverage == {"model_types": [], "rows": None}
    assert read_calibration(path).outside("t5", 16) == ()


def test_the_shipped_calibration_is_the_package_s_file_and_named_shipped():
    data = json.loads(SHIPPED_FILE.read_text(encoding="utf-8"))
    shipped = shipped_calibration()
    assert (shipped.operation_cycles, shipped.elementwise_cycles, shipped.call_seconds) == tuple(
        data["constants"][name] for name in ("operation_cycles", "elementwise_cycles", "call_seconds"))
    assert (list(shipped.band), shipped.runs, shipped.coverage, shipped.name) == (
        data["band"], data["runs"], data["coverage"], "shipped")
    assert shipped.band[0] < 0 < shipped.band[1]
    assert read_calibration(str(SHIPPED_FILE))._replace(name="shipped") == shipped


def _message(path, key, problem):
    at = f"`{key}` " if key else ""
    return f"Cannot read the calibration file '{path}': {at}{problem}."


@pytest.mark.parametrize("change, key, problem", [
    ({"constants": None}, "constants", "is null, expected a JSON object"),
    ({"constants": {"operation_cycles": 1.0, "elementwise_cycles": 1.0}}, "constants.call_seconds", "is missing"),
    ({"constants": dict(DATA["constants"], call_seconds="fast")}, "constants.call_seconds",
     'is "fast", expected a number from 0'),
    ({"constants": dict(DATA["constants"], operation_cycles=-1)}, "constants.operation_cycles",
     "is -1, expected a number from 0"),
    ({"constants": dict(DATA["constants"], elementwise_cycles=True)}, "constants.elementwise_cycles",
     "is true, expected a number from 0"),
    ({"constants": dict(DATA["constants"], call_seconds=float("inf"))}, "constants.call_seconds",
     "is inf, expected a number from 0"),
    ({"band": [0.1]}, "band", "is [0.1], expected [low, high]: the model's relative errors"),
    ({"band": "wide"}, "band", 'is "wide", expected [low, high]: the model\'s relative errors'),
    ({"band": [-1, 0.5]}, "band.0", "is -1, expected a relative error above -1"),
    ({"band": [0.5, -0.2]}, "band", "is [0.5, -0.2], expected its low error first"),
    ({"runs": 2.5}, "runs", "is 2.5, expected a whole number from 0"),
    ({"runs": -1}, "runs", "is -1, expected a whole number from 0"),
    ({"runs": False}, "runs", "is false, expected a whole number from 0"),
    ({"coverage": []}, "coverage", "is [], expected a JSON object"),
    ({"coverage": {"model_types": "bert"}}, "coverage.model_types", 'is "bert", expected a list of model types'),
    ({"coverage": {"model_types": [1]}}, "coverage.model_types", "is [1], expected a list of model types"),
    ({"coverage": {"rows": [1]}}, "coverage.rows", "is [1], expected [least, most] or null"),
    ({"coverage": {"rows": "all"}}, "coverage.rows", 'is "all", expected [least, most] or null'),
    ({"coverage": {"rows": [0, 4]}}, "coverage.rows.0", "is 0, expected a whole number from 1"),
    ({"coverage": {"rows": [8, 4]}}, "coverage.rows", "is [8, 4], expected the least first"),
])
def test_a_malformed_key_is_refused_naming_the_file_and_the_key(tmp_path, change, key, problem):
    path = written(tmp_path, dict(DATA, **change))
    with pytest.raises(CalibrationFileError) as raised:
        read_calibration(path)
    assert str(raised.value) == _message(path, key, problem)
    assert (raised.value.path, raised.value.key, raised.value.problem) == (path, key, problem)


@pytest.mark.parametrize("missing", ["constants", "band", "runs", "coverage"])
def test_a_missing_key_is_refused(tmp_path, missing):
    path = written(tmp_path, {key: value for key, value in DATA.items() if key != missing})
    with pytest.raises(CalibrationFileError, match=f"`{missing}` is missing"):
        read_calibration(path)


def test_a_file_that_is_not_a_calibration_is_refused(tmp_path):
    missing = str(tmp_path / "nowhere.json")
    with pytest.raises(CalibrationFileError) as raised:
        read_calibration(missing)
    assert str(raised.value) == _message(missing, None, "no such file (`ipu-config calibrate` writes one)")
    assert raised.value.key is None
    broken = written(tmp_path, "{", "broken.json")
    with pytest.raises(CalibrationFileError, match=r"broken.json': not valid JSON \(Expecting"):
        read_calibration(broken)
    listed = written(tmp_path, [1, 2], "listed.json")
    assert str(pytest.raises(CalibrationFileError, read_calibration, listed).value) == _message(
        listed, None, "expected a JSON object, found [1, 2]")
    (tmp_path / "folder").mkdir()
    with pytest.raises(CalibrationFileError, match=r"folder': Is a directory"):
        read_calibration(str(tmp_path / "folder"))
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\xff\xfe")
    with pytest.raises(CalibrationFileError, match="not valid JSON"):
        read_calibration(str(binary))


def test_a_file_is_read_as_utf_8_whatever_the_locale(tmp_path):
    """A calibration whose runs are named with an en dash, read where the locale's encoding is ASCII."""
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(dict(DATA, name="mine \u2013 2026"), ensure_ascii=False), encoding="utf-8")
    code = ("from optimum_ipu_ext.placement.estimate.calibration_file import read_calibration\n"
            f"print(read_calibration({str(path)!r}).operation_cycles)\n")
    assert run_in_c_locale(code) == "1000.0\n"


def test_a_file_is_read_once_while_unchanged(tmp_path, monkeypatch):
    path = written(tmp_path, DATA)
    opened = []
    real = calibration_file._json
    monkeypatch.setattr(calibration_file, "_json", lambda *args: opened.append(args) or real(*args))
    first = read_calibration(path)
    assert read_calibration(path) is first and len(opened) == 1
    written(tmp_path, dict(DATA, runs=11, band=[-0.25, 0.5]))
    os.utime(path, ns=(1, 1))
    assert read_calibration(path).runs == 11 and len(opened) == 2


def test_the_calibration_a_caller_asks_for(tmp_path, monkeypatch):
    path = written(tmp_path, DATA)
    mine = read_calibration(path)
    monkeypatch.delenv(ENVIRONMENT, raising=False)
    assert calibration_of() is shipped_calibration()
    assert calibration_of(mine) is mine
    assert calibration_of(path) == mine
    assert calibration_of(Path(path)) == mine
    monkeypatch.setenv(ENVIRONMENT, path)
    assert calibration_of() == mine
    assert calibration_of(str(SHIPPED_FILE)).runs == shipped_calibration().runs  # an argument wins over the variable
    monkeypatch.setenv(ENVIRONMENT, "")
    assert calibration_of() is shipped_calibration()
    with pytest.raises(TypeError, match="calibration must be the path of a calibration file or a Calibration, not "
                       "int"):
        calibration_of(3)


def test_a_malformed_file_the_variable_names_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv(ENVIRONMENT, str(tmp_path / "gone.json"))
    with pytest.raises(CalibrationFileError) as raised:
        calibration_of()
    assert str(raised.value) == (f"Cannot read the calibration file '{tmp_path / 'gone.json'}' (named by "
                                 "OPTIMUM_IPU_EXT_CALIBRATION): no such file (`ipu-config calibrate` writes one).")
    assert raised.value.named_by == ENVIRONMENT
    broken = written(tmp_path, dict(DATA, runs=-2))
    monkeypatch.setenv(ENVIRONMENT, broken)
    with pytest.raises(CalibrationFileError, match=r"\(named by OPTIMUM_IPU_EXT_CALIBRATION\): `runs` is -2"):
        calibration_of()


def test_the_edges_each_check_allows(tmp_path):
    path = written(tmp_path, dict(DATA, runs=0, band=[0.2, 0.2], coverage={"model_types": [], "rows": [1, 1]}))
    read = read_calibration(path)
    assert (read.runs, read.band, read.coverage["rows"]) == (0, (0.2, 0.2), [1, 1])
    path = written(tmp_path, dict(DATA, constants={"operation_cycles": 0, "elementwise_cycles": 0, "call_seconds": 0}),
                   "zero.json")
    assert read_calibration(path)[:3] == (0.0, 0.0, 0.0)


def test_a_path_that_cannot_be_a_file_is_refused_with_the_system_s_reason(tmp_path):
    path = str(tmp_path / ("x" * 300))
    with pytest.raises(CalibrationFileError) as raised:
        read_calibration(path)
    assert raised.value.problem == "File name too long"


def test_what_is_not_a_calibration_is_shown_in_its_first_40_characters(tmp_path):
    long = list(range(30))
    path = written(tmp_path, long)
    with pytest.raises(CalibrationFileError) as raised:
        read_calibration(path)
    assert raised.value.problem == f"expected a JSON object, found {json.dumps(long)[:40]}"


@pytest.mark.parametrize("content, problem", [
    ("{", "not valid JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1))"),
    ("[1]", "expected a JSON object, found [1]"),
    (None, "Is a directory"),
])
def test_every_refusal_of_a_file_the_variable_names_says_so(tmp_path, monkeypatch, content, problem):
    path = tmp_path / "named.json"
    if content is None:
        path.mkdir()
    else:
        path.write_text(content)
    monkeypatch.setenv(ENVIRONMENT, str(path))
    with pytest.raises(CalibrationFileError) as raised:
        calibration_of()
    assert str(raised.value) == (f"Cannot read the calibration file '{path}' (named by OPTIMUM_IPU_EXT_CALIBRATION): "
                                 f"{problem}.")
