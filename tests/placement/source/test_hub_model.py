"""A Hub model read as a placement needs it: `config.json` and the safetensors headers, never the weights, with the
real huggingface_hub client (0.36 or 2.x) against the local Hub. Every test checks what the server answered (its
request log, the bytes it served) and what was read, against the files the repository holds."""
import json
import logging
import re
import struct
import time

import pytest
import torch
import transformers
from huggingface_hub import HfApi, constants
from safetensors.torch import save

from optimum_ipu_ext import (
    HubAccessDeniedError,
    HubFileNotFoundError,
    HubRepositoryNotFoundError,
    HubRevisionNotFoundError,
    HubUnavailableError,
    ModelFileError,
)
from optimum_ipu_ext.placement.source.checkpoint import TensorHeader, read_folder
from optimum_ipu_ext.placement.source.hub_model import FIRST_READ, HubModel, hub_model
from support.hub_fixtures import TINY_MODEL_CONFIG

SINGLE, SHARDED, BIN = "org/tiny-bert", "org/tiny-bert-sharded", "org/tiny-bert-bin"
SHARDS = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]


# transformers 4.x, which some tests call to read a config as users do, passes huggingface_hub an argument it warns
# about; the package's own calls must not (pyproject.toml makes that warning an error)
PEER_WARNS = pytest.mark.filterwarnings("ignore::FutureWarning:huggingface_hub")


@pytest.fixture
def hub(hub_client, tiny_models, tmp_path, monkeypatch):
    """The client pointed at a fresh local Hub holding the tiny models, run from an empty working directory."""
    monkeypatch.chdir(tmp_path)
    return hub_client


def head(hub, repo_id):
    return hub.refs(repo_id)["refs/heads/main"]


def answered(hub, repo_id):
    """The requests the server answered, as (method, path, status), the repository's head commit written `{c}`."""
    commit = head(hub, repo_id)
    return [(r.method, r.path.replace(commit, "{c}"), r.status) for r in hub.log]


def in_a_folder(files, folder):
    """The tensors `read_folder` reads from `files` written to `folder`: what a local copy of the repository gives."""
    folder.mkdir()
    for path, content in files.items():
        (folder / path).write_bytes(content)
    return read_folder(str(folder))


def cache_file(tmp_path, repo_id, commit):
    namespace = repo_id.replace("/", "--")
    return tmp_path / "hf_home" / "assets" / "optimum-ipu-ext" / namespace / "safetensors-headers" / f"{commit}.json"


def safetensors_bytes(header, data=b""):
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


# What is read

@pytest.mark.parametrize("repo_id", [SINGLE, SHARDED])
def test_a_model_is_its_config_and_the_tensors_its_headers_give(hub, tiny_models, tmp_path, repo_id):
    model = hub_model(repo_id)
    assert model.config == TINY_MODEL_CONFIG
    assert model.commit == head(hub, repo_id)
    assert len(model.tensors) == 43
    assert {name: model.tensors[name] for name in ("bert.embeddings.word_embeddings.weight",
                                                   "bert.embeddings.position_ids", "cls.predictions.bias")} == {
        "bert.embeddings.word_embeddings.weight": TensorHeader("F32", (4096, 64)),
        "bert.embeddings.position_ids": TensorHeader("I64", (1, 64)),
        "cls.predictions.bias": TensorHeader("F32", (4096,)),
    }
    local = in_a_folder(tiny_models[repo_id], tmp_path / "copy")
    assert model.tensors == local and list(model.tensors) == list(local)  # in the file's or the index's order


def test_a_model_without_a_safetensors_checkpoint_has_no_tensors(hub):
    model = hub_model(BIN)
    assert (model.config, model.tensors, model.commit) == (TINY_MODEL_CONFIG, None, head(hub, BIN))


def test_a_hub_model_is_a_named_tuple_of_config_tensors_and_commit(hub):
    assert HubModel._fields == ("config", "tensors", "commit")
    assert isinstance(hub_model(SINGLE), tuple)


