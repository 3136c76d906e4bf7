"""`ipu-config calibrate`: real IPUTrainer output folders (tests/data/trainer_runs) calibrated, the report and the JSON
the calibration `calibrate()` gives; `--output` written whole, atomically, never over a file it did not write without
`--force`, never half-written; every run that cannot be used refused in one line, naming it, with nothing written;
the file it writes taken by `place --calibration` and by `OPTIMUM_IPU_EXT_CALIBRATION`; no torch, no
transformers."""

import json
import os
import shutil
from pathlib import Path

import pytest

from optimum_ipu_ext.config.measured_runs import Facts, read_measured_runs
from optimum_ipu_ext.config.user_calibration import calibrate
from support import PRESET
from support.cli_helpers import run, run_alone

DATA = Path(__file__).resolve().parents[1] / "data"
RUNS = "trainer_runs/runs.json"
SAVE = ("Save it: add --output FILE, then give place and plan --calibration FILE (or set "
        "OPTIMUM_IPU_EXT_CALIBRATION=FILE).")


@pytest.fixture
def data(monkeypatch):
    """The folder of the test data, as the working folder: the runs named as a user names them."""
    monkeypatch.chdir(DATA)
    monkeypatch.delenv("OPTIMUM_IPU_EXT_CALIBRATION", raising=False)
    return DATA


@pytest.fixture
def out(tmp_path):
    return tmp_path / "mine.json"


def test_the_report_says_what_was_fitted_and_each_run_s_error(capsys, data):
    code, stdout, err = run(capsys, "calibrate", RUNS)
    assert (code, err) == (0, "")
    assert stdout.splitlines() == [
        "Calibrated on 5 runs: operation_cycles (cycles an operation), elementwise_cycles (cycles an element) and "
        "call_seconds (seconds a host call) fitted.",
        "",
        "Constant               Shipped         Now",
        "operation_cycles         8,873      46,551  fitted",
        "elementwise_cycles    0.003235    0.001064  fitted",
        "call_seconds           0.05304           0  fitted",
        "",
        "Run                                              Measured/s  Before  After  Left out",
        "trainer_runs/Graphcore__bert-base-uncased           2,409.4    +16%   -14%      -21%",
        "trainer_runs/Graphcore__bert-base-uncased-squad       606.8    +90%    +4%      +34%",
        "trainer_runs/Graphcore__gpt2-wikitext-103             261.3   +162%   +47%      +54%",
        "trainer_runs/Graphcore__roberta-base-squad2         1,391.4     +6%   -20%      -37%",
        "trainer_runs/jimypbr__cifar10_outputs               4,242.3   +106%   +47%      +52%",
        "",
        "Errors: the model's samples a second over the measured, less one (+50%: the model 1.5 times as fast as the "
        "run); before: the shipped constants; after: these; left out: these fitted without the run.",
        "Band: runs measure 0.65 to 1.44 times the model's figure (-31% to +53%, the 10th and 90th percentiles of the "
        "errors left out); place and plan print it.",
        "",
        SAVE,
    ]


def test_few_runs_say_what_they_keep_and_whose_band(capsys, data):
    code, stdout, _ = run(capsys, "calibrate", "trainer_runs/Graphcore__bert-base-uncased", "--sequence-length", "512")
    lines = stdout.splitlines()
    assert code == 0
    assert lines[0] == "Calibrated on 1 run: no constant fitted, every one kept at the shipped value."
    assert lines[3] == ("operation_cycles         8,873       8,873  kept: runs spending 10% of their step on it: "
                        "1 of 1; 2 must")
    assert lines[-3] == ("Band: runs measure 0.52 to 1.18 times the model's figure (-15% to +92%, the shipped "
                         "calibration's, on its 16 runs): 1 run is too few to measure a band of its own (5 or more).")
    two = run(capsys, "calibrate", "trainer_runs/Graphcore__roberta-base-squad2", "trainer_runs/Graphcore__bert-base-"
              "uncased-squad", "--sequence-length", "384")[1].splitlines()
    assert two[0] == "Calibrated on 2 runs: call_seconds (seconds a host call) fitted."
    assert two[-3].endswith("2 runs are too few to measure a band of their own (5 or more).")


