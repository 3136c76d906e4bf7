"""Hub failures no other test reaches, with the real client of each stack against the local Hub: gated repositories,
a bare 404 (no error code), a rejected token that came from the environment or the token store, and a failed pull
request. Each error must say what happened to which repository."""

import json
import os
import urllib.error
import urllib.request

import pytest

from optimum_ipu_ext import HubAccessDeniedError, HubRepositoryNotFoundError, HubUnavailableError, IPUConfig

GATED = "the repository is gated: request access on its page, then use a token that has it"
LOAD = "Cannot load 'ipu_config.json' from Hub repository '{repo}' at revision 'main': "


@pytest.fixture
def hub(hub_client, tmp_path, monkeypatch):
    """The local Hub with `org/cfg` (public), `org/gated` (only the write token may download) and `org/private`."""
    monkeypatch.chdir(tmp_path)
    for repo, private in (("org/cfg", False), ("org/gated", False), ("org/private", True)):
        hub_client.create_repo(repo, private=private)
        hub_client.commit(repo, {"ipu_config.json": json.dumps({"seed": 3})})
    hub_client.gate("org/gated", granted_tokens=[hub_client.write_token])
    return hub_client


def get(url, token=None):
    """(status, headers, body) of a GET, with the standard library (the stacks' clients differ)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers)) as answer:
            return answer.status, answer.headers, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def store_token(token):
    """Stores `token` where `hf auth login` does (HF_TOKEN_PATH points into the test's HF home)."""
    path = os.environ["HF_TOKEN_PATH"]
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as writer:
        writer.write(token)


# --- gated repositories -------------------------------------------------------------------------------------


@pytest.mark.parametrize("token", [None, "read"], ids=["no-token", "token-without-access"])
def test_gated_repository_is_access_denied(hub, token):
    kwargs = {} if token is None else {"token": hub.read_token}
    with pytest.raises(HubAccessDeniedError) as raised:
        IPUConfig.from_pretrained("org/gated", **kwargs)
    assert str(raised.value) == LOAD.format(repo="org/gated") + GATED + "."
    assert (raised.value.repo_id, raised.value.revision) == ("org/gated", "main")
    assert not [
        entry for entry in hub.log if entry.status == 200 and entry.method == "GET" and "/resolve/" in entry.path
    ]


def test_gated_repository_loads_with_a_token_that_has_access(hub):
    assert IPUConfig.from_pretrained("org/gated", token=hub.write_token).seed == 3
    assert hub.downloads("org/gated", "ipu_config.json") == 1


def test_server_gates_as_the_hub_does(hub):
    url = f"{hub.url}/org/gated/resolve/main/ipu_config.json"
    anonymous, other, granted = get(url), get(url, hub.read_token), get(url, hub.write_token)
    assert (anonymous[0], anonymous[1]["X-Error-Code"]) == (401, "GatedRepo")
    assert (other[0], other[1]["X-Error-Code"]) == (403, "GatedRepo")
    assert granted[0] == 200 and json.loads(granted[2]) == {"seed": 3}
    assert json.loads(get(f"{hub.url}/api/models/org/gated")[2])["gated"] == "manual"


# --- a bare 404 -----------------------------------------------------------------------------------------------


def test_bare_404_reads_as_a_missing_repository(hub):
    hub.bare_404_next("/org/cfg/resolve/", times=20)
    hub.bare_404_next("/api/models/org/cfg", times=20)
    with pytest.raises(HubRepositoryNotFoundError) as raised:
        IPUConfig.from_pretrained("org/cfg")
    assert str(raised.value) == LOAD.format(repo="org/cfg") + (
        f"no such file or directory here, and it does not exist on {hub.url}, or it is private and no token was given "
        "(pass `token=` or log in with `hf auth login`)."
    )
    answered = [entry for entry in hub.log if "/org/cfg" in entry.path]
    assert answered and {entry.status for entry in answered} == {404}


def test_bare_404_carries_no_error_code(hub):
    hub.bare_404_next("/org/cfg/resolve/")
    url = f"{hub.url}/org/cfg/resolve/main/ipu_config.json"
    status, headers, _ = get(url)
    assert status == 404 and headers["Content-Type"] == "text/html"
    assert "X-Error-Code" not in headers and "X-Error-Message" not in headers
    assert get(url)[0] == 200  # once only


# --- whose token a 401 rejects ---------------------------------------------------------------------------------

REJECTED = "the Hub rejected the token (401 Unauthorized: Invalid credentials in Authorization header)."


def test_a_rejected_token_from_the_environment_is_named_as_such(hub, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_not_a_token_of_this_hub")
    with pytest.raises(HubAccessDeniedError) as raised:
        IPUConfig.from_pretrained("org/private")
    assert str(raised.value) == LOAD.format(repo="org/private") + REJECTED


def test_a_rejected_token_from_the_token_store_is_named_as_such(hub):
    store_token("hf_not_a_token_of_this_hub")
    with pytest.raises(HubAccessDeniedError) as raised:
        IPUConfig.from_pretrained("org/private")
    assert str(raised.value) == LOAD.format(repo="org/private") + REJECTED


def test_without_any_token_a_private_repository_reads_as_missing(hub):
    with pytest.raises(HubRepositoryNotFoundError) as raised:
        IPUConfig.from_pretrained("org/private")
    assert "or it is private and no token was given" in str(raised.value)


def test_a_stored_token_that_may_read_is_used(hub):
    store_token(hub.read_token)
    assert IPUConfig.from_pretrained("org/private").seed == 3


# --- pull requests -----------------------------------------------------------------------------------------------

PR = "Cannot open a pull request on Hub repository 'org/cfg': "


def test_pull_request_with_a_read_only_token(hub):
    with pytest.raises(HubAccessDeniedError) as raised:
        IPUConfig(seed=1).push_to_hub("org/cfg", create_pr=True, token=hub.read_token)
    assert str(raised.value) == PR + (
        "the token may not write to it (403 Forbidden: You don't have the rights to write with a read-only token)."
    )
    assert [ref for ref in hub.refs("org/cfg") if ref.startswith("refs/pr/")] == []


def test_pull_request_without_a_token(hub):
    with pytest.raises(HubAccessDeniedError) as raised:
        IPUConfig(seed=1).push_to_hub("org/cfg", create_pr=True)
    assert str(raised.value) == PR + (
        "no token was given (pass `token=` or log in with `hf auth login`), and pushing needs one."
    )


def test_pull_request_when_the_hub_fails(hub):
    hub.fail_next("/api/models/org/cfg/commit", status=500, times=10)
    with pytest.raises(HubUnavailableError) as raised:
        IPUConfig(seed=1).push_to_hub("org/cfg", create_pr=True, token=hub.write_token)
    assert str(raised.value) == PR + f"the Hub at {hub.url} answered 500 Internal Server Error: Injected failure."
    assert json.loads(hub.files("org/cfg")["ipu_config.json"]) == {"seed": 3}