@pytest.mark.parametrize("repo_id, cold", [
    (SINGLE, [("HEAD", "/org/tiny-bert/resolve/main/config.json", 200),
              ("GET", "/org/tiny-bert/resolve/main/config.json", 200),
              ("GET", "/org/tiny-bert/resolve/{c}/model.safetensors", 206)]),
    (SHARDED, [("HEAD", "/org/tiny-bert-sharded/resolve/main/config.json", 200),
               ("GET", "/org/tiny-bert-sharded/resolve/main/config.json", 200),
               ("GET", "/org/tiny-bert-sharded/resolve/{c}/model.safetensors", 404),
               ("HEAD", "/org/tiny-bert-sharded/resolve/{c}/model.safetensors.index.json", 200),
               ("GET", "/org/tiny-bert-sharded/resolve/{c}/model.safetensors.index.json", 200),
               ("GET", f"/org/tiny-bert-sharded/resolve/{{c}}/{SHARDS[0]}", 206),
               ("GET", f"/org/tiny-bert-sharded/resolve/{{c}}/{SHARDS[1]}", 206)]),
    (BIN, [("HEAD", "/org/tiny-bert-bin/resolve/main/config.json", 200),
           ("GET", "/org/tiny-bert-bin/resolve/main/config.json", 200),
           ("GET", "/org/tiny-bert-bin/resolve/{c}/model.safetensors", 404),
           ("HEAD", "/org/tiny-bert-bin/resolve/{c}/model.safetensors.index.json", 404)]),
])
def test_cold_and_warm_requests(hub, repo_id, cold):
    cold_model = hub_model(repo_id)
    assert answered(hub, repo_id) == cold
    hub.clear_log()
    assert hub_model(repo_id) == cold_model
    assert answered(hub, repo_id) == [("HEAD", f"/{repo_id}/resolve/main/config.json", 200)]


@PEER_WARNS
@pytest.mark.parametrize("repo_id", [SINGLE, SHARDED, BIN])
def test_a_warm_read_makes_as_many_requests_as_a_warm_from_pretrained(hub, repo_id):
    requests = {}
    for name, read in (("from_pretrained", lambda: transformers.PretrainedConfig.from_pretrained(repo_id)),
                       ("hub_model", lambda: hub_model(repo_id))):
        read()
        before = len(hub.log)
        read()
        requests[name] = len(hub.log) - before
    assert requests["hub_model"] == requests["from_pretrained"] == 1
    assert hub.downloads(repo_id, "config.json") == 1  # hub_model found it where transformers cached it


@PEER_WARNS
@pytest.mark.skipif(not hasattr(transformers.utils.hub, "TRANSFORMERS_CACHE"),
                    reason="transformers 5 has no Hub cache of its own: it uses huggingface_hub's, as hub_model does")
def test_config_json_is_cached_where_transformers_caches_it(hub, tmp_path, monkeypatch):
    monkeypatch.setattr(transformers.utils.hub, "TRANSFORMERS_CACHE", str(tmp_path / "transformers-cache"))
    transformers.PretrainedConfig.from_pretrained(SINGLE)
    hub_model(SINGLE)
    assert hub.downloads(SINGLE, "config.json") == 1
    assert list((tmp_path / "transformers-cache").glob("models--org--tiny-bert/snapshots/*/config.json"))


def test_a_commit_sha_with_a_warm_cache_sends_nothing(hub):
    model = hub_model(SINGLE)
    hub.clear_log()
    assert hub_model(SINGLE, revision=model.commit) == model
    assert hub.log == []


@pytest.mark.parametrize("repo_id, files", [(SINGLE, ["model.safetensors"]), (SHARDED, SHARDS)])
def test_only_the_headers_are_served_never_the_weights(hub, tiny_models, repo_id, files):
    assert FIRST_READ == 100_000  # as huggingface_hub's own first range
    hub_model(repo_id)
    served = {file: hub.bytes_served(repo_id, file) for file in files}
    sizes = {file: len(tiny_models[repo_id][file]) for file in files}
    assert served == {file: min(FIRST_READ, sizes[file]) for file in files}
    assert sum(served.values()) < sum(sizes.values()) and all(hub.downloads(repo_id, file) == 0 for file in files)


