"""Where `ipu-config` reads and writes configurations: files, directories, the Hub, the bundled presets.

Local files and presets are read and written by the core (`PlainIPUConfig`), which imports no transformers.
The Hub is reached only through the library API (`IPUConfig.from_pretrained`, `push_to_hub`), with the token
the `hf` CLI stores; their errors (`HubError`) already say, in one line, what happened to which repository.
"""

import importlib.resources
import os
import sys
from typing import Any, Dict, Optional, Sequence

from ..core import CONFIG_NAME, PlainIPUConfig, SettingsMixin, read_config_file
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

    A missing path that cannot be a repository id (`x.json`, `./x`, `a/b/c`) is local too, to be reported missing.
    """
    return os.path.exists(source) or source.endswith(".json") or source.startswith((".", "/", "~")) \
        or source.count("/") > 1 or "\\" in source


def local_file(source: str) -> str:
    """The JSON file a local source stands for: the file itself, or the directory's `ipu_config.json`."""
    if not os.path.exists(source):
        raise CommandError(f"{source}: no such file or directory")
    path = os.path.join(source, CONFIG_NAME) if os.path.isdir(source) else source
    if not os.path.isfile(path):
        raise CommandError(f"{source}: a directory without {CONFIG_NAME}")
    return path


def load(source: str, revision: Optional[str] = None, updates: Sequence[str] = ()) -> SettingsMixin:
    """The configuration of a JSON file, a directory or a Hub repository, with `--set` updates applied."""
    if is_local(source):
        if revision:
            raise CommandError(f"{source}: a local path; --revision applies to Hub repositories")
        config: SettingsMixin = PlainIPUConfig.from_json_file(local_file(source))
    else:
        from ..configuration import IPUConfig

        with progress(Stream(sys.stderr), f"Loading {source}"):
            config = IPUConfig.from_pretrained(source, revision=revision, token=get_token())
    apply_updates(config, updates)
    return config


def load_dict(source: str, revision: Optional[str] = None) -> Dict[str, Any]:
    """The saved settings of a source, as the class reads them before checking them."""
    if is_local(source):
        return read_config_file(local_file(source))
    from ..configuration import IPUConfig

    try:
        load(source, revision)  # into the cache, or a Hub error; the settings are checked by the caller
    except (ValueError, TypeError):
        pass
    return IPUConfig.get_config_dict(source, revision=revision, local_files_only=True)[0]


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


def presets() -> Dict[str, str]:
    """{name: JSON text} of the bundled presets (the `configs/` folder of the repository), by name."""
    if sys.version_info >= (3, 9):
        root = importlib.resources.files(PRESETS_PACKAGE)  # novermin: guarded by the version check
        texts = {entry.name: entry.read_text(encoding="utf-8") for entry in root.iterdir() if entry.name.endswith(".json")}
    else:
        names = [name for name in importlib.resources.contents(PRESETS_PACKAGE) if name.endswith(".json")]
        texts = {name: importlib.resources.read_text(PRESETS_PACKAGE, name, encoding="utf-8") for name in names}
    return {name[: -len(".json")]: text for name, text in sorted(texts.items())}


def push(config, repo_id: str, private: bool, revision: Optional[str], create_pr: bool,
         commit_message: Optional[str]) -> str:
    """Pushes `config` with `IPUConfig.push_to_hub`; returns the URL of the commit or pull request."""
    token = get_token()
    if token is None:
        raise CommandError("pushing needs a Hugging Face token with write access: run `hf auth login` or set HF_TOKEN")
    options: Dict[str, Any] = {"token": token, "create_pr": create_pr}
    for name, value in (("private", private or None), ("revision", revision), ("commit_message", commit_message)):
        if value is not None:
            options[name] = value
    with progress(Stream(sys.stderr), f"Pushing to {repo_id}"):
        commit = config.push_to_hub(repo_id, **options)
    return getattr(commit, "pr_url", None) or getattr(commit, "commit_url", None) or str(commit)
