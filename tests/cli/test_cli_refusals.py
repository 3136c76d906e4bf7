"""`ipu-config` refusals that need no model: each one line naming the setting, its value and what is allowed."""

import json
import re

import pytest

from optimum_ipu_ext import IncompatibleSettingsError, PlainIPUConfig
from optimum_ipu_ext.settings.schema import parse_update_string
from optimum_ipu_ext.settings.table import SETTINGS
from support import PRESET
from support.cli_helpers import run
from support.placement_fixtures import bert_base


@pytest.mark.parametrize("name", ["matmul_proportion", "inference_matmul_proportion"])
@pytest.mark.parametrize("value, shown", [("1.5", "1.5"), ("[0.1 1.01]", "[0.1, 1.01]")])
def test_a_memory_proportion_above_1_is_refused_with_its_range(capsys, tmp_path, name, value, shown):
    config = tmp_path / "ipu_config.json"
    config.write_text(f'{{"{name}": {shown}, "ipus_per_replica": 2}}')
    code, out, err = run(capsys, "validate", config)
    assert (code, out) == (1, f"{config}: `{name}={shown}` is invalid: numbers must be from 0 to 1.\n")
    code, out, err = run(capsys, "show", "pipelined-2ipu", "--set", f"{name}={value}")
    assert (code, out, err) == (1, "", f"ipu-config: error: --set: `{name}={shown}` is invalid: numbers must be "
                                       "from 0 to 1.\n")


def test_a_memory_proportion_of_1_is_allowed(capsys):
    updates = "matmul_proportion=1,inference_matmul_proportion=[0 1]"
    assert run(capsys, "validate", "pipelined-2ipu", "--set", updates) == (0, "", "1 IPU config(s) valid\n")


# --- a per-IPU layers_per_ipu of another length than the pipeline: refused without a model, as place refuses it ---

@pytest.mark.parametrize("updates, message", [
    ("ipus_per_replica=3", "`layers_per_ipu=[-1, -1]` is invalid: it needs one entry per IPU, as "
     "`ipus_per_replica=3`."),
    ("layers_per_ipu=[-1 -1 -1]", "`layers_per_ipu=[-1, -1, -1]` is invalid: it needs one entry per IPU, as "
     "`ipus_per_replica=2`."),
    ("layers_per_ipu=[-1 6 -1]", "`layers_per_ipu=[-1, 6, -1]` is invalid: it needs one entry per IPU, as "
     "`ipus_per_replica=2`."),
    ("inference_ipus_per_replica=3", "`inference_layers_per_ipu=[-1, -1]` is invalid: it needs one entry per IPU, as "
     "`inference_ipus_per_replica=3`."),
])
def test_a_wildcard_list_of_another_length_is_refused_by_validate_show_and_loading(capsys, updates, message):
    assert run(capsys, "validate", "pipelined-2ipu", "--set", updates) == (
        1, f"pipelined-2ipu: {message}\n", "1 of 1 IPU config(s) invalid\n")
    assert run(capsys, "show", "pipelined-2ipu", "--set", updates) == (1, "", f"ipu-config: error: --set: {message}\n")
    settings = dict(PlainIPUConfig.from_json_file(PRESET).to_dict(), **parse_update_string(updates, SETTINGS))
    with pytest.raises(IncompatibleSettingsError, match=re.escape(message)):
        PlainIPUConfig.from_dict(settings)


@pytest.mark.parametrize("settings", [
    {"layers_per_ipu": [-1], "ipus_per_replica": 4},  # one wildcard spreads the layers over every IPU
    {"layers_per_ipu": [-1, -1], "ipus_per_replica": 1},  # one IPU takes every layer, whatever the list
    {"layers_per_ipu": [-1, 5, -1], "ipus_per_replica": 1},
    {"inference_layers_per_ipu": [-1], "inference_ipus_per_replica": 8},
])
def test_wildcards_upstream_takes_stay_valid(capsys, tmp_path, settings):
    config = tmp_path / "ipu_config.json"
    config.write_text(json.dumps(settings))
    assert run(capsys, "validate", config) == (0, "", "1 IPU config(s) valid\n")