@pytest.fixture
def long_header(hub):
    """`org/long`, whose `model.safetensors` has a header longer than `FIRST_READ`: (its tensors, its content)."""
    tensors = {f"layer.{i}.a.rather.long.name.for.a.tensor.weight": torch.zeros(1) for i in range(1500)}
    content = save(tensors)
    hub.create_repo("org/long")
    hub.commit("org/long", {"config.json": "{}", "model.safetensors": content})
    return {name: TensorHeader("F32", (1,)) for name in tensors}, content


def test_a_header_longer_than_the_first_read_takes_a_second_range_of_exactly_the_rest(hub, long_header):
    tensors, content = long_header
    (length,) = struct.unpack("<Q", content[:8])
    assert 8 + length > FIRST_READ
    assert hub_model("org/long").tensors == tensors
    statuses = [status for method, path, status in answered(hub, "org/long") if path.endswith(".safetensors")]
    assert statuses == [206, 206]
    assert hub.bytes_served("org/long", "model.safetensors") == 8 + length < len(content)


@pytest.mark.parametrize("repo_id", [SINGLE, "org/long"])
def test_a_server_that_ignores_the_range_still_gives_the_tensors(hub, tiny_models, long_header, tmp_path, repo_id):
    files = tiny_models.get(repo_id) or {"config.json": b"{}", "model.safetensors": long_header[1]}
    hub.ignore_range_next(f"/{repo_id}/resolve/{head(hub, repo_id)}/model.safetensors", times=2)
    assert hub_model(repo_id).tensors == in_a_folder(files, tmp_path / "copy")
    ranges = [status for method, path, status in answered(hub, repo_id) if path.endswith(".safetensors")]
    assert ranges == [200] * (2 if repo_id == "org/long" else 1)


# The cache of the headers

def test_the_headers_are_cached_by_commit(hub, tmp_path):
    first = hub_model(SINGLE)
    changed = {"model.safetensors": save({"w": torch.zeros(3, dtype=torch.float16)}),
               "config.json": json.dumps(dict(TINY_MODEL_CONFIG, hidden_size=3))}
    hub.commit(SINGLE, changed)
    hub.clear_log()
    second = hub_model(SINGLE)
    assert (second.tensors, second.config["hidden_size"]) == ({"w": TensorHeader("F16", (3,))}, 3)
    assert second.commit == head(hub, SINGLE) != first.commit
    assert len(hub.log) == 3  # the new commit is read like a cold one
    hub.clear_log()
    assert hub_model(SINGLE, revision=first.commit) == first and hub.log == []
    for model in (first, second):
        assert cache_file(tmp_path, SINGLE, model.commit).is_file()


def test_the_cache_file_holds_each_tensor_as_dtype_and_shape(hub, tmp_path):
    model = hub_model(SINGLE)
    cached = json.loads(cache_file(tmp_path, SINGLE, model.commit).read_text())
    assert list(cached) == ["tensors"] and len(cached["tensors"]) == 43
    assert cached["tensors"]["bert.embeddings.position_ids"] == ["I64", [1, 64]]
    no_checkpoint = hub_model(BIN)
    assert json.loads(cache_file(tmp_path, BIN, no_checkpoint.commit).read_text()) == {"tensors": None}
    hub.clear_log()
    assert hub_model(BIN) == no_checkpoint and len(hub.log) == 1  # "no checkpoint" is cached too


