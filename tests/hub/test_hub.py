"""The Hub round trip of `IPUConfig`, with the real huggingface_hub client and transformers against a local Hub.

Every test checks what arrived on the server, what was loaded, or what the cache holds. Subprocess tests
(`HF_HUB_OFFLINE=1`, the 16 loaders) run the package with its bundled base class, as on a machine without
the Poplar SDK; the Hub path is optimum's `BaseConfig` either way.
"""
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor

import huggingface_hub
import pytest
import transformers
from huggingface_hub import ModelCard

from optimum_ipu_ext import (
    ConfigFileError,
    HubAccessDeniedError,
    HubConfigFileError,
    HubError,
    HubFileNotFoundError,
    HubRepositoryNotFoundError,
    HubRevisionNotFoundError,
    HubUnavailableError,
    HubVisibilityError,
    InvalidSettingError,
    IPUConfig,
    UnknownSettingError,
)
from optimum_ipu_ext.hub.card import SECTION_END, SECTION_START, card_text
from support.hub_server import git_blob_sha

CONFIG = {"layers_per_ipu": [2, 2], "replication_factor": 4, "gradient_accumulation_steps": 8,
          "recomputation_mode": "pipeline"}
HUB_0X = huggingface_hub.__version__.startswith("0.")


@pytest.fixture
def hub(hub_client, tmp_path, monkeypatch):
    """The client pointed at a fresh local Hub, run from an empty working directory."""
    monkeypatch.chdir(tmp_path)
    return hub_client


@pytest.fixture
def cache(tmp_path):
    return tmp_path / "hf_home" / "hub"


@pytest.fixture
def seeded(hub):
    """`org/cfg` holding `IPUConfig(**CONFIG)`, as optimum-ipu-ext writes it."""
    hub.create_repo("org/cfg")
    hub.commit("org/cfg", {"ipu_config.json": IPUConfig(**CONFIG).to_json_string()}, message="Add IPU config")
    return "org/cfg"


def pushed_config(hub, repo_id, revision="main"):
    return json.loads(hub.files(repo_id, revision)["ipu_config.json"])


def card_of(hub, repo_id, revision="main"):
    return ModelCard(hub.files(repo_id, revision)["README.md"].decode())


def snapshot_files(cache, repo_id):
    """Files the cache would serve for `repo_id`, as `<commit>/<path>`."""
    snapshots = cache / ("models--" + repo_id.replace("/", "--")) / "snapshots"
    if not snapshots.exists():
        return []
    return sorted(str(path.relative_to(snapshots)) for path in snapshots.rglob("*") if path.is_file())


def assert_cache_consistent(cache, partial_downloads_allowed=False):
    """Every blob is complete (named by its content's git sha) and every snapshot file resolves to such a blob."""
    for path in cache.rglob("*"):
        if path.parent.name == "blobs" and path.name.endswith(".incomplete"):
            assert partial_downloads_allowed, f"partial download left behind: {path}"
        elif path.parent.name == "blobs":
            assert git_blob_sha(path.read_bytes()) == path.name, f"corrupted blob {path}"
        elif "snapshots" in path.parts and path.is_file():
            blob = path.resolve()
            assert blob.parent.name == "blobs" and git_blob_sha(blob.read_bytes()) == blob.name, path


# push_to_hub, save_pretrained(push_to_hub=True)

def test_push_to_hub_creates_the_repo_and_commits_config_and_card_together(hub):
    config = IPUConfig(**CONFIG)
    commit = config.push_to_hub("org/new", token=hub.write_token, commit_message="Add a 2-IPU pipeline")

    assert pushed_config(hub, "org/new") == json.loads(config.to_json_string())
    assert set(hub.files("org/new")) == {".gitattributes", "ipu_config.json", "README.md"}
    assert hub.commit_messages("org/new") == ["Add a 2-IPU pipeline", "initial commit"]
    assert commit.oid == hub.refs("org/new")["refs/heads/main"]
    assert not hub.is_private("org/new")
    assert [r.path for r in hub.log if r.path.startswith("/api/models/org/new/commit/")] == [
        "/api/models/org/new/commit/main"
    ]
    assert IPUConfig.from_pretrained("org/new").to_dict() == config.to_dict()


def test_push_to_a_private_repo(hub):
    IPUConfig(**CONFIG).push_to_hub("org/private", token=hub.write_token, private=True)

    assert hub.is_private("org/private")
    with pytest.raises(HubRepositoryNotFoundError, match="'org/private'.*private and no token was given"):
        IPUConfig.from_pretrained("org/private")
    assert IPUConfig.from_pretrained("org/private", token=hub.read_token).replication_factor == 4


