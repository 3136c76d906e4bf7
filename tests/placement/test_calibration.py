"""The time model's constants (placement/data/calibration.json), fitted again from the measured runs shipped beside
them (placement/data/measured_runs.json), and the model held to them; and the memory verdict's reserve.

- The constants are the least relative squares of the fitted runs' steps (`calibration.fit`), recomputed here from the
  dataset; each fitted run's error left out in turn, and each held-out run's, is pinned to two decimals, so that a
  change of the model or of the data shows in its figures (docs/placement.md gives them).
- The goals: the median error of the fitted runs left out in turn within 20 %; the ratios between MLPerf runs of one
  split within 15 %; the matrix-product sweep's points of 16 rows or more within 25 % when each is left out of it.
- The memory verdict: the PopVision profile of optimum-graphcore's `notebooks/mt5_translation.ipynb`
  (`notebooks/images/mt5_oom.png`, "Tile Memory (w/ gaps)" per IPU, read off the picture to about 5 MiB): the reserve
  covers what the placement does not count on its IPUs of layers; Graphcore's published runs never come out "does not
  fit", that split never "fits".
- A user's runs (`fit_determined`): a constant's share of a step; the constants found again from steps timed with
  them; a constant the runs do not determine kept at its start, and why.
"""

import functools
import itertools
import json
import math
import statistics
import warnings
from pathlib import Path

import pytest

from optimum_ipu_ext import IPUConfig
from optimum_ipu_ext.config.calibration import calibration_data, errors_table, run_settings
from optimum_ipu_ext.placement import calibration
from optimum_ipu_ext.placement.calibration import START, calibration_text, fit, read_runs, timed_run
from optimum_ipu_ext.placement.estimate.memory import Verdict
from optimum_ipu_ext.placement.hardware import (
    GC200,
    IPU_MEMORY_BYTES,
    MATMUL_SWEEP_CLOCK_HZ,
    MATMUL_SWEEP_ROWS,
    MATMUL_SWEEP_TFLOPS,
    RESERVE,
    matmul_cycles,
)
from optimum_ipu_ext.placement.placer import model_placer
from support.corpus import FULL_SIZE, PUBLISHED_CONFIGS
from support.processes import run_in_c_locale
from support.published_runs import PUBLISHED_RUNS


@functools.lru_cache(maxsize=None)
def fitted():
    return calibration_data(read_runs(), START, "shipped")


def _leaves(value, path=()):
    """Each (path, leaf) of a calibration's data."""
    if isinstance(value, dict):
        return [leaf for key in sorted(value) for leaf in _leaves(value[key], (*path, key))]
    if isinstance(value, list):
        return [leaf for index, item in enumerate(value) for leaf in _leaves(item, (*path, index))]
    return [(path, value)]


def test_the_shipped_calibration_is_the_one_its_runs_give():
    shipped = _leaves(json.loads(calibration.SHIPPED.read_text(encoding="utf-8")))
    again = _leaves(json.loads(calibration_text(fitted())))
    assert [path for path, _ in shipped] == [path for path, _ in again]
    for (path, value), (_, expected) in zip(shipped, again):
        assert value == (pytest.approx(expected, rel=1e-5) if isinstance(expected, float) else expected), path


def test_writing_the_shipped_calibration_writes_the_fit_of_the_shipped_runs(tmp_path, monkeypatch):
    from optimum_ipu_ext.config import calibration as config_calibration

    monkeypatch.setattr(config_calibration, "SHIPPED", tmp_path / "calibration.json")
    data = config_calibration.write_shipped()
    assert data == fitted()
    assert (tmp_path / "calibration.json").read_text(encoding="utf-8") == calibration_text(fitted())


def test_a_calibration_of_other_runs_is_fitted_on_them_and_covers_them():
    """ViT-base and HuBERT-base fitted, another ViT-base run held out: its error is at the constants fitted on the
    two, not at the shipped ones; no text model among them, so no rows."""
    runs = {run.name: run for run in read_runs()}
    chosen = [runs["optimum-graphcore ViT-base CIFAR-10"],
              runs["HuBERT-base keyword spotting (notebook)"]._replace(role="fit"),
              runs["ViT-base ChestX-ray14 (tutorial, 4 IPUs)"]]
    data = calibration_data(chosen, START, "vision")
    assert (data["name"], data["runs"], data["coverage"]) == ("vision", 2, {"model_types": ["hubert", "vit"],
                                                                             "rows": None})
    held = chosen[2]
    timed = timed_run(held, run_settings(held))
    measured = calibration.measured_seconds(held, timed)
    constants = [data["constants"][name] for name in calibration.CONSTANTS]
    assert data["errors"]["held_out"] == {held.name: pytest.approx(measured / timed.step_seconds(constants) - 1)}
    assert round(data["errors"]["held_out"][held.name], 2) == -0.29
    assert round(measured / timed.step_seconds(None) - 1, 2) == 0.47  # at the shipped constants


