"""The local Hub answers the real huggingface_hub client (0.36 or 2.x) and transformers as the Hub does."""
import json
import struct

import huggingface_hub
import pytest
import transformers
from huggingface_hub import HfApi, hf_hub_download
from huggingface_hub.utils import EntryNotFoundError, HfHubHTTPError, RepositoryNotFoundError, RevisionNotFoundError

HUB_0X = huggingface_hub.__version__.startswith("0.")
TRANSFORMERS_4X = transformers.__version__.startswith("4.")
if HUB_0X:
    from requests import RequestException as TransportError
else:
    from huggingface_hub.utils import httpx

    TransportError = httpx.TransportError

# These tests drive the stand-in Hub with transformers' own loader, which passes huggingface_hub a deprecated
# argument the package's loads do not (hub.load_arguments): its FutureWarning is not the package's.
pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning:huggingface_hub")


def auth(token):
    """transformers 4.x takes `use_auth_token` (and silently drops `token`); 5.x takes only `token`."""
    return {"use_auth_token": token} if TRANSFORMERS_4X else {"token": token}


@pytest.fixture
def hub(hub_client, tmp_path, monkeypatch):
    """The client pointed at a fresh hub, run from an empty working directory."""
    monkeypatch.chdir(tmp_path)  # transformers 4.x push_to_hub would reuse a folder named like the repo
    return hub_client


@pytest.fixture
def seeded(hub):
    """A public repo with a config at the root and in `sub/`."""
    hub.create_repo("org/cfg")
    hub.commit("org/cfg", {"config.json": '{"foo": 1}', "sub/config.json": '{"foo": 2}'}, message="Add configs")
    return "org/cfg"


def read(path):
    with open(path) as f:
        return json.load(f)


def test_push_to_hub_then_from_pretrained_round_trip(hub):
    repo_id = hub.user + "/round-trip"
    transformers.PretrainedConfig(foo=7).push_to_hub(repo_id, **auth(hub.write_token))

    assert json.loads(hub.files(repo_id)["config.json"])["foo"] == 7
    assert hub.commit_messages(repo_id) == ["Upload config", "initial commit"]
    assert not hub.is_private(repo_id)
    writes = [(r.method, r.path, r.status) for r in hub.log if r.method == "POST"]
    assert ("POST", "/api/repos/create", 200) in writes
    assert writes[-2:] == [
        ("POST", "/api/models/%s/preupload/main" % repo_id, 200),
        ("POST", "/api/models/%s/commit/main" % repo_id, 200),
    ]

    assert transformers.PretrainedConfig.from_pretrained(repo_id).foo == 7
    assert transformers.PretrainedConfig.from_pretrained(repo_id).foo == 7
    assert hub.downloads(repo_id, "config.json") == 1  # the second load is served from the cache


def test_hf_api_round_trip_and_whoami(hub):
    api = HfApi(token=hub.write_token)
    repo_url = api.create_repo("org/api", private=True)
    assert repo_url.repo_id == "org/api" and hub.is_private("org/api")
    api.create_repo("org/api", exist_ok=True)
    with pytest.raises(HfHubHTTPError) as error:
        api.create_repo("org/api")
    assert error.value.response.status_code == 409

    commit = api.upload_file(
        path_or_fileobj=b'{"a": 1}', path_in_repo="c.json", repo_id="org/api", commit_message="Add c"
    )
    info = api.model_info("org/api")
    assert info.sha == commit.oid == hub.refs("org/api")["refs/heads/main"]
    assert sorted(s.rfilename for s in info.siblings) == [".gitattributes", "c.json"]
    assert hub.commit_messages("org/api")[0] == "Add c"
    assert read(hf_hub_download("org/api", "c.json", token=hub.read_token)) == {"a": 1}
    assert api.whoami()["name"] == hub.user