def test_output_writes_the_calibration_place_and_plan_take(capsys, data, out):
    code, stdout, err = run(capsys, "calibrate", RUNS, "--output", out)
    assert (code, err) == (0, f"Wrote {out}: place and plan take it as --calibration {out}\n")
    assert SAVE not in stdout
    written = json.loads(out.read_text())
    expected = calibrate(read_measured_runs([RUNS]), str(out))
    assert written["written_by"] == "ipu-config calibrate"
    assert written["measured_runs"] == json.loads(json.dumps(expected["measured_runs"]))
    assert written["constants"] == pytest.approx(expected["constants"], rel=1e-5)
    assert (written["name"], written["fitted"], written["runs"]) == (str(out), expected["fitted"], 5)
    code, stdout, _ = run(capsys, "calibrate", RUNS, "--json")
    assert json.loads(stdout) == dict(written, name="")
    code, placed, _ = run(capsys, "place", PRESET, "--model", "trainer_runs/Graphcore__bert-base-uncased-squad",
                          "--micro-batch-size", "2", "--sequence-length", "384", "--calibration", out)
    assert code == 0 and f"Timed with the calibration {out}." in placed
    os.environ["OPTIMUM_IPU_EXT_CALIBRATION"] = str(out)
    try:
        assert run(capsys, "place", PRESET, "--model", "trainer_runs/Graphcore__bert-base-uncased-squad",
                   "--micro-batch-size", "2", "--sequence-length", "384")[1] == placed
    finally:
        del os.environ["OPTIMUM_IPU_EXT_CALIBRATION"]


def test_a_calibration_is_calibrated_on_again_with_more_runs(capsys, data, out):
    assert run(capsys, "calibrate", "trainer_runs/runs.csv", "--output", out)[0] == 0
    code, stdout, _ = run(capsys, "calibrate", out, "trainer_runs/jimypbr__cifar10_outputs", "--output", out)
    assert code == 1  # the folder holds no ipu_config.json: the runs file gives it
    code, stdout, _ = run(capsys, "calibrate", out, RUNS, "--output", out)
    assert code == 1 and "given twice" in _
    code, stdout, err = run(capsys, "calibrate", out, "--output", out)
    assert (code, stdout.splitlines()[0]) == (0, "Calibrated on 4 runs: operation_cycles (cycles an operation), "
                                                 "elementwise_cycles (cycles an element) and call_seconds (seconds a "
                                                 "host call) fitted.")


def test_a_file_calibrate_did_not_write_is_kept_unless_force(capsys, data, out):
    out.write_text('{"constants": {}}')
    code, stdout, err = run(capsys, "calibrate", RUNS, "--output", out)
    assert (code, stdout, err) == (1, "", f"ipu-config: error: {out}: exists and is not a calibration calibrate "
                                          "wrote; pass --force to overwrite it\n")
    assert out.read_text() == '{"constants": {}}'
    for kept in ("not json", "[1]"):
        out.write_text(kept)
        assert run(capsys, "calibrate", RUNS, "--output", out)[0] == 1 and out.read_text() == kept
    assert run(capsys, "calibrate", RUNS, "--output", out, "--force")[0] == 0
    assert json.loads(out.read_text())["written_by"] == "ipu-config calibrate"
    assert run(capsys, "calibrate", "trainer_runs/runs.csv", "--output", out)[0] == 0  # its own: replaced
    assert json.loads(out.read_text())["runs"] == 16  # 4 runs: the shipped band


@pytest.mark.parametrize("where, message", [
    ("missing/mine.json", "{path}: its folder {folder} does not exist"),
    (".", "{path}: is a folder; --output takes the file to write"),
])
def test_an_output_with_nowhere_to_go_is_refused_before_the_runs_are_read(capsys, tmp_path, where, message):
    path = tmp_path / where
    code, _, err = run(capsys, "calibrate", tmp_path / "no-such-run", "--output", path)
    assert (code, err) == (1, "ipu-config: error: " + message.format(path=path, folder=tmp_path / "missing") + "\n")


def test_a_failed_write_leaves_the_previous_file_whole_and_nothing_else(capsys, data, out, monkeypatch):
    assert run(capsys, "calibrate", "trainer_runs/runs.csv", "--output", out)[0] == 0
    before = out.read_text()

    def fail(source, target):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    code, stdout, err = run(capsys, "calibrate", RUNS, "--output", out)
    assert (code, stdout, err) == (1, "", "ipu-config: error: [Errno 28] No space left on device\n")
    assert out.read_text() == before
    assert sorted(path.name for path in out.parent.iterdir()) == ["mine.json"]