def test_the_file_holds_its_figures_to_6_significant_digits():
    assert json.loads(calibration_text({"a": [0.1234567891, {"b": 12345.6789}], "c": 3}))  == {
        "a": [0.123457, {"b": 12345.7}], "c": 3}


def test_the_file_is_indented_by_one_space_with_its_keys_sorted_and_a_last_new_line():
    text = calibration_text({"runs": 2, "band": [-0.1234567891, 0.5], "name": "x", "exact": [0.1234567891]},
                            exact=("exact",))
    assert text.splitlines(keepends=True) == [
        '{\n', ' "band": [\n', '  -0.123457,\n', '  0.5\n', ' ],\n', ' "exact": [\n', '  0.1234567891\n', ' ],\n',
        ' "name": "x",\n', ' "runs": 2\n', '}\n']


def test_a_runs_file_s_runs_are_read_with_their_models_what_a_run_leaves_out_none_or_empty(tmp_path):
    model = {"model_type": "bert", "hidden_size": 16}
    given = {"name": "given", "role": "fit", "build": "training", "model": "tiny", "architecture": "BertForMaskedLM",
             "ipu_config": {"layers_per_ipu": [2]}, "micro_batch_size": 4, "sequence_length": 128,
             "decoder_sequence_length": 32, "ipu": "bow", "measured_samples_per_second": 100.5, "source": "a page",
             "note": "a note"}
    bare = {key: value for key, value in given.items()
            if key not in ("sequence_length", "decoder_sequence_length", "source", "note")}
    path = tmp_path / "runs.json"
    path.write_text(json.dumps({"models": {"tiny": model}, "runs": [given, dict(bare, name="bare")]}),
                    encoding="utf-8")
    assert read_runs(str(path)) == [
        calibration.MeasuredRun("given", "fit", "training", model, "BertForMaskedLM", {"layers_per_ipu": [2]}, 4, 128,
                                32, "bow", 100.5, "a page", "a note"),
        calibration.MeasuredRun("bare", "fit", "training", model, "BertForMaskedLM", {"layers_per_ipu": [2]}, 4, None,
                                None, "bow", 100.5, "", "")]


@pytest.mark.parametrize("values, share, expected", [
    ([0.3], 0.9, 0.3),  # one value: itself at any share
    ([3.0, 1.0, 2.0], 1.0, 3.0),
    ([3.0, 1.0, 2.0], 0.0, 1.0),
    ([3.0, 1.0, 2.0], 0.5, 2.0),
    ([1.0, 2.0, 3.0, 5.0], 0.9, 3.0 + 0.7 * 2.0),  # between the nearest ranks
])
def test_a_percentile_is_between_the_nearest_ranks(values, share, expected):
    assert calibration.percentile(values, share) == pytest.approx(expected)


def test_the_runs_file_is_read_as_utf_8_whatever_the_locale(tmp_path):
    """A run named with an en dash, read where the locale's encoding is ASCII."""
    data = json.loads(calibration.RUNS_FILE.read_text(encoding="utf-8"))
    data["runs"] = [dict(data["runs"][0], name="BERT \u2013 mine")]
    path = tmp_path / "runs.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    code = ("from optimum_ipu_ext.placement.calibration import read_runs\n"
            f"print(ascii(read_runs({str(path)!r})[0].name))\n")
    assert run_in_c_locale(code) == "'BERT \\u2013 mine'\n"


