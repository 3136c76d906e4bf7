"""Where a config the user names is: a local file or folder first, then a bundled preset, then a Hub repository.
The API (`from_pretrained`), every command and the placement ask here, and nowhere else."""

import difflib
import json
import os
from typing import Any, Dict, List, Optional, Union

from ..errors import NO_SUCH_PATH, ConfigFileError
from .files import CONFIG_NAME

# The bundled presets, `optimum_ipu_ext/presets/*.json` (the repository's `configs/` links there)
PRESETS_FOLDER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "presets")

# What `resolve` answers
LOCAL, PRESET, HUB = "local", "preset", "hub"


def looks_like_path(source: str) -> bool:
    """Whether `source` can only be a local path, never a Hub repository id (`x.json`, `./x`, `dir/`, `a/b/c`)."""
    return source.endswith((".json", "/", os.sep)) or source.startswith((".", "/", "~")) or source.count("/") > 1 \
        or "\\" in source


def is_local(source: Union[str, os.PathLike]) -> bool:
    """Whether `source` names a local file or folder: one that exists, or a missing one that cannot be a Hub
    repository id (to be reported missing)."""
    return os.path.exists(source) or looks_like_path(str(source))


def resolve(source: Union[str, os.PathLike]) -> str:
    """`LOCAL`, `PRESET` or `HUB`: a local path of that name first, then the preset, then the Hub."""
    if is_local(source):
        return LOCAL
    return PRESET if os.path.isfile(preset_file(str(source))) else HUB


def preset_names() -> List[str]:
    """The names of the bundled presets, sorted."""
    return sorted(entry[: -len(".json")] for entry in os.listdir(PRESETS_FOLDER) if entry.endswith(".json"))


def presets() -> Dict[str, str]:
    """{name: JSON text} of the bundled presets, by name."""
    return {name: _read(preset_file(name)) for name in preset_names()}


def preset_file(name: str) -> str:
    """The file of the preset `name`."""
    return os.path.join(PRESETS_FOLDER, f"{name}.json")


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as reader:
        return reader.read()


def preset(source: Union[str, os.PathLike]) -> Optional[Dict[str, Any]]:
    """The settings of the preset `source` names, where it names no local path; else `None`."""
    return json.loads(_read(preset_file(str(source)))) if resolve(source) == PRESET else None


def close_preset(source: str) -> Optional[str]:
    """The preset whose name `source` nearly is (a typo: `pipelined-2ipus`), if any; a name with a namespace
    (`org/name`) is a Hub repository's, never a preset's."""
    if "/" in source:
        return None
    close = difflib.get_close_matches(source, preset_names(), n=1, cutoff=0.8)
    return close[0] if close else None


def check_local_source(source: Union[str, os.PathLike], config_name: str = CONFIG_NAME, subfolder: str = "") -> None:
    """Raises `ConfigFileError` for a local source that holds no config: a missing path that cannot be a Hub
    repository id (`x.json`, `./x`, `dir/`, `a/b/c`), or a directory without `config_name` (in `subfolder`)."""
    path = str(source)
    if os.path.isdir(path):
        if not os.path.isfile(os.path.join(path, subfolder, config_name)):
            where = f"its subfolder '{subfolder}'" if subfolder else "it"
            raise ConfigFileError(path, f"a directory, but {where} holds no {config_name}")
    elif not os.path.exists(path) and looks_like_path(path):
        raise ConfigFileError(path, NO_SUCH_PATH)


def local_config_file(source: Union[str, os.PathLike]) -> str:
    """The JSON file a local source stands for: the file itself, or the directory's `ipu_config.json`. Raises
    `ConfigFileError` where there is none."""
    path = str(source)
    check_local_source(path)
    if not os.path.exists(path):
        raise ConfigFileError(path, NO_SUCH_PATH)
    return os.path.join(path, CONFIG_NAME) if os.path.isdir(path) else path