def test_validate_refuses_what_place_refuses_for_the_length_of_layers_per_ipu(capsys, tmp_path):
    model = bert_base(tmp_path / "bert")
    code, out, _ = run(capsys, "validate", PRESET, "--set", "ipus_per_replica=3")
    assert (code, out) == (1, f"{PRESET}: `layers_per_ipu=[-1, -1]` is invalid: it needs one entry per IPU, as "
                              "`ipus_per_replica=3`.\n")
    code, _, err = run(capsys, "place", PRESET, "--model", model, "--set", "ipus_per_replica=3")
    assert (code, err) == (1, "ipu-config: error: --set: `layers_per_ipu=[-1, -1]` is invalid: it needs one entry per "
                              "IPU, as `ipus_per_replica=3`.\n")


# --- the inference pipeline follows --set of the training one, or a note says why not ----------------------------

def inference_pipeline(folder):
    saved = json.loads((folder / "ipu_config.json").read_text())
    return saved["inference_ipus_per_replica"], saved["inference_layers_per_ipu"]


def test_an_inherited_inference_pipeline_follows_the_training_one(capsys, tmp_path):
    code, _, err = run(capsys, "new", "pipelined-2ipu", tmp_path / "four", "--set", "ipus_per_replica=4",
                       "--set", "layers_per_ipu=[3 7 7 7]")
    assert (code, err, inference_pipeline(tmp_path / "four")) == (0, "", (4, [3, 7, 7, 7]))
    # a file that holds the training values (as `new` writes them) follows too
    code, out, err = run(capsys, "show", tmp_path / "four", "--inference", "--json",
                         "--set", "layers_per_ipu=[4 4 2 -1]")
    assert (code, err, json.loads(out)["pipeline"]["layers_per_ipu"]) == (0, "", [4, 4, 2, -1])
    assert run(capsys, "validate", "pipelined-2ipu", "--set", "ipus_per_replica=4,layers_per_ipu=[3 7 7 7]") == (
        0, "", "1 IPU config(s) valid\n")


def test_a_setting_given_for_inference_too_is_taken_as_given(capsys, tmp_path):
    code, _, err = run(capsys, "new", "pipelined-2ipu", tmp_path, "--set", "ipus_per_replica=4",
                       "--set", "layers_per_ipu=[3 7 7 7]",
                       "--set", "inference_ipus_per_replica=1,inference_layers_per_ipu=[-1]")
    assert (code, err, inference_pipeline(tmp_path)) == (0, "", (1, [-1]))


def test_an_inference_pipeline_set_apart_is_kept_and_a_note_says_how_to_follow(capsys, tmp_path):
    config = tmp_path / "ipu_config.json"
    config.write_text(json.dumps({"layers_per_ipu": [5, 7], "ipus_per_replica": 2, "inference_layers_per_ipu": [-1],
                                  "inference_ipus_per_replica": 1}))
    code, out, err = run(capsys, "show", config, "--set", "ipus_per_replica=4,layers_per_ipu=[3 3 3 3]", "--json",
                         "--inference")
    assert (code, json.loads(out)["pipeline"]["ipus_per_replica"]) == (0, 1)
    assert err == (f"ipu-config: note: {config}: the inference pipeline keeps `inference_ipus_per_replica=1` and "
                   "`inference_layers_per_ipu=[-1]`, set apart from the training one; for inference to follow it, add "
                   "--set 'inference_ipus_per_replica=4' --set 'inference_layers_per_ipu=[3, 3, 3, 3]'\n")
    code, out, err = run(capsys, "validate", config, "--set", "layers_per_ipu=[6 6]")
    assert (code, err) == (0, f"ipu-config: note: {config}: the inference pipeline keeps "
                              "`inference_layers_per_ipu=[-1]`, set apart from the training one; for inference to "
                              "follow it, add --set 'inference_layers_per_ipu=[6, 6]'\n1 IPU config(s) valid\n")


def test_a_training_value_the_inference_one_already_has_needs_no_note(capsys, tmp_path):
    config = tmp_path / "ipu_config.json"
    config.write_text(json.dumps({"layers_per_ipu": [5, 7], "inference_layers_per_ipu": [6, 6]}))
    assert run(capsys, "validate", config, "--set", "layers_per_ipu=[6 6]") == (0, "", "1 IPU config(s) valid\n")


def test_an_invalid_source_is_reported_without_following(capsys, tmp_path):
    config = tmp_path / "ipu_config.json"
    config.write_text(json.dumps({"replication_factor": 0}))
    code, out, _ = run(capsys, "validate", config, "--set", "layers_per_ipu=[6 6]")
    assert (code, out) == (1, f"{config}: `replication_factor=0` is invalid: numbers must be from 1 to 65536.\n")