# modelled samples a second over measured, less one: each fitted run left out of the fit
LEFT_OUT = {
    "MLPerf v2.0 Bow Pod16": -0.20, "MLPerf v2.0 Bow Pod64": -0.13, "MLPerf v2.0 Bow Pod128": -0.09,
    "MLPerf v2.0 Bow Pod256": 0.01, "MLPerf v1.1 IPU-POD16": -0.13, "MLPerf v1.1 IPU-POD64": -0.17,
    "MLPerf v1.1 IPU-POD128": -0.12, "MLPerf v1.0 IPU-POD16": -0.05, "MLPerf v1.0 IPU-POD64": -0.04,
    "PaddleNLP BERT-base phase 1": 0.09, "PaddleNLP BERT-base phase 2": 0.03,
    "optimum-graphcore BERT-base pre-training phase 2": 0.26, "optimum-graphcore BERT-large SQuAD": 0.75,
    "optimum-graphcore GPT-2 small WikiText-103": 1.82, "optimum-graphcore ViT-base CIFAR-10": 1.09,
    "optimum-graphcore RoBERTa-base SQuAD v2": 0.24,
}


@pytest.mark.parametrize("name", sorted(LEFT_OUT))
def test_each_fitted_run_left_out_is_modelled_off_by_its_pinned_error(name):
    assert fitted()["errors"]["left_out"][name] == pytest.approx(LEFT_OUT[name], abs=0.01)


def test_the_fitted_runs_are_the_dataset_s():
    assert sorted(fitted()["errors"]["left_out"]) == sorted(run.name for run in read_runs() if run.role == "fit")


def test_the_median_error_of_the_fitted_runs_left_out_in_turn_is_within_20_percent():
    assert statistics.median(abs(error) for error in fitted()["errors"]["left_out"].values()) <= 0.2


def test_the_band_is_the_10th_and_90th_percentile_of_the_errors_left_out():
    errors = sorted(fitted()["errors"]["left_out"].values())
    low, high = fitted()["band"]
    assert errors[1] <= low <= errors[2] and errors[-3] <= high <= errors[-2]
    assert (round(low, 2), round(high, 2)) == (-0.15, 0.92)


HELD_OUT = {
    "MLPerf v1.0 IPU-POD16 open": -0.04, "MLPerf v1.0 IPU-POD64 open": -0.04, "MLPerf v1.1 IPU-POD16 open": -0.11,
    "MLPerf v1.1 IPU-POD64 open": -0.17, "MLPerf v1.1 IPU-POD128 open": -0.13,
    "MLPerf v2.0 Bow Pod16, PaddlePaddle": -0.18, "MLPerf v2.0 Bow Pod64, PaddlePaddle": -0.12,
    "BERT-base SQuAD (Hub, DI 2)": 0.90, "BERT-base SQuAD (notebook)": 0.93, "BERT-base CoNLL NER (notebook)": 3.14,
    "RoBERTa-base CoLA (notebook)": 5.19, "RoBERTa-base MLM WikiText-2 (notebook)": 2.93,
    "HuBERT-base keyword spotting (notebook)": 3.71, "GPT-2 small WikiText-2 (notebook)": 4.08,
    "T5-small XSum (notebook)": 0.98, "packed BERT-base SQuAD (notebook, POD4)": -0.23,
    "ViT-base ChestX-ray14 (tutorial, 4 IPUs)": 0.47, "BERT-large SQuAD (PopTorch tutorial, 8 IPUs)": -0.03,
    "BERT-large SQuAD (Graphcore PyTorch, Bow Pod16)": -0.13,
    "BERT-base pre-training phase 1 (Graphcore PyTorch, Bow Pod16)": 0.10,
    "sentence-t5-base embeddings": 0.43, "BERT-large SQuAD validation (PopTorch tutorial)": -0.02,
    "BERT-base SQuAD evaluation (notebook)": 0.77, "BERT-base NER evaluation (notebook)": 3.29,
    "RoBERTa-base CoLA evaluation (notebook)": 3.26, "RoBERTa-base MLM evaluation (notebook)": 9.80,
    "HuBERT-base keyword spotting evaluation (notebook)": 13.61,
}


@pytest.mark.parametrize("name", sorted(HELD_OUT))
def test_each_held_out_run_is_modelled_off_by_its_pinned_error(name):
    assert fitted()["errors"]["held_out"][name] == pytest.approx(HELD_OUT[name], abs=0.01)


def test_the_held_out_runs_are_the_dataset_s():
    assert sorted(fitted()["errors"]["held_out"]) == sorted(run.name for run in read_runs() if run.role != "fit")


def _modelled(name: str) -> float:
    """A run's modelled samples a second over its measured ones."""
    errors = fitted()["errors"]
    return 1 + errors["left_out"].get(name, errors["held_out"].get(name, math.nan))


