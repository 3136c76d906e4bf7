"""`config/measured_runs.py`: the runs `ipu-config calibrate` reads, from real IPUTrainer output folders published on
the Hub (tests/data/trainer_runs, SOURCES.md there) and from runs files: each folder's micro-batch from its own
figures, what it does not hold from its `ipu_run.json`, a runs file's row or the command line, two of them that
disagree refused; every row's field checked, naming the file, the line or run, the field, the value and what it
allows; every run that cannot be read refused naming it and why."""

import csv
import json
import os
import shutil
from pathlib import Path

import pytest

from optimum_ipu_ext import MeasuredRunError
from optimum_ipu_ext.config.measured_runs import Facts, read_measured_runs
from support.processes import run_in_c_locale

DATA = Path(__file__).resolve().parents[1] / "data" / "trainer_runs"
BERT_BASE = DATA / "Graphcore__bert-base-uncased"
SQUAD = DATA / "Graphcore__bert-base-uncased-squad"
# Graphcore/bert-base-uncased's ipu_config.json in 0.7.1's terms: the settings beside optimum-graphcore's defaults
# (and the inference pipeline, which follows the training one), in 0.7.1's terms: the keys no release reads dropped
BERT_BASE_SETTINGS = {"replication_factor": 4, "gradient_accumulation_steps": 512, "layers_per_ipu": [0, 4, 4, 4],
                      "ipus_per_replica": 4, "matmul_proportion": 0.22, "embedding_serialization_factor": 2,
                      "recompute_checkpoint_every_layer": True, "replicated_tensor_sharding": True,
                      "executable_cache_dir": "./exe_cache", "inference_device_iterations": 4,
                      "inference_replication_factor": 4, "inference_ipus_per_replica": 4,
                      "inference_layers_per_ipu": [0, 4, 4, 4], "inference_matmul_proportion": 0.22, "seed": 42}


def refusal(sources, given=None):
    with pytest.raises(MeasuredRunError) as refused:
        read_measured_runs([str(source) for source in sources], given)
    return str(refused.value)


@pytest.fixture
def folder(tmp_path):
    """A copy of Graphcore/bert-base-uncased's output folder, to change."""
    return Path(shutil.copytree(BERT_BASE, tmp_path / "bert-base"))


def test_an_output_folder_is_its_config_model_and_measurement(monkeypatch):
    monkeypatch.chdir(DATA)
    [run] = read_measured_runs(["Graphcore__bert-base-uncased"], Facts(sequence_length=512))
    assert (run.name, run.role, run.build, run.architecture, run.micro_batch_size, run.sequence_length,
            run.decoder_sequence_length, run.ipu, run.measured_samples_per_second) == (
        "Graphcore__bert-base-uncased", "fit", "training", "BertForPreTraining", 8, 512, None, "gc200", 2409.431)
    assert run.source == "Graphcore__bert-base-uncased: train_results.json (train_samples_per_second 2409.431)"
    assert {key: run.ipu_config[key] for key in sorted(run.ipu_config)} == dict(sorted(BERT_BASE_SETTINGS.items()))
    assert run.model == json.loads((BERT_BASE / "config.json").read_text())


@pytest.mark.parametrize("name, micro_batch", [
    ("Graphcore__bert-base-uncased", 8),  # 2409.431 / 0.147 = 16,391 samples a step over 512 x 4 x 1
    ("Graphcore__bert-base-uncased-squad", 2),  # 606.762 / 2.365 = 257 over 16 x 4 x 2
    ("Graphcore__gpt2-wikitext-103", 1),  # 261.293 / 0.254 = 1,029 over 128 x 4 x 2
    ("Graphcore__roberta-base-squad2", 4),  # 1391.43 / 5.425 = 256 over 16 x 4 x 1
    ("Graphcore__bert-large-uncased", 2),  # 11004.826 / 0.672 = 16,376 over 512 x 16 x 1
])
def test_a_folder_s_micro_batch_is_its_samples_a_step_over_g_replicas_and_device_iterations(name, micro_batch):
    [run] = read_measured_runs([str(DATA / name)], Facts(sequence_length=128))
    assert run.micro_batch_size == micro_batch


