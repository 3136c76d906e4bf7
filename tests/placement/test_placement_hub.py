"""A placement of a Hub model: its config.json and safetensors headers read through `hub_model` (range requests,
never the weights), placed exactly as the same files in a local folder; offline from the cache; the Hub's errors as
`from_pretrained` raises them, in one line from `ipu-config place`."""

import pytest

from optimum_ipu_ext import HubAccessDeniedError, HubRepositoryNotFoundError, PlainIPUConfig
from support import PRESET
from support.cli_helpers import run
from support.hub_fixtures import tiny_model_files


@pytest.fixture
def hub(hub_client, tiny_models, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return hub_client


def local_copy(checkpoint, folder):
    folder.mkdir()
    for path, content in tiny_model_files(checkpoint).items():
        (folder / path).write_bytes(content)
    return str(folder)


@pytest.mark.parametrize("repo_id, checkpoint", [("org/tiny-bert", "single"), ("org/tiny-bert-sharded", "sharded")])
def test_a_hub_model_is_placed_as_its_files_in_a_folder(hub, tmp_path, repo_id, checkpoint):
    config = PlainIPUConfig(layers_per_ipu=[-1, -1])
    placed = config.placement(repo_id, architecture="BertForQuestionAnswering")
    local = config.placement(local_copy(checkpoint, tmp_path / "local"), architecture="BertForQuestionAnswering")
    assert placed.model == repo_id
    assert {**placed.to_dict(), "model": None} == {**local.to_dict(), "model": None}
    for path, content in tiny_model_files(checkpoint).items():
        if path.endswith(".safetensors"):  # its header, never its weights
            assert 0 < hub.bytes_served(repo_id, path) < len(content)


def test_a_model_with_no_safetensors_checkpoint_is_sized_from_its_config(hub, tmp_path):
    placed = PlainIPUConfig().placement("org/tiny-bert-bin")
    local = PlainIPUConfig().placement(local_copy("single", tmp_path / "local"))
    assert [ipu.parameters for ipu in placed.ipus] == [ipu.parameters for ipu in local.ipus]
    assert hub.bytes_served("org/tiny-bert-bin", "pytorch_model.bin") == 0  # the weights are never read


def test_ipu_config_place_of_a_pytorch_model_bin_repository_reads_its_config_json_alone(hub, run_hub_python):
    """Without torch: the Hub client of `from_pretrained` (hub.py) imports transformers, which leaves torch alone."""
    result = run_hub_python(f"""
        import sys
        from optimum_ipu_ext.cli import main
        code = main(["place", {PRESET!r}, "--model", "org/tiny-bert-bin", "--json"])
        print(code, "torch" in sys.modules)
    """)
    assert result.stdout.splitlines()[-1] == "0 False"
    assert hub.bytes_served("org/tiny-bert-bin", "pytorch_model.bin") == 0
    assert hub.bytes_served("org/tiny-bert-bin", "config.json") > 0


def test_a_missing_hub_model_raises_the_hub_s_error(hub):
    with pytest.raises(HubRepositoryNotFoundError) as raised:
        PlainIPUConfig().placement("org/no-such-model")
    assert "org/no-such-model" in str(raised.value)


def test_a_gated_model_is_placed_with_a_token_that_has_access(hub, tiny_models):
    hub.create_repo("org/gated")
    hub.commit("org/gated", tiny_models["org/tiny-bert"])
    hub.gate("org/gated", granted_tokens=[hub.write_token])
    with pytest.raises(HubAccessDeniedError):
        PlainIPUConfig().placement("org/gated", token=hub.read_token)
    assert PlainIPUConfig().placement("org/gated", token=hub.write_token).model == "org/gated"


def test_ipu_config_place_reads_a_hub_model(hub, capsys):
    code, out, err = run(capsys, "place", PRESET, "--model", "org/tiny-bert", "--json")
    assert (code, err) == (0, "")
    assert '"model": "org/tiny-bert"' in out
    code, out, err = run(capsys, "place", PRESET, "--model", "org/no-such-model")
    assert (code, out) == (1, "") and err.startswith("ipu-config: error: ") and "org/no-such-model" in err
    assert err.count("\n") == 1
