"""Pytest fixtures that point the real `huggingface_hub` client (and transformers) at a local `HubServer`.

`huggingface_hub` and transformers read `HF_ENDPOINT`, `HF_HOME`, `HF_HUB_OFFLINE`... once, at import time, so
`hub_client` sets the environment (for code imported later and for subprocesses) and also patches the copies the
imported modules already hold:

- `huggingface_hub.constants`: `ENDPOINT`, `HUGGINGFACE_CO_URL_TEMPLATE`, the cache, token and xet paths,
  `HF_HUB_OFFLINE`, `HF_HUB_DISABLE_TELEMETRY`, which most modules read through `constants.` at call time;
- the copies bound by name at import: `huggingface_hub.file_download.HUGGINGFACE_CO_URL_TEMPLATE` (0.36's
  `hf_hub_url` builds every download URL from it), `HUGGINGFACE_HUB_CACHE` there, `ENDPOINT` in `hf_api`,
  `HF_HUB_CACHE` in `utils._cache_manager`;
- `huggingface_hub.hf_api.api.endpoint`: the module-level `HfApi` behind `huggingface_hub.create_repo`,
  `create_commit`, `upload_file`... keeps the endpoint it was built with;
- transformers 4.x `transformers.utils.hub`: `TRANSFORMERS_CACHE` (its default `cache_dir`),
  `HUGGINGFACE_CO_RESOLVE_ENDPOINT` / `HUGGINGFACE_CO_PREFIX`, `_is_offline_mode` (read from `TRANSFORMERS_OFFLINE`);
- transformers 5.x `transformers.utils.hub._hf_api`: a cached `HfApi` holding an endpoint, reset to None.

`hub_client` also skips the client's retry sleeps (`time.sleep` as seen by `huggingface_hub.utils._http` and
`huggingface_hub.file_download`): huggingface_hub 0.36 retries a failing `HEAD /resolve/` five times with
1+2+4+8+8 s of back-off before falling back to the cache. The retries themselves still reach the server and the log.

The server is function-scoped: it starts in milliseconds, and a fresh one per test needs no reset logic.
"""
import os
import subprocess
import sys
import textwrap
import time

import pytest

from hub_server import HubServer

__all__ = ["hub_server", "hub_client", "run_hub_python", "hub_env"]

TOKEN_ENV_VARS = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_OIDC_RESOURCE", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")


def hub_env(server, hf_home):
    """Environment variables that send a fresh process's client to `server`, caching under `hf_home`."""
    hf_home = str(hf_home)
    return {
        "HF_ENDPOINT": server.url,
        "HF_HOME": hf_home,
        "HF_HUB_CACHE": os.path.join(hf_home, "hub"),
        "HF_TOKEN_PATH": os.path.join(hf_home, "token"),
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    }


class _TimeWithoutSleep:
    """The `time` module, except that `sleep` returns at once."""

    def __getattr__(self, name):
        return getattr(time, name)

    @staticmethod
    def sleep(seconds):
        pass


def _patch_imported_clients(monkeypatch, url, hf_home):
    import huggingface_hub.constants as constants
    import huggingface_hub.file_download
    import huggingface_hub.hf_api
    import huggingface_hub.utils._cache_manager
    import huggingface_hub.utils._http

    cache = os.path.join(hf_home, "hub")
    values = {
        "ENDPOINT": url,
        "HUGGINGFACE_CO_URL_TEMPLATE": url + "/{repo_id}/resolve/{revision}/{filename}",
        "HF_HOME": hf_home,
        "HF_HUB_CACHE": cache,
        "HUGGINGFACE_HUB_CACHE": cache,
        "HF_ASSETS_CACHE": os.path.join(hf_home, "assets"),
        "HUGGINGFACE_ASSETS_CACHE": os.path.join(hf_home, "assets"),
        "HF_TOKEN_PATH": os.path.join(hf_home, "token"),
        "HF_STORED_TOKENS_PATH": os.path.join(hf_home, "stored_tokens"),
        "HF_XET_CACHE": os.path.join(hf_home, "xet"),
        "HF_HUB_OFFLINE": False,
        "HF_HUB_DISABLE_TELEMETRY": True,
    }
    for name, value in values.items():
        if hasattr(constants, name):
            monkeypatch.setattr(constants, name, value)
    for module in (huggingface_hub.file_download, huggingface_hub.hf_api, huggingface_hub.utils._cache_manager):
        for name in ("ENDPOINT", "HUGGINGFACE_CO_URL_TEMPLATE", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
            if hasattr(module, name):
                monkeypatch.setattr(module, name, values[name])
    monkeypatch.setattr(huggingface_hub.hf_api.api, "endpoint", url)
    monkeypatch.setattr(huggingface_hub.utils._http, "time", _TimeWithoutSleep())
    monkeypatch.setattr(huggingface_hub.file_download, "time", _TimeWithoutSleep())

    transformers_hub = sys.modules.get("transformers.utils.hub")
    if transformers_hub is not None:
        for name, value in {
            "TRANSFORMERS_CACHE": cache,
            "HUGGINGFACE_CO_RESOLVE_ENDPOINT": url,
            "HUGGINGFACE_CO_PREFIX": url + "/{model_id}/resolve/{revision}/{filename}",
            "_is_offline_mode": False,
            "_hf_api": None,
        }.items():
            if hasattr(transformers_hub, name):
                monkeypatch.setattr(transformers_hub, name, value)


@pytest.fixture
def hub_server():
    """A running `HubServer` on 127.0.0.1 (url, write_token, read_token, seeding, inspection, faults)."""
    server = HubServer()
    yield server
    server.stop()


@pytest.fixture
def hub_client(hub_server, tmp_path, monkeypatch):
    """Point the in-process client at `hub_server`, with an empty cache and no token; yields the server.

    Tests pass `token=hub_server.write_token` (or set `HF_TOKEN`) to authenticate.
    """
    hf_home = str(tmp_path / "hf_home")
    for name in TOKEN_ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    for name, value in hub_env(hub_server, hf_home).items():
        monkeypatch.setenv(name, value)
    _patch_imported_clients(monkeypatch, hub_server.url, hf_home)
    yield hub_server


@pytest.fixture
def run_hub_python(hub_client, tmp_path):
    """Run a Python snippet in a fresh interpreter pointed at the hub, sharing `hub_client`'s cache.

    `run_hub_python(code, offline=False, env=None, check=True, timeout=120)` returns the CompletedProcess;
    `offline=True` sets `HF_HUB_OFFLINE=1`; with `check`, a non-zero exit fails the test with the output.
    """

    def run(code, offline=False, env=None, check=True, timeout=120):
        full_env = dict(os.environ)
        full_env.update(hub_env(hub_client, tmp_path / "hf_home"))
        paths = [os.path.dirname(os.path.abspath(__file__)), full_env.get("PYTHONPATH")]
        full_env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)  # snippets can import hub_server
        if offline:
            full_env["HF_HUB_OFFLINE"] = "1"
        full_env.update(env or {})
        result = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            env=full_env,
            cwd=str(tmp_path),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and result.returncode != 0:
            pytest.fail("Snippet exited with %d:\n%s\n%s" % (result.returncode, result.stdout, result.stderr))
        return result

    return run