def test_the_runs_files_give_what_the_folders_do_not_hold(monkeypatch):
    monkeypatch.chdir(DATA.parent)
    from_json = read_measured_runs(["trainer_runs/runs.json"])
    from_csv = read_measured_runs(["trainer_runs/runs.csv"])
    assert [run.name for run in from_json] == [f"trainer_runs/{name}" for name in (
        "Graphcore__bert-base-uncased", "Graphcore__bert-base-uncased-squad", "Graphcore__gpt2-wikitext-103",
        "Graphcore__roberta-base-squad2", "jimypbr__cifar10_outputs")]
    assert from_csv == from_json[:4]
    assert [(run.architecture, run.micro_batch_size, run.sequence_length) for run in from_json] == [
        ("BertForPreTraining", 8, 512), ("BertForQuestionAnswering", 2, 384), ("GPT2LMHeadModel", 1, 1024),
        ("RobertaForQuestionAnswering", 4, 384), ("ViTForImageClassification", 17, None)]
    assert from_json[0].source.startswith("huggingface.co/Graphcore/bert-base-uncased: phase 2 of pre-training")
    cifar = from_json[4]
    assert (cifar.ipu_config["layers_per_ipu"], cifar.ipu_config["gradient_accumulation_steps"],
            cifar.measured_samples_per_second) == ([3, 3, 3, 3], 128, 4242.326)


def test_a_folder_s_ipu_run_json_gives_what_its_script_knew(folder):
    (folder / "ipu_run.json").write_text(json.dumps({"micro_batch_size": 8, "sequence_length": 512, "ipu": "bow",
                                                     "architecture": "BertForPreTraining", "steps": 20}))
    [run] = read_measured_runs([str(folder)])
    assert (run.micro_batch_size, run.sequence_length, run.ipu, run.architecture) == (8, 512, "bow",
                                                                                       "BertForPreTraining")
    assert read_measured_runs([str(folder)], Facts(ipu="bow", sequence_length=512)) == [run]


@pytest.mark.parametrize("written, given, message", [
    ({"sequence_length": 384}, Facts(sequence_length=512),
     "the command line says `sequence_length=512` and ipu_run.json `sequence_length=384`: give one"),
    ({"ipu": "bow"}, Facts(ipu="gc200", sequence_length=512),
     'the command line says `ipu="gc200"` and ipu_run.json `ipu="bow"`: give one'),
    ({"micro_batch_size": 4, "sequence_length": 512}, Facts(),
     "ipu_run.json says `micro_batch_size=4` and train_results.json (16,391 samples a step, G 512 x 4 replicas x 1 "
     "device iterations) `micro_batch_size=8`: give one"),
    ({}, Facts(micro_batch_size=2, sequence_length=512),
     "the command line says `micro_batch_size=2` and train_results.json (16,391 samples a step, G 512 x 4 replicas "
     "x 1 device iterations) `micro_batch_size=8`: give one"),
    ({"micro_batch_size": 0}, Facts(), "`micro_batch_size=0` is invalid: allowed values are positive whole numbers"),
    ({"ipu": "mk1"}, Facts(), '`ipu="mk1"` is invalid: allowed values are "gc200", "bow"'),
])
def test_what_two_say_differently_is_refused(folder, written, given, message):
    (folder / "ipu_run.json").write_text(json.dumps(written))
    where = f"{folder}, ipu_run.json" if "invalid" in message else str(folder)
    assert refusal([folder], given) == f"Cannot calibrate on {where}: {message}."