@pytest.mark.parametrize("content", ["{", "[]", '{"tensors": 3}', '{"tensors": {"w": ["F32"]}}', '{"other": 1}'])
def test_a_cache_file_that_cannot_be_read_is_replaced(hub, tmp_path, content):
    model = hub_model(SINGLE)
    path = cache_file(tmp_path, SINGLE, model.commit)
    path.write_text(content)
    hub.clear_log()
    assert hub_model(SINGLE) == model
    assert answered(hub, SINGLE)[-1] == ("GET", "/org/tiny-bert/resolve/{c}/model.safetensors", 206)
    assert len(json.loads(path.read_text())["tensors"]) == 43


@pytest.mark.parametrize("in_the_way", ["a file where the cache's folder goes", "a folder where its file goes"])
def test_a_cache_that_cannot_be_written_costs_only_the_saving(hub, tmp_path, monkeypatch, caplog, in_the_way):
    if in_the_way.endswith("folder goes"):  # huggingface_hub refuses to make the folder: a ValueError
        (tmp_path / "a-file").write_text("")
        monkeypatch.setattr(constants, "HF_ASSETS_CACHE", str(tmp_path / "a-file" / "assets"))
    else:  # replacing a folder by the file fails: an OSError
        cache_file(tmp_path, SINGLE, head(hub, SINGLE)).mkdir(parents=True)
    with caplog.at_level(logging.WARNING, logger="optimum_ipu_ext.placement.source.hub_model"):
        model = hub_model(SINGLE)
    assert len(model.tensors) == 43
    [warning] = [record.getMessage() for record in caplog.records]
    assert warning.startswith(f"The safetensors headers of 'org/tiny-bert' at {model.commit} are not cached: ")
    hub.clear_log()
    assert hub_model(SINGLE) == model and len(hub.log) == 2  # read again


def test_the_cache_serves_a_new_process_offline_with_no_request(hub, run_hub_python):
    models = {repo_id: hub_model(repo_id) for repo_id in (SINGLE, SHARDED, BIN)}
    hub.clear_log()
    result = run_hub_python(
        """
        import json
        from optimum_ipu_ext.placement.source.hub_model import hub_model

        for repo_id in ("org/tiny-bert", "org/tiny-bert-sharded", "org/tiny-bert-bin"):
            print(json.dumps(hub_model(repo_id)))
        """,
        offline=True,
    )
    assert result.stdout.splitlines() == [json.dumps(models[repo_id]) for repo_id in (SINGLE, SHARDED, BIN)]
    assert hub.log == []


@PEER_WARNS
def test_offline_without_a_cached_copy_names_what_is_missing(hub, run_hub_python):
    transformers.PretrainedConfig.from_pretrained(SINGLE)  # config.json cached, the headers not
    hub.clear_log()
    result = run_hub_python(
        """
        from optimum_ipu_ext import HubUnavailableError
        from optimum_ipu_ext.placement.source.hub_model import hub_model

        for repo_id in ("org/tiny-bert", "org/tiny-bert-sharded"):
            try:
                hub_model(repo_id)
            except HubUnavailableError as error:
                print(error)
        """,
        offline=True,
    )
    headers, config = result.stdout.splitlines()
    assert headers == ("Cannot read the safetensors header of 'model.safetensors' from Hub repository "
                       "'org/tiny-bert' at revision 'main': offline mode is on (HF_HUB_OFFLINE=1).")
    assert config.startswith("Cannot load 'config.json' from Hub repository 'org/tiny-bert-sharded' at revision "
                             "'main': no such file or directory here, and offline mode is on (HF_HUB_OFFLINE=1), and "
                             "the cache (")
    assert config.endswith(") holds no copy of the file.")
    assert hub.log == []


# Errors: the Hub's, naming repository and revision

