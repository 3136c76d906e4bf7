"""The JSON file of an IPU config: its name, how it is read (each key once, a bounded size) and written
(atomically)."""

import json
import os
from typing import Any, Dict, List, Tuple, Union

from ..errors import ConfigFileError, as_json
from .table import VERSION_KEYS

CONFIG_NAME = "ipu_config.json"


# A config file is a few hundred bytes; one of a megabyte is not a config (and parsing a huge one is slow).
MAX_CONFIG_FILE_BYTES = 1 << 20


class _RepeatedKey(Exception):
    """A key given twice in one JSON object: raised out of `json.loads`."""

    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _object_once(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
    """A JSON object whose keys are each given once (`json` keeps the last of a repeated key, silently)."""
    found: Dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise _RepeatedKey(key)
        found[key] = value
    return found


def read_config_file(path: Union[str, os.PathLike]) -> Dict[str, Any]:
    """The JSON object of a config file. Refuses, naming the file, what is too large, not a JSON object, or gives
    a key twice in one object."""
    size = os.path.getsize(path)
    if size > MAX_CONFIG_FILE_BYTES:
        raise ConfigFileError(str(path), f"{size} bytes, more than the {MAX_CONFIG_FILE_BYTES} an IPU config may have")
    try:
        with open(path, encoding="utf-8") as reader:
            config_dict = json.load(reader, object_pairs_hook=_object_once)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ConfigFileError(str(path), f"not valid JSON ({error})") from error
    except _RepeatedKey as repeated:
        raise ConfigFileError(str(path), f"the key {as_json(repeated.key)} is given twice in one object; give each "
                              "key once") from None
    if not isinstance(config_dict, dict):
        raise ConfigFileError(str(path), f"expected a JSON object, found {type(config_dict).__name__}")
    return config_dict


def write_text_atomically(path: Union[str, os.PathLike], text: str) -> None:
    """Writes `text` to `path` so that a failed write leaves any previous file intact."""
    import uuid  # here, not at the top: reading and checking configs, what most commands do, needs no writing

    partial = f"{path}.{uuid.uuid4().hex}.partial"  # created as any file is, under the umask
    try:
        with open(partial, "x", encoding="utf-8") as writer:
            writer.write(text)
        os.replace(partial, path)
    except BaseException:
        if os.path.exists(partial):
            os.unlink(partial)
        raise


def dump(config_dict: Dict[str, Any]) -> str:
    """The text of `ipu_config.json`."""
    return json.dumps(config_dict, indent=2, sort_keys=True) + "\n"


def installed_versions() -> Dict[str, str]:
    """`transformers_version` and `optimum_version` as transformers and optimum write them, read from the
    installed distributions without importing them."""
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for key in VERSION_KEYS:
        try:
            found[key] = version(key[: -len("_version")])
        except PackageNotFoundError:
            pass
    return found