def test_a_micro_batch_the_figures_do_not_give_must_be_given(folder):
    results = json.loads((folder / "train_results.json").read_text())
    (folder / "all_results.json").unlink()
    for steps in (None, 0.0, 0.2):  # not there, a resumed run's nought, a figure that gives no whole micro-batch
        changed = dict(results)
        if steps is None:
            del changed["train_steps_per_second"]
        else:
            changed["train_steps_per_second"] = steps
        (folder / "train_results.json").write_text(json.dumps(changed))
        assert refusal([folder], Facts(sequence_length=512)) == (
            f"Cannot calibrate on {folder}: its micro-batch is not known: give --micro-batch-size (or, in a runs "
            "file, micro_batch_size).")
        [run] = read_measured_runs([str(folder)], Facts(micro_batch_size=8, sequence_length=512))
        assert run.micro_batch_size == 8


def test_a_sequence_length_is_needed_where_the_model_takes_one(folder):
    assert refusal([folder]) == (
        f"Cannot calibrate on {folder}: its sequence length is not known: BertForPreTraining takes one (tokens; audio "
        "samples for HuBERT and Wav2Vec2): give --sequence-length (or, in a runs file, sequence_length).")


def test_the_result_is_train_results_json_else_all_results_json(folder):
    (folder / "train_results.json").unlink()
    [run] = read_measured_runs([str(folder)], Facts(sequence_length=512))
    assert (run.measured_samples_per_second, run.source) == (
        2409.431, f"{folder}: all_results.json (train_samples_per_second 2409.431)")
    (folder / "train_results.json").write_text(json.dumps({"epoch": 2.0}))  # an evaluation's, say
    assert read_measured_runs([str(folder)], Facts(sequence_length=512)) == [run]


@pytest.mark.parametrize("change, message", [
    (lambda folder: [(folder / name).unlink() for name in ("train_results.json", "all_results.json")],
     "the folder holds no train_results.json or all_results.json: IPUTrainer writes them where the training script "
     'calls trainer.save_metrics("train", ...)'),
    (lambda folder: [(folder / name).write_text('{"epoch": 2.0}') for name in ("train_results.json",
                                                                              "all_results.json")],
     "train_results.json and all_results.json hold no train_samples_per_second: the folder of a training run holds "
     "it"),
    (lambda folder: (folder / "train_results.json").write_text('{"train_samples_per_second": "fast"}'),
     'train_results.json holds `train_samples_per_second="fast"`, not a positive number'),
    (lambda folder: (folder / "train_results.json").write_text('{"train_samples_per_second": 0}'),
     "train_results.json holds `train_samples_per_second=0`, not a positive number"),
    (lambda folder: (folder / "train_results.json").write_text("{"),
     "train_results.json is not valid JSON (Expecting property name enclosed in double quotes: line 1 column 2 "
     "(char 1))"),
    (lambda folder: (folder / "train_results.json").write_text("[1]"),
     "train_results.json holds [1], not a JSON object"),
    (lambda folder: (folder / "ipu_config.json").unlink(), "its IPU config (ipu_config.json): no ipu_config.json"),
    (lambda folder: (folder / "ipu_config.json").write_text('{"replication_factor": 0}'),
     "its IPU config (ipu_config.json): `replication_factor=0` is invalid: numbers must be from 1 to 65536."),
    (lambda folder: (folder / "config.json").unlink(),
     "its model: Cannot read the model file '{folder}/config.json': no such file: a model folder holds its "
     "config.json."),
    (lambda folder: (folder / "config.json").write_text('{"model_type": "albert", "architectures": '
                                                        '["AlbertForMaskedLM"]}'),
     'AlbertForMaskedLM has no pipelined version in optimum-graphcore 0.7.1; model type "albert" has no pipelined '
     "architecture; these have: ..."),
    (lambda folder: (folder / "ipu_run.json").write_text('{"architecture": "GPT2LMHeadModel"}'),
     'GPT2LMHeadModel takes a config of model type "gpt2", and this one is "bert"'),
    (lambda folder: (folder / "ipu_run.json").write_text("[]"), "ipu_run.json holds [], not a JSON object"),
])
def test_a_folder_that_cannot_be_read_is_refused_naming_it_and_why(folder, change, message):
    change(folder)
    found = refusal([folder], Facts(sequence_length=512))
    prefix = f"Cannot calibrate on {folder}: "
    expected = prefix + message.format(folder=folder) + ("" if message.endswith((".", "...")) else ".")
    if expected.endswith("..."):
        assert found.startswith(expected[:-3])
    else:
        assert found == expected