@pytest.mark.parametrize("repo_id, kwargs, error, message", [
    ("org/missing", {}, HubRepositoryNotFoundError,
     "Cannot load 'config.json' from Hub repository 'org/missing' at revision 'main': no such file or directory here, "
     "and it does not exist on {url}, or it is private and no token was given "
     "(pass `token=` or log in with `hf auth login`)."),
    ("org/private", {}, HubRepositoryNotFoundError,
     "Cannot load 'config.json' from Hub repository 'org/private' at revision 'main': no such file or directory here, "
     "and it does not exist on {url}, or it is private and no token was given "
     "(pass `token=` or log in with `hf auth login`)."),
    ("org/private", {"token": False}, HubRepositoryNotFoundError,
     "Cannot load 'config.json' from Hub repository 'org/private' at revision 'main': no such file or directory here, "
     "and it does not exist on {url}, or it is private and no token was given "
     "(pass `token=` or log in with `hf auth login`)."),
    ("org/gated", {}, HubAccessDeniedError,
     "Cannot load 'config.json' from Hub repository 'org/gated' at revision 'main': the repository is gated: "
     "request access on its page, then use a token that has it."),
    ("org/gated", {"token": "hf_test_read_token"}, HubAccessDeniedError,
     "Cannot load 'config.json' from Hub repository 'org/gated' at revision 'main': the repository is gated: "
     "request access on its page, then use a token that has it."),
    (SINGLE, {"revision": "v9"}, HubRevisionNotFoundError,
     "Cannot load 'config.json' from Hub repository 'org/tiny-bert' at revision 'v9': no branch, tag or commit of "
     "the repository has that name."),
    ("org/no-config", {}, HubFileNotFoundError,
     "Cannot load 'config.json' from Hub repository 'org/no-config' at revision 'main': the repository has no file "
     "'config.json' at this revision."),
])
def test_a_model_that_cannot_be_read_is_named_with_its_revision(hub, tiny_models, repo_id, kwargs, error, message):
    hub.create_repo("org/private", private=True)
    hub.commit("org/private", tiny_models[SINGLE])
    hub.create_repo("org/gated")
    hub.commit("org/gated", tiny_models[SINGLE])
    hub.gate("org/gated", granted_tokens=[hub.write_token])
    hub.create_repo("org/no-config")
    hub.commit("org/no-config", {"model.safetensors": tiny_models[SINGLE]["model.safetensors"]})
    with pytest.raises(error) as raised:
        hub_model(repo_id, **kwargs)
    assert str(raised.value) == message.format(url=hub.url)
    assert (raised.value.repo_id, raised.value.revision) == (repo_id, kwargs.get("revision", "main"))


def test_a_token_that_can_read_opens_private_and_gated_models(hub, tiny_models):
    hub.create_repo("org/private", private=True)
    hub.commit("org/private", tiny_models[SINGLE])
    hub.create_repo("org/gated")
    hub.commit("org/gated", tiny_models[SINGLE])
    hub.gate("org/gated", granted_tokens=[hub.write_token])
    assert len(hub_model("org/private", token=hub.read_token).tensors) == 43
    assert len(hub_model("org/gated", token=hub.write_token).tensors) == 43
    assert all(r.status in (200, 206) for r in hub.log)


def test_a_name_that_is_not_a_repository_id_is_refused_with_no_request(hub):
    with pytest.raises(ModelFileError, match=r"^Cannot read the model file 'not a repo': not a Hub repository id \("):
        hub_model("not a repo")
    assert hub.log == []


def test_a_hub_that_answers_500_with_a_cold_cache_is_named(hub):
    hub.fail_next("/org/tiny-bert/", status=500, times=1000)
    with pytest.raises(HubUnavailableError) as raised:
        hub_model(SINGLE)
    assert re.fullmatch(  # 0.36 reads no server message off the answer to a HEAD
        "Cannot load 'config.json' from Hub repository 'org/tiny-bert' at revision 'main': no such file or directory "
        f"here, and the Hub at {re.escape(hub.url)} answered 500"
        r" Internal Server Error(: Injected failure)?, and the cache \(.*\) holds no copy of the file\.",
        str(raised.value),
    )


@pytest.mark.parametrize("outage", ["500", "stopped"])
def test_a_hub_that_is_down_with_a_warm_cache_is_not_needed(hub, outage):
    model = hub_model(SHARDED)
    if outage == "stopped":
        hub.stop()
    else:
        hub.fail_next("/", status=500, times=1000)
    assert hub_model(SHARDED) == model


