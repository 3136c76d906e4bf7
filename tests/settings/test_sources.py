"""One answer to "which config does this name mean": a local path first, then a bundled preset, then the Hub; for
the API, the CLI and the placement alike."""

import json
from pathlib import Path

import pytest

from optimum_ipu_ext import ConfigFileError, HubRepositoryNotFoundError, IPUConfig
from optimum_ipu_ext.settings.sources import (
    HUB,
    LOCAL,
    PRESET,
    close_preset,
    is_local,
    looks_like_path,
    preset,
    preset_file,
    presets,
    resolve,
)

REPOSITORY = Path(__file__).resolve().parents[2]
PRESET_NAME = "pipelined-2ipu"
PRESET_SETTINGS = json.loads((REPOSITORY / "configs" / f"{PRESET_NAME}.json").read_text())


def test_the_presets_are_the_json_files_of_the_configs_folder():
    shipped = sorted(path.stem for path in (REPOSITORY / "configs").glob("*.json"))
    assert list(presets()) == shipped and PRESET_NAME in shipped
    assert json.loads(presets()[PRESET_NAME]) == PRESET_SETTINGS
    assert Path(preset_file(PRESET_NAME)) == REPOSITORY / "optimum_ipu_ext" / "presets" / f"{PRESET_NAME}.json"


@pytest.mark.parametrize("name, where", [
    (PRESET_NAME, PRESET), ("org/cfg", HUB), ("gpt2", HUB), ("./pipelined-2ipu", LOCAL), ("x.json", LOCAL),
    ("a/b/c", LOCAL), ("dir/", LOCAL), (f"{PRESET_NAME}.json", LOCAL),
])
def test_a_name_is_local_then_a_preset_then_on_the_hub(name, where, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert resolve(name) == where
    assert (preset(name) == PRESET_SETTINGS) is (where == PRESET)
    assert is_local(name) is (where == LOCAL)


def test_a_local_path_of_a_presets_name_comes_first(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / PRESET_NAME).mkdir()
    (tmp_path / PRESET_NAME / "ipu_config.json").write_text(json.dumps({"replication_factor": 2}))
    assert resolve(PRESET_NAME) == LOCAL and preset(PRESET_NAME) is None
    assert IPUConfig.from_pretrained(PRESET_NAME).replication_factor == 2


@pytest.mark.parametrize("source, path_only", [("x.json", True), ("org/name", False), ("name", False), ("a/b/c", True),
                                               ("./x", True), ("~/x", True), ("/x", True), ("x\\y", True)])
def test_what_can_only_be_a_path(source, path_only):
    assert looks_like_path(source) is path_only


@pytest.mark.parametrize("name, nearest", [
    ("pipelined-2ipus", PRESET_NAME), ("pipelined_2ipu", PRESET_NAME), ("pipelined-2ipu", PRESET_NAME),
    ("pipeline-2ipu", PRESET_NAME), ("bert-base", None), ("org/pipelined-2ipu", None), ("sharded-8ipu", None),
    ("pipelined", None), ("2ipu-pipelined", None),  # 78 % and 64 % alike: below the 80 % that makes a typo
])
def test_a_typo_of_a_preset_is_close_to_it(name, nearest):
    assert close_preset(name) == nearest


def test_from_pretrained_loads_a_preset_as_the_cli_does(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = IPUConfig.from_pretrained(PRESET_NAME)
    assert config.to_dict() == IPUConfig.from_pretrained(str(REPOSITORY / "configs" / f"{PRESET_NAME}.json")).to_dict()
    assert (config.gradient_accumulation_steps, config.seed) == (PRESET_SETTINGS["gradient_accumulation_steps"],
                                                                 PRESET_SETTINGS["seed"])
    assert IPUConfig.from_pretrained(PRESET_NAME, replication_factor=4).replication_factor == 4


def test_a_preset_has_no_revision(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigFileError) as raised:
        IPUConfig.from_pretrained(PRESET_NAME, revision="v1")
    assert str(raised.value) == (f"Cannot load the IPU config file '{PRESET_NAME}': a bundled preset; `revision` "
                                 "applies to Hub repositories.")


def test_a_typo_of_a_preset_that_is_nowhere_names_the_preset(hub_client, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(HubRepositoryNotFoundError) as raised:
        IPUConfig.from_pretrained("pipelined-2ipus")
    assert str(raised.value).startswith("Cannot load 'ipu_config.json' from Hub repository 'pipelined-2ipus' at "
                                        "revision 'main': no such file or directory here, and it does not exist")
    assert str(raised.value).endswith("; did you mean the preset pipelined-2ipu?")
    with pytest.raises(HubRepositoryNotFoundError) as raised:
        IPUConfig.from_pretrained("org/missing")
    assert "did you mean" not in str(raised.value)
