"""`ipu-config export` writes a config's build as a poptorch option file; `ipu-config import FILE` reads one (or a
builder for one build and a file for the other) into a config. Refusals are one line each, naming the file and
the line; a builder that fails on the namespace it was given says to pass `--kwarg`."""

import json
import pickle

import pytest

from optimum_ipu_ext import PlainIPUConfig
from support.builders import BUILDER
from support.cli_helpers import run, run_alone
from support.doubles import installed
from support.expected_states import differences
from support.option_file_helpers import EXAMPLE, PRESETS, built, loaded

PRESET = str(PRESETS[0])


def saved(folder):
    return json.loads((folder / "ipu_config.json").read_text())


def test_export_writes_the_file_the_api_writes(capsys, tmp_path):
    code, out, err = run(capsys, "export", PRESET, "-o", tmp_path / "train.cfg")
    assert (code, err) == (0, "")
    assert out == (
        f"Wrote {tmp_path / 'train.cfg'}: the training build of {PRESET}, for poptorch.Options().loadFromFile\n"
    )
    PlainIPUConfig.from_json_file(PRESET).to_options_file(tmp_path / "api.cfg", name=PRESET)
    assert (tmp_path / "train.cfg").read_text() == (tmp_path / "api.cfg").read_text()


def test_export_writes_the_inference_build_with_settings_set(capsys, tmp_path):
    code, out, _ = run(capsys, "export", PRESET, "--output", tmp_path / "infer.cfg", "--inference",
                       "--set", "inference_replication_factor=4", "--set", "inference_device_iterations=16")
    assert code == 0 and "the inference build of" in out
    config = PlainIPUConfig.from_json_file(PRESET, inference_replication_factor=4, inference_device_iterations=16)
    assert differences(loaded("inference", tmp_path / "infer.cfg"), built(config, "inference")) == {}
    assert (tmp_path / "infer.cfg").read_text().startswith("# poptorch options for inference, from the IPU config")


def test_export_keeps_an_existing_file_unless_forced(capsys, tmp_path):
    (tmp_path / "run.cfg").write_text("deviceIterations(4)\n")
    code, out, err = run(capsys, "export", PRESET, "-o", tmp_path / "run.cfg")
    exists = f"ipu-config: error: {tmp_path / 'run.cfg'}: exists; pass --force to overwrite it\n"
    assert (code, out, err) == (1, "", exists)
    assert (tmp_path / "run.cfg").read_text() == "deviceIterations(4)\n"
    code, _, _ = run(capsys, "export", PRESET, "-o", tmp_path / "run.cfg", "--force")
    assert code == 0 and "Training.gradientAccumulation(128)" in (tmp_path / "run.cfg").read_text()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["missing.json"], "Cannot load the IPU config file 'missing.json': no such file or directory."),
        ([PRESET, "--set", "replication_factor=0"],
         "--set: `replication_factor=0` is invalid: numbers must be from 1 to 65536."),
    ],
)
def test_export_of_what_cannot_be_loaded_is_one_error_and_writes_nothing(capsys, tmp_path, argv, message):
    code, out, err = run(capsys, "export", *argv, "-o", tmp_path / "run.cfg")
    assert (code, out, err) == (1, "", f"ipu-config: error: {message}\n")
    assert not (tmp_path / "run.cfg").exists()


def test_export_needs_an_output(capsys):
    code, _, err = run(capsys, "export", PRESET)
    assert code == 2 and "-o/--output" in err


def test_export_and_the_import_of_a_file_need_neither_torch_nor_transformers(tmp_path):
    assert run_alone("export", PRESET, "-o", tmp_path / "run.cfg") == "0 []"
    assert run_alone("import", EXAMPLE, tmp_path / "out") == "0 []"


def test_import_of_exported_files_writes_the_config_back(capsys, tmp_path):
    run(capsys, "export", PRESET, "-o", tmp_path / "train.cfg")
    run(capsys, "export", PRESET, "-o", tmp_path / "infer.cfg", "--inference")
    code, out, err = run(capsys, "import", tmp_path / "train.cfg", tmp_path / "out",
                         "--inference", tmp_path / "infer.cfg",
                         "--set", "layers_per_ipu=[-1 -1]", "--set", "replicated_tensor_sharding=true")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == (f"Imported {tmp_path / 'train.cfg'} (training) and {tmp_path / 'infer.cfg'} (inference), "
                        "run on the recorder (no Poplar SDK here)")
    assert lines[-1] == f"Wrote {tmp_path / 'out' / 'ipu_config.json'}"
    assert PlainIPUConfig.from_json_file(tmp_path / "out" / "ipu_config.json").settings_dict() == \
        PlainIPUConfig.from_json_file(PRESET).settings_dict()


def test_import_reads_a_file_on_the_poptorch_in_use_too(capsys, tmp_path):
    run(capsys, "import", EXAMPLE, tmp_path / "recorded")
    with installed():
        code, out, err = run(capsys, "import", EXAMPLE, tmp_path / "real")
    assert (code, err) == (0, "") and out.splitlines()[0] == f"Imported {EXAMPLE} (training), run on poptorch"
    assert saved(tmp_path / "real") == saved(tmp_path / "recorded")
    assert saved(tmp_path / "real")["num_io_tiles"] == 64


