"""`ipu-config`: driven through its entry point, in-process (`main` with captured streams) and as the installed
console script (a subprocess), against files and the local Hub server."""

import io
import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

from optimum_ipu_ext import IPUConfig
from optimum_ipu_ext.cli.output import Stream
from optimum_ipu_ext.cli.reports import reserved_ipus_shown
from optimum_ipu_ext.settings.sources import presets
from support import PRESET
from support.builds import UPSTREAM_CONFIGS
from support.cli_helpers import run
from support.expected_states import PRESET_TRAINING_PLAN, preset_training_plan_data
from support.hub_fixtures import hub_env

SCRIPT = str(Path(sys.executable).with_name("ipu-config"))
CONFIGS = Path(PRESET).parent

SHOW_PRESET = """\
{source} (training)

Pipeline
  IPUs per replica            2
  layers per IPU              [-1, -1]  (-1: the remaining layers, spread evenly)
  memory proportion per IPU   IPU0=0.1, IPU1=0.1
  execution                   pipelined, stages auto_increment

Replication
  replicas                    1
  total IPUs                  2
  combined batch-size factor  128  (replication_factor 1 x gradient_accumulation_steps 128 x device_iterations 1)

Precision and recomputation
  matmul/conv partials        float32
  stochastic rounding         on
  recomputation               pipeline
  checkpoint every layer      off

Optimizer state
  placement                   on chip
  sharding across replicas    off  (requested, unused with 1 replica)

Differs from optimum-graphcore's defaults (16)
  gradient_accumulation_steps  128  (default 1)
  layers_per_ipu               [-1, -1]  (default [-1])
  inference_layers_per_ipu     [-1, -1]  (default [-1])
  ipus_per_replica             2  (default 1)
  inference_ipus_per_replica   2  (default 1)
  replicated_tensor_sharding   true  (default false)
  matmul_proportion            0.1  (default 0.2)
  inference_matmul_proportion  0.1  (default 0.2)
  enable_half_partials         false  (default true)
  output_mode                  "all"  (default "final")
  seed                         1234  (default null)
  executable_cache_dir         "exec"  (default "")
  save_initializers_to_file    false  (default true)
  recomputation_mode           "pipeline"  (default null)
  subgraph_copying_strategy    null  (default "just_in_time")
  engine_options               null  (default {{"opt.useAutoloader": "true", \
"target.syncReplicasIndependently": "true"}})

Options: the calls to_options() makes
{plan}
"""


NULLS = {"matmul_proportion": None, "stochastic_rounding": None, "optimizer_state_offchip": None,
         "optimizer_location": {"useOnChipStorage": False}}


def test_show_says_which_calls_a_config_leaves_to_poptorch(capsys, tmp_path):
    path = tmp_path / "ipu_config.json"
    path.write_text(json.dumps(NULLS))
    code, out, err = run(capsys, "show", path)
    assert (code, err) == (0, "")
    assert "  memory proportion per IPU   not set  (poptorch's default)\n" in out
    assert "  stochastic rounding         not set  (PopART's default)\n" in out
    assert '  placement                   {"useOnChipStorage": false}  (TensorLocationSettings calls)\n' in out


def run_script(*argv, env=None, cwd=None):
    """The installed `ipu-config` console script, in a fresh process kept off the network."""
    full_env = dict(os.environ, HF_HUB_OFFLINE="1")
    full_env.update(env or {})
    return subprocess.run(
        [SCRIPT, *map(str, argv)], capture_output=True, text=True, env=full_env, cwd=cwd, timeout=120
    )


def run_on_terminal(*argv, env=None):
    """The console script with stdout and stderr on a pseudo-terminal: (exit code, what the terminal received)."""
    leader, follower = pty.openpty()
    full_env = {name: value for name, value in os.environ.items() if name != "NO_COLOR"}
    full_env.update(TERM="xterm", HF_HUB_OFFLINE="1")
    full_env.update(env or {})
    process = subprocess.Popen([SCRIPT, *map(str, argv)], stdout=follower, stderr=follower, env=full_env)
    os.close(follower)
    received = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the script exited and closed the terminal
            break
        if not chunk:
            break
        received += chunk
    os.close(leader)
    return process.wait(timeout=120), received.decode()


def assert_one_error(err, *words):
    """`err` holds one error line (after any warnings), naming each of `words`."""
    errors = [line for line in err.splitlines() if not line.startswith("ipu-config: warning: ")]
    assert len(errors) == 1 and errors[0].startswith("ipu-config: error: "), err
    for word in words:
        assert word in errors[0]


def write_config(folder, name="ipu_config.json", **settings):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps(settings))
    return path


# The command line


def test_console_script_is_installed_and_lists_the_commands():
    result = run_script("--help")
    assert result.returncode == 0, result.stderr
    for command in ("show", "validate", "diff", "new", "push", "pull"):
        assert f"\n    {command} " in result.stdout
    assert "1 invalid configuration" in result.stdout


@pytest.mark.parametrize("command", ["show", "validate", "diff", "new", "push", "pull"])
def test_every_command_has_help(capsys, command):
    code, out, _ = run(capsys, command, "--help")
    assert code == 0
    assert out.startswith(f"usage: ipu-config {command} ") and "--debug" in out


