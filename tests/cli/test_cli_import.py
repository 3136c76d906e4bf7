"""`ipu-config import`: a hand-written builder (tests/support/builders/recorded/) runs on the recorder, or on the
poptorch in use (here the doubles), and the config that rebuilds its options is written; bad builders, bad arguments
and options no config rebuilds are one clear error each."""

import argparse
import json
import sys

import pytest

from optimum_ipu_ext import BuilderError, PlainIPUConfig
from optimum_ipu_ext.cli.arguments import import_source, named_value
from optimum_ipu_ext.recorder import run_builder, sdk_modules
from support.builders import BUILDER
from support.cli_helpers import run, run_alone
from support.doubles import installed

ARGS = ["--arg", "replicas=2", "--arg", "accumulation=16", "--arg", "offchip=false", "--arg", "seed=1234",
        "--arg", "cache=exec"]
ARG_VALUES = {"replicas": 2, "accumulation": 16, "offchip": False, "seed": 1234, "cache": "exec"}  # ARGS, read
FULL_IMPORT = [f"{BUILDER}:get_options", *ARGS, "--inference", f"{BUILDER}:get_inference_options",
               "--kwarg", "device_iterations=8", "--set", "layers_per_ipu=[3 5]"]

# settings the builder's calls tell, written out (`offchip=false` read as JSON: on-chip optimizer state)
IMPORTED = {
    "replication_factor": 2,
    "inference_replication_factor": 2,
    "gradient_accumulation_steps": 16,
    "device_iterations": 8,
    "inference_device_iterations": 8,
    "accumulation_and_replication_reduction_type": "sum",
    "execution_strategy": None,  # poptorch's default pipeline, staged by IPU, which the builder names
    "inference_execution_strategy": "sharded",
    "auto_stage": "same_as_ipu",
    "ipus_per_replica": 2,
    "matmul_proportion": [0.15, 0.25],
    "layers_per_ipu": [3, 5],
    "optimizer_state_offchip": False,
    "replicated_tensor_sharding": True,
    "seed": 1234,
    "executable_cache_dir": "exec",
    "recomputation_mode": "pipeline",
    "popart_options": {"decomposeGradSum": True},
}


def saved(folder):
    return json.loads((folder / "ipu_config.json").read_text())


def test_import_writes_the_config_the_builders_options_import_into(capsys, tmp_path):
    code, out, err = run(capsys, "import", *FULL_IMPORT[:1], tmp_path, *FULL_IMPORT[1:])
    assert (code, err) == (0, ""), err
    written = PlainIPUConfig.from_json_file(str(tmp_path / "ipu_config.json"))
    assert {name: getattr(written, name) for name in IMPORTED} == IMPORTED
    with installed(popdist_environment={}):  # the same builders on the doubles, imported in Python
        options = {mode: run_builder(BUILDER, function, ARG_VALUES, {"device_iterations": 8})
                   for mode, function in (("training", "get_options"), ("inference", "get_inference_options"))}
        expected = PlainIPUConfig.from_options(**options, layers_per_ipu=[3, 5])
    assert written.settings_dict() == expected.settings_dict()
    lines = out.splitlines()
    assert lines[0] == (f"Imported {BUILDER}:get_options (training) and {BUILDER}:get_inference_options (inference), "
                        "run on the recorder (no Poplar SDK here)")
    differing = expected.non_default_settings()
    assert lines[2] == f"Differs from optimum-graphcore's defaults ({len(differing)})"
    assert [line.split()[0] for line in lines[3:3 + len(differing)]] == list(differing)
    assert "  replication_factor " in out and lines[-1] == f"Wrote {tmp_path / 'ipu_config.json'}"