def test_import_takes_a_builder_for_one_build_and_a_file_for_the_other(capsys, tmp_path):
    inference = tmp_path / "infer.cfg"
    inference.write_text("replicationFactor(2)\ndeviceIterations(4)\n"
                         "setExecutionStrategy(poptorch.ShardedExecution(poptorch.AutoStage.SameAsIpu))\n"
                         'setAvailableMemoryProportion({"IPU0": 0.15, "IPU1": 0.25})\n'
                         "TensorLocations.setOptimizerLocation(poptorch.TensorLocationSettings().useOnChipStorage(True)"
                         ".useReplicatedTensorSharding(True))\nautoRoundNumIPUs(True)\n"
                         "enableExecutableCaching('exec')\nrandomSeed(1234)\n"
                         "_Popart.set('autoRecomputation', 3)\n_Popart.set('decomposeGradSum', True)\n"
                         "outputMode(poptorch.OutputMode.All)\n")
    code, out, err = run(capsys, "import", f"{BUILDER}:get_options", tmp_path / "out", "--inference", inference,
                         "--arg", "replicas=2", "--arg", "accumulation=16", "--arg", "offchip=false",
                         "--arg", "seed=1234", "--arg", "cache=exec")
    assert (code, err) == (0, ""), err
    assert out.splitlines()[0].startswith(f"Imported {BUILDER}:get_options (training) and {inference} (inference)")
    config = PlainIPUConfig.from_json_file(tmp_path / "out" / "ipu_config.json")
    assert (config.gradient_accumulation_steps, config.inference_device_iterations) == (16, 4)
    assert (config.execution_strategy, config.inference_execution_strategy) == (None, "sharded")


def test_arguments_for_a_builder_with_files_only_are_a_usage_error(capsys, tmp_path):
    code, _, err = run(capsys, "import", EXAMPLE, tmp_path, "--arg", "replicas=4")
    assert code == 2
    assert "--arg and --kwarg are passed to a builder (PATH.py:FUNCTION); an option file takes none" in err


def test_a_line_poptorch_refuses_is_one_error_naming_file_and_line(capsys, tmp_path):
    path = tmp_path / "run.cfg"
    path.write_text("deviceIterations(4)\n\n# the replicas\nreplicationFactr(2)\n")
    code, out, err = run(capsys, "import", path, tmp_path / "out")
    assert (code, out) == (1, "")
    assert err == (f"ipu-config: error: Cannot read the poptorch options of {path}, line 4 (`replicationFactr(2)`): "
                   "AttributeError: Invalid attribute replicationFactr.\n")
    assert not (tmp_path / "out").exists()


def test_a_missing_file_is_one_error(capsys, tmp_path):
    code, _, err = run(capsys, "import", tmp_path / "run.cfg", tmp_path / "out")
    assert (code, err) == (1, f"ipu-config: error: Cannot read the poptorch options of {tmp_path / 'run.cfg'}: "
                              "no such file or directory.\n")


def test_options_no_config_rebuilds_are_listed_with_their_lines(capsys, tmp_path):
    training, inference = tmp_path / "train.cfg", tmp_path / "infer.cfg"
    training.write_text('deviceIterations(4)\nlogDir("/logs")\n_Popart.set("customCodelets", None)\n')
    inference.write_text("# as in training, but\nTraining.gradientAccumulation(8)\n")
    code, out, err = run(capsys, "import", training, tmp_path / "out", "--inference", inference)
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        f"ipu-config: error: no IPU config rebuilds these options of {training} (training) and {inference} "
        "(inference):",
        f"  {inference}, line 2: Training.gradientAccumulation (gradient_accumulation) (inference): "
        "8 given, 1 rebuilt",
        f"  {training}, line 3: customCodelets (training): None: values must be what PopART options take: booleans, "
        "finite numbers, strings, unsigned integers, and lists or objects of strings and unsigned integers",
        f"  {training}, line 2: logDir (log_dir) (training): '/logs' given: where one run writes its logs",
    ]
    assert not (tmp_path / "out").exists()


# --- a builder that fails on the namespace it was given (issue 18: the README's example) ----------------------

README_BUILDER = '''\
import poptorch


def get_options(replicas):
    opts = poptorch.Options()
    opts.replicationFactor(replicas)
    opts.Training.gradientAccumulation(16)
    return opts
'''


