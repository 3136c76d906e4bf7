"""Where `ipu-config` reads and writes configurations: files, directories, the Hub, the bundled presets.

Local files and presets are read and written by the core (`PlainIPUConfig`), which imports no transformers.
The Hub is reached only through the library (`IPUConfig.from_pretrained`, `hub.push_config`), with the token
the `hf` CLI stores; their errors (`HubError`) already say, in one line, what happened to which repository, so
the client's own log lines (its retries) are not shown.
"""

import importlib.resources
import json
import logging
import os
import sys
import warnings
from typing import Any, Dict, Optional, Sequence

from ..core import CONFIG_NAME, dump, local_config_file, looks_like_path, read_config_file, write_text_atomically
from ..errors import ConfigMigrationWarning
from ..migration import migrate
from ..mixin import SettingsMixin
from ..plain import PlainIPUConfig
from ..schema import parse_update_string
from ..settings import SETTINGS
from .output import Stream, one_line, progress

PRESETS_PACKAGE = "optimum_ipu_ext.presets"


def get_token() -> Optional[str]:
    """The Hub token `hf auth login` stores, or `HF_TOKEN` (huggingface_hub is imported only for the Hub)."""
    from huggingface_hub import get_token as stored_token

    return stored_token()


class CommandError(Exception):
    """A failure reported as one line, with exit code 1."""


def is_local(source: str) -> bool:
    """Whether `source` names a local file or directory rather than a Hub repository.

    A missing path that cannot be a repository id (`x.json`, `./x`, `dir/`, `a/b/c`) is local too, to be reported
    missing.
    """
    return os.path.exists(source) or looks_like_path(source)


def preset(source: str) -> Optional[Dict[str, Any]]:
    """The settings of the bundled preset `source` names (`pipelined-2ipu`), where it names no local path: a Hub
    repository of the same name is reached with its namespace."""
    text = None if is_local(source) else presets().get(source)
    return None if text is None else json.loads(text)


def load(source: str, revision: Optional[str] = None, updates: Sequence[str] = (),
         pod_type: Optional[str] = None) -> SettingsMixin:
    """The configuration of a JSON file, a directory, a preset or a Hub repository, with `--set` updates applied;
    `pod_type` (`--pod-type`) chooses the values of an earlier release's per-pod-type settings."""
    bundled = preset(source)
    if is_local(source) or bundled is not None:
        if revision:
            kind = "a preset" if bundled is not None else "a local path"
            raise CommandError(f"{source}: {kind}; --revision applies to Hub repositories")
        config: SettingsMixin = PlainIPUConfig.from_dict(bundled) if bundled is not None \
            else PlainIPUConfig.from_json_file(local_config_file(source), pod_type=pod_type)
    else:
        from ..configuration import IPUConfig

        quiet_client()
        with progress(Stream(sys.stderr), f"Loading {source}"):
            config = IPUConfig.from_pretrained(source, revision=revision, token=get_token(), pod_type=pod_type)
    apply_updates(config, updates)
    return config


def load_dict(source: str, revision: Optional[str] = None) -> Dict[str, Any]:
    """The saved settings of a source, as the class reads them before checking them."""
    bundled = preset(source)
    if bundled is not None:
        return bundled
    if is_local(source):
        return read_config_file(local_config_file(source))
    from ..configuration import IPUConfig
    from ..hub import load_arguments

    try:
        with warnings.catch_warnings():  # the caller migrates the settings, and warns, itself
            warnings.simplefilter("ignore", ConfigMigrationWarning)
            load(source, revision)  # into the cache, or a Hub error; the settings are checked by the caller
    except (ValueError, TypeError):
        pass
    return IPUConfig.get_config_dict(source, **load_arguments({"revision": revision, "local_files_only": True}))[0]


def parsed_updates(updates: Sequence[str]) -> Dict[str, Any]:
    """The settings of `--set KEY=VALUE` arguments, read and checked as `IPUConfig.update_from_string` reads them."""
    try:
        return parse_update_string(",".join(updates), SETTINGS) if updates else {}
    except ValueError as error:
        raise CommandError(f"--set: {one_line(error)}") from error


