"""HTTP requests per Hub operation: `IPUConfig` against transformers' own `PretrainedConfig`, on a local Hub.

Both run the same operations on the same server (tests/support/hub_server.py, on 127.0.0.1): push to a new repository,
push an update, load with a cold cache, load with a warm cache, and load with `HF_HUB_OFFLINE=1` (in a fresh
interpreter, as the client reads the variable at import). The count is the number of requests the server answered.
Goal: no more requests than the peer, and none offline.

Then the reads of a placement (`placement.hub_model`: a model's `config.json` and its safetensors headers) of a
tiny BERT-like model, one checkpoint file or two shards, against `PretrainedConfig.from_pretrained` of the same
model's `config.json`: cold, warm and offline, and the bytes of the checkpoint the server sent. Goal: warm, no more
requests than the peer; offline, none; of the weights, only the headers' ranges.

    python benchmarks/hub_requests.py [--show-requests]
"""

import argparse
import collections
import functools
import os
import subprocess
import sys
import tempfile

TESTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests")
sys.path.insert(0, TESTS)

from support.hub_server import HubServer  # noqa: E402

OURS_CONFIG = {"layers_per_ipu": [2, 2], "replication_factor": 4, "recomputation_mode": "pipeline"}
OFFLINE_LOAD = """
import sys
if sys.argv[1] == "ours":
    from optimum_ipu_ext import IPUConfig as Config
else:
    from transformers import PretrainedConfig as Config
Config.from_pretrained(sys.argv[2], cache_dir=sys.argv[3])
"""
OFFLINE_MODEL_READ = """
import sys
if sys.argv[1] == "ours":
    from optimum_ipu_ext.placement.source.hub_model import hub_model
    hub_model(sys.argv[2])
else:
    from transformers import PretrainedConfig
    PretrainedConfig.from_pretrained(sys.argv[2], cache_dir=sys.argv[3])
"""


def point_client_at(server, hf_home):
    """Environment of this process and its children: the local server, a fresh cache, no token, no telemetry."""
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        os.environ.pop(name, None)
    os.environ.update(
        HF_ENDPOINT=server.url,
        HF_HOME=hf_home,
        HF_HUB_CACHE=os.path.join(hf_home, "hub"),
        HF_TOKEN_PATH=os.path.join(hf_home, "token"),
        HF_HUB_DISABLE_TELEMETRY="1",
        HF_HUB_DISABLE_PROGRESS_BARS="1",
    )


class Side:
    """One class under test: how it builds a config, loads one and pushes one."""

    def __init__(self, name, config_class, make_config, auth):
        self.name, self.config_class, self.make_config, self.auth = name, config_class, make_config, auth

    def operations(self, server, work):
        repo = f"org/{self.name}"
        cache_dir = os.path.join(work, f"{self.name}-cache")

        def push(update):
            return lambda: self.make_config(update).push_to_hub(repo, **self.auth(server.write_token))

        def load():
            self.config_class.from_pretrained(repo, cache_dir=cache_dir)

        def offline_load():
            command = [sys.executable, "-c", OFFLINE_LOAD, self.name, repo, cache_dir]
            subprocess.run(command, env=dict(os.environ, HF_HUB_OFFLINE="1"), check=True, capture_output=True)

        return [
            ("push, new repository", push(False)),
            ("push, update", push(True)),
            ("load, cold cache", load),
            ("load, warm cache", load),
            ("load, HF_HUB_OFFLINE=1", offline_load),
        ]


def placement_reads(server, work, checkpoint):
    """({side: [(step, requests)]} of reading a tiny model cold, warm and offline; (bytes of the checkpoint's files
    the server sent on our cold read, their size))."""
    from transformers import PretrainedConfig

    from optimum_ipu_ext.placement.source.hub_model import hub_model
    from support.hub_fixtures import tiny_model_files  # imported once the environment points at the local server

    files = tiny_model_files(checkpoint)
    weights = [path for path in files if path.endswith(".safetensors")]
    repos = {side: f"org/{checkpoint}-{side}" for side in ("ours", "peer")}
    cache_dir = os.path.join(work, f"{checkpoint}-peer-cache")
    reads = {"ours": lambda: hub_model(repos["ours"]),
             "peer": lambda: PretrainedConfig.from_pretrained(repos["peer"], cache_dir=cache_dir)}
    results, served = {}, 0
    for side, read in reads.items():
        server.create_repo(repos[side])
        server.commit(repos[side], files)
        command = [sys.executable, "-c", OFFLINE_MODEL_READ, side, repos[side], cache_dir]
        offline = functools.partial(
            subprocess.run, command, env=dict(os.environ, HF_HUB_OFFLINE="1"), check=True, capture_output=True
        )

        results[side] = []
        for step, operation in (("cold", read), ("warm", read), ("HF_HUB_OFFLINE=1", offline)):
            results[side].append((step, requests_of(server, operation)))
            if side == "ours" and step == "cold":
                served = sum(server.bytes_served(repos[side], path) for path in weights)
    return results, (served, sum(len(files[path]) for path in weights))


