"""The core of an IPU config, in plain Python: which keys it takes, how its settings derive from each other,
the rules between them, and its JSON file.

`SettingsMixin` (mixin.py) puts this core on a class: `IPUConfig` (configuration.py) on top of transformers,
`PlainIPUConfig` (plain.py) without. Nothing here imports transformers, torch or optimum, nor any module of the
package's shell (the classes, the Hub, the importer, the recorder, the CLI).
"""

import json
import os
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

from . import migration
from .build import check_execution_strategies, check_reserved_ipus
from .errors import ConfigFileError, IncompatibleSettingsError, UnknownSettingError, as_json
from .popdist import PopDistLaunch
from .schema import parse_update_string
from .settings import (
    BASE_SETTINGS,
    MAX_IPUS_IN_A_JOB,
    POPART_KEYS_WITH_A_SETTING,
    POPTORCH_KEYS_WITH_A_SETTING,
    POPTORCH_OPTION_KEYS,
    SETTINGS,
    TRANSFORMERS_KEYS,
    VERSION_KEYS,
    setting_writing,
)

CONFIG_NAME = "ipu_config.json"

# A config file is a few hundred bytes; one of a megabyte is not a config (and parsing a huge one is slow).
MAX_CONFIG_FILE_BYTES = 1 << 20

def looks_like_path(source: str) -> bool:
    """Whether `source` can only be a local path, never a Hub repository id (`x.json`, `./x`, `dir/`, `a/b/c`)."""
    return source.endswith((".json", "/", os.sep)) or source.startswith((".", "/", "~")) or source.count("/") > 1 \
        or "\\" in source


# What a missing local path is called, by every command and the API
NO_SUCH_PATH = "no such file or directory"


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


def check_keys(values: Dict[str, Any]) -> None:
    """Rejects keys no release ever had; carries over, or drops, with a warning, keys that earlier releases had (a
    file's loader has done so already, naming the file). A count given as null becomes what null stands for
    (`replication_factor`: 1), before a base class sees it."""
    carry_over_legacy_keys(values)
    for key in list(values):
        if key in SETTINGS:
            if values[key] is None:
                values[key] = SETTINGS[key].check(None)
        elif key not in TRANSFORMERS_KEYS:
            raise UnknownSettingError(key, SETTINGS)


def carry_over_legacy_keys(values: Dict[str, Any], source: Optional[str] = None) -> None:
    """Replaces, in `values`, each key of an earlier release by the current settings that hold its value, or drops
    it where none does, with a `FutureWarning` naming `source` (the file or repository) and the new key. A legacy
    key whose value disagrees with a current setting given too is an error."""
    carried = migration.carry_over_legacy_keys(values, source)
    values.clear()
    values.update(carried.config)
    migration.warn(carried.migrations)


def derive_base_settings(given: Mapping[str, Any]) -> Dict[str, Any]:
    """The values of optimum-graphcore's settings for constructor arguments `given`: defaults, and the inference
    settings that fall back to the training ones, as optimum-graphcore 0.7.1's constructor derives them."""
    values = {
        name: setting.check(given[name]) if name in given else setting.default_value()
        for name, setting in BASE_SETTINGS.items()
    }
    layers = values["layers_per_ipu"]
    values["inference_layers_per_ipu"] = values["inference_layers_per_ipu"] or list(layers)
    values["ipus_per_replica"] = values["ipus_per_replica"] or len(layers)
    # upstream sizes the inference pipeline by the inference layers, unless ipus_per_replica was given alone
    inference_pipeline = values["ipus_per_replica"]
    if inference_pipeline == len(layers) or values["inference_layers_per_ipu"] != [-1]:
        inference_pipeline = len(values["inference_layers_per_ipu"])
    values["inference_ipus_per_replica"] = values["inference_ipus_per_replica"] or inference_pipeline
    proportion = values["matmul_proportion"]
    if not values["inference_matmul_proportion"]:
        per_ipu_mismatch = isinstance(proportion, list) and len(proportion) != inference_pipeline
        values["inference_matmul_proportion"] = BASE_SETTINGS["matmul_proportion"].default if per_ipu_mismatch else proportion
    values["parallelize_kwargs"] = values["parallelize_kwargs"] or {}
    values["inference_parallelize_kwargs"] = values["inference_parallelize_kwargs"] or {}
    return values


def check_base_rules(settings: Dict[str, Any]) -> None:
    """Checks that optimum-graphcore's settings agree with each other in both modes, as its own class does,
    and that the job fits the largest IPU system. Like upstream, defaults a serialization factor to 1 when
    neither it nor its splits are given.

    `settings` is a config's `vars()`, where either base stores its settings (read there, no attribute hooks run).
    """
    for prefix in ("", "inference_"):
        _check_pipeline_lengths(settings, prefix)
        replicas_name, ipus_name = f"{prefix}replication_factor", f"{prefix}ipus_per_replica"
        replicas, ipus = settings[replicas_name], settings[ipus_name]
        if replicas * ipus > MAX_IPUS_IN_A_JOB:
            raise IncompatibleSettingsError(
                replicas_name, replicas,
                f"with `{ipus_name}={ipus}` the job needs {replicas * ipus} IPUs, more than the {MAX_IPUS_IN_A_JOB} "
                "of the largest IPU system",
            )