def apply_updates(config: SettingsMixin, updates: Sequence[str]) -> None:
    """Applies `--set KEY=VALUE` arguments with `IPUConfig.update_from_string`: parsed and checked by the class."""
    if updates:
        try:
            config.update_from_string(",".join(updates))
        except ValueError as error:
            raise CommandError(f"--set: {one_line(error)}") from error


def write_config(config: SettingsMixin, out_dir: str, force: bool) -> str:
    """Saves `config` as `out_dir/ipu_config.json` (refusing to overwrite one unless `force`); returns its path."""
    target = os.path.join(out_dir, CONFIG_NAME)
    if os.path.exists(target) and not force:
        raise CommandError(f"{target}: exists; pass --force to overwrite it")
    config.save_pretrained(out_dir)
    return target


def upgrade_file(source: str, pod_type: Optional[str], backup: bool) -> str:
    """Rewrites the local config `source` in optimum-graphcore 0.7.1's terms, first copying it to `FILE.bak` with
    `backup`; returns what was done and each change, a line each. A file already in those terms, or that cannot be
    read or upgraded, is left untouched."""
    path = local_config_file(source)
    try:
        migrated = migrate(read_config_file(path), pod_type=pod_type)
        PlainIPUConfig.from_dict(migrated.config)  # the upgraded settings are valid before anything is written
    except (ValueError, TypeError) as error:
        raise CommandError(f"{path}: {one_line(error)} The file is left as it is.") from error
    if not migrated.migrations:
        return f"{path}: already in optimum-graphcore 0.7.1's terms; left as it is"
    kept = f"{path}.bak"
    if backup:
        if os.path.exists(kept):
            raise CommandError(f"{kept}: exists; move it away or pass --no-backup. {path} is left as it is.")
        with open(path, encoding="utf-8", newline="") as reader:
            write_text_atomically(kept, reader.read())
    write_text_atomically(path, dump(migrated.config))
    changes = [f"  {migration.message}" for migration in migrated.migrations]
    return "\n".join([f"Upgraded {path}" + (f" (the original is kept as {kept})" if backup else "") + ":", *changes])


def presets() -> Dict[str, str]:
    """{name: JSON text} of the bundled presets (the `configs/` folder of the repository), by name."""
    if sys.version_info >= (3, 9):
        root = importlib.resources.files(PRESETS_PACKAGE)  # novermin: guarded by the version check
        texts = {entry.name: entry.read_text(encoding="utf-8") for entry in root.iterdir() if entry.name.endswith(".json")}
    else:
        names = [name for name in importlib.resources.contents(PRESETS_PACKAGE) if name.endswith(".json")]
        texts = {name: importlib.resources.read_text(PRESETS_PACKAGE, name, encoding="utf-8") for name in names}
    return {name[: -len(".json")]: text for name, text in sorted(texts.items())}


def quiet_client() -> None:
    """Keeps the Hub client's and transformers' log lines (retries, fallbacks) off stderr for this process: the
    outcome is reported by the command, in one line."""
    for name in ("huggingface_hub", "transformers"):
        logging.getLogger(name).setLevel(logging.ERROR)


def load_local(source: str):
    """The configuration of a local file or folder; a missing path is never taken for a Hub repository."""
    from ..configuration import IPUConfig

    local_config_file(source)  # raises for a missing path, whatever its name
    return IPUConfig.from_pretrained(source)


def push(config, repo_id: str, private: bool, revision: Optional[str], create_pr: bool,
         commit_message: Optional[str]) -> Optional[str]:
    """Pushes `config` as `IPUConfig.push_to_hub` does; returns the URL of the commit or pull request, or `None`
    when the repository already held this config (nothing committed)."""
    token = get_token()
    if token is None:
        raise CommandError("pushing needs a Hugging Face token with write access: run `hf auth login` or set HF_TOKEN")
    options: Dict[str, Any] = {"token": token, "create_pr": create_pr, "private": private or None,
                               "revision": revision, "commit_message": commit_message}
    from .. import hub

    quiet_client()
    logging.getLogger(hub.__name__).setLevel(logging.ERROR)  # the command says itself that nothing changed
    with progress(Stream(sys.stderr), f"Pushing to {repo_id}"):
        outcome = hub.push_config(config, repo_id, options)
    if not outcome.changed:
        return None
    return outcome.commit.pr_url or outcome.commit.commit_url