def test_import_uses_the_poptorch_in_use_where_there_is_one(capsys, tmp_path):
    run(capsys, "import", *FULL_IMPORT[:1], tmp_path / "recorded", *FULL_IMPORT[1:])
    with installed(popdist_environment={}):  # the builder imports popdist, which the SDK has
        code, out, err = run(capsys, "import", *FULL_IMPORT[:1], tmp_path / "real", *FULL_IMPORT[1:])
    assert (code, err) == (0, "")
    assert out.splitlines()[0].endswith("run on poptorch")
    assert saved(tmp_path / "real") == saved(tmp_path / "recorded")


def test_the_builders_folder_is_importable_while_it_runs_only(capsys, tmp_path):
    path, modules = list(sys.path), set(sys.modules)
    code, _, err = run(capsys, "import", f"{BUILDER}:get_default_options", tmp_path)
    assert (code, err) == (0, "")
    assert sys.path == path
    assert not {"options_builder", "pipeline_layout", "poptorch", "popart", "popdist"} & set(sys.modules)
    assert set(sys.modules) - modules <= {name for name in sys.modules if name.startswith("optimum_ipu_ext")}


def test_a_builder_without_parameters_gets_no_namespace_and_one_with_gets_an_empty_one(capsys, tmp_path):
    code, _, err = run(capsys, "import", f"{BUILDER}:get_default_options", tmp_path)
    assert (code, err, saved(tmp_path)["seed"]) == (0, "", 7)
    code, out, err = run(capsys, "import", f"{BUILDER}:get_options", tmp_path / "other")
    assert (code, out) == (1, "")
    assert err == (f"ipu-config: error: {BUILDER}:get_options raised AttributeError: "
                   "'Namespace' object has no attribute 'replicas'\n")


@pytest.mark.parametrize(
    "spec, extra, problem",
    [
        ("get_default_options", ["--arg", "replicas=1"], "cannot take these arguments: too many positional arguments"),
        ("get_options", [*ARGS, "--kwarg", "stages=2"],
         "cannot take these arguments: got an unexpected keyword argument 'stages'"),
        ("get_settings", ARGS, "returned dict, not poptorch.Options"),
        ("get_option", ARGS, f"cannot be called: {BUILDER} has no function 'get_option'"),
        ("MEMORY_PROPORTIONS", ARGS, f"cannot be called: {BUILDER} has no function 'MEMORY_PROPORTIONS'"),
    ],
)
def test_a_builder_that_cannot_run_or_returns_no_options_is_one_error(capsys, tmp_path, spec, extra, problem):
    code, out, err = run(capsys, "import", f"{BUILDER}:{spec}", tmp_path, *extra)
    assert (code, out, err) == (1, "", f"ipu-config: error: {BUILDER}:{spec} {problem}\n")
    assert not (tmp_path / "ipu_config.json").exists()


def test_a_missing_builder_file_is_one_error(capsys, tmp_path):
    missing = tmp_path / "missing.py"
    code, _, err = run(capsys, "import", f"{missing}:get_options", tmp_path)
    assert (code, err) == (
        1, f"ipu-config: error: {missing}:get_options cannot be loaded: {missing}: no such file or directory\n"
    )


def test_a_builder_failing_as_it_loads_is_one_error(capsys, tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("import poptorch\nimport a_module_nobody_has\n")
    code, _, err = run(capsys, "import", f"{broken}:get_options", tmp_path)
    assert (code, err) == (1, f"ipu-config: error: {broken}:get_options raised ModuleNotFoundError while loading: "
                              "No module named 'a_module_nobody_has'\n")


def test_options_no_config_rebuilds_exit_1_naming_each(capsys, tmp_path):
    code, out, err = run(capsys, "import", f"{BUILDER}:get_options_logging_to", tmp_path, *ARGS)
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        f"ipu-config: error: no IPU config rebuilds these options of {BUILDER}:get_options_logging_to (training):",
        "  logDir (log_dir): '/logs' given: where one run writes its logs",
    ]
    assert not (tmp_path / "ipu_config.json").exists()