@pytest.mark.parametrize(
    "argv, words",
    [
        ([], ["required", "COMMAND"]),
        (["shwo", PRESET], ["invalid choice", "'shwo'"]),
        (["show"], ["SOURCE"]),
        (["show", PRESET, "--set", "replication_factor"], ["--set", "expected KEY=VALUE", "'replication_factor'"]),
        (["validate"], ["SOURCE"]),
        (["diff", PRESET], ["B"]),
        (["new", "pipelined-2ipu"], ["PRESET and OUT_DIR are required"]),
        (["new", "no-such-preset", "out"], ["unknown preset 'no-such-preset'", "pipelined-2ipu"]),
    ],
)
def test_usage_errors_exit_2(capsys, argv, words):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    for word in words:
        assert word in err


def test_errors_are_one_line_and_debug_shows_the_traceback(tmp_path):
    missing = tmp_path / "missing.json"
    result = run_script("show", missing)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr == (
        f"ipu-config: error: Cannot load the IPU config file '{missing}': no such file or directory.\n"
    )

    debugged = run_script("show", missing, "--debug")
    assert debugged.returncode == 1
    assert "Traceback (most recent call last)" in debugged.stderr and "ConfigFileError" in debugged.stderr
    assert debugged.stderr.endswith(result.stderr)


def test_output_is_plain_off_a_terminal_and_styled_on_one(tmp_path):
    piped = run_script("show", PRESET)
    assert piped.returncode == 0
    assert "\033[" not in piped.stdout + piped.stderr and "\r" not in piped.stdout

    code, received = run_on_terminal("show", PRESET)
    assert code == 0
    assert "\033[1mPipeline\033[0m" in received
    assert received.replace("\r\n", "\n").count("\n") == (piped.stdout + piped.stderr).count("\n")

    code, received = run_on_terminal("show", PRESET, env={"NO_COLOR": "1"})
    assert code == 0 and "\033[" not in received


def test_ctrl_c_exits_130_without_a_traceback(capsys, monkeypatch):
    from optimum_ipu_ext.cli.commands import show

    def interrupted(args, out, err):
        raise KeyboardInterrupt

    monkeypatch.setattr(show, "run", interrupted)
    assert run(capsys, "show", PRESET) == (130, "", "")


class Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize(
    "environment, styled",
    [({"TERM": "xterm"}, True), ({"TERM": "dumb"}, False), ({"TERM": "xterm", "NO_COLOR": ""}, False)],
    ids=["xterm", "dumb", "no-color"],
)
def test_styles_only_on_terminals_that_show_them(monkeypatch, environment, styled):
    monkeypatch.delenv("NO_COLOR", raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert Stream(Terminal()).style("Pipeline", "bold") == ("\033[1mPipeline\033[0m" if styled else "Pipeline")
    assert Stream(io.StringIO()).style("Pipeline", "bold") == "Pipeline"


def test_a_dumb_terminal_gets_plain_text():
    code, received = run_on_terminal("show", PRESET, env={"TERM": "dumb"})
    assert code == 0 and "\033[" not in received and "Pipeline" in received


# show


def test_show_prints_the_summary_then_the_options_as_python(capsys):
    code, out, err = run(capsys, "show", PRESET)
    assert code == 0
    assert out == SHOW_PRESET.format(source=PRESET, plan=PRESET_TRAINING_PLAN)
    assert err == ""  # the preset asks for sharding ready for more replicas: nothing to warn about


def test_show_json_is_the_same_summary(capsys):
    code, out, _ = run(capsys, "show", PRESET, "--json")
    assert code == 0
    data = json.loads(out)
    assert data["pipeline"] == {
        "ipus_per_replica": 2,
        "layers_per_ipu": [-1, -1],
        "memory_proportion_per_ipu": {"IPU0": 0.1, "IPU1": 0.1},
        "execution_strategy": "pipelined",
        "auto_stage": "auto_increment",
        "execution_stages": None,
        "execution_phases": None,
    }
    assert data["replication"] == {"replication_factor": 1, "total_ipus": 2, "note": None}
    assert data["batch_size_factor"] == {
        "value": 128,
        "factors": {"replication_factor": 1, "gradient_accumulation_steps": 128, "device_iterations": 1},
    }
    assert data["precision"] == {"half_partials": False, "stochastic_rounding": True}
    assert data["recomputation"] == {"recomputation_mode": "pipeline", "recompute_checkpoint_every_layer": False}
    assert data["optimizer_state"] == {
        "offchip": False, "location": None, "replicated_tensor_sharding": False,
        "note": "requested, unused with 1 replica",
    }
    assert data["options_plan"] == preset_training_plan_data(replicas=1, sharded=False)
    _, text, _ = run(capsys, "show", PRESET)
    for item in data["differs_from_defaults"]:
        assert f"  {item['setting']} " in text and json.dumps(item["value"]) in text
    assert len(data["differs_from_defaults"]) == 16


@pytest.mark.parametrize(
    "settings, execution",
    [
        ("execution_strategy=null", "pipelined, stages same_as_ipu (poptorch's default)"),
        ("auto_stage=null", "pipelined, stages same_as_ipu"),
        ('execution_stages=[{"blocks":["a"],"ipu":0},{"blocks":["b"]}]', "pipelined, explicit stages: 2"),
        ('execution_strategy=serial_phased,execution_phases=[[{"blocks":["a"]}]]', "serial_phased, phases: 1"),
    ],
)
def test_show_names_the_strategy_the_build_makes(capsys, settings, execution):
    code, out, _ = run(capsys, "show", PRESET, "--set", settings)
    assert code == 0
    assert f"  execution                   {execution}\n" in out


def test_show_inference(capsys):
    code, out, _ = run(capsys, "show", PRESET, "--inference", "--json", "--set", "inference_device_iterations=4")
    assert code == 0
    data = json.loads(out)
    assert data["mode"] == "inference"
    assert data["pipeline"]["execution_strategy"] == "sharded"
    assert data["precision"]["stochastic_rounding"] is False
    assert data["batch_size_factor"] == {
        "value": 4, "factors": {"inference_replication_factor": 1, "inference_device_iterations": 4}
    }
    calls = [(call["method"], call["args"]) for call in data["options_plan"]["calls"]]
    assert calls[:10] == [
        ("replicationFactor", [1]),
        ("deviceIterations", [4]),
        ("randomSeed", [1234]),
        ("enableExecutableCaching", ["exec"]),
        ("autoRoundNumIPUs", [True]),
        ("outputMode", [{"sdk": "poptorch.OutputMode.All"}]),
        ("Precision.enableStochasticRounding", [False]),
        ("TensorLocations.setOptimizerLocation", [{
            "new": "poptorch.TensorLocationSettings", "args": [], "kwargs": {},
            "chain": [["useOnChipStorage", [True]], ["useReplicatedTensorSharding", [False]]],
        }]),
        ("setExecutionStrategy", [{
            "new": "poptorch.ShardedExecution", "args": [{"sdk": "poptorch.AutoStage.AutoIncrement"}], "kwargs": {},
            "chain": [],
        }]),
        ("setAvailableMemoryProportion", [{"IPU0": 0.1, "IPU1": 0.1}]),
    ]
    assert not [method for method, _ in calls if method.startswith("Training.")]


def test_settings_that_differ_are_those_not_at_optimum_graphcores_defaults(capsys, tmp_path):
    IPUConfig().save_pretrained(tmp_path / "defaults")
    IPUConfig(seed=7, outline_threshold=12.0).save_pretrained(tmp_path / "two")
    _, out, _ = run(capsys, "show", tmp_path / "defaults", "--json")
    assert json.loads(out)["differs_from_defaults"] == []
    _, out, _ = run(capsys, "show", tmp_path / "two", "--json")
    assert json.loads(out)["differs_from_defaults"] == [
        {"setting": "seed", "value": 7, "default": None},
        {"setting": "outline_threshold", "value": 12.0, "default": 10.0},
    ]


@pytest.mark.parametrize(
    "requested, auto_round, total, note",
    [
        (1, True, 1, None),
        (2, False, 2, None),
        (3, True, 4, "3 requested, rounded up to a power of two"),
        (6, True, 8, "6 requested, rounded up to a power of two"),
        (64, False, 64, None),
        (6, False, 6, None),  # shown only where poptorch does not check: an offline target
        (6, None, 6, None),
        (128, True, 128, "more than 64: poptorch needs several processes, e.g. with poprun"),
    ],
)
def test_total_ipus_round_up_to_a_power_of_two_as_poptorch_does(requested, auto_round, total, note):
    assert reserved_ipus_shown(requested, auto_round) == (total, note)


def test_total_ipus_are_replicas_times_ipus_per_replica(capsys):
    code, out, _ = run(capsys, "show", PRESET, "--set", "replication_factor=3")
    assert code == 0
    assert "  total IPUs                  8  (6 requested, rounded up to a power of two)\n" in out
    assert "  sharding across replicas    on\n" in out
    code, out, err = run(capsys, "show", PRESET, "--set", "replication_factor=3,auto_round_num_ipus=false")
    assert (code, out) == (1, "") and err == (
        "ipu-config: error: --set: `auto_round_num_ipus=false` is invalid: the training build asks for "
        "`replication_factor=3` x `ipus_per_replica=2` = 6 IPUs in one process, and poptorch reserves only a power of "
        "two unless `auto_round_num_ipus` is true: make it true (it reserves 8, 2 idle), or use a number of IPUs that "
        "is a power of two.\n")
    code, out, _ = run(capsys, "show", PRESET, "--set", "replication_factor=3,auto_round_num_ipus=false,"
                       "connection_type=never")
    assert code == 0 and "  total IPUs                  6\n" in out


def test_set_is_read_as_update_from_string_reads_it(capsys):
    updates = ["matmul_proportion=[0.15 0.3]", "recomputation_mode=null,seed=7", "stochastic_rounding=no"]
    code, out, _ = run(capsys, "show", PRESET, "--json", *[arg for update in updates for arg in ("--set", update)])
    assert code == 0
    calls = {call["method"]: call["args"] for call in json.loads(out)["options_plan"]["calls"]}
    assert calls["setAvailableMemoryProportion"] == [{"IPU0": 0.15, "IPU1": 0.3}]
    assert calls["randomSeed"] == [7]
    assert calls["Precision.enableStochasticRounding"] == [False]
    calls = json.loads(out)["options_plan"]["calls"]
    popart_keys = [call["args"][0] for call in calls if call["method"] == "_Popart.set"]
    assert "autoRecomputation" not in popart_keys and "outlineThreshold" in popart_keys
    assert json.loads(out)["pipeline"]["memory_proportion_per_ipu"] == {"IPU0": 0.15, "IPU1": 0.3}


@pytest.mark.parametrize(
    "update, words",
    [
        ("replication_factor=four", ["replication_factor", '"four"', "expected an integer"]),
        ("recomputation_mode=sometimes", ["recomputation_mode", '"sometimes"', '"pipeline"']),
        ("matmul_proportion=[0.1 0.2 0.3]", ["matmul_proportion", "[0.1, 0.2, 0.3]", "ipus_per_replica=2"]),
        ("replicaton_factor=2", ["replicaton_factor", "Did you mean `replication_factor`"]),
    ],
)
def test_bad_set_is_one_line_naming_field_value_and_what_is_allowed(capsys, update, words):
    code, out, err = run(capsys, "show", PRESET, "--set", update)
    assert code == 1 and out == ""
    assert err.startswith("ipu-config: error: --set: ") and err.count("\n") == 1
    for word in words:
        assert word in err


def test_show_refuses_a_revision_for_a_local_file(capsys):
    code, _, err = run(capsys, "show", PRESET, "--revision", "v1")
    assert code == 1 and "a local path; --revision applies to Hub repositories" in err


def test_a_preset_name_is_a_source_of_every_command(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no file of that name here
    by_path = run(capsys, "show", PRESET)[1]
    assert run(capsys, "show", "pipelined-2ipu")[1] == by_path.replace(str(PRESET), "pipelined-2ipu")
    assert run(capsys, "validate", "pipelined-2ipu", "--set", "replication_factor=3,auto_round_num_ipus=false")[1] \
        .startswith("pipelined-2ipu: `auto_round_num_ipus=false` is invalid: the training build asks for")
    assert run(capsys, "validate", "pipelined-2ipu")[2] == "1 IPU config(s) valid\n"
    code, out, _ = run(capsys, "diff", "pipelined-2ipu", PRESET, "--exit-code")
    assert (code, out.splitlines()[2]) == (0, "No setting differs.")
    code, _, err = run(capsys, "show", "pipelined-2ipu", "--revision", "v1")
    assert (code, err) == (1, "ipu-config: error: pipelined-2ipu: a preset; --revision applies to Hub repositories\n")


def test_a_local_path_comes_before_a_preset_of_that_name(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pipelined-2ipu").mkdir()
    (tmp_path / "pipelined-2ipu" / "ipu_config.json").write_text('{"replication_factor": 8}')
    assert "  replicas                    8\n" in run(capsys, "show", "pipelined-2ipu")[1]


def test_directory_without_a_config(capsys, tmp_path):
    code, _, err = run(capsys, "show", tmp_path)
    assert (code, err) == (1, f"ipu-config: error: Cannot load the IPU config file '{tmp_path}': a directory, but it "
                              "holds no ipu_config.json.\n")


# validate


def test_validate_passes_valid_configs_silently_on_stdout(capsys, tmp_path):
    IPUConfig(**UPSTREAM_CONFIGS["pipeline"]).save_pretrained(tmp_path / "pipeline")
    code, out, err = run(capsys, "validate", PRESET, tmp_path / "pipeline")
    assert (code, out) == (0, "")
    assert err == "2 IPU config(s) valid\n"  # the preset's sharding, unused with one replica, is no problem


def test_validate_reports_one_line_per_problem(capsys, tmp_path):
    folder = tmp_path / "configs"
    write_config(folder, "a-good.json", replication_factor=4)
    write_config(folder, "b-three-problems.json", replication_factor=0, recomputation_mode="sometimes", foo=1)
    write_config(folder, "c-disagree.json", ipus_per_replica=2, matmul_proportion=[0.1, 0.2, 0.3])
    (folder / "d-broken.json").write_text("{")
    (folder / "notes.txt").write_text("not a config")
    code, out, err = run(capsys, "validate", folder, tmp_path / "missing.json")
    assert code == 1
    lines = out.splitlines()
    assert len(lines) == 6, out
    three, disagree, broken, missing = folder / "b-three-problems.json", folder / "c-disagree.json", \
        folder / "d-broken.json", tmp_path / "missing.json"
    assert lines[0] == f"{three}: Unknown IPU config key `foo`."
    assert lines[1] == f'{three}: `recomputation_mode="sometimes"` is invalid: allowed values are "none", ' \
                       '"standard", "norm_only", "pipeline", "recompute_all".'
    assert lines[2].startswith(f"{three}: ") and "replication_factor" in lines[2] and "from 1 to 65536" in lines[2]
    assert lines[3].startswith(f"{disagree}: ")
    assert "matmul_proportion" in lines[3] and "ipus_per_replica=2" in lines[3]
    assert lines[4].startswith(f"{broken}: ") and "not valid JSON" in lines[4]
    assert lines[5] == f"{missing}: Cannot load the IPU config file '{missing}': no such file or directory."
    assert err.endswith("4 of 5 IPU config(s) invalid\n")


def test_validate_does_not_report_what_putting_back_a_default_causes(capsys, tmp_path):
    path = write_config(tmp_path, layers_per_ipu="x", matmul_proportion=[0.1, 0.2])
    code, out, _ = run(capsys, "validate", path)
    assert code == 1
    assert len(out.splitlines()) == 1 and "layers_per_ipu" in out and '"x"' in out


def test_validate_relays_the_warnings_of_legacy_keys(capsys, tmp_path):
    path = write_config(tmp_path, random_seed=3)
    code, out, err = run(capsys, "validate", path)
    assert (code, out) == (0, "")
    assert (
        f"ipu-config: warning: {path}: `random_seed` is no longer an IPUConfig setting; its value is carried "
        "over as `seed=3`"
    ) in err


def test_validate_in_ci_as_a_script(tmp_path):
    write_config(tmp_path / "configs", "bad.json", output_mode="every")
    result = run_script("validate", tmp_path / "configs", CONFIGS)
    assert result.returncode == 1
    assert result.stdout.startswith(f"{tmp_path / 'configs' / 'bad.json'}: ") and "output_mode" in result.stdout
    assert "Traceback" not in result.stderr


def test_validate_of_a_directory_without_configs_fails(capsys, tmp_path):
    (tmp_path / "notes.txt").write_text("not a config")
    code, out, err = run(capsys, "validate", tmp_path)
    assert (code, out) == (1, f"{tmp_path}: Cannot load the IPU config file '{tmp_path}': a directory, but it holds "
                              "no ipu_config.json.\n")
    assert err == "1 of 1 IPU config(s) invalid\n"


# diff


def test_diff_shows_settings_then_the_option_calls_that_differ(capsys, tmp_path):
    other = IPUConfig.from_pretrained(PRESET, replication_factor=4, optimizer_state_offchip=True)
    other.save_pretrained(tmp_path)
    code, out, _ = run(capsys, "diff", PRESET, tmp_path)
    assert code == 0
    assert out == f"""\
--- {PRESET}
+++ {tmp_path}
Settings (2 differ)
  replication_factor       1 -> 4
  optimizer_state_offchip  false -> true

Options, training
- opts.replicationFactor(1)
+ opts.replicationFactor(4)
- opts.TensorLocations.setOptimizerLocation(poptorch.TensorLocationSettings().useOnChipStorage(True)\
.useReplicatedTensorSharding(False))
+ opts.TensorLocations.setOptimizerLocation(poptorch.TensorLocationSettings().useOnChipStorage(False)\
.useReplicatedTensorSharding(True))

Options, inference
- opts.TensorLocations.setOptimizerLocation(poptorch.TensorLocationSettings().useOnChipStorage(True)\
.useReplicatedTensorSharding(False))
+ opts.TensorLocations.setOptimizerLocation(poptorch.TensorLocationSettings().useOnChipStorage(False)\
.useReplicatedTensorSharding(False))
"""


def test_diff_says_which_changes_have_no_effect_on_the_options(capsys, tmp_path):
    changed = {
        "replicated_tensor_sharding": False, "recompute_checkpoint_every_layer": True, "outline_threshold": 12.0
    }
    IPUConfig.from_pretrained(PRESET, **changed).save_pretrained(tmp_path)
    code, out, _ = run(capsys, "diff", PRESET, tmp_path)
    assert code == 0
    assert "  replicated_tensor_sharding        true -> false  (no effect on the options)\n" in out
    assert "  recompute_checkpoint_every_layer  false -> true  (no effect on the options)\n" in out
    assert "  outline_threshold                 10.0 -> 12.0\n" in out
    assert out.count('- opts._Popart.set("outlineThreshold", 10.0)\n') == 2  # training and inference
    assert out.count('+ opts._Popart.set("outlineThreshold", 12.0)\n') == 2


def test_a_change_that_acts_with_another_has_an_effect(capsys, tmp_path):
    write_config(tmp_path / "a", replication_factor=1, replicated_tensor_sharding=False)
    write_config(tmp_path / "b", replication_factor=4, replicated_tensor_sharding=True)
    code, out, _ = run(capsys, "diff", tmp_path / "a", tmp_path / "b")
    assert code == 0
    assert "  replicated_tensor_sharding  false -> true\n" in out


def test_diff_of_equal_builds(capsys, tmp_path):
    write_config(tmp_path / "a", seed=1)
    write_config(tmp_path / "b", seed=2)
    code, out, _ = run(capsys, "diff", tmp_path / "a", tmp_path / "b")
    assert code == 0
    # both save their initializers to a (different) temporary file: that is no difference
    assert out.endswith("""\
  seed  1 -> 2

Options, training
- opts.randomSeed(1)
+ opts.randomSeed(2)

Options, inference
- opts.randomSeed(1)
+ opts.randomSeed(2)
""")
    code, out, _ = run(capsys, "diff", tmp_path / "a", tmp_path / "a")
    assert out.endswith("No setting differs.\n")


# new


def test_new_lists_the_presets_of_the_configs_folder(capsys):
    code, out, _ = run(capsys, "new", "--list")
    assert code == 0
    assert out.splitlines() == sorted(path.stem for path in CONFIGS.glob("*.json"))
    assert presets()["pipelined-2ipu"] == Path(PRESET).read_text()


def test_new_writes_the_preset_with_settings(capsys, tmp_path):
    out_dir = tmp_path / "bert"
    code, out, _ = run(capsys, "new", "pipelined-2ipu", out_dir, "--set", "replication_factor=4")
    assert code == 0 and out == f"Wrote {out_dir / 'ipu_config.json'} from the preset pipelined-2ipu\n"
    written = IPUConfig.from_pretrained(out_dir)
    assert written.to_dict() == IPUConfig.from_pretrained(PRESET, replication_factor=4).to_dict()

    code, _, err = run(capsys, "new", "pipelined-2ipu", out_dir)
    assert code == 1 and f"{out_dir / 'ipu_config.json'}: exists; pass --force to overwrite it" in err
    assert IPUConfig.from_pretrained(out_dir).replication_factor == 4
    code, _, _ = run(capsys, "new", "pipelined-2ipu.json", out_dir, "--force")
    assert code == 0 and IPUConfig.from_pretrained(out_dir).replication_factor == 1


def test_new_with_a_bad_setting_writes_nothing(capsys, tmp_path):
    code, _, err = run(capsys, "new", "pipelined-2ipu", tmp_path / "out", "--set", "seed=-")
    assert code == 1 and '--set: `seed="-"` is invalid: expected an integer.' in err
    assert not (tmp_path / "out").exists()


# push and pull, against the local Hub


@pytest.fixture
def hub(hub_client, tmp_path, monkeypatch):
    """The local Hub, with the client run from an empty directory and no token stored."""
    monkeypatch.chdir(tmp_path)
    hub_client.create_repo("org/cfg")
    hub_client.commit("org/cfg", {"ipu_config.json": Path(PRESET).read_text()}, message="Add config")
    hub_client.create_tag("org/cfg", "v1")
    hub_client.commit("org/cfg", {"ipu_config.json": json.dumps({"replication_factor": 8})}, message="Scale out")
    return hub_client


def online(hub, tmp_path):
    """The environment of a console script run against `hub`, sharing the test's HF home (token, cache)."""
    return dict(hub_env(hub, tmp_path / "hf_home"), HF_HUB_OFFLINE="0")


def log_in(token):
    """Stores `token` where `hf auth login` does (the fixtures point HF_TOKEN_PATH at the test's HF home)."""
    path = Path(os.environ["HF_TOKEN_PATH"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(token)


def test_push_creates_the_repo_with_the_config(capsys, hub, tmp_path):
    log_in(hub.write_token)
    code, out, err = run(
        capsys, "push", PRESET, "hub-tester/bert-ipu", "--private", "--commit-message", "Add IPU config"
    )
    assert code == 0, err
    assert out.startswith(f"Pushed {PRESET} to hub-tester/bert-ipu: {hub.url}/hub-tester/bert-ipu/commit/")
    assert hub.is_private("hub-tester/bert-ipu")
    assert hub.commit_messages("hub-tester/bert-ipu")[0] == "Add IPU config"
    pushed = json.loads(hub.files("hub-tester/bert-ipu")["ipu_config.json"])
    assert IPUConfig.from_dict(pushed).to_dict() == IPUConfig.from_pretrained(PRESET).to_dict()
    assert os.listdir(tmp_path) == ["hf_home"]  # nothing saved in the working directory


def test_push_opens_a_pull_request(capsys, hub):
    log_in(hub.write_token)
    main_before = hub.files("org/cfg")
    code, out, _ = run(capsys, "push", PRESET, "org/cfg", "--create-pr")
    assert code == 0
    assert out == f"Pushed {PRESET} to org/cfg: {hub.url}/org/cfg/discussions/1\n"
    assert hub.files("org/cfg") == main_before
    assert json.loads(hub.files("org/cfg", "refs/pr/1")["ipu_config.json"])["gradient_accumulation_steps"] == 128


def test_push_to_a_branch(capsys, hub):
    log_in(hub.write_token)
    code, out, err = run(capsys, "push", PRESET, "org/cfg", "--revision", "ipu-dev")
    assert code == 0, err
    commit = hub.refs("org/cfg")["refs/heads/ipu-dev"]
    assert out == f"Pushed {PRESET} to org/cfg (branch ipu-dev): {hub.url}/org/cfg/commit/{commit}\n"
    assert json.loads(hub.files("org/cfg", "ipu-dev")["ipu_config.json"])["seed"] == 1234
    assert json.loads(hub.files("org/cfg")["ipu_config.json"]) == {"replication_factor": 8}


def test_push_needs_a_stored_token(capsys, hub):
    code, out, err = run(capsys, "push", PRESET, "hub-tester/new")
    assert (code, out) == (1, "")
    assert err.endswith("ipu-config: error: pushing needs a Hugging Face token with write access: "
                        "run `hf auth login` or set HF_TOKEN\n")
    assert not hub.repo_exists("hub-tester/new")


def test_push_with_a_read_token_is_one_line(capsys, hub):
    log_in(hub.read_token)
    code, _, err = run(capsys, "push", PRESET, "org/cfg")
    assert code == 1
    assert_one_error(err, "'org/cfg'", "403", "read-only token")


@pytest.mark.parametrize("source", [PRESET, str(CONFIGS), "./cfg", "a/b/c", "cfg.json"])
def test_pull_refuses_a_local_path(capsys, tmp_path, source):
    code, out, err = run(capsys, "pull", source, tmp_path / "out")
    assert (code, out) == (1, "")
    assert err == f"ipu-config: error: {source}: a local path; pull takes a Hub repository id\n"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("revision, replication_factor", [(None, 8), ("v1", 1)])
def test_pull_writes_the_config(capsys, hub, tmp_path, revision, replication_factor):
    argv = ["pull", "org/cfg", tmp_path / "out"] + (["--revision", revision] if revision else [])
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    at = f" at {revision}" if revision else ""
    assert out == f"Pulled org/cfg{at} to {tmp_path / 'out' / 'ipu_config.json'}\n"
    assert IPUConfig.from_pretrained(tmp_path / "out").replication_factor == replication_factor


def test_show_and_diff_read_the_hub(capsys, hub):
    code, out, _ = run(capsys, "show", "org/cfg", "--revision", "v1")
    assert code == 0 and out == SHOW_PRESET.format(source="org/cfg", plan=PRESET_TRAINING_PLAN)
    code, out, _ = run(capsys, "diff", "org/cfg", "org/cfg", "--revision-a", "v1")
    assert code == 0 and re.search(r"\n  replication_factor +1 -> 8\n", out)


def test_private_repo_is_read_with_the_stored_token(capsys, hub, tmp_path):
    hub.create_repo("org/private", private=True)
    hub.commit("org/private", {"ipu_config.json": json.dumps({"seed": 5})})
    code, _, err = run(capsys, "pull", "org/private", tmp_path / "out")
    assert code == 1
    assert_one_error(err, "'org/private'", "no token was given", "hf auth login")
    log_in(hub.read_token)
    code, _, err = run(capsys, "pull", "org/private", tmp_path / "out")
    assert code == 0, err
    assert IPUConfig.from_pretrained(tmp_path / "out").seed == 5


@pytest.mark.parametrize(
    "argv, words",
    [
        (["show", "org/nope"], ["'org/nope'", "does not exist"]),
        (["show", "org/cfg", "--revision", "v9"], ["'org/cfg'", "'v9'", "no branch, tag or commit"]),
        (["pull", "org/empty", "out"], ["'org/empty'", "no file 'ipu_config.json'"]),
        (["push", PRESET, "org/cfg", "--create-pr"], ["'org/cfg'", "401"]),  # the stored token is not the Hub's
    ],
)
def test_hub_errors_are_one_line_naming_the_repository(capsys, hub, argv, words):
    hub.create_repo("org/empty")
    log_in("hf_not_a_token_of_this_hub" if argv[0] == "push" else hub.read_token)
    code, out, err = run(capsys, *argv)
    assert (code, out) == (1, "")
    assert_one_error(err, *words)


def test_validate_reports_hub_sources_like_files(capsys, hub):
    hub.create_repo("org/bad")
    hub.commit("org/bad", {"ipu_config.json": json.dumps({"replication_factor": 0, "recomputation_mode": "x"})})
    code, out, _ = run(capsys, "validate", "org/cfg", "org/bad", "org/nope")
    assert code == 1
    lines = out.splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("org/bad: ") and "recomputation_mode" in lines[0]
    assert lines[1].startswith("org/bad: ") and "replication_factor" in lines[1]
    assert lines[2].startswith("org/nope: ") and "'org/nope'" in lines[2] and "does not exist" in lines[2]


def test_hub_failure_with_a_cold_cache_names_the_repository(capsys, hub):
    hub.fail_next("/org/cfg/resolve/", status=500, times=20)
    hub.fail_next("/api/models/org/cfg", status=500, times=20)
    code, _, err = run(capsys, "show", "org/cfg")
    assert code == 1
    assert_one_error(err, "'org/cfg'", "500")


def test_unreachable_hub(capsys, hub):
    hub.stop()
    code, _, err = run(capsys, "show", "org/cfg")
    assert code == 1
    assert_one_error(err, "'org/cfg'", "cannot be reached")


def test_console_script_uses_the_token_the_hf_cli_stores(hub, tmp_path):
    env = online(hub, tmp_path)
    log_in(hub.write_token)
    pushed = run_script("push", PRESET, "hub-tester/from-script", env=env, cwd=str(tmp_path))
    assert pushed.returncode == 0, pushed.stderr
    assert pushed.stdout.startswith(f"Pushed {PRESET} to hub-tester/from-script: ")
    assert "\033[" not in pushed.stderr and "\r" not in pushed.stderr  # no spinner off a terminal
    pulled = run_script("pull", "hub-tester/from-script", tmp_path / "out", env=env, cwd=str(tmp_path))
    assert pulled.returncode == 0, pulled.stderr
    assert IPUConfig.from_pretrained(tmp_path / "out").to_dict() == IPUConfig.from_pretrained(PRESET).to_dict()


def test_progress_shows_on_a_terminal(hub, tmp_path):
    code, received = run_on_terminal("pull", "org/cfg", tmp_path / "out", env=online(hub, tmp_path))
    assert code == 0, received
    assert "\r| Loading org/cfg" in received


def not_about_the_push(err):
    """Whether stderr says nothing of the push (neither the client's "No files have been modified" nor an error);
    the configuration's own warnings may be there."""
    return all(line.startswith("ipu-config: warning: `") for line in err.splitlines())


def test_push_of_the_config_a_repo_already_holds_says_nothing_changed(capsys, hub):
    log_in(hub.write_token)
    assert run(capsys, "push", PRESET, "org/cfg")[0] == 0
    commits = hub.commit_messages("org/cfg")

    code, out, err = run(capsys, "push", PRESET, "org/cfg")
    assert (code, out) == (0, "no change: org/cfg already holds this config\n")
    assert not_about_the_push(err)
    code, out, err = run(capsys, "push", PRESET, "org/cfg", "--create-pr")
    assert (code, out) == (0, "no change: org/cfg already holds this config; no pull request opened\n")
    assert not_about_the_push(err)
    assert hub.commit_messages("org/cfg") == commits
    assert not any(ref.startswith("refs/pr/") for ref in hub.refs("org/cfg"))


def test_push_private_to_a_public_repo_fails_before_uploading(capsys, hub):
    log_in(hub.write_token)
    before = hub.files("org/cfg")
    hub.clear_log()
    code, out, err = run(capsys, "push", PRESET, "org/cfg", "--private")
    assert (code, out) == (1, "")
    assert_one_error(err, "'org/cfg'", "it is public", "--private", "nothing was uploaded",
                     "update_repo_settings('org/cfg', private=True)")
    assert [(r.method, r.path) for r in hub.log] == [("GET", "/api/models/org/cfg")]
    assert hub.files("org/cfg") == before and not hub.is_private("org/cfg")


@pytest.mark.parametrize(
    "source, problem",
    [("missing_dir", "no such file or directory"), ("missing.json", "no such file or directory"),
     ("emptydir", "a directory, but it holds no ipu_config.json"),
     ("emptydir/", "a directory, but it holds no ipu_config.json")],
)
def test_push_of_a_path_without_a_config_names_it_and_sends_nothing(capsys, hub, tmp_path, source, problem):
    (tmp_path / "emptydir").mkdir()
    log_in(hub.write_token)
    hub.clear_log()
    code, out, err = run(capsys, "push", source, "org/cfg")
    assert (code, out, err) == (1, "", f"ipu-config: error: Cannot load the IPU config file '{source}': {problem}.\n")
    assert hub.log == []


@pytest.mark.parametrize("outage", ["500", "down"])
def test_a_hub_outage_is_one_line_without_the_client_retries(hub, tmp_path, outage):
    """In a fresh process, with the client's real back-off: its retry lines stay off stderr."""
    if outage == "500":
        hub.fail_next("/", status=500, times=1000)
    else:
        hub.stop()
    result = run_script("show", "org/cfg", env=online(hub, tmp_path), cwd=str(tmp_path))
    assert (result.returncode, result.stdout) == (1, "")
    problem = "500 Internal Server Error" if outage == "500" else "cannot be reached"
    assert_one_error(result.stderr, "'org/cfg'", problem)
    assert result.stderr.count("\n") == 1


def test_help_and_usage_errors_do_not_import_transformers():
    code = (
        "import sys\n"
        "from optimum_ipu_ext.cli import main\n"
        "for argv in (['--help'], ['show']):\n"
        "    try:\n"
        "        main(argv)\n"
        "    except SystemExit as exit:\n"
        "        print(exit.code)\n"
        "print('transformers' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.splitlines()[-3:] == ["0", "2", "False"]


def test_a_name_neither_local_nor_on_the_hub_says_both_in_one_line(capsys, hub):
    code, out, err = run(capsys, "show", "my-config")
    assert (code, out) == (1, "")
    assert err == ("ipu-config: error: Cannot load 'ipu_config.json' from Hub repository 'my-config' at revision "
                   f"'main': no such file or directory here, and it does not exist on {hub.url}, or it is private and "
                   "no token was given (pass `token=` or log in with `hf auth login`).\n")


def test_a_missing_local_path_reads_the_same_in_every_command_and_the_api(capsys, tmp_path):
    missing = tmp_path / "missing.json"
    message = f"Cannot load the IPU config file '{missing}': no such file or directory."
    for argv in (["show", missing], ["diff", missing, PRESET], ["push", missing, "org/cfg"]):
        assert run(capsys, *argv) == (1, "", f"ipu-config: error: {message}\n")
    assert run(capsys, "validate", missing)[1] == f"{missing}: {message}\n"
    with pytest.raises(OSError) as raised:
        IPUConfig.from_pretrained(str(missing))
    assert str(raised.value) == message


def test_validate_set_applies_to_every_source_before_it_is_checked(capsys, tmp_path):
    one, two = write_config(tmp_path / "one", replication_factor=2), write_config(tmp_path / "two", seed=3)
    assert run(capsys, "validate", one, two, "--set", "replication_factor=3", "--set", "auto_round_num_ipus=false") \
        == (1, f"{one}: {ROUNDING_REFUSED}\n{two}: {ROUNDING_REFUSED}\n", "2 of 2 IPU config(s) invalid\n")
    assert run(capsys, "validate", one, two, "--set", "replication_factor=4,auto_round_num_ipus=false") \
        == (0, "", "2 IPU config(s) valid\n")
    code, out, err = run(capsys, "validate", one, "--set", "replication_factor=0")
    assert (code, out, err) == (1, "", "ipu-config: error: --set: `replication_factor=0` is invalid: numbers must be "
                                       "from 1 to 65536.\n")


ROUNDING_REFUSED = (
    "`auto_round_num_ipus=false` is invalid: the training build asks for `replication_factor=3` x "
    "`ipus_per_replica=1` = 3 IPUs in one process, and poptorch reserves only a power of two unless "
    "`auto_round_num_ipus` is true: make it true (it reserves 4, 1 idle), or use a number of IPUs that is a power of "
    "two."
)


def test_validate_refuses_what_show_says_poptorch_refuses(capsys, tmp_path):
    path = write_config(tmp_path, layers_per_ipu=[-1, -1], replication_factor=3, auto_round_num_ipus=False)
    code, out, _ = run(capsys, "validate", path)
    assert code == 1 and "6 IPUs in one process" in out and out.count("\n") == 1
    code, out, err = run(capsys, "show", path)
    assert (code, out) == (1, "") and "6 IPUs in one process" in err


def test_validate_refuses_a_file_that_gives_a_key_twice(capsys, tmp_path):
    path = tmp_path / "ipu_config.json"
    path.write_text('{"replication_factor": 4, "replication_factor": 8}')
    assert run(capsys, "validate", path) == (
        1, f"{path}: Cannot load the IPU config file '{path}': the key \"replication_factor\" is given twice in one "
           "object; give each key once.\n", "1 of 1 IPU config(s) invalid\n")