def test_real_folders_that_cannot_be_read():
    assert refusal([DATA / "Graphcore__lxmert-vqa-uncased"]) == (
        f"Cannot calibrate on {DATA / 'Graphcore__lxmert-vqa-uncased'}: its IPU config (ipu_config.json): "
        "`layers_per_ipu=[1]` is invalid: it needs one entry per IPU, as `ipus_per_replica=4`.")
    assert refusal([DATA / "Graphcore__gpt2-medium-wikitext-103"]) == (
        f"Cannot calibrate on {DATA / 'Graphcore__gpt2-medium-wikitext-103'}: its IPU config (ipu_config.json): no "
        "ipu_config.json.")


def test_a_run_that_is_neither_a_folder_nor_a_runs_file_is_refused(tmp_path):
    assert refusal([tmp_path / "gone"]) == f"Cannot calibrate on {tmp_path / 'gone'}: no such file or folder."
    notes = tmp_path / "notes.txt"
    notes.write_text("fast")
    assert refusal([notes]) == (f"Cannot calibrate on {notes}: a run is an IPUTrainer output folder, or a runs file: "
                                ".csv or .json.")


# --- runs files ------------------------------------------------------------------------------------------------------

ROW = {"name": "mine", "config": "bert-base/ipu_config.json", "model": "bert-base", "micro_batch_size": 8,
       "sequence_length": 512, "samples_per_second": 2400.5, "source": "my log"}