def test_an_existing_config_is_kept_unless_forced(capsys, tmp_path):
    (tmp_path / "ipu_config.json").write_text('{"replication_factor": 4}')
    code, out, err = run(capsys, "import", f"{BUILDER}:get_default_options", tmp_path)
    assert (code, out) == (1, "")
    assert err == f"ipu-config: error: {tmp_path / 'ipu_config.json'}: exists; pass --force to overwrite it\n"
    assert saved(tmp_path) == {"replication_factor": 4}
    code, _, _ = run(capsys, "import", f"{BUILDER}:get_default_options", tmp_path, "--force")
    assert code == 0 and saved(tmp_path)["replication_factor"] == 2


@pytest.mark.parametrize(
    "text, parsed",
    [("replicas=4", ("replicas", 4)), ("ratio=0.5", ("ratio", 0.5)), ("on=true", ("on", True)),
     ("none=null", ("none", None)), ("ipus=[1, 2]", ("ipus", [1, 2])), ('name="4"', ("name", "4")),
     ("name=bert-large", ("name", "bert-large")), ("expr=a=b", ("expr", "a=b")), ("empty=", ("empty", "")),
     ("config={\"a\": 1}", ("config", {"a": 1}))],
)
def test_arg_values_are_json_else_text(text, parsed):
    assert named_value(text) == parsed


@pytest.mark.parametrize("text", ["=4", "4th=1", "replicas", "two words=1"])
def test_an_arg_without_a_python_name_is_a_usage_error(capsys, tmp_path, text):
    with pytest.raises(argparse.ArgumentTypeError):
        named_value(text)
    code, _, err = run(capsys, "import", f"{BUILDER}:get_options", tmp_path, "--arg", text)
    assert code == 2 and "NAME=VALUE" in err


@pytest.mark.parametrize(
    "text, parsed",
    [("b.py:get_options", ("b.py", "get_options")), ("C:/b.py:f", ("C:/b.py", "f")), ("b.py: f ", ("b.py", "f")),
     ("ipu.config", ("ipu.config", None)), ("C:\\x\\ipu.cfg", ("C:\\x\\ipu.cfg", None)), (":f", (":f", None)),
     ("a.py.cfg", ("a.py.cfg", None)), ("opts:get_options", ("opts:get_options", None))],
)
def test_a_builder_is_path_py_colon_function_and_anything_else_an_option_file(text, parsed):
    assert import_source(text) == parsed


@pytest.mark.parametrize("text", ["b.py", "b.py:", " b.py ", "b.py:get-options"])
def test_a_python_file_without_a_function_is_a_usage_error(capsys, tmp_path, text):
    code, _, err = run(capsys, "import", text, tmp_path)
    assert code == 2 and "PATH.py:FUNCTION" in err


def test_run_builder_raises_a_builder_error_naming_the_builder():
    with sdk_modules(), pytest.raises(BuilderError) as raised:
        run_builder(BUILDER, "get_settings", {"replicas": 1})
    assert (raised.value.builder, raised.value.problem) == (
        f"{BUILDER}:get_settings", "returned dict, not poptorch.Options"
    )


def test_import_needs_neither_torch_nor_transformers(tmp_path):
    assert run_alone("import", *FULL_IMPORT[:1], tmp_path, *FULL_IMPORT[1:]) == "0 []"
    assert saved(tmp_path)["replication_factor"] == 2


def test_what_the_import_drops_is_a_warning(capsys, tmp_path):
    code, _, err = run(capsys, "import", f"{BUILDER}:get_default_options", tmp_path, "--set", "ipus_per_replica=1")
    assert (code, err) == (0, "ipu-config: warning: from_options() could not read, and dropped: the training memory "
                              "proportions of IPU1, beyond the 1 IPUs per replica given\n")
    assert saved(tmp_path)["matmul_proportion"] == 0.15


def test_an_invalid_set_is_one_error(capsys, tmp_path):
    code, out, err = run(capsys, "import", f"{BUILDER}:get_default_options", tmp_path, "--set", "replication_factor=0")
    assert (code, out) == (1, "")
    assert err.startswith("ipu-config: error: ") and "replication_factor" in err and err.count("\n") == 1