@PEER_WARNS
@pytest.mark.parametrize("fault, problem", [
    ("fail", "the Hub at {url} answered 500 Internal Server Error: Injected failure."),
    ("cut", "the connection to the Hub at {url} was cut during the transfer ("),
])
def test_a_hub_that_fails_while_the_headers_are_read_is_named(hub, fault, problem):
    transformers.PretrainedConfig.from_pretrained(SINGLE)  # config.json cached: the failure is the header's
    path = f"/org/tiny-bert/resolve/{head(hub, SINGLE)}/model.safetensors"
    if fault == "fail":
        hub.fail_next(path, status=500)
    else:
        hub.cut_next(path, method="GET", after_bytes=4)
    with pytest.raises(HubUnavailableError) as raised:
        hub_model(SINGLE)
    assert str(raised.value).startswith(
        "Cannot read the safetensors header of 'model.safetensors' from Hub repository 'org/tiny-bert' at revision "
        "'main': " + problem.format(url=hub.url)
    )
    assert len(hub_model(SINGLE).tensors) == 43  # nothing was cached from the failure


def test_a_hub_that_stalls_while_the_headers_are_read_is_given_up_on(hub, monkeypatch):
    monkeypatch.setattr(constants, "HF_HUB_DOWNLOAD_TIMEOUT", 0.2)
    hub.stall_next(f"/org/tiny-bert/resolve/{head(hub, SINGLE)}/model.safetensors", seconds=3)
    started = time.monotonic()
    with pytest.raises(HubUnavailableError, match="^Cannot read the safetensors header of 'model.safetensors' from "
                                                  "Hub repository 'org/tiny-bert' at revision 'main': the Hub at .*"):
        hub_model(SINGLE)
    assert time.monotonic() - started < 2.5


def test_a_failing_hub_with_a_warm_cache_is_not_waited_for(hub, monkeypatch, caplog):
    """With the client's real back-off, as hub.py's `load_promptly` answers `from_pretrained`: after the client's
    first attempt and one question of ours, not after its six attempts."""
    import huggingface_hub.file_download
    import huggingface_hub.utils._http

    import optimum_ipu_ext.hub.load as package_hub

    model = hub_model(SINGLE)
    monkeypatch.setattr(package_hub, "PATIENCE", 0.3)
    monkeypatch.setattr(huggingface_hub.utils._http, "time", time)
    monkeypatch.setattr(huggingface_hub.file_download, "time", time)
    hub.clear_log()
    hub.fail_next("/", status=500, times=1000)
    assert hub_model(SINGLE) == model
    assert 1 <= len(hub.log) <= 3 and {r.status for r in hub.log} == {500}, hub.log


def test_a_hub_that_fails_on_the_index_is_named(hub):
    hub.fail_next(f"/org/tiny-bert-sharded/resolve/{head(hub, SHARDED)}/model.safetensors.index.json",
                  status=503, times=1000)
    with pytest.raises(HubUnavailableError) as raised:
        hub_model(SHARDED)
    assert re.fullmatch(
        "Cannot load 'model.safetensors.index.json' from Hub repository 'org/tiny-bert-sharded' at revision 'main': "
        f"the Hub at {re.escape(hub.url)} answered 503 Service Unavailable"
        r"(: Injected failure)?, and the cache \(.*\) holds no copy of the file\.",
        str(raised.value),
    )


# Errors: files that are not what they should be, named

@pytest.mark.parametrize("content, problem", [
    ("{not json", "not valid JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1))"),
    ("[1, 2]", "expected a JSON object, found list"),
    (b"\xff\xfe{}", "not valid JSON ('utf-8' codec can't decode byte 0xff in position 0: invalid start byte)"),
])
def test_a_config_that_is_not_a_json_object_is_named(hub, content, problem):
    hub.commit(SINGLE, {"config.json": content})
    with pytest.raises(ModelFileError) as raised:
        hub_model(SINGLE)
    assert (raised.value.path, raised.value.problem) == ("hf://org/tiny-bert@main/config.json", problem)