def test_private_repo_needs_a_token(hub):
    hub.create_repo("org/private", private=True)
    with pytest.raises(RepositoryNotFoundError):
        hf_hub_download("org/private", ".gitattributes")
    with pytest.raises(RepositoryNotFoundError):
        HfApi().model_info("org/private")
    assert [r.status for r in hub.log] == [401, 401]
    assert hf_hub_download("org/private", ".gitattributes", token=hub.read_token)


def test_read_only_token_cannot_write(hub, seeded):
    api = HfApi(token=hub.read_token)
    with pytest.raises(HfHubHTTPError) as error:
        api.upload_file(path_or_fileobj=b"x", path_in_repo="x.txt", repo_id=seeded)
    assert error.value.response.status_code == 403
    with pytest.raises(HfHubHTTPError) as error:
        api.create_repo("org/new")
    assert error.value.response.status_code == 403
    assert "x.txt" not in hub.files(seeded) and not hub.repo_exists("org/new")


def test_unknown_repo_revision_and_entry_raise_typed_errors(hub, seeded):
    with pytest.raises(RepositoryNotFoundError):
        hf_hub_download("org/missing", "config.json")
    with pytest.raises(RevisionNotFoundError):
        hf_hub_download(seeded, "config.json", revision="missing")
    with pytest.raises(RevisionNotFoundError):
        HfApi().model_info(seeded, revision="missing")
    with pytest.raises(EntryNotFoundError):
        hf_hub_download(seeded, "missing.json")
    with pytest.raises(OSError, match="not a valid git identifier"):
        transformers.PretrainedConfig.from_pretrained(seeded, revision="missing")


def test_revision_by_branch_tag_and_sha(hub, seeded):
    api = HfApi(token=hub.write_token)
    first = hub.refs(seeded)["refs/heads/main"]
    api.create_branch(seeded, branch="dev")
    api.upload_file(path_or_fileobj=b'{"foo": 3}', path_in_repo="config.json", repo_id=seeded, revision="dev")
    api.create_tag(seeded, tag="v1", revision=first)

    assert read(hf_hub_download(seeded, "config.json", revision="dev"))["foo"] == 3
    assert read(hf_hub_download(seeded, "config.json", revision="v1"))["foo"] == 1
    assert read(hf_hub_download(seeded, "config.json", revision=first))["foo"] == 1
    assert api.model_info(seeded, revision="dev").sha == hub.refs(seeded)["refs/heads/dev"] != first
    assert api.model_info(seeded, revision="v1").sha == first
    assert transformers.PretrainedConfig.from_pretrained(seeded, revision="dev").foo == 3


def test_subfolder(hub, seeded):
    assert read(hf_hub_download(seeded, "config.json", subfolder="sub"))["foo"] == 2
    assert transformers.PretrainedConfig.from_pretrained(seeded, subfolder="sub").foo == 2
    assert hub.downloads(seeded, "sub/config.json") == 1  # from_pretrained found it in the cache
    assert all(r.path.endswith("/sub/config.json") for r in hub.log if "/resolve/" in r.path)


def test_create_pr_opens_a_pr_ref_and_leaves_main(hub, seeded):
    api = HfApi(token=hub.write_token)
    main = hub.refs(seeded)["refs/heads/main"]
    commit = api.upload_file(path_or_fileobj=b"{}", path_in_repo="config.json", repo_id=seeded, create_pr=True)
    assert commit.pr_url.endswith("/%s/discussions/1" % seeded) and commit.pr_revision == "refs/pr/1"
    assert hub.refs(seeded)["refs/pr/1"] == commit.oid and hub.refs(seeded)["refs/heads/main"] == main
    assert hub.files(seeded, "refs/pr/1")["config.json"] == b"{}"
    assert read(hf_hub_download(seeded, "config.json", revision="refs/pr/1")) == {}

    transformers.PretrainedConfig(foo=5).push_to_hub(seeded, create_pr=True, **auth(hub.write_token))
    assert json.loads(hub.files(seeded, "refs/pr/2")["config.json"])["foo"] == 5
    assert hub.log[-1].query == {"create_pr": "1"}