@pytest.mark.parametrize("group", [
    ("MLPerf v2.0 Bow Pod64", "MLPerf v2.0 Bow Pod128", "MLPerf v2.0 Bow Pod256"),
    ("MLPerf v1.1 IPU-POD64", "MLPerf v1.1 IPU-POD128"),
])
def test_the_ratios_between_mlperf_runs_of_one_split_are_within_15_percent(group):
    """The same 8-IPU split and micro-batch with fewer micro-batches and more replicas: the model's ratio of speeds
    between two runs over the measured ratio."""
    for first, second in itertools.combinations(group, 2):
        assert _modelled(first) / _modelled(second) == pytest.approx(1, abs=0.15), (first, second)


def _sweep_points():
    return [(size, rows, tflops) for size, row in MATMUL_SWEEP_TFLOPS.items()
            for rows, tflops in zip(MATMUL_SWEEP_ROWS, row) if tflops is not None]


@pytest.mark.parametrize("size, rows, tflops", [point for point in _sweep_points() if point[1] >= 16])
def test_each_sweep_point_of_16_rows_or_more_is_within_25_percent_of_the_sweep_without_it(monkeypatch, size, rows,
                                                                                            tflops):
    row = list(MATMUL_SWEEP_TFLOPS[size])
    row[MATMUL_SWEEP_ROWS.index(rows)] = None
    monkeypatch.setitem(MATMUL_SWEEP_TFLOPS, size, tuple(row))
    modelled = 2 * size * size * rows / matmul_cycles(1, size, size, rows) * MATMUL_SWEEP_CLOCK_HZ / 1e12
    assert modelled == pytest.approx(tflops, rel=0.25)


def test_the_sweep_gives_its_own_points():
    for size, rows, tflops in _sweep_points():
        modelled = 2 * size * size * rows / matmul_cycles(1, size, size, rows) * MATMUL_SWEEP_CLOCK_HZ / 1e12
        assert modelled == pytest.approx(tflops, rel=1e-9)


# --- the fit ---------------------------------------------------------------------------------------------------------

def _pipelined_step(operations, elements, fixed, cycles=10, calls=1.0, fixed_seconds=0.0):
    """A step in the shape of the model's: `cycles` of its slowest IPU's cycle, each IPU's operations and elements at
    the first two constants and its fixed seconds, then fixed seconds and host calls at the third constant."""
    def step_seconds(constants):
        operation, element, call = constants
        cycle = max(count * operation / 1e9 + share * element / 1e9 + seconds
                    for count, share, seconds in zip(operations, elements, fixed))
        return cycles * cycle + fixed_seconds + calls * call
    return step_seconds


def test_the_fit_recovers_the_constants_that_made_the_steps():
    constants = (2000.0, 0.5, 0.01)
    made = [_pipelined_step((100 * k, 50), (10**6 * (7 - k) ** 2, 10**5), (0.001 * k, 0.0), cycles=5 + k,
                            calls=1 / (1 + k % 3)) for k in range(1, 7)]
    found = fit([(step, step(constants)) for step in made], (1000.0, 1.0, 0.1))
    assert found == pytest.approx(constants, rel=1e-6)


def test_the_fit_starts_from_constants_at_zero():
    constants = (2000.0, 0.5, 0.01)
    made = [_pipelined_step((100 * k, 50), (10**6 * (7 - k) ** 2, 10**5), (0.001 * k, 0.0), cycles=5 + k,
                            calls=1 / (1 + k % 3)) for k in range(1, 7)]
    found = fit([(step, step(constants)) for step in made], (0.0, 0.0, 0.0))
    assert found == pytest.approx(constants, rel=1e-6)


def test_the_fit_keeps_every_constant_at_zero_or_more():
    """Steps shorter than their fixed part alone want a negative constant: it is 0 instead."""
    made = [_pipelined_step((100 * k,), (10**6 * k,), (0.01 * k,), calls=1.0) for k in range(1, 5)]
    found = fit([(step, 0.9 * step((0.0, 0.0, 0.0))) for step in made], (1000.0, 1.0, 0.1))
    assert min(found) == 0.0 and all(value >= 0 for value in found)


@pytest.mark.parametrize("name", ["optimum-graphcore BERT-large SQuAD", "MLPerf v2.0 Bow Pod16",
                                  "BERT-large SQuAD validation (PopTorch tutorial)"])