@pytest.mark.parametrize("arguments, message", [
    (["trainer_runs/Graphcore__bert-large-uncased", "--sequence-length", "512"],
     "trainer_runs/Graphcore__bert-large-uncased: 11,004.8 samples a second is more than its IPUs can compute: at "
     "their peak, IPU 1 (781.7 GFLOP a micro-batch of 2, forward, backward and recomputation) on 16 replicas allow "
     "10,258.6. A resumed run's train_samples_per_second counts the samples of the whole schedule over this "
     "process's time."),
    (["trainer_runs/Graphcore__lxmert-vqa-uncased"],
     "trainer_runs/Graphcore__lxmert-vqa-uncased: its IPU config (ipu_config.json): `layers_per_ipu=[1]` is invalid: "
     "it needs one entry per IPU, as `ipus_per_replica=4`."),
    (["trainer_runs/Graphcore__gpt2-medium-wikitext-103"],
     "trainer_runs/Graphcore__gpt2-medium-wikitext-103: its IPU config (ipu_config.json): no ipu_config.json."),
    (["trainer_runs/Graphcore__bert-base-uncased", "--sequence-length", "512", "--architecture", "GPT2LMHeadModel"],
     'trainer_runs/Graphcore__bert-base-uncased: GPT2LMHeadModel takes a config of model type "gpt2", and this one '
     'is "bert".'),
    ([RUNS, "--micro-batch-size", "3"],
     f"{RUNS}, run 1: the command line says `micro_batch_size=3` and train_results.json (16,391 samples a step, G 512 "
     "x 4 replicas x 1 device iterations) `micro_batch_size=8`: give one."),
])
def test_a_run_that_cannot_be_used_is_one_line_and_nothing_is_written(capsys, data, out, arguments, message):
    code, stdout, err = run(capsys, "calibrate", *arguments, "--output", out)
    assert (code, stdout, err) == (1, "", f"ipu-config: error: Cannot calibrate on {message}\n")
    assert not out.exists()


def test_the_options_say_what_the_folders_do_not_hold(capsys, data, tmp_path):
    folder = Path(shutil.copytree(DATA / "trainer_runs" / "Graphcore__bert-base-uncased-squad", tmp_path / "squad"))
    for name in ("train_results.json", "all_results.json"):
        results = json.loads((folder / name).read_text())
        del results["train_steps_per_second"]
        (folder / name).write_text(json.dumps(results))
    code, stdout, _ = run(capsys, "calibrate", folder, "--micro-batch-size", "2", "--sequence-length", "384",
                          "--ipu", "bow", "--architecture", "BertForQuestionAnswering", "--json")
    [row] = json.loads(stdout)["measured_runs"]
    expected = read_measured_runs([str(folder)], Facts(2, 384, None, "BertForQuestionAnswering", "bow"))[0]
    assert (row["micro_batch_size"], row["sequence_length"], row["ipu"], row["architecture"]) == (
        2, 384, "bow", "BertForQuestionAnswering")
    assert row["samples_per_second"] == expected.measured_samples_per_second
    code, _, err = run(capsys, "calibrate", folder, "--decoder-sequence-length", "64", "--micro-batch-size", "2",
                       "--sequence-length", "384")
    assert (code, err) == (1, f"ipu-config: error: Cannot calibrate on {folder}: it cannot be placed: Cannot "
                              "place the model config with `decoder_sequence_length`: 64 is for the decoders of the "
                              "models that generate (BART, T5, MT5, Whisper); BertForQuestionAnswering has no decoder "
                              "of its own length.\n")


def test_usage_errors(capsys):
    assert run(capsys, "calibrate")[0] == 2
    code, _, err = run(capsys, "calibrate", "runs.csv", "--micro-batch-size", "0")
    assert code == 2 and "argument --micro-batch-size: expected a positive whole number, got '0'" in err
    assert run(capsys, "calibrate", "runs.csv", "--ipu", "mk1")[0] == 2


def test_calibrating_local_runs_imports_neither_torch_nor_transformers():
    assert run_alone("calibrate", DATA / "trainer_runs" / "runs.json") == "0 []"