def test_push_as_a_pull_request_leaves_the_main_branch(hub, seeded):
    main = hub.refs(seeded)["refs/heads/main"]
    commit = IPUConfig(**dict(CONFIG, replication_factor=16)).push_to_hub(
        seeded, token=hub.write_token, create_pr=True
    )

    assert commit.pr_url.endswith("/org/cfg/discussions/1")
    assert hub.refs(seeded)["refs/heads/main"] == main and pushed_config(hub, seeded)["replication_factor"] == 4
    assert pushed_config(hub, seeded, "refs/pr/1")["replication_factor"] == 16
    assert "replication factor | 16 |" in card_of(hub, seeded, "refs/pr/1").content
    assert IPUConfig.from_pretrained(seeded, revision="refs/pr/1").replication_factor == 16


def test_push_to_a_branch(hub, seeded):
    config = IPUConfig(**dict(CONFIG, replication_factor=2))
    config.push_to_hub(seeded, token=hub.write_token, revision="dev", commit_message="Try 2 replicas")
    assert pushed_config(hub, seeded, "dev")["replication_factor"] == 2
    assert pushed_config(hub, seeded)["replication_factor"] == 4
    assert hub.commit_messages(seeded, "dev")[0] == "Try 2 replicas"
    assert IPUConfig.from_pretrained(seeded, revision="dev").replication_factor == 2


def test_save_pretrained_with_push_to_hub(hub, tmp_path):
    config = IPUConfig(**CONFIG)
    config.save_pretrained(tmp_path / "pipelined", push_to_hub=True, token=hub.write_token)
    config.save_pretrained(tmp_path / "other", push_to_hub=True, repo_id="org/explicit", token=hub.write_token,
                           commit_message="Explicit")

    local = (tmp_path / "pipelined" / "ipu_config.json").read_bytes()
    assert hub.files(hub.user + "/pipelined")["ipu_config.json"] == local
    assert "README.md" in hub.files(hub.user + "/pipelined")
    assert os.listdir(tmp_path / "pipelined") == ["ipu_config.json"]  # the card goes to the Hub only
    assert hub.files("org/explicit")["ipu_config.json"] == local
    assert hub.commit_messages("org/explicit")[0] == "Explicit"


def test_push_leaves_a_folder_named_like_the_repo_alone(hub, tmp_path):
    """transformers 4.29.2 would push from `./pipelined` (and write the card there) if the folder exists."""
    (tmp_path / "pipelined").mkdir()
    (tmp_path / "pipelined" / "README.md").write_text("my notes")
    IPUConfig(**CONFIG).push_to_hub("org/pipelined", token=hub.write_token)
    assert os.listdir(tmp_path / "pipelined") == ["README.md"]
    assert (tmp_path / "pipelined" / "README.md").read_text() == "my notes"
    assert b"my notes" not in hub.files("org/pipelined")["README.md"]


def test_token_and_use_auth_token_work_on_every_stack(hub):
    IPUConfig(replication_factor=2).push_to_hub("org/a", token=hub.write_token, private=True)
    IPUConfig(replication_factor=3).push_to_hub("org/b", use_auth_token=hub.write_token, private=True)

    assert IPUConfig.from_pretrained("org/a", token=hub.read_token).replication_factor == 2
    assert IPUConfig.from_pretrained("org/b", use_auth_token=hub.read_token).replication_factor == 3
    hub.clear_log()
    with pytest.raises(InvalidSettingError, match="former name of `token`") as raised:
        IPUConfig().push_to_hub("org/c", token=hub.write_token, use_auth_token=hub.write_token)
    assert hub.write_token not in str(raised.value) and hub.log == []