def test_a_run_is_fitted_on_the_step_place_prints(name):
    run = next(run for run in read_runs() if run.name == name)
    timed = timed_run(run, run_settings(run))
    placement = model_placer(run_settings(run), dict(run.model), run.architecture, run.build == "inference", False,
                             None, None, (run.micro_batch_size, run.sequence_length, run.decoder_sequence_length),
                             run.ipu).place()
    assert timed.step().to_dict() == placement.time.to_dict()
    shipped = [fitted()["constants"][name] for name in calibration.CONSTANTS]
    assert timed.step_seconds(shipped) == pytest.approx(placement.time.step_seconds, rel=1e-5)
    assert timed.step_seconds([2 * shipped[0], *shipped[1:]]) > placement.time.step_seconds


DOCUMENT = Path(__file__).resolve().parents[2] / "docs" / "placement.md"


def test_the_documentation_gives_each_run_s_error_and_the_constants():
    text = DOCUMENT.read_text(encoding="utf-8")
    assert errors_table(fitted(), read_runs()) in text
    constants = fitted()["constants"]
    assert f"an operation {constants['operation_cycles']:,.0f} cycles" in text
    assert f"{1 / constants['elementwise_cycles']:,.0f} elements a cycle" in text
    assert f"a training call {1000 * constants['call_seconds']:.0f} ms" in text


@pytest.mark.parametrize("size", [1024, 4096])
def test_the_documentation_gives_the_speed_of_a_matrix_product_on_a_gc200(size):
    speeds = [2 * size * size * rows / matmul_cycles(1, size, size, rows) * GC200.clock_hz / 1e12
              for rows in (16, 128, 384, 1024, 4096)]
    row = f"| {size:,} x {size:,}" + "".join(f" | {speed:.0f}" for speed in speeds)
    assert row in DOCUMENT.read_text(encoding="utf-8").replace(" (BERT-base's feed-forward and smaller)", "")


def test_the_dataset_s_runs_name_their_sources():
    data = json.loads(calibration.RUNS_FILE.read_text(encoding="utf-8"))
    assert all(run["source"] and run["role"] in ("fit", "held-out") for run in data["runs"])
    assert sum(run["role"] == "fit" for run in data["runs"]) == 16


# --- the memory verdict --------------------------------------------------------------------------------------------

# the notebook's first split: mt5-small on [0, 8, 8, 0] with 0.7's defaults, micro-batch 1, 128 tokens each way;
# PopVision's total per IPU, in MiB
MT5_SPLIT = {"layers_per_ipu": [0, 8, 8, 0], "ipus_per_replica": 4, "gradient_accumulation_steps": 128}
MT5_PROFILE_MIB = [1629, 322, 489, 1880]

def mt5_placer():
    return IPUConfig(**MT5_SPLIT).placer(str(FULL_SIZE / "mt5-small"), micro_batch_size=1, sequence_length=128,
                                         decoder_sequence_length=128)


def mt5_placement():
    return mt5_placer().place()


def test_the_reserve_covers_what_the_profile_shows_uncounted_on_the_ipus_of_layers_to_the_next_5_percent():
    placement = mt5_placement()
    uncounted = [(profiled << 20) - ipu.on_chip_bytes
                 for profiled, ipu in zip(MT5_PROFILE_MIB, placement.ipus) if ipu.layers]
    assert [round(100 * bytes_ / IPU_MEMORY_BYTES) for bytes_ in uncounted] == [13, 24]
    assert RESERVE == math.ceil(20 * max(uncounted) / IPU_MEMORY_BYTES) / 20


def test_the_notebook_s_split_that_ran_out_of_memory_never_fits():
    placer = mt5_placer()
    placement = placer.place()
    assert placement.verdict == Verdict.DOES_NOT_FIT
    assert [ipu.ipu for ipu in placement.ipus if ipu.on_chip_bytes > IPU_MEMORY_BYTES] == [0, 3]
    assert placer.place([0, 8, 8, 0]).verdict != Verdict.FITS