def test_server_error_is_a_client_error(hub, seeded):
    hub.fail_next("/api/models/", status=500)
    with pytest.raises(HfHubHTTPError) as error:
        HfApi().model_info(seeded)
    assert error.value.response.status_code == 500
    assert HfApi().model_info(seeded).sha  # one failure only
    assert [r.status for r in hub.log] == [500, 200]


def test_cut_connection_is_a_transport_error(hub, seeded):
    hub.cut_next("/api/models/")
    with pytest.raises(TransportError):
        HfApi().model_info(seeded)
    assert hub.log[-1].status == 0


def test_download_cut_mid_body(hub, seeded):
    hub.cut_next("/%s/resolve/" % seeded, method="GET")
    if HUB_0X:  # 0.36 resumes only on ConnectionError, not on the ChunkedEncodingError a short body raises
        with pytest.raises(TransportError):
            hf_hub_download(seeded, "config.json")
    else:  # 2.x resumes the download
        assert read(hf_hub_download(seeded, "config.json")) == {"foo": 1}
    assert [r.status for r in hub.log if r.method == "GET"] == ([0] if HUB_0X else [0, 200])


def test_stopped_server_refuses_connections(hub, seeded):
    hub.stop()
    with pytest.raises(TransportError):
        HfApi().model_info(seeded)


def test_subprocess_uses_the_server_and_shares_the_cache(hub, seeded, run_hub_python):
    code = """
        from transformers import PretrainedConfig
        print(PretrainedConfig.from_pretrained("org/cfg").foo)
    """
    assert run_hub_python(code).stdout.split() == ["1"]
    assert hub.downloads(seeded, "config.json") == 1
    hub.stop()
    offline = run_hub_python(code, offline=True)
    assert offline.stdout.split() == ["1"]


# Range requests and binary files

def get(hub, repo_id, path, range_header=None):
    """A `GET` of `path` through the client's own HTTP session, with a `Range` header if given."""
    headers = {"Range": range_header} if range_header else {}
    return huggingface_hub.utils.get_session().get(
        "%s/%s/resolve/main/%s" % (hub.url, repo_id, path), headers=headers
    )


@pytest.fixture
def binary(hub):
    """`org/bin` holding `data.bin`: the 1000 bytes 0, 1, ... 255, 0, 1, ..."""
    hub.create_repo("org/bin")
    hub.commit("org/bin", {"data.bin": bytes(i % 256 for i in range(1000))})
    return bytes(i % 256 for i in range(1000))


@pytest.mark.parametrize("range_header, content_range, part", [
    ("bytes=0-99", "bytes 0-99/1000", slice(0, 100)),
    ("bytes=990-2000", "bytes 990-999/1000", slice(990, 1000)),
    ("bytes=500-", "bytes 500-999/1000", slice(500, 1000)),
    ("bytes=999-999", "bytes 999-999/1000", slice(999, 1000)),
])
def test_a_byte_range_is_answered_with_partial_content(hub, binary, range_header, content_range, part):
    response = get(hub, "org/bin", "data.bin", range_header)
    assert (response.status_code, response.headers["Content-Range"]) == (206, content_range)
    assert response.content == binary[part] and int(response.headers["Content-Length"]) == len(binary[part])
    assert response.headers["Accept-Ranges"] == "bytes" and response.headers["X-Repo-Commit"]
    assert hub.bytes_served("org/bin", "data.bin") == len(binary[part])
    assert hub.downloads("org/bin", "data.bin") == 0  # a part is not a download


def test_a_range_after_the_end_is_not_satisfiable(hub, binary):
    response = get(hub, "org/bin", "data.bin", "bytes=1000-1005")
    assert (response.status_code, response.headers["Content-Range"]) == (416, "bytes */1000")
    assert hub.bytes_served("org/bin", "data.bin") == 0


