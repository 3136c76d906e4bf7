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

`tiny_models` publishes small model repositories (a BERT-like `config.json` and checkpoint written by
`safetensors.torch.save_file`: one `model.safetensors`, a sharded one, or only a `pytorch_model.bin`).
"""
import functools
import io
import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

from .hub_server import HubServer

__all__ = ["hub_server", "hub_client", "run_hub_python", "hub_env", "tiny_models", "tiny_model_files", "TINY_MODELS",
           "TINY_MODEL_CONFIG"]

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
        paths = [os.path.dirname(os.path.dirname(os.path.abspath(__file__))), full_env.get("PYTHONPATH")]
        full_env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)  # snippets can import support.hub_server
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


# Tiny models

TINY_MODEL_CONFIG = {
    "architectures": ["BertForMaskedLM"], "model_type": "bert", "vocab_size": 4096, "hidden_size": 64,
    "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 128, "max_position_embeddings": 64,
    "type_vocab_size": 2,
}
# The repositories `tiny_models` publishes, and their checkpoints
TINY_MODELS = {"org/tiny-bert": "single", "org/tiny-bert-sharded": "sharded", "org/tiny-bert-bin": "bin"}
SHARDS = ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors")


def _tiny_bert_tensors():
    """The tensors of a BERT masked-LM checkpoint of `TINY_MODEL_CONFIG`'s sizes, by name, in the order BERT has
    them: the word embeddings (1 MiB in float32) first, the buffer `position_ids` among them."""
    import torch

    hidden, inner, vocab, positions = 64, 128, 4096, 64
    tensors = {
        "bert.embeddings.word_embeddings.weight": torch.zeros(vocab, hidden),
        "bert.embeddings.position_embeddings.weight": torch.zeros(positions, hidden),
        "bert.embeddings.token_type_embeddings.weight": torch.zeros(2, hidden),
        "bert.embeddings.LayerNorm.weight": torch.ones(hidden),
        "bert.embeddings.LayerNorm.bias": torch.zeros(hidden),
        "bert.embeddings.position_ids": torch.arange(positions).unsqueeze(0),
    }
    for layer in range(2):
        prefix = f"bert.encoder.layer.{layer}."
        for name, shape in [("attention.self.query", (hidden, hidden)), ("attention.self.key", (hidden, hidden)),
                            ("attention.self.value", (hidden, hidden)), ("attention.output.dense", (hidden, hidden)),
                            ("intermediate.dense", (inner, hidden)), ("output.dense", (hidden, inner))]:
            tensors[prefix + name + ".weight"] = torch.zeros(shape)
            tensors[prefix + name + ".bias"] = torch.zeros(shape[0])
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            tensors[prefix + norm + ".weight"] = torch.ones(hidden)
            tensors[prefix + norm + ".bias"] = torch.zeros(hidden)
    tensors.update({
        "cls.predictions.bias": torch.zeros(vocab),
        "cls.predictions.transform.dense.weight": torch.zeros(hidden, hidden),
        "cls.predictions.transform.dense.bias": torch.zeros(hidden),
        "cls.predictions.transform.LayerNorm.weight": torch.ones(hidden),
        "cls.predictions.transform.LayerNorm.bias": torch.zeros(hidden),
    })
    return tensors


@functools.lru_cache(maxsize=None)
def _tiny_model_files(checkpoint):
    from safetensors.torch import save

    tensors = _tiny_bert_tensors()
    files = {"config.json": json.dumps(TINY_MODEL_CONFIG, indent=2).encode()}
    if checkpoint == "single":
        files["model.safetensors"] = save(tensors, metadata={"format": "pt"})
    elif checkpoint == "sharded":  # the word embeddings in the first file, the rest in the second
        names = list(tensors)
        parts = {SHARDS[0]: names[:1], SHARDS[1]: names[1:]}
        for shard, shard_names in parts.items():
            files[shard] = save({name: tensors[name] for name in shard_names}, metadata={"format": "pt"})
        weight_map = {name: shard for shard, shard_names in parts.items() for name in shard_names}
        total_size = sum(tensor.numel() * tensor.element_size() for tensor in tensors.values())
        index = {"metadata": {"total_size": total_size}, "weight_map": weight_map}
        files["model.safetensors.index.json"] = json.dumps(index, indent=2).encode()
    elif checkpoint == "bin":
        import torch

        buffer = io.BytesIO()
        torch.save(tensors, buffer)
        files["pytorch_model.bin"] = buffer.getvalue()
    else:
        raise ValueError(f"checkpoint={checkpoint!r}: 'single', 'sharded' or 'bin'")
    return files


def tiny_model_files(checkpoint):
    """`{path: bytes}` of a tiny model repository whose checkpoint is `"single"` (`model.safetensors`), `"sharded"`
    (two files and `model.safetensors.index.json`, as transformers writes them) or `"bin"` (`pytorch_model.bin`)."""
    return dict(_tiny_model_files(checkpoint))


@pytest.fixture
def tiny_models(hub_client):
    """The repositories of `TINY_MODELS`, published on the hub `hub_client` points at: `{repo_id: files}`."""
    published = {}
    for repo_id, checkpoint in TINY_MODELS.items():
        hub_client.create_repo(repo_id)
        published[repo_id] = tiny_model_files(checkpoint)
        hub_client.commit(repo_id, published[repo_id], message="Add a tiny model")
    return published
