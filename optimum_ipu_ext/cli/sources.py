"""Where `ipu-config` reads and writes configurations: files, directories, the Hub, the bundled presets.

Local files and presets are read and written by the core (`PlainIPUConfig`), which imports no transformers.
The Hub is reached only through the library (`IPUConfig.from_pretrained`, `hub.push.push_config`), with the token
the `hf` CLI stores; their errors (`HubError`) already say, in one line, what happened to which repository, so
the client's own log lines (its retries) are not shown.
"""

import contextlib
import logging
import os
import sys
import warnings
from typing import Any, Dict, Mapping, Optional, Sequence

from ..config.mixin import SettingsMixin
from ..config.plain import PlainIPUConfig
from ..errors import ConfigMigrationWarning, as_json
from ..settings.files import CONFIG_NAME, dump, read_config_file, write_text_atomically
from ..settings.migration import migrate
from ..settings.mode import INFERENCE
from ..settings.schema import parse_update_string
from ..settings.sources import HUB, LOCAL, PRESET, local_config_file, preset, resolve
from ..settings.table import SETTINGS
from .output import PROG, Stream, one_line, progress


def get_token() -> Optional[str]:
    """The Hub token `hf auth login` stores, or `HF_TOKEN` (huggingface_hub is imported only for the Hub)."""
    from huggingface_hub import get_token as stored_token

    return stored_token()


class CommandError(Exception):
    """A failure reported as one line, with exit code 1."""


def load(source: str, revision: Optional[str] = None, updates: Sequence[str] = (),
         pod_type: Optional[str] = None) -> SettingsMixin:
    """The configuration of a JSON file, a directory, a preset or a Hub repository, with `--set` updates applied;
    `pod_type` (`--pod-type`) chooses the values of an earlier release's per-pod-type settings."""
    where = resolve(source)
    if where != HUB:
        if revision:
            kind = "a preset" if where == PRESET else "a local path"
            raise CommandError(f"{source}: {kind}; --revision applies to Hub repositories")
        config: SettingsMixin = PlainIPUConfig.from_dict(preset(source)) if where == PRESET \
            else PlainIPUConfig.from_json_file(local_config_file(source), pod_type=pod_type)
    else:
        from ..config.configuration import IPUConfig

        quiet_client()
        with progress(Stream(sys.stderr), f"Loading {source}"):
            config = IPUConfig.from_pretrained(source, revision=revision, token=get_token(), pod_type=pod_type)
    apply_updates(config, updates, source)
    return config


def load_dict(source: str, revision: Optional[str] = None) -> Dict[str, Any]:
    """The saved settings of a source, as the class reads them before checking them."""
    where = resolve(source)
    if where == PRESET:
        return preset(source)
    if where == LOCAL:
        return read_config_file(local_config_file(source))
    from ..config.configuration import IPUConfig
    from ..hub.compat import load_arguments

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


def apply_updates(config: SettingsMixin, updates: Sequence[str], source: str) -> None:
    """Applies `--set KEY=VALUE` arguments with `IPUConfig.update_from_string`: parsed and checked by the class.
    The inference pipeline follows the training one as `following_inference` says."""
    if updates:
        current = {name: getattr(config, name) for name in config.SETTINGS}
        followed = following_inference(current, parsed_updates(updates), source)
        assignments = [f"{name}={as_json(value)}" for name, value in followed.items()]
        try:
            config.update_from_string(",".join([*updates, *assignments]))
        except ValueError as error:
            raise CommandError(f"--set: {one_line(error)}") from error


PIPELINE_SETTINGS = ("ipus_per_replica", "layers_per_ipu")


def following_inference(current: Mapping[str, Any], updates: Mapping[str, Any], source: str) -> Dict[str, Any]:
    """The inference pipeline settings that follow `updates` (`--set`) of the training ones: each that held the
    training value of `current` (inherited, as optimum-graphcore derives it) takes the new one, unless `updates`
    give it too. One set apart from training's is kept, and a note on stderr says how to make it follow."""
    followed, kept = {}, {}
    for name in PIPELINE_SETTINGS:
        twin = INFERENCE.setting(name)
        if name not in updates or twin in updates or updates[name] in (current[name], current[twin]):
            continue
        if current[twin] == current[name]:
            followed[twin] = updates[name]
        else:
            kept[twin] = updates[name]
    if kept:
        held = " and ".join(f"`{twin}={as_json(current[twin])}`" for twin in kept)
        flags = " ".join(f"--set '{twin}={as_json(value)}'" for twin, value in kept.items())
        Stream(sys.stderr).write(f"{PROG}: note: {source}: the inference pipeline keeps {held}, set apart from the "
                                 f"training one; for inference to follow it, add {flags}")
    return followed


def refuse_to_overwrite(path: str, force: bool) -> None:
    """Refuses a `path` that exists, unless `force`; commands that take a while call it before their work too."""
    if os.path.exists(path) and not force:
        raise CommandError(f"{path}: exists; pass --force to overwrite it")


def write_config(config: SettingsMixin, out_dir: str, force: bool) -> str:
    """Saves `config` as `out_dir/ipu_config.json` (refusing to overwrite one unless `force`); returns its path."""
    target = os.path.join(out_dir, CONFIG_NAME)
    refuse_to_overwrite(target, force)
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


def quiet_client() -> None:
    """Keeps the log lines of the Hub client, of urllib3 under it and of transformers (retries, fallbacks) off
    stderr for this process: the outcome is reported by the command, in one line."""
    from huggingface_hub.utils import logging as client_logging

    client_logging.set_verbosity_error()  # the client sets its level as it is first imported: after that, here
    for name in ("transformers", "urllib3"):
        logging.getLogger(name).setLevel(logging.ERROR)


def load_local(source: str):
    """The configuration of a local file or folder; a missing path is never taken for a Hub repository."""
    from ..config.configuration import IPUConfig

    local_config_file(source)  # raises for a missing path, whatever its name
    return IPUConfig.from_pretrained(source)


def push(config, repo_id: str, private: bool, revision: Optional[str], create_pr: bool,
         commit_message: Optional[str], model: Optional[str] = None,
         placement: Optional[Dict[str, Any]] = None) -> Optional[str]:
    """Pushes `config` as `IPUConfig.push_to_hub` does, with `model` placed on the card as `placement`'s options
    (`placement()`'s) ask; returns the URL of the commit or pull request, or `None` when the repository already held
    this config (nothing committed)."""
    token = get_token()
    if token is None:
        raise CommandError("pushing needs a Hugging Face token with write access: run `hf auth login` or set HF_TOKEN")
    options: Dict[str, Any] = {"token": token, "create_pr": create_pr, "private": private or None,
                               "revision": revision, "commit_message": commit_message}
    from ..config.configuration import placement_attachment
    from ..hub.push import push_config

    quiet_client()
    logging.getLogger(push_config.__module__).setLevel(logging.ERROR)  # the command says itself that nothing changed
    with progress(Stream(sys.stderr), f"Placing {model}") if model else contextlib.nullcontext():
        attachment = placement_attachment(config, repo_id, model, token=token, **(placement or {}))
    with progress(Stream(sys.stderr), f"Pushing to {repo_id}"):
        outcome = push_config(config, repo_id, options, attachment)
    if not outcome.changed:
        return None
    return outcome.commit.pr_url or outcome.commit.commit_url