@pytest.mark.parametrize("content, problem", [
    (b"", "truncated: 0 bytes, shorter than the 8-byte header length"),
    (b"\x10\0\0", "truncated: 3 bytes, shorter than the 8-byte header length"),
    (struct.pack("<Q", 100) + b'{"a": 1}', "truncated: the header says 100 bytes, the file holds 8 after it"),
    (struct.pack("<Q", 200_000) + b" " * 150_000, "truncated: the header says 200000 bytes, the file holds 150000 "
                                                  "after it"),
    (struct.pack("<Q", 100_000_001), "a header of 100000001 bytes, more than the 100000000 allowed"),
    (struct.pack("<Q", 3) + b"{a}", "the header is not JSON (Expecting property name enclosed in double quotes: "
                                    "line 1 column 2 (char 1))"),
    (struct.pack("<Q", 2) + b"[]", "the header is a JSON list, not an object"),
    (safetensors_bytes({"t": {"dtype": "F17", "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 4),
     'tensor "t": unknown dtype "F17"'),
    (safetensors_bytes({"t": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, b"\0" * 8),
     'tensor "t": data_offsets [0, 16] do not hold its 16 bytes within the 8 bytes of data'),
])
def test_a_truncated_or_malformed_header_is_named(hub, tmp_path, content, problem):
    hub.commit(SINGLE, {"model.safetensors": content})
    with pytest.raises(ModelFileError) as raised:
        hub_model(SINGLE)
    assert (raised.value.path, raised.value.problem) == ("hf://org/tiny-bert@main/model.safetensors", problem)
    assert not cache_file(tmp_path, SINGLE, head(hub, SINGLE)).exists()


def test_a_file_is_named_at_the_revision_asked_for(hub, tiny_models):
    hub.create_branch(SINGLE, "pr-like")
    hub.commit(SINGLE, {"model.safetensors": b"\x10\0\0"}, branch="pr-like")
    with pytest.raises(ModelFileError) as raised:
        hub_model(SINGLE, revision="pr-like")
    assert raised.value.path == "hf://org/tiny-bert@pr-like/model.safetensors"
    HfApi(token=hub.write_token).upload_file(path_or_fileobj=b"[]", path_in_repo="config.json", repo_id=SINGLE,
                                             create_pr=True)
    with pytest.raises(ModelFileError) as raised:
        hub_model(SINGLE, revision="refs/pr/1")
    assert raised.value.path == "hf://org/tiny-bert@refs%2Fpr%2F1/config.json"


@pytest.mark.parametrize("index, problem", [
    ("{", "not valid JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1))"),
    ('{"weight_map": {"a": "../m.safetensors"}}', 'expected {"weight_map": {tensor name: file name in this folder}}'),
    ('{"weight_map": {"bert.embeddings.word_embeddings.weight": "model-00001-of-00002.safetensors", "extra": '
     '"model-00001-of-00002.safetensors"}}', "it names tensors its files do not hold: extra"),
])
def test_a_malformed_index_is_named(hub, index, problem):
    hub.commit(SHARDED, {"model.safetensors.index.json": index})
    with pytest.raises(ModelFileError) as raised:
        hub_model(SHARDED)
    assert (raised.value.path, raised.value.problem) == (
        "hf://org/tiny-bert-sharded@main/model.safetensors.index.json", problem
    )


def test_a_shard_the_index_names_must_be_in_the_repository(hub):
    hub.commit(SHARDED, {"model.safetensors.index.json": '{"weight_map": {"a": "gone.safetensors"}}'})
    with pytest.raises(HubFileNotFoundError) as raised:
        hub_model(SHARDED)
    assert str(raised.value) == (
        "Cannot read the safetensors header of 'gone.safetensors' from Hub repository 'org/tiny-bert-sharded' at "
        "revision 'main': the repository has no file 'gone.safetensors' at this revision, which "
        "model.safetensors.index.json names."
    )