def test_a_builder_failing_on_a_namespace_of_its_parameters_says_to_use_kwarg(capsys, tmp_path, monkeypatch):
    (tmp_path / "builder.py").write_text(README_BUILDER)
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "import", "builder.py:get_options", "imported/", "--arg", "replicas=4")
    assert (code, out) == (1, "")
    assert err == (
        "ipu-config: error: builder.py:get_options raised AssertionError: Unexpected type "
        "<class 'optimum_ipu_ext.recorder.namespace.Namespace'> for option replication_factor. "
        "Expected <class 'int'>; "
        "it was given an argparse.Namespace as its first argument (--arg) and read none of its attributes: pass its "
        "parameters with --kwarg NAME=VALUE, here --kwarg replicas=4\n"
    )
    code, _, err = run(capsys, "import", "builder.py:get_options", "imported/", "--kwarg", "replicas=4")
    assert (code, err) == (0, "")
    assert saved(tmp_path / "imported")["replication_factor"] == 4


def test_a_builder_given_an_empty_namespace_it_does_not_read_says_to_use_kwarg(capsys, tmp_path, monkeypatch):
    (tmp_path / "builder.py").write_text(README_BUILDER)
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "import", "builder.py:get_options", "imported/")
    assert (code, out) == (1, "")
    assert err.endswith("Expected <class 'int'>; it was given an argparse.Namespace as its first argument and read "
                        "none of its attributes: pass its parameters with --kwarg NAME=VALUE (it takes replicas)\n")


@pytest.mark.parametrize("body", ["raise KeyError(name)", "return None", "return 1 / 0"])
def test_any_failure_of_a_builder_that_reads_no_attribute_says_to_use_kwarg(capsys, tmp_path, body):
    signature = "name, *more, replicas=1, cache=None, **others"
    (tmp_path / "builder.py").write_text(f"def get_options({signature}):\n    {body}\n")
    code, _, err = run(capsys, "import", f"{tmp_path / 'builder.py'}:get_options", tmp_path / "out",
                       "--arg", "other=1")
    assert code == 1
    assert err.endswith("it was given an argparse.Namespace as its first argument (--arg) and read none of its "
                        "attributes: pass its parameters with --kwarg NAME=VALUE (it takes name, replicas, cache)\n")


def test_the_suggestion_keeps_each_value_as_typed(capsys, tmp_path):
    (tmp_path / "builder.py").write_text("def get_options(name, replicas=1, cache=None):\n    raise KeyError(name)\n")
    code, _, err = run(capsys, "import", f"{tmp_path / 'builder.py'}:get_options", tmp_path / "out",
                       "--arg", "name=bert-large", "--arg", 'cache="4"', "--arg", "replicas=4", "--arg", "other=1")
    assert code == 1
    assert err.endswith("pass its parameters with --kwarg NAME=VALUE, here --kwarg name=bert-large "
                        "--kwarg cache=\"4\" --kwarg replicas=4\n")


@pytest.mark.parametrize("arguments", [["--arg", "replicas=2"], []])
def test_a_builder_that_reads_its_namespace_gets_no_suggestion(capsys, tmp_path, arguments):
    code, _, err = run(capsys, "import", f"{BUILDER}:get_options", tmp_path, *arguments)
    missing = "accumulation" if arguments else "replicas"
    assert code == 1 and err == (f"ipu-config: error: {BUILDER}:get_options raised AttributeError: 'Namespace' object "
                                 f"has no attribute '{missing}'\n")


def test_a_builder_reading_its_namespace_with_hasattr_gets_no_suggestion(capsys, tmp_path):
    (tmp_path / "builder.py").write_text("def get_options(args):\n"
                                         "    hasattr(args, 'replicas')\n"
                                         "    raise KeyError(1)\n")
    code, _, err = run(capsys, "import", f"{tmp_path / 'builder.py'}:get_options", tmp_path / "out")
    assert (code, err) == (1, f"ipu-config: error: {tmp_path / 'builder.py'}:get_options raised KeyError: 1\n")


def test_the_namespace_holds_the_arguments_only():
    from optimum_ipu_ext.recorder.namespace import Namespace

    namespace = Namespace(replicas=4)
    assert (vars(namespace), namespace.attributes_read) == ({"replicas": 4}, False)
    assert (repr(namespace), namespace == Namespace(replicas=4), namespace.attributes_read) == (
        "Namespace(replicas=4)", True, False)
    assert (namespace.replicas, namespace.attributes_read) == (4, True)


def test_run_builder_says_the_same_in_the_terms_of_its_arguments(tmp_path):
    from optimum_ipu_ext import BuilderError
    from optimum_ipu_ext.recorder import run_builder, sdk_modules

    (tmp_path / "builder.py").write_text(README_BUILDER)
    with sdk_modules(), pytest.raises(BuilderError) as raised:
        run_builder(str(tmp_path / "builder.py"), "get_options", args={"replicas": 4, "other": 1})
    error = raised.value
    assert error.parameters == ("replicas",)
    assert str(error).endswith("Expected <class 'int'>; it was given an argparse.Namespace as its first argument and "
                               "read none of its attributes: give its parameters (replicas) in `kwargs`")
    assert pickle.loads(pickle.dumps(error)).parameters == ("replicas",)
    with sdk_modules(), pytest.raises(BuilderError) as raised:
        run_builder(BUILDER, "get_options", args={"replicas": 4})
    assert raised.value.parameters == () and "argparse.Namespace" not in str(raised.value)