def _check_pipeline_lengths(settings: Dict[str, Any], prefix: str) -> None:
    ipus_name = f"{prefix}ipus_per_replica"
    ipus = settings[ipus_name]

    def require_pipeline_length(name: str) -> None:
        value = settings[name]
        if len(value) != ipus:
            raise IncompatibleSettingsError(name, value, f"it needs one entry per IPU, as `{ipus_name}={ipus}`")

    if isinstance(settings[f"{prefix}matmul_proportion"], list):
        require_pipeline_length(f"{prefix}matmul_proportion")
    if -1 not in settings[f"{prefix}layers_per_ipu"]:
        require_pipeline_length(f"{prefix}layers_per_ipu")
    for layer in ("embedding", "projection"):
        factor_name = f"{prefix}{layer}_serialization_factor"
        splits_name = f"{prefix}serialized_{layer}_splits_per_ipu"
        factor, splits = settings[factor_name], settings[splits_name]
        if splits and factor:
            raise IncompatibleSettingsError(
                factor_name, factor,
                f"give `{factor_name}` (serialise on one IPU) or `{splits_name}` (split across IPUs), not both",
            )
        if splits:
            require_pipeline_length(splits_name)
        elif not factor:
            settings[factor_name] = 1


def check_extension_rules(settings: Dict[str, Any]) -> None:
    """Checks that the settings this package adds agree with optimum-graphcore's (`settings`: a config's `vars()`)."""
    ipus, graphs = settings["ipus_per_replica"], settings["accumulate_outer_fragment_excluded_virtual_graphs"]
    for graph in graphs or []:
        if graph >= ipus:
            raise IncompatibleSettingsError(
                "accumulate_outer_fragment_excluded_virtual_graphs", graphs,
                f"virtual graphs are the IPUs of the pipeline, 0 to {ipus - 1} as `ipus_per_replica={ipus}`",
            )
    _check_replacements(settings)
    grouping = settings["input_replica_grouping"]
    if grouping and settings["replication_factor"] % grouping["size"]:
        raise IncompatibleSettingsError(
            "input_replica_grouping", grouping, f"its size must divide `replication_factor={settings['replication_factor']}`"
        )
    popart_options = settings["popart_options"] or {}
    for key in popart_options:
        if key in POPART_KEYS_WITH_A_SETTING:
            owner = setting_writing(key, settings)
            if owner is None:
                continue  # its setting makes no call: the option is free
            problem = f"set `{owner}` instead (or make it null and set the option here)"
        elif key in POPTORCH_KEYS_WITH_A_SETTING:
            problem = f"`{key}` is poptorch's own option, not PopART's: set `{POPTORCH_KEYS_WITH_A_SETTING[key]}` instead"
        elif key in POPTORCH_OPTION_KEYS:
            problem = f"`{key}` is poptorch's own option, not PopART's, and no setting drives it yet"
        else:
            continue
        raise IncompatibleSettingsError("popart_options", {key: popart_options[key]}, problem)
    check_execution_strategies(settings)


# Settings that make a call another setting makes too, and so need that one to make none: {setting: the other}.
_REPLACED = {
    "optimizer_location": "optimizer_state_offchip",
    "zero_seed": "seed",
}


def _check_replacements(settings: Dict[str, Any]) -> None:
    for name, replaced in _REPLACED.items():
        if SETTINGS[name].argument(settings[name]) is not None and SETTINGS[replaced].argument(settings[replaced]) is not None:
            raise IncompatibleSettingsError(
                name, settings[name], f"it makes the call `{replaced}` makes, so `{replaced}` must make none (null)"
            )
    if settings["replicated_tensor_sharding"] and settings["optimizer_state_offchip"] is None:
        raise IncompatibleSettingsError(
            "replicated_tensor_sharding", True, "it is part of the call `optimizer_state_offchip` makes: give that too"
        )


def check_rules(settings: Dict[str, Any]) -> None:
    """Every rule between settings, base and extension (`settings`: a config's `vars()`), and that poptorch reserves
    the IPUs of both builds in the launch this process is in (one host, or a poprun instance)."""
    check_base_rules(settings)
    check_extension_rules(settings)
    launch = PopDistLaunch.from_environment()
    for for_inference in (False, True):
        check_reserved_ipus(settings, for_inference, launch)


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


def update_settings_from_string(config: Any, update_str: str) -> None:
    """`update_from_string` of both base classes and of `SettingsMixin`: updates settings from
    `"key=value,key=value"`; booleans are `true`/`false`, lists `[a b c]`, and a choice is taken as written
    (`recomputation_mode=none` is the choice, `null` leaves PopART's default).

    Every value is checked before any is applied, and the whole update is undone if the settings then disagree
    with each other.
    """
    updates = parse_update_string(update_str, config.SETTINGS)
    previous = {name: getattr(config, name) for name in updates}
    config.__dict__.update(updates)
    try:
        config._validate_ipu_config()
    except Exception:
        config.__dict__.update(previous)
        raise


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