@pytest.mark.parametrize("run", PUBLISHED_RUNS, ids=lambda run: f"{run[0]}-{run[3]}x{run[4]}")
def test_graphcore_s_published_runs_never_come_out_does_not_fit(run):
    file, model, architecture, micro_batch, length, decoder = run
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the migration of the older files
        config = IPUConfig.from_pretrained(str(PUBLISHED_CONFIGS / file))
    placement = config.placement(str(FULL_SIZE / model), architecture=architecture, micro_batch_size=micro_batch,
                                 sequence_length=length, decoder_sequence_length=decoder)
    assert placement.verdict != Verdict.DOES_NOT_FIT and not placement.problems


# --- a user's runs: the constants they determine (`fit_determined`), the shares of a step ----------------------------

USERS = ("optimum-graphcore BERT-base pre-training phase 2", "optimum-graphcore RoBERTa-base SQuAD v2",
         "optimum-graphcore GPT-2 small WikiText-103", "optimum-graphcore ViT-base CIFAR-10",
         "BERT-base SQuAD (Hub, DI 2)")


@functools.lru_cache(maxsize=None)
def timed_users():
    runs = {run.name: run for run in read_runs()}
    return tuple(timed_run(runs[name], run_settings(runs[name])) for name in USERS)


def _shipped():
    from optimum_ipu_ext.placement.estimate.calibration_file import shipped_calibration

    shipped = shipped_calibration()
    return (shipped.operation_cycles, shipped.elementwise_cycles, shipped.call_seconds)


def test_a_constant_s_share_is_the_step_s_relative_change_over_the_constant_s():
    from optimum_ipu_ext.placement.calibration import shares

    roberta = timed_users()[1]
    found = shares(roberta, _shipped())
    assert [round(share, 2) for share in found] == [0.16, 0.07, 0.30]
    step = roberta.step_seconds(_shipped())
    for index, share in enumerate(found):
        moved = list(_shipped())
        moved[index] *= 1.05
        assert roberta.step_seconds(moved) == pytest.approx(step * (1 + 0.05 * share), rel=1e-3)


def test_the_constants_runs_determine_are_found_again_from_steps_they_time():
    """The five runs' steps timed at other constants, as if measured: the fit finds those constants."""
    from optimum_ipu_ext.placement.calibration import fit_determined, shares

    truth = (2 * _shipped()[0], _shipped()[1] / 2, 3 * _shipped()[2])
    found = fit_determined([(timed, timed.step_seconds(truth)) for timed in timed_users()], _shipped(),
                           [shares(timed, _shipped()) for timed in timed_users()])
    assert (found.fitted, found.kept) == (calibration.CONSTANTS, {})
    assert found.constants == pytest.approx(truth, rel=1e-4)


def test_a_constant_on_which_runs_spend_just_the_share_is_determined():
    """Two runs spending exactly a tenth of their steps on the operations, nothing on the rest: they fit that one."""
    from optimum_ipu_ext.placement.calibration import MIN_SHARE, fit_determined

    pair = [timed_users()[0], timed_users()[2]]
    found = fit_determined([(timed, timed.step_seconds(_shipped())) for timed in pair], _shipped(),
                           [(MIN_SHARE, 0.0, 0.0)] * 2)
    assert MIN_SHARE == 0.1
    assert found.fitted == ("operation_cycles",)
    assert found.constants == pytest.approx(_shipped(), rel=1e-6)


def test_a_constant_the_runs_do_not_determine_keeps_its_start():
    """BERT-base pre-training and GPT-2 small spend under a tenth of their steps on the host's calls: 2 runs fit one
    constant, the elementwise work's (16 % and 19 % of their steps, against 11 % and 22 % on the operations'), and
    find it again from steps timed with it doubled."""
    from optimum_ipu_ext.placement.calibration import fit_determined, shares

    pair = [timed_users()[0], timed_users()[2]]
    truth = (_shipped()[0], 2 * _shipped()[1], _shipped()[2])
    found = fit_determined([(timed, timed.step_seconds(truth)) for timed in pair], _shipped(),
                           [shares(timed, _shipped()) for timed in pair])
    assert found.fitted == ("elementwise_cycles",)  # 35 % of their steps in all, against 33 %
    assert found.kept == {"operation_cycles": "2 runs fit one constant fewer than there are runs, those they spend "
                                              "more of their steps on first",
                          "call_seconds": "runs spending 10% of their step on it: 0 of 2; 2 must"}
    assert (found.constants[0], found.constants[2]) == (_shipped()[0], _shipped()[2])
    assert found.constants[1] == pytest.approx(truth[1], rel=1e-4)