def requests_of(server, operation):
    server.clear_log()
    operation()
    return [(r.method, r.path, r.status) for r in server.log]


def goal(ours, peer, offline):
    """Whether our requests meet the goal: none offline, else no more than the peer's."""
    if offline:
        return "0: " + ("met" if len(ours) == 0 else "NOT met")
    return "<= peer: " + ("met" if len(ours) <= len(peer) else "NOT met")


def shape(request, side):
    """A request with the repository name left out, to compare the two sides."""
    method, path, _ = request
    return method, path.replace(f"org/{side}", "{repo}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show-requests", action="store_true", help="list every request of every operation")
    args = parser.parse_args()

    server = HubServer()
    work = tempfile.mkdtemp(prefix="hub-requests-")
    point_client_at(server, os.path.join(work, "hf_home"))
    os.chdir(work)  # transformers 4.29.2 pushes from a folder of the working directory named like the repository

    import transformers  # imported once the environment points at the local server

    from optimum_ipu_ext import IPUConfig
    from optimum_ipu_ext.placement.source.hub_model import FIRST_READ

    legacy = transformers.__version__.startswith("4.")
    sides = [
        Side("ours", IPUConfig,
             lambda update: IPUConfig(**dict(OURS_CONFIG, replication_factor=8 if update else 4)),
             lambda token: {"token": token}),
        Side("peer", transformers.PretrainedConfig,
             lambda update: transformers.PretrainedConfig(foo=2 if update else 1),
             lambda token: {"use_auth_token": token} if legacy else {"token": token}),
    ]
    results = {side.name: [(name, requests_of(server, op)) for name, op in side.operations(server, work)]
               for side in sides}
    placements = {checkpoint: placement_reads(server, work, checkpoint) for checkpoint in ("single", "sharded")}
    server.stop()

    print(f"transformers {transformers.__version__}, huggingface_hub {__import__('huggingface_hub').__version__}")
    print(f"{'operation':26} {'IPUConfig':>10} {'PretrainedConfig':>17}  goal")
    for (name, ours), (_, peer) in zip(results["ours"], results["peer"]):
        verdict = goal(ours, peer, offline="OFFLINE" in name)
        extra = collections.Counter(shape(r, "ours") for r in ours) - collections.Counter(
            shape(r, "peer") for r in peer
        )
        if extra and len(ours) > len(peer):
            verdict += " (extra: " + ", ".join(f"{method} {path}" for method, path in extra) + ")"
        print(f"{name:26} {len(ours):10} {len(peer):17}  {verdict}")
    if not any(path == "/api/validate-yaml" for _, requests in results["peer"] for _, path, _ in requests):
        print("\nOn this stack PretrainedConfig.push_to_hub neither reads nor writes a model card. IPUConfig reads")
        print("the repository first (GET /api/models/{repo}: its visibility and head commit) and its README.md (HEAD")
        print("and GET), and commits the card with the config, which the client validates (POST /api/validate-yaml).")
    print("\nReading a model for a placement: hub_model (config.json + safetensors headers) against")
    print("PretrainedConfig.from_pretrained (config.json alone) of the same tiny model")
    print(f"{'checkpoint, read':26} {'hub_model':>10} {'PretrainedConfig':>17}  goal")
    for checkpoint, (reads, (served, size)) in placements.items():
        for (step, ours), (_, peer) in zip(reads["ours"], reads["peer"]):
            if step == "cold":
                verdict = f"-: {served} of the checkpoint's {size} bytes sent (at most {FIRST_READ} a file)"
            else:
                verdict = goal(ours, peer, offline="OFFLINE" in step)
            print(f"{checkpoint + ', ' + step:26} {len(ours):10} {len(peer):17}  {verdict}")
    if args.show_requests:
        for side, operations in results.items():
            for name, requests in operations:
                print(f"\n{side}, {name}:")
                for method, path, status in requests:
                    print(f"  {method:4} {path} -> {status}")
        for checkpoint, (reads, _) in placements.items():
            for side, steps in reads.items():
                for step, requests in steps:
                    print(f"\n{side}, {checkpoint} checkpoint, {step}:")
                    for method, path, status in requests:
                        print(f"  {method:4} {path} -> {status}")


if __name__ == "__main__":
    main()
