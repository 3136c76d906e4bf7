"""The `ipu-config-validate` pre-commit hook, run by the `pre-commit` package on a repository of configs.

pre-commit installs the hook's package into an environment of its own. The hook runs on the core alone, so
the test installs the package without its dependencies (`PIP_NO_DEPS=1`, as the README suggests): fast, and
reachable from the package registries only.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def git(repo: Path, *argv: str) -> None:
    subprocess.run(["git", "-c", "user.name=test", "-c", "user.email=test@example.com", *argv], cwd=repo, check=True,
                   capture_output=True)


def test_hook_reports_the_invalid_config_and_fails(tmp_path):
    repo = tmp_path / "repo"
    for folder in ("good", "bad", "notes"):
        (repo / folder).mkdir(parents=True)
    (repo / "good" / "ipu_config.json").write_text(json.dumps({"replication_factor": 2}))
    (repo / "bad" / "ipu_config.json").write_text(json.dumps({"replication_factor": 0}))
    (repo / "notes" / "other.json").write_text(json.dumps({"replication_factor": 0}))  # not a config name
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "configs")
    env = dict(os.environ, PRE_COMMIT_HOME=str(tmp_path / "cache"), PIP_NO_DEPS="1",
               PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]))
    result = subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "ipu-config-validate", "--all-files"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "validate IPU configs" in result.stdout and "Failed" in result.stdout
    assert "bad/ipu_config.json: `replication_factor=0` is invalid: numbers must be from 1 to 65536.\n" \
        in result.stdout
    assert "1 of 2 IPU config(s) invalid" in result.stdout
    assert "good/" not in result.stdout and "other.json" not in result.stdout