def test_a_token_from_the_environment_is_used(hub, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", hub.write_token)
    IPUConfig(replication_factor=5).push_to_hub("org/env", private=True)
    assert IPUConfig.from_pretrained("org/env").replication_factor == 5


@pytest.mark.parametrize(
    "token, error, words",
    [
        (None, HubAccessDeniedError, "no token was given .* pushing needs one"),
        ("read", HubAccessDeniedError, r"the token may not write to it \(403 Forbidden"),
        ("hf_unknown", HubAccessDeniedError, r"the Hub rejected the token \(401 Unauthorized"),
    ],
)
def test_push_without_write_access_names_the_repo_and_changes_nothing(hub, seeded, token, error, words):
    before = hub.files(seeded)
    token = hub.read_token if token == "read" else token
    with pytest.raises(error, match="Cannot push the IPU config to Hub repository 'org/cfg': " + words):
        IPUConfig(replication_factor=8).push_to_hub(seeded, token=token)
    assert hub.files(seeded) == before


def test_push_failures_of_the_server_name_the_repo_and_change_nothing(hub, seeded):
    before = hub.files(seeded)
    hub.fail_next("/api/models/org/cfg/commit/", status=500)
    with pytest.raises(HubUnavailableError, match=r"'org/cfg': the Hub at .* answered 500 Internal Server Error"):
        IPUConfig(replication_factor=8).push_to_hub(seeded, token=hub.write_token)
    assert hub.files(seeded) == before
    hub.stop()
    with pytest.raises(HubUnavailableError, match="'org/cfg': the Hub at .* cannot be reached"):
        IPUConfig(replication_factor=8).push_to_hub(seeded, token=hub.write_token)


# The model card

def test_model_card_says_what_the_config_is(hub):
    IPUConfig(**CONFIG).push_to_hub("org/card", token=hub.write_token)
    card = card_of(hub, "org/card")

    assert card.data.library_name == "optimum-ipu-ext"  # it uses `recomputation_mode`, unknown to optimum-graphcore
    assert {"ipu", "graphcore", "optimum-graphcore", "optimum-ipu-ext"} <= set(card.data.tags)
    for row in (
        "| pipeline length (IPUs per replica) | 2 | 2 |",
        "| replication factor | 4 | 1 |",
        "| gradient accumulation steps | 8 | - |",
        "| combined batch size factor | 32 | 1 |",
        '| `recomputation_mode` | `"pipeline"` | `null` |',
        "| `gradient_accumulation_steps` | `8` | `1` |",
        "| `layers_per_ipu` | `[2, 2]` | `[-1]` |",
    ):
        assert row in card.text
    assert "inference_layers_per_ipu" not in card.text  # it only repeats the training value
    assert 'IPUConfig.from_pretrained("org/card")' in card.text


def test_model_card_of_a_config_optimum_graphcore_loads():
    card = ModelCard(card_text(IPUConfig(replication_factor=2), "org/plain"))
    assert card.data.library_name == "optimum-graphcore"
    assert "optimum-graphcore's own `IPUConfig.from_pretrained` loads it too" in card.text
    assert "| `replication_factor` | `2` | `1` |" in card.text and "recomputation_mode" not in card.text


def test_pushing_again_updates_the_card(hub):
    IPUConfig(**CONFIG).push_to_hub("org/card", token=hub.write_token)
    IPUConfig(**dict(CONFIG, replication_factor=16)).push_to_hub("org/card", token=hub.write_token)

    card = card_of(hub, "org/card")
    assert "| replication factor | 16 | 1 |" in card.text and "| combined batch size factor | 128 | 1 |" in card.text
    assert "| replication factor | 4 |" not in card.text
    assert len(hub.commit_messages("org/card")) == 3 and pushed_config(hub, "org/card")["replication_factor"] == 16


def test_tags_are_added_to_the_card(hub):
    config = IPUConfig(**CONFIG)
    config.push_to_hub("org/tagged", token=hub.write_token, tags=["bert"])
    assert {"bert", "ipu", "optimum-ipu-ext"} <= set(card_of(hub, "org/tagged").data.tags)


# A model card that is already there

USER_CARD = """---
license: apache-2.0
language:
- en
library_name: transformers
tags:
- bert
datasets:
- squad
---

# bert-ipu

Fine-tuned on SQuAD: **F1 88.5**. Weights: `model.safetensors`.
"""
# The metadata after the first push: every key and its order kept, the IPU tags appended to the user's.
USER_CARD_METADATA_AFTER_PUSH = """---
license: apache-2.0
language:
- en
library_name: transformers
tags:
- bert
- ipu
- graphcore
- ipu-config
- optimum-graphcore
- optimum-ipu-ext
datasets:
- squad
---
"""
USER_PROSE = USER_CARD[USER_CARD.index("---\n\n") + 4:]


def outside_section(card):
    """The card without the package's section (the text between the markers, markers included)."""
    assert card.count(SECTION_START) == 1 and card.count(SECTION_END) == 1, card
    return card[: card.index(SECTION_START)], card[card.index(SECTION_END) + len(SECTION_END):]


def section(card):
    return card[card.index(SECTION_START): card.index(SECTION_END) + len(SECTION_END)]


def test_pushing_into_a_repo_with_a_card_keeps_it_and_adds_the_section(hub):
    hub.create_repo("org/bert-ipu")
    hub.commit("org/bert-ipu", {"README.md": USER_CARD, "model.safetensors": b"weights"})
    head = hub.refs("org/bert-ipu")["refs/heads/main"]
    hub.clear_log()
    IPUConfig(**CONFIG).push_to_hub("org/bert-ipu", token=hub.write_token)

    card = hub.files("org/bert-ipu")["README.md"].decode()
    before, after = outside_section(card)
    assert before == USER_CARD_METADATA_AFTER_PUSH + USER_PROSE + "\n"
    assert after == "\n"
    assert "| replication factor | 4 | 1 |" in section(card)
    assert ModelCard(card).data.library_name == "transformers"  # the user's, kept
    assert hub.files("org/bert-ipu")["model.safetensors"] == b"weights"
    paths = [(r.method, r.path) for r in hub.log]
    read = paths.index(("GET", f"/org/bert-ipu/resolve/{head}/README.md"))
    assert read < paths.index(("POST", "/api/models/org/bert-ipu/commit/main"))  # read before the commit


def test_a_second_push_replaces_the_section_in_place_and_keeps_every_other_byte(hub):
    hub.create_repo("org/bert-ipu")
    hub.commit("org/bert-ipu", {"README.md": USER_CARD})
    IPUConfig(**CONFIG).push_to_hub("org/bert-ipu", token=hub.write_token)
    first = hub.files("org/bert-ipu")["README.md"].decode()
    edited = first + "\n## Citation\n\nPlease cite us.\n"  # the user writes below the section
    hub.commit("org/bert-ipu", {"README.md": edited})

    IPUConfig(**dict(CONFIG, replication_factor=16)).push_to_hub("org/bert-ipu", token=hub.write_token)

    second = hub.files("org/bert-ipu")["README.md"].decode()
    assert outside_section(second) == outside_section(edited)
    assert "| replication factor | 16 | 1 |" in section(second) and "| replication factor | 4 |" not in second
    assert second.replace(section(second), section(first)) == edited  # byte for byte, but for the section


def test_a_card_without_metadata_gains_only_the_metadata_the_package_needs(hub):
    prose = "# Notes\r\n\r\nWritten on Windows.\r\n"
    hub.create_repo("org/notes")
    hub.commit("org/notes", {"README.md": prose})
    IPUConfig(replication_factor=2).push_to_hub("org/notes", token=hub.write_token)

    card = hub.files("org/notes")["README.md"].decode()
    before, after = outside_section(card)
    assert before.endswith("\r\n---\r\n" + prose + "\r\n") and after == "\r\n"
    assert ModelCard(card).data.to_dict() == {"library_name": "optimum-graphcore", "tags": [
        "ipu", "graphcore", "ipu-config", "optimum-graphcore", "optimum-ipu-ext"]}
    assert "\n" not in card.replace("\r\n", "")  # its line endings throughout


def test_a_card_with_the_section_twice_is_not_touched(hub):
    broken = USER_CARD + SECTION_START + "\n" + SECTION_START + "\n" + SECTION_END + "\n"
    hub.create_repo("org/broken")
    hub.commit("org/broken", {"README.md": broken})
    before = hub.files("org/broken")
    with pytest.raises(HubError, match="'org/broken': its README.md should hold the IPU config section once"):
        IPUConfig().push_to_hub("org/broken", token=hub.write_token)
    assert hub.files("org/broken") == before
    assert not any(r.path.endswith(("/preupload/main", "/commit/main")) for r in hub.log)


def test_a_card_whose_metadata_cannot_be_read_is_not_touched(hub):
    hub.create_repo("org/yaml")
    hub.commit("org/yaml", {"README.md": "---\n- a list\n- not a mapping\n---\n\nprose\n"})
    before = hub.files("org/yaml")
    with pytest.raises(HubError, match="'org/yaml': its README.md has a metadata block that cannot be read"):
        IPUConfig().push_to_hub("org/yaml", token=hub.write_token)
    assert hub.files("org/yaml") == before


def test_a_card_edited_while_pushing_is_not_overwritten(hub, monkeypatch):
    """The commit names the commit whose card was read: a commit in between makes the Hub refuse it."""
    import optimum_ipu_ext.hub.push as package_hub

    hub.create_repo("org/race")
    hub.commit("org/race", {"README.md": USER_CARD})
    read_card = package_hub._read_card

    def read_then_someone_edits(*args):
        text = read_card(*args)
        hub.commit("org/race", {"README.md": USER_CARD + "\nEdited meanwhile.\n"})
        return text

    monkeypatch.setattr(package_hub, "_read_card", read_then_someone_edits)
    with pytest.raises(HubError, match="'org/race'.*412"):
        IPUConfig().push_to_hub("org/race", token=hub.write_token)
    assert hub.files("org/race")["README.md"].decode().endswith("Edited meanwhile.\n")
    assert "ipu_config.json" not in hub.files("org/race")


# Visibility and what a push reports

def test_private_push_to_a_public_repo_is_refused_before_any_upload(hub, seeded):
    before = hub.files(seeded)
    hub.clear_log()
    with pytest.raises(HubVisibilityError) as raised:
        IPUConfig(replication_factor=8).push_to_hub(seeded, token=hub.write_token, private=True)
    message = str(raised.value)
    assert message.startswith("Cannot push the IPU config to Hub repository 'org/cfg': it is public, and a private "
                              "repository was asked for (`private=True`, `--private`); nothing was uploaded.")
    assert f"{hub.url}/org/cfg/settings" in message and "update_repo_settings('org/cfg', private=True)" in message
    assert [(r.method, r.path) for r in hub.log] == [("GET", "/api/models/org/cfg")]
    assert hub.files(seeded) == before and not hub.is_private(seeded)


def test_the_way_out_the_visibility_error_gives_works(hub, seeded):
    with pytest.raises(HubVisibilityError):
        IPUConfig(replication_factor=8).push_to_hub(seeded, token=hub.write_token, private=True)
    huggingface_hub.HfApi(token=hub.write_token).update_repo_settings(seeded, private=True)
    IPUConfig(replication_factor=8).push_to_hub(seeded, token=hub.write_token, private=True)
    assert hub.is_private(seeded) and pushed_config(hub, seeded)["replication_factor"] == 8


def test_private_push_to_a_private_repo_or_a_new_one(hub):
    hub.create_repo("org/secret", private=True)
    IPUConfig(replication_factor=2).push_to_hub("org/secret", token=hub.write_token, private=True)
    IPUConfig(replication_factor=3).push_to_hub("fresh", token=hub.write_token, private=True)

    assert hub.is_private("org/secret") and "ipu_config.json" in hub.files("org/secret")
    assert hub.is_private(hub.user + "/fresh") and pushed_config(hub, hub.user + "/fresh")["replication_factor"] == 3


def test_pushing_the_same_config_again_commits_nothing_and_says_so(hub, caplog):
    config = IPUConfig(**CONFIG)
    first = config.push_to_hub("org/same", token=hub.write_token)
    with caplog.at_level("WARNING", logger="optimum_ipu_ext.hub.push"):  # the logger an in-process CLI push quiets
        again = config.push_to_hub("org/same", token=hub.write_token)
        pull_request = config.push_to_hub("org/same", token=hub.write_token, create_pr=True)

    assert again.oid == first.oid == hub.refs("org/same")["refs/heads/main"] and again.pr_url is None
    assert pull_request.pr_url is None and not any(ref.startswith("refs/pr/") for ref in hub.refs("org/same"))
    assert len(hub.commit_messages("org/same")) == 2
    messages = [r.getMessage() for r in caplog.records if r.name == "optimum_ipu_ext.hub.push"]
    assert messages == ["No change: org/same already holds this config; nothing was committed.",
                        "No change: org/same already holds this config; nothing was committed and no pull request "
                        "opened."]


def test_push_returns_the_client_commit_info(hub, seeded):
    commit = IPUConfig(replication_factor=2).push_to_hub(seeded, token=hub.write_token)
    assert isinstance(commit, huggingface_hub.CommitInfo)
    assert commit.commit_url == f"{hub.url}/org/cfg/commit/{hub.refs(seeded)['refs/heads/main']}"


# from_pretrained

def test_from_pretrained_by_branch_tag_and_full_commit_sha(hub, seeded):
    first = hub.refs(seeded)["refs/heads/main"]
    hub.create_tag(seeded, "v1")
    hub.create_branch(seeded, "dev")
    hub.commit(seeded, {"ipu_config.json": IPUConfig(**dict(CONFIG, replication_factor=2)).to_json_string()},
               branch="dev")
    hub.commit(seeded, {"ipu_config.json": IPUConfig(**dict(CONFIG, replication_factor=8)).to_json_string()})

    assert IPUConfig.from_pretrained(seeded).replication_factor == 8
    assert IPUConfig.from_pretrained(seeded, revision="dev").replication_factor == 2
    assert IPUConfig.from_pretrained(seeded, revision="v1").replication_factor == 4
    assert IPUConfig.from_pretrained(seeded, revision=first).replication_factor == 4
    assert {r.path.split("/")[4] for r in hub.log if "/resolve/" in r.path} >= {"main", "dev", "v1"}


def test_from_pretrained_subfolder(hub, seeded):
    hub.commit(seeded, {"ipu/ipu_config.json": IPUConfig(replication_factor=5).to_json_string()})
    assert IPUConfig.from_pretrained(seeded, subfolder="ipu").replication_factor == 5
    assert hub.downloads(seeded, "ipu/ipu_config.json") == 1 and hub.downloads(seeded, "ipu_config.json") == 0


def test_from_pretrained_overrides_and_loaded_values(hub, seeded):
    config = IPUConfig.from_pretrained(seeded, replication_factor=2, stochastic_rounding=False)
    assert (config.replication_factor, config.stochastic_rounding) == (2, False)
    assert (config.layers_per_ipu, config.recomputation_mode) == ([2, 2], "pipeline")


def test_cache_dir_keeps_the_download_there(hub, seeded, tmp_path, cache):
    other = tmp_path / "other-cache"
    assert IPUConfig.from_pretrained(seeded, cache_dir=other).replication_factor == 4
    assert snapshot_files(other, seeded) == [hub.refs(seeded)["refs/heads/main"] + "/ipu_config.json"]
    assert snapshot_files(cache, seeded) == []
    hub.stop()
    assert IPUConfig.from_pretrained(seeded, cache_dir=other).replication_factor == 4
    with pytest.raises(HubUnavailableError, match=f"'org/cfg'.*cannot be reached.*cache \\({cache}\\)"):
        IPUConfig.from_pretrained(seeded)


def test_force_download_downloads_again(hub, seeded):
    IPUConfig.from_pretrained(seeded)
    IPUConfig.from_pretrained(seeded)
    assert hub.downloads(seeded, "ipu_config.json") == 1
    assert IPUConfig.from_pretrained(seeded, force_download=True).replication_factor == 4
    assert hub.downloads(seeded, "ipu_config.json") == 2


def test_local_files_only_reads_the_cache_and_sends_nothing(hub, seeded):
    with pytest.raises(HubUnavailableError, match="'org/cfg'.*`local_files_only=True`, and the cache .* no copy"):
        IPUConfig.from_pretrained(seeded, local_files_only=True)
    assert hub.log == []
    IPUConfig.from_pretrained(seeded)
    hub.clear_log()
    assert IPUConfig.from_pretrained(seeded, local_files_only=True).replication_factor == 4
    assert hub.log == []


def test_hf_hub_offline_loads_from_the_cache_with_no_request(hub, seeded, run_hub_python):
    IPUConfig.from_pretrained(seeded)
    hub.create_repo("org/never-loaded")
    hub.clear_log()
    result = run_hub_python(
        """
        from optimum_ipu_ext import IPUConfig, HubUnavailableError
        print(IPUConfig.from_pretrained("org/cfg").replication_factor)
        try:
            IPUConfig.from_pretrained("org/never-loaded")
        except HubUnavailableError as error:
            print(error)
        try:
            IPUConfig().push_to_hub("org/cfg", token="%s")
        except HubUnavailableError as error:
            print(error)
        """ % hub.write_token,
        offline=True,
    )
    loaded, load_error, push_error = result.stdout.splitlines()
    assert loaded == "4"
    assert "load 'ipu_config.json' from Hub repository 'org/never-loaded'" in load_error
    assert "offline mode is on (HF_HUB_OFFLINE=1), and the cache" in load_error
    assert push_error.endswith("Hub repository 'org/cfg': offline mode is on (HF_HUB_OFFLINE=1).")
    assert push_error.startswith("Cannot push the IPU config to")
    assert hub.log == []


@pytest.mark.filterwarnings("ignore::FutureWarning:huggingface_hub")  # the peer, transformers 4.x, causes it
def test_loads_make_no_more_requests_than_transformers(hub, seeded):
    hub.create_repo("org/peer")
    hub.commit("org/peer", {"config.json": '{"foo": 1}'})
    counts = {}
    for name, load in (("ours", lambda: IPUConfig.from_pretrained(seeded)),
                       ("peer", lambda: transformers.PretrainedConfig.from_pretrained("org/peer"))):
        for step in ("cold", "warm"):
            hub.clear_log()
            load()
            counts[name, step] = len(hub.log)
    assert counts["ours", "cold"] <= counts["peer", "cold"] and counts["ours", "warm"] <= counts["peer", "warm"]


# Failures: a clear error, naming the repository, and no corrupted cache

@pytest.mark.parametrize(
    "repo_id, kwargs, error, words",
    [
        ("org/missing", {}, HubRepositoryNotFoundError,
         "'org/missing' at revision 'main': no such file or directory here, and it does not exist on .*, or it is "
         "private and no token was given"),
        ("org/empty", {}, HubFileNotFoundError, "'org/empty' at revision 'main': the repository has no file "
                                                "'ipu_config.json' at this revision"),
        ("org/cfg", {"subfolder": "nope"}, HubFileNotFoundError, "'org/cfg' .* no file 'nope/ipu_config.json'"),
        ("org/cfg", {"revision": "v9"}, HubRevisionNotFoundError,
         "'org/cfg' at revision 'v9': no branch, tag or commit of the repository has that name"),
        ("org/private", {}, HubRepositoryNotFoundError, "'org/private' .* private and no token was given"),
        ("org/private", {"token": "hf_wrong"}, HubAccessDeniedError, r"'org/private' .* rejected the token \(401"),
        ("org/private", {"token": "hf_wrong", "force_download": True}, HubAccessDeniedError,
         r"'org/private' .* rejected the token \(401"),
    ],
)
def test_not_found_and_not_allowed(hub, seeded, cache, repo_id, kwargs, error, words):
    hub.create_repo("org/empty")
    hub.create_repo("org/private", private=True)
    hub.commit("org/private", {"ipu_config.json": "{}"})
    with pytest.raises(error, match="Cannot load '.*' from Hub repository " + words) as raised:
        IPUConfig.from_pretrained(repo_id, **kwargs)
    assert isinstance(raised.value, OSError) and raised.value.repo_id == repo_id
    assert snapshot_files(cache, repo_id) == []
    assert_cache_consistent(cache)


@pytest.mark.parametrize(
    "content, problem", [
        ("{not json", "not valid JSON"), ("[1, 2]", "expected a JSON object, found list"),
        ('{"replication_factor": 4, "replication_factor": 8}',
         'the key "replication_factor" is given twice in one object; give each key once'),
    ]
)
def test_malformed_config_on_the_hub(hub, seeded, cache, content, problem):
    hub.commit(seeded, {"ipu_config.json": content})
    with pytest.raises(HubConfigFileError, match=f"'ipu_config.json' from Hub repository 'org/cfg' at revision "
                                                 f"'main': {problem}") as raised:
        IPUConfig.from_pretrained(seeded)
    assert isinstance(raised.value, ConfigFileError) and isinstance(raised.value, HubError)
    assert_cache_consistent(cache)

    hub.commit(seeded, {"ipu_config.json": IPUConfig(replication_factor=2).to_json_string()})
    assert IPUConfig.from_pretrained(seeded).replication_factor == 2  # the fixed file replaces the broken one


@pytest.mark.parametrize(
    "source, problem",
    [
        ("missing.json", "no such file or directory"),
        ("configs/missing.json", "no such file or directory"),
        ("/no/such/ipu_config.json", "no such file or directory"),
        ("./missing", "no such file or directory"),
        ("missing/", "no such file or directory"),
        ("a/b/c", "no such file or directory"),
        ("emptydir/", "a directory, but it holds no ipu_config.json"),
        ("emptydir", "a directory, but it holds no ipu_config.json"),
    ],
)
def test_a_local_path_without_a_config_is_named_with_no_request(hub, tmp_path, source, problem):
    (tmp_path / "emptydir").mkdir()
    with pytest.raises(ConfigFileError, match=f"Cannot load the IPU config file '{source}': {problem}.") as raised:
        IPUConfig.from_pretrained(source)
    assert not isinstance(raised.value, HubError)
    assert hub.log == []


def test_a_folder_whose_subfolder_holds_no_config_is_named(hub, tmp_path):
    (tmp_path / "model" / "ipu").mkdir(parents=True)
    IPUConfig(replication_factor=2).save_pretrained(tmp_path / "model")
    no_config = "'model': a directory, but its subfolder 'ipu' holds no ipu_config.json"
    with pytest.raises(ConfigFileError, match=no_config):
        IPUConfig.from_pretrained("model", subfolder="ipu")
    assert IPUConfig.from_pretrained("model").replication_factor == 2
    assert hub.log == []


def test_a_name_that_is_not_a_repository_id_is_a_config_file_error(hub):
    with pytest.raises(ConfigFileError, match="'not a repo': no such file or directory, and not a Hub repository id"):
        IPUConfig.from_pretrained("not a repo")
    assert hub.log == []


def test_unknown_key_in_a_hub_config_is_named_with_the_repo(hub, seeded):
    hub.commit(seeded, {"ipu/ipu_config.json": json.dumps({"recomputation_mod": "pipeline"})}, branch="main")
    with pytest.raises(UnknownSettingError, match="`recomputation_mod`.*Did you mean `recomputation_mode`") as raised:
        IPUConfig.from_pretrained(seeded, subfolder="ipu")
    assert "'ipu/ipu_config.json' of Hub repository 'org/cfg' at revision 'main'" in str(raised.value)


def test_unreachable_hub_warm_cache_loads_and_cold_cache_fails_clearly(hub, seeded, cache):
    hub.create_repo("org/cold")
    IPUConfig.from_pretrained(seeded)
    hub.stop()
    assert IPUConfig.from_pretrained(seeded).replication_factor == 4
    with pytest.raises(HubUnavailableError, match="'org/cold' at revision 'main': no such file or directory here, "
                                                  "and the Hub at .* cannot be reached "
                                                  f".*and the cache \\({cache}\\) holds no copy"):
        IPUConfig.from_pretrained("org/cold")
    assert_cache_consistent(cache)


def test_server_error_warm_cache_loads_and_cold_cache_fails_clearly(hub, seeded, cache):
    hub.fail_next("/org/cfg/", status=500, times=20)
    with pytest.raises(HubUnavailableError, match="'org/cfg' at revision 'main': no such file or directory here, "
                                                  "and the Hub at .* answered 500 Internal "
                                                  "Server Error.*holds no copy"):
        IPUConfig.from_pretrained(seeded)
    assert snapshot_files(cache, seeded) == []
    hub.clear_faults()
    IPUConfig.from_pretrained(seeded)
    hub.clear_log()
    hub.fail_next("/org/cfg/", status=500, times=20)
    assert IPUConfig.from_pretrained(seeded).replication_factor == 4
    assert {r.status for r in hub.log if r.method == "HEAD"} >= {500}


@pytest.mark.parametrize("cache_state", ["cold", "warm", "warm, force_download"])
def test_a_failing_hub_is_answered_without_waiting_out_the_client_retries(hub, seeded, monkeypatch, caplog,
                                                                          cache_state):
    """With the client's real back-off (1 s before its first retry), the answer comes after its first attempt and
    one question of ours: not after its six attempts."""
    import huggingface_hub.file_download
    import huggingface_hub.utils._http

    import optimum_ipu_ext.hub.load as package_hub

    if cache_state.startswith("warm"):
        IPUConfig.from_pretrained(seeded)
    kwargs = {"force_download": True} if "force_download" in cache_state else {}
    monkeypatch.setattr(package_hub, "PATIENCE", 0.3)
    monkeypatch.setattr(huggingface_hub.utils._http, "time", time)
    monkeypatch.setattr(huggingface_hub.file_download, "time", time)
    hub.clear_log()
    hub.fail_next("/org/cfg/", status=500, times=1000)
    hub.fail_next("/api/models/org/cfg", status=500, times=1000)
    with caplog.at_level("WARNING", logger="optimum_ipu_ext.hub.load"):
        if cache_state != "warm":
            reason = "`force_download=True` refuses the cached copy" if kwargs else "the cache .* holds no copy"
            with pytest.raises(HubUnavailableError, match="'org/cfg' at revision 'main': no such file or directory "
                                                          "here, and the Hub at .* answered 500 "
                                                          f"Internal Server Error.*, and {reason}"):
                IPUConfig.from_pretrained(seeded, **kwargs)
        else:
            assert IPUConfig.from_pretrained(seeded).replication_factor == 4
    answered = hub.log
    assert 1 <= len(answered) <= 3 and {r.status for r in answered} == {500}, answered
    ours = [r.getMessage() for r in caplog.records if r.name == "optimum_ipu_ext.hub.load"]
    if cache_state == "warm" and HUB_0X:  # huggingface_hub 2.x falls back to the cache at once by itself
        assert len(ours) == 1 and ours[0].startswith("Loading the cached copy of 'ipu_config.json' of Hub "
                                                     "repository 'org/cfg' at revision 'main': the Hub at ")
    else:
        assert ours == []


def test_connection_cut_mid_body(hub, seeded, cache):
    hub.cut_next("/org/cfg/resolve/", method="GET", times=20)
    with pytest.raises(HubUnavailableError, match="'org/cfg' at revision 'main': no such file or directory here, "
                                                  "and the connection to the Hub at .* was "
                                                  "cut during the transfer"):
        IPUConfig.from_pretrained(seeded)
    assert snapshot_files(cache, seeded) == []  # nothing truncated is ever served
    assert_cache_consistent(cache, partial_downloads_allowed=True)

    hub.clear_faults()
    hub.cut_next("/org/cfg/resolve/", method="GET", times=1)
    if HUB_0X:  # huggingface_hub 0.x gives up at once, and resumes on the next load
        with pytest.raises(HubUnavailableError, match="cut during the transfer"):
            IPUConfig.from_pretrained(seeded)
    config = IPUConfig.from_pretrained(seeded)  # 2.x resumes the cut download itself
    assert config.to_dict() == IPUConfig(**CONFIG).to_dict()
    assert_cache_consistent(cache)


# Many loaders at once

LOADER = """
    import json, os, time
    from pathlib import Path
    from optimum_ipu_ext import IPUConfig

    Path(os.environ["READY"]).touch()
    deadline = time.time() + 60
    while not os.path.exists(os.environ["GO"]) and time.time() < deadline:
        time.sleep(0.005)
    print(json.dumps(IPUConfig.from_pretrained("org/cfg").to_dict(), sort_keys=True))
"""


def test_sixteen_processes_load_from_one_cold_shared_cache(hub, seeded, cache, tmp_path, run_hub_python):
    """As a multi-host launcher does: all start together on a cold cache, after their imports."""
    processes = 16
    go = tmp_path / "go"
    ready = [tmp_path / f"ready-{index}" for index in range(processes)]
    with ThreadPoolExecutor(processes) as pool:
        runs = [pool.submit(run_hub_python, LOADER, env={"READY": str(path), "GO": str(go)}) for path in ready]
        deadline = time.time() + 110
        while not all(path.exists() for path in ready) and time.time() < deadline and not any(r.done() for r in runs):
            time.sleep(0.01)
        go.touch()
        outputs = [run.result().stdout.strip() for run in runs]

    expected = json.dumps(IPUConfig(**CONFIG).to_dict(), sort_keys=True)
    assert outputs == [expected] * processes
    commit = hub.refs(seeded)["refs/heads/main"]
    assert snapshot_files(cache, seeded) == [commit + "/ipu_config.json"]
    assert_cache_consistent(cache)
    heads = sum(r.method == "HEAD" for r in hub.log)
    print(f"{processes} loaders: {heads} HEAD, {hub.downloads(seeded, 'ipu_config.json')} download(s)")
    assert hub.downloads(seeded, "ipu_config.json") == 1  # the client's file lock lets one process download