@pytest.mark.parametrize("range_header", ["bytes=-10", "bytes=5-2", "bytes=0-1,5-6", "items=0-1", None])
def test_any_other_range_header_is_ignored_and_the_whole_file_served(hub, binary, range_header):
    response = get(hub, "org/bin", "data.bin", range_header)
    assert (response.status_code, response.content) == (200, binary)
    assert "Content-Range" not in response.headers
    assert (hub.downloads("org/bin", "data.bin"), hub.bytes_served("org/bin", "data.bin")) == (1, 1000)


def test_bytes_served_add_up_and_a_head_serves_none(hub, binary):
    assert HfApi().file_exists("org/bin", "data.bin")  # a HEAD
    for range_header in ("bytes=0-9", "bytes=10-29", None):
        get(hub, "org/bin", "data.bin", range_header)
    assert [(r.method, r.status) for r in hub.log] == [("HEAD", 200), ("GET", 206), ("GET", 206), ("GET", 200)]
    assert (hub.bytes_served("org/bin", "data.bin"), hub.downloads("org/bin", "data.bin")) == (1030, 1)
    hub.clear_log()
    assert (hub.bytes_served("org/bin", "data.bin"), hub.downloads("org/bin", "data.bin")) == (0, 0)


def test_a_binary_file_downloads_byte_for_byte(hub, binary):
    with open(hf_hub_download("org/bin", "data.bin"), "rb") as reader:
        assert reader.read() == binary


def test_a_range_ignored_by_a_proxy_serves_the_whole_file_once(hub, binary):
    hub.ignore_range_next("/org/bin/resolve/")
    assert get(hub, "org/bin", "data.bin", "bytes=0-9").status_code == 200
    assert get(hub, "org/bin", "data.bin", "bytes=0-9").status_code == 206


TINY_BERT_SHAPES = {  # a few tensors of the tiny models, as safetensors writes them
    "bert.embeddings.word_embeddings.weight": ("F32", [4096, 64]),
    "bert.embeddings.position_ids": ("I64", [1, 64]),
    "bert.encoder.layer.1.intermediate.dense.weight": ("F32", [128, 64]),
    "cls.predictions.bias": ("F32", [4096]),
}


@pytest.mark.parametrize("repo_id, files", [
    ("org/tiny-bert", ["model.safetensors"]),
    ("org/tiny-bert-sharded", ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]),
])
def test_the_client_reads_safetensors_headers_with_range_requests(hub, tiny_models, repo_id, files):
    metadata = HfApi().get_safetensors_metadata(repo_id)
    assert sorted(metadata.files_metadata) == files and len(metadata.weight_map) == 43
    tensors = {name: (info.dtype, list(info.shape)) for file in metadata.files_metadata.values()
               for name, info in file.tensors.items()}
    assert {name: tensors[name] for name in TINY_BERT_SHAPES} == TINY_BERT_SHAPES
    ranges = [r for r in hub.log if r.method == "GET" and r.path.endswith(".safetensors")]
    assert [r.status for r in ranges] == [206] * len(files)
    for file in files:
        assert 0 < hub.bytes_served(repo_id, file) <= 100_001 < len(tiny_models[repo_id][file])


def test_the_client_reads_a_header_longer_than_its_first_range_with_a_second(hub):
    import torch
    from safetensors.torch import save

    tensors = {"layer.%d.a.rather.long.name.for.a.tensor.weight" % i: torch.zeros(1) for i in range(1500)}
    content = save(tensors)
    (length,) = struct.unpack("<Q", content[:8])
    assert length > 100_000
    hub.create_repo("org/long-header")
    hub.commit("org/long-header", {"model.safetensors": content})
    metadata = HfApi().get_safetensors_metadata("org/long-header")
    assert len(metadata.files_metadata["model.safetensors"].tensors) == 1500
    assert [r.status for r in hub.log if r.method == "GET"] == [206, 206]
    assert hub.bytes_served("org/long-header", "model.safetensors") == 100_001 + length
