"""A placement and a plan timed with a calibration other than the shipped one: `calibration=` on `placement()`,
`placer()` and `plan()` (a file's path or a `Calibration`), else the file `OPTIMUM_IPU_EXT_CALIBRATION` names; the
step's time follows the constants, and every report says which calibration timed it (`time_model.calibration`, the
time line of the text, the pictures and the page, a plan's line of what its speeds are worth)."""

import json
import re
from pathlib import Path

import pytest

from optimum_ipu_ext import CalibrationFileError, PlainIPUConfig, plan
from optimum_ipu_ext.placement.estimate.calibration_file import ENVIRONMENT, shipped_calibration
from optimum_ipu_ext.placement.report.page import placement_page, plan_page
from optimum_ipu_ext.placement.report.placement_picture import placement_svg
from optimum_ipu_ext.placement.report.plan_picture import plan_svg
from support import PRESET
from support.placement_fixtures import PLANNED_BERT, bert_base

SHAPE = {"micro_batch_size": 4, "sequence_length": 128}


@pytest.fixture
def slower(tmp_path, monkeypatch):
    """A calibration whose every constant is twice the shipped one, its band -10 % to +30 % on 5 runs, named by its
    path from the folder the test runs in."""
    monkeypatch.chdir(tmp_path)
    shipped = shipped_calibration()
    path = "slower.json"
    Path(path).write_text(json.dumps({
        "name": "slower", "constants": {"operation_cycles": 2 * shipped.operation_cycles,
                                        "elementwise_cycles": 2 * shipped.elementwise_cycles,
                                        "call_seconds": 2 * shipped.call_seconds},
        "band": [-0.1, 0.3], "runs": 5, "coverage": {"model_types": ["gpt2"], "rows": [2048, 4096]}}),
        encoding="utf-8")
    return path


def words(drawing):
    """The words a picture or a page shows, its lines joined."""
    return " ".join(re.sub(r"<[^>]+>", " ", drawing).split())


@pytest.fixture
def bert(tmp_path):
    return bert_base(tmp_path / "bert-base")


@pytest.fixture(autouse=True)
def no_variable(monkeypatch):
    monkeypatch.delenv(ENVIRONMENT, raising=False)


def test_a_placement_is_timed_with_the_calibration_given(bert, slower):
    config = PlainIPUConfig.from_json_file(PRESET)
    shipped, timed = config.placement(bert, **SHAPE), config.placement(bert, calibration=slower, **SHAPE)
    assert timed.time.calibration.name == slower
    assert timed.time.step_seconds > shipped.time.step_seconds
    # the host's call doubles; its inputs over the host link do not depend on the calibration
    assert timed.time.host_seconds - shipped.time.host_seconds == pytest.approx(shipped_calibration().call_seconds)
    time_model = timed.to_dict()["time_model"]
    assert time_model == {"calibration": slower, "runs": 5, "band": [-0.1, 0.3],
                          "outside": ["no bert model among them", "512 rows a matrix product, where they had 2,048 "
                                      "to 4,096"]}
    assert shipped.to_dict()["time_model"]["calibration"] == "shipped"
    low, high = timed.time.samples_per_second_range
    assert (low, high) == pytest.approx((timed.time.samples_per_second / 1.3, timed.time.samples_per_second / 0.9))
    assert config.placer(bert, calibration=shipped_calibration(), **SHAPE).place().to_dict() == shipped.to_dict()


def test_the_reports_name_a_calibration_other_than_the_shipped_one(bert, slower):
    config = PlainIPUConfig.from_json_file(PRESET)
    timed = config.placement(bert, calibration=slower, **SHAPE)
    time_line = next(line for line in str(timed).splitlines() if line.startswith("Time: "))
    assert time_line.endswith(f" Timed with the calibration {slower}.")
    assert "by the model's error on 5 measured runs" in time_line
    shipped_line = next(line for line in str(config.placement(bert, **SHAPE)).splitlines()
                        if line.startswith("Time: "))
    assert "calibration" not in shipped_line
    assert f"Timed with the calibration {slower}." in words(placement_svg(timed.to_dict()))
    assert f"Timed with the calibration {slower}." in words(placement_page(timed.to_dict()))


def test_the_variable_names_the_calibration_unless_one_is_given(bert, slower, monkeypatch):
    config = PlainIPUConfig.from_json_file(PRESET)
    monkeypatch.setenv(ENVIRONMENT, slower)
    assert config.placement(bert, **SHAPE).time.calibration.name == slower
    assert config.placement(bert, calibration=shipped_calibration(), **SHAPE).time.calibration.name == "shipped"
    monkeypatch.setenv(ENVIRONMENT, "gone.json")
    with pytest.raises(CalibrationFileError, match="named by OPTIMUM_IPU_EXT_CALIBRATION"):
        config.placement(bert)  # read even where nothing is timed: a file named in error is an error


def test_a_plan_is_timed_with_the_calibration_given_read_once(slower, monkeypatch):
    from optimum_ipu_ext.placement.estimate import calibration_file

    reads = []
    real = calibration_file._json
    monkeypatch.setattr(calibration_file, "_json", lambda *args: reads.append(args) or real(*args))
    calibration_file._READ.clear()
    request = {"ipus": 4, "global_batch_size": 32, "sequence_length": 512}
    found = plan(PLANNED_BERT, calibration=slower, **request)
    assert len(reads) == 1
    assert {candidate.placement.time.calibration.name for candidate in found.candidates} == {slower}
    shipped = plan(PLANNED_BERT, **request)
    assert found.candidates[0].samples_per_second < shipped.candidates[0].samples_per_second
    band = str(found).splitlines()[-1]
    assert band.startswith(f"Speeds are the model's, with the calibration {slower}: runs measured 0.77 to 1.11 "
                           "times its figure (5 runs, each left out of the fit in turn)")
    assert str(shipped).splitlines()[-1].startswith("Speeds are the model's: runs measured")
    note = f"the best first. Timed with the calibration {slower}."
    assert note in words(plan_svg(found.to_dict())) and note in words(plan_page(found.to_dict()))
    assert "Timed with the calibration" not in words(plan_svg(shipped.to_dict()))