def csv_file(path, rows):
    header = list(dict.fromkeys(column for row in rows for column in row))
    lines = [",".join(header)] + [",".join(str(row.get(column, "")) for column in header) for row in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_row_is_a_run_its_paths_relative_to_the_runs_file(folder, tmp_path, monkeypatch):
    monkeypatch.chdir(DATA)
    path = csv_file(tmp_path / "runs.csv", [ROW, dict(ROW, name="", ipu="bow", build="inference",
                                                      architecture="BertForQuestionAnswering")])
    first, second = read_measured_runs([str(path)])
    assert (first.name, first.build, first.architecture, first.micro_batch_size, first.sequence_length, first.ipu,
            first.measured_samples_per_second, first.source) == (
        "mine", "training", "BertForPreTraining", 8, 512, "gc200", 2400.5, "my log")
    assert first.ipu_config == read_measured_runs([str(folder)], Facts(sequence_length=512))[0].ipu_config
    assert (second.name, second.build, second.architecture, second.ipu) == (
        f"{path}, line 3", "inference", "BertForQuestionAnswering", "bow")
    json_path = tmp_path / "runs.json"
    json_path.write_text(json.dumps([ROW]))
    assert read_measured_runs([str(json_path)]) == [first]
    json_path.write_text(json.dumps({"runs": [dict(ROW, config=BERT_BASE_SETTINGS, model=first.model)]}))
    assert read_measured_runs([str(json_path)]) == [first]


def test_runs_files_are_read_as_utf_8_whatever_the_locale_a_csv_cell_as_written(folder, tmp_path):
    """A run named with an en dash and a line break, in a CSV and a JSON runs file, read where the locale's encoding
    is ASCII; the CSV's quoted cell keeps its line break as written."""
    name = "BERT \u2013 mine\r\nsecond line"
    csv_path = tmp_path / "runs.csv"
    with open(csv_path, "w", encoding="utf-8", newline="") as writer:
        csv.writer(writer).writerows([list(ROW), [name if column == "name" else ROW[column] for column in ROW]])
    json_path = tmp_path / "runs.json"
    json_path.write_text(json.dumps([dict(ROW, name=name)], ensure_ascii=False), encoding="utf-8")
    code = ("from optimum_ipu_ext.config.measured_runs import read_measured_runs\n"
            f"print(ascii([run.name for run in read_measured_runs([{str(csv_path)!r}, {str(json_path)!r}])]))\n")
    assert run_in_c_locale(code) == ascii([name, name]) + "\n"


def test_a_row_may_name_a_preset_and_skip_blank_lines(folder, tmp_path):
    path = tmp_path / "runs.csv"
    path.write_text("config,model,micro_batch_size,sequence_length,samples_per_second\n\n"
                    "pipelined-2ipu,bert-base,4,128,900\n,,,,\n")
    [run] = read_measured_runs([str(path)])
    assert (run.name, run.ipu_config["ipus_per_replica"], run.ipu_config["gradient_accumulation_steps"]) == (
        f"{path}, line 3", 2, 128)


@pytest.mark.parametrize("row, message", [
    (dict(ROW, micro_batch_size="two"), '`micro_batch_size="two"` is invalid: allowed values are positive whole '
                                        "numbers"),
    (dict(ROW, micro_batch_size="2.0"), '`micro_batch_size="2.0"` is invalid: allowed values are positive whole '
                                        "numbers"),
    (dict(ROW, sequence_length="-1"), '`sequence_length="-1"` is invalid: allowed values are positive whole numbers'),
    (dict(ROW, samples_per_second="0"), '`samples_per_second="0"` is invalid: allowed values are positive numbers: '
                                        "the samples a second measured"),
    (dict(ROW, samples_per_second="nan"), '`samples_per_second="nan"` is invalid: allowed values are positive '
                                          "numbers: the samples a second measured"),
    (dict(ROW, ipu="mk2"), '`ipu="mk2"` is invalid: allowed values are "gc200", "bow"'),
    (dict(ROW, build="eval"), '`build="eval"` is invalid: allowed values are "training", "inference"'),
    (dict(ROW, speed="1"), 'unknown field "speed": the fields are name, folder, config, model, architecture, '
                           "micro_batch_size, sequence_length, decoder_sequence_length, ipu, build, "
                           "samples_per_second, source"),
    ({key: value for key, value in ROW.items() if key != "config"},
     "gives no `config`: a run gives its config, model, samples_per_second, or an output folder (`folder`)"),
    ({key: value for key, value in ROW.items() if key != "samples_per_second"},
     "gives no `samples_per_second`: a run gives its config, model, samples_per_second, or an output folder "
     "(`folder`)"),
    ({"folder": "bert-base", "samples_per_second": 100},
     "gives an output folder and `samples_per_second`: the folder holds the measurement of a training run"),
    ({"folder": "bert-base", "build": "inference"},
     "gives an output folder and `build`: the folder holds the measurement of a training run"),
    ({"folder": "bert-base", "sequence_length": 512, "config": "bert-base"},
     "the folder holds its ipu_config.json, and the row gives `config` too: give one"),
    ({"folder": "bert-base", "sequence_length": 512, "model": "bert-base"},
     "the folder holds its config.json, and the row gives `model` too: give one"),
    ({"folder": "gone"}, "{tmp}/gone: no such folder"),
    (dict(ROW, config="gone.json"), "its IPU config (gone.json): no ipu_config.json"),
    (dict(ROW, model="./gone"), "its model: Cannot read the model file '{tmp}/./gone/config.json': no such file: a "
                                "model folder holds its config.json."),
    (dict(ROW, sequence_length=128), "the row says `sequence_length=128` and the command line "
                                     "`sequence_length=512`: give one"),
])
def test_a_row_that_cannot_be_read_is_refused_naming_the_line_the_field_and_the_value(folder, tmp_path, row,
                                                                                      message):
    path = csv_file(tmp_path / "runs.csv", [row])
    expected = f"Cannot calibrate on {path}, line 2: {message.format(tmp=tmp_path)}"
    assert refusal([path], Facts(sequence_length=512)) == expected + ("" if expected.endswith(".") else ".")


def test_a_csv_file_that_cannot_be_read_is_refused(tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    assert refusal([empty]) == (f"Cannot calibrate on {empty}: holds no header line: the first line names the "
                                "columns.")
    long = tmp_path / "long.csv"
    long.write_text("name,ipu\nmine,bow,extra\n")
    assert refusal([long]) == f"Cannot calibrate on {long}, line 2: 3 cells, and the header names 2 columns."
    binary = tmp_path / "binary.csv"
    binary.write_bytes(b"\xff\xfe")
    assert refusal([binary]).startswith(f"Cannot calibrate on {binary}: cannot be read (")


@pytest.mark.parametrize("data, message", [
    ({"run": []}, 'a JSON runs file holds a list of runs, or an object holding them under "runs"'),
    ("[1]", None),
    ("{", 'runs.json is not valid JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1))'),
])
def test_a_json_file_that_cannot_be_read_is_refused(tmp_path, data, message):
    path = tmp_path / "runs.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    if message is None:
        assert refusal([path]) == f"Cannot calibrate on {path}, run 1: is 1, not a JSON object."
    else:
        assert refusal([path]) == f"Cannot calibrate on {path}: {message}."


def test_a_row_s_config_given_as_an_object_is_checked_by_the_class(folder, tmp_path):
    path = tmp_path / "runs.json"
    path.write_text(json.dumps([dict(ROW, config={"replication_factor": 3, "auto_round_num_ipus": False})]))
    assert refusal([path]) == (
        f"Cannot calibrate on {path}, run 1: its IPU config: `auto_round_num_ipus=false` is invalid: the training "
        "build asks for `replication_factor=3` x `ipus_per_replica=1` = 3 IPUs in one process, and poptorch reserves "
        "only a power of two unless `auto_round_num_ipus` is true: make it true (it reserves 4, 1 idle), or use a "
        "number of IPUs that is a power of two.")


def test_a_calibration_calibrate_wrote_is_read_again_as_its_runs(folder, tmp_path):
    [run] = read_measured_runs([str(folder)], Facts(sequence_length=512))
    from optimum_ipu_ext.config.user_calibration import run_row

    path = tmp_path / "calibration.json"
    path.write_text(json.dumps({"written_by": "ipu-config calibrate", "runs": 1, "measured_runs": [run_row(run)]}))
    assert read_measured_runs([str(path)]) == [run]


@pytest.mark.parametrize("field, value, allowed", [
    ("name", 5, "a name for the run"),
    ("config", 5, "an ipu_config.json or its folder, relative to the runs file, a preset, or (JSON) the settings as "
                  "an object"),
    ("model", [1], "a folder holding config.json (or the file), relative to the runs file, a Hub model id, or (JSON) "
                   "the config.json values as an object"),
])
def test_a_json_row_s_field_of_the_wrong_kind_is_refused(folder, tmp_path, field, value, allowed):
    path = tmp_path / "runs.json"
    path.write_text(json.dumps([dict(ROW, **{field: value})]))
    assert refusal([path]) == (f"Cannot calibrate on {path}, run 1: `{field}={json.dumps(value)}` is invalid: "
                               f"{allowed}.")


def test_folders_and_runs_files_are_read_in_order(folder, tmp_path):
    path = csv_file(tmp_path / "runs.csv", [ROW])
    runs = read_measured_runs([str(folder), str(path), str(folder / "..") + "/bert-base"], Facts(sequence_length=512))
    assert [run.name for run in runs] == [str(folder), "mine", str(folder / "..") + "/bert-base"]


def test_what_is_not_a_json_object_is_shown_in_its_first_40_characters(folder, tmp_path):
    long = list(range(30))
    (folder / "ipu_run.json").write_text(json.dumps(long))
    assert refusal([folder]) == f"Cannot calibrate on {folder}: ipu_run.json holds {json.dumps(long)[:40]}, not a " \
                                "JSON object."
    path = tmp_path / "runs.json"
    path.write_text(json.dumps([long]))
    assert refusal([path]) == f"Cannot calibrate on {path}, run 1: is {json.dumps(long)[:40]}, not a JSON object."


@pytest.fixture
def bare(tmp_path):
    """A copy of Graphcore/bert-base-uncased's output folder without its IPU config and its model's config.json."""
    bare = Path(shutil.copytree(BERT_BASE, tmp_path / "bare"))
    shutil.copyfile(bare / "ipu_config.json", tmp_path / "its_ipu_config.json")
    shutil.copyfile(bare / "config.json", tmp_path / "its_config.json")
    (bare / "ipu_config.json").unlink()
    (bare / "config.json").unlink()
    return bare


def test_a_row_gives_an_output_folder_the_config_and_the_model_it_does_not_hold(folder, bare, tmp_path):
    [expected] = read_measured_runs([str(folder)], Facts(sequence_length=512))
    path = tmp_path / "runs.json"
    path.write_text(json.dumps([{"folder": "bare", "config": "its_ipu_config.json", "model": "its_config.json",
                                 "sequence_length": 512, "build": "training"}]))
    [run] = read_measured_runs([str(path)])
    assert run == expected._replace(name=str(path.parent / "bare"), source=f"{bare}: train_results.json "
                                    "(train_samples_per_second 2409.431)")
    path.write_text(json.dumps([{"folder": "bare", "config": {"replication_factor": 0}, "model": "its_config.json"}]))
    assert refusal([path]) == (f"Cannot calibrate on {path}, run 1: its IPU config: `replication_factor=0` is "
                               "invalid: numbers must be from 1 to 65536.")


def test_an_absolute_folder_is_named_as_given(bare, tmp_path):
    path = tmp_path / "runs.json"
    path.write_text(json.dumps([{"folder": str(bare), "config": str(tmp_path / "its_ipu_config.json"),
                                 "model": str(tmp_path / "its_config.json"), "sequence_length": 512}]))
    assert read_measured_runs([str(path)])[0].name == str(bare)


def test_a_micro_batch_is_read_from_figures_rounded_to_three_decimals(folder):
    """Half a thousandth of a step a second, over steps of a tenth: 0.5 % besides the half percent allowed."""
    (folder / "all_results.json").unlink()
    results = json.loads((folder / "train_results.json").read_text())
    for off, expected in ((1.0095, 8), (1.0105, None)):
        results.update(train_steps_per_second=0.1, train_samples_per_second=0.1 * 2048 * 8 * off)
        (folder / "train_results.json").write_text(json.dumps(results))
        if expected is None:
            assert "its micro-batch is not known" in refusal([folder], Facts(sequence_length=512))
        else:
            assert read_measured_runs([str(folder)], Facts(sequence_length=512))[0].micro_batch_size == expected


def test_an_ipu_config_that_is_not_json_is_refused_as_the_class_refuses_it(folder):
    (folder / "ipu_config.json").write_text("{")
    assert refusal([folder], Facts(sequence_length=512)) == (
        f"Cannot calibrate on {folder}: its IPU config (ipu_config.json): Cannot load the IPU config file "
        f"'{folder}/ipu_config.json': not valid JSON (Expecting property name enclosed in double quotes: line 1 "
        "column 2 (char 1)).")


def test_a_row_without_a_micro_batch_is_named(folder, tmp_path):
    path = csv_file(tmp_path / "runs.csv", [{key: value for key, value in ROW.items() if key != "micro_batch_size"}])
    assert refusal([path]) == (f"Cannot calibrate on {path}, line 2: its micro-batch is not known: give "
                               "--micro-batch-size (or, in a runs file, micro_batch_size).")


def test_a_config_is_a_path_beside_the_runs_file_before_a_preset(folder, tmp_path):
    local = tmp_path / "pipelined-2ipu"
    shutil.copytree(folder, local)
    path = csv_file(tmp_path / "runs.csv", [dict(ROW, config="pipelined-2ipu")])
    assert read_measured_runs([str(path)])[0].ipu_config["gradient_accumulation_steps"] == 512  # not the preset's
    path = csv_file(tmp_path / "runs.csv", [dict(ROW, config="no-such-preset")])
    assert refusal([path]) == (f"Cannot calibrate on {path}, line 2: its IPU config (no-such-preset): no "
                               "ipu_config.json.")


def test_a_model_that_is_no_path_is_a_hub_model_id(tmp_path):
    """Offline, the Hub client says the model is not cached: the id is the one the row gives."""
    import subprocess
    import sys

    path = tmp_path / "runs.csv"
    path.write_text("config,model,micro_batch_size,sequence_length,samples_per_second\n"
                    "pipelined-2ipu,no-such-org/no-such-model,4,128,900\n")
    code = ("import sys\n"
            "from optimum_ipu_ext.config.measured_runs import read_measured_runs\n"
            "from optimum_ipu_ext.errors import MeasuredRunError\n"
            "try:\n"
            f"    read_measured_runs([{str(path)!r}])\n"
            "except MeasuredRunError as error:\n"
            "    print(error)\n")
    environment = dict(os.environ, HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf"))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment, timeout=300)
    assert result.stdout.startswith(f"Cannot calibrate on {path}, line 2: its model: Cannot ")
    assert "'no-such-org/no-such-model'" in result.stdout


def test_a_row_s_model_is_a_path_beside_the_runs_file_or_one_that_looks_like_one_else_a_hub_id(tmp_path):
    from optimum_ipu_ext.config.measured_runs import _model_path

    (tmp_path / "bert").mkdir()
    assert _model_path(str(tmp_path), "bert") == str(tmp_path / "bert")
    assert _model_path(str(tmp_path), "./gone") == os.path.join(str(tmp_path), "./gone")
    assert _model_path(str(tmp_path), str(tmp_path / "elsewhere")) == str(tmp_path / "elsewhere")
    assert _model_path(str(tmp_path), "my-org/bert") == "my-org/bert"


def test_a_config_a_row_gives_a_folder_that_cannot_be_read_names_the_row(bare, tmp_path):
    path = tmp_path / "runs.json"
    path.write_text(json.dumps([{"folder": "bare", "config": "gone.json", "model": "its_config.json"}]))
    assert refusal([path]) == f"Cannot calibrate on {path}, run 1: its IPU config (gone.json): no ipu_config.json."


@pytest.mark.parametrize("name, message", [
    ("runs.json", "runs.json cannot be read (Permission denied)"),
    ("runs.csv", "cannot be read ([Errno 13] Permission denied: '{path}')"),
])
def test_a_runs_file_that_cannot_be_read_is_refused_with_the_system_s_reason(tmp_path, monkeypatch, name, message):
    path = tmp_path / name
    path.write_text("[]")

    def refused(file, *args, **kwargs):  # what open() raises for a file without read permission (root reads any)
        raise PermissionError(13, "Permission denied", file)

    from optimum_ipu_ext.config import measured_runs

    monkeypatch.setattr(measured_runs, "open", refused, raising=False)
    assert refusal([path]) == f"Cannot calibrate on {path}: {message.format(path=path)}."


class _Touch:
    """Unpickled, it creates the file `path`: a training_args.bin that says whether anything unpickled it."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return open, (self.path, "w")


def test_a_folder_s_pickles_and_weights_are_never_loaded(folder, tmp_path):
    """IPUTrainer's folder also holds training_args.bin (a pickle) and the weights: a run is read from its JSON files
    alone, the same with them as without, and nothing unpickles the pickle."""
    import pickle

    [without] = read_measured_runs([str(folder)], Facts(sequence_length=512))
    marker = tmp_path / "unpickled"
    (folder / "training_args.bin").write_bytes(pickle.dumps(_Touch(str(marker))))
    (folder / "pytorch_model.bin").write_bytes(pickle.dumps(_Touch(str(marker))))
    (folder / "model.safetensors").write_bytes(b"not a checkpoint")
    assert read_measured_runs([str(folder)], Facts(sequence_length=512)) == [without]
    assert not marker.exists()
    pickle.loads((folder / "training_args.bin").read_bytes()).close()  # the marker works: unpickled, it is made
    assert marker.exists()
