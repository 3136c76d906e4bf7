"""What the `ipu_config.json` of an earlier optimum-graphcore release becomes in 0.7.1's terms.

Pure functions over the raw dictionary of a file: no I/O. `migrate` returns the migrated dictionary and one
`Migration` per key it changed; the loaders warn with each (`migrate_and_warn`), `ipu-config upgrade` writes the
dictionary.
A file that is also valid for optimum-graphcore 0.7.1 comes back unchanged, with no migration.
"""

from typing import Any, Dict, List, NamedTuple, Optional

from ..errors import (
    ConfigMigrationWarning,
    IncompatibleSettingsError,
    InvalidSettingError,
    SettingTypeError,
    as_json,
    warn,
)
from .legacy import LEGACY_KEYS, LegacyKey
from .schema import describe, type_checker
from .table import SETTINGS

# Every pod type a release took a value for (0.2.1: pod4, pod16, pod64, pod128, pod256; 0.3.0-0.6.0: pod4, pod8,
# pod16, pod32, pod64), in size order.
POD_TYPES = ("pod4", "pod8", "pod16", "pod32", "pod64", "pod128", "pod256")


class FormatChange(NamedTuple):
    """A change of the file format: what files of earlier releases hold, what it becomes, and the release that
    stopped reading it."""

    written: str
    becomes: str
    release: str


PER_POD_TYPE = FormatChange('a value per pod type (`{"pod4": 1, "pod16": 4, "default": 1}`)',
                            'the value for the pod type given, else its "default"', "0.7.0")
ZERO_FACTOR = FormatChange("`embedding_serialization_factor: 0`", "`1`: not serialised", "0.6.1")
NULL_TEXT = FormatChange('the string `"null"` for a setting that takes no string', "`null`", "0.6.1")
ONE_PROPORTION = FormatChange("a one-entry `matmul_proportion` list with several IPUs", "that proportion on every IPU",
                              "0.6.1")
FORMAT_CHANGES = (PER_POD_TYPE, ZERO_FACTOR, NULL_TEXT, ONE_PROPORTION)


class Migration(NamedTuple):
    """What became of one key of a file: `message` says it, naming the file, the key, its new value and the release."""

    key: str
    message: str


class Migrated(NamedTuple):
    """A file's settings in 0.7.1's terms, and the migrations that made them."""

    config: Dict[str, Any]
    migrations: List[Migration]


def migrate(raw: Dict[str, Any], source: Optional[str] = None, pod_type: Optional[str] = None) -> Migrated:
    """The settings of `raw` (a file's JSON object, left unchanged) in optimum-graphcore 0.7.1's terms.

    Args:
        source: the file or repository, named by each migration.
        pod_type: which value of a per-pod-type value to take (one of `POD_TYPES`); without it, its "default".

    Raises:
        InvalidSettingError: `pod_type` is not a pod type, or a per-pod-type value has no value for it (nor a
            "default"); the message lists the pod types the value has.
    """
    if pod_type is not None and pod_type not in POD_TYPES:
        raise InvalidSettingError("pod_type", pod_type, f"the pod types are {', '.join(POD_TYPES)}")
    where = f" in {source}" if source else ""
    config, migrations = dict(raw), []

    def replace(key: str, value: Any, change: FormatChange, written: str, meaning: str) -> None:
        migrations.append(Migration(key, f"`{key}`{where} {written}, which optimum-graphcore {change.release} no "
                                         f"longer reads: it becomes `{key}={as_json(value)}`{meaning}."))
        config[key] = value

    for key, value in raw.items():
        if key not in SETTINGS and key not in LEGACY_KEYS:
            continue  # a transformers key is no IPU setting; a key no release had is refused as it is
        if _is_per_pod_type(value):
            if pod_type in value:
                taken = f", its value for {pod_type}"
            else:
                taken = ', its "default"' + (f" (it has no value for {pod_type})" if pod_type else "")
            replace(key, _for_pod_type(key, value, pod_type), PER_POD_TYPE, "is a value per pod type", taken)
        if config[key] == "null" and key in SETTINGS and not type_checker(SETTINGS[key].annotation)("null"):
            replace(key, None, NULL_TEXT, 'is the string "null"', "")
    if config.get("embedding_serialization_factor") == 0:
        replace("embedding_serialization_factor", 1, ZERO_FACTOR, "is 0", ", not serialised, as 0 meant")
    proportion, ipus = config.get("matmul_proportion"), _pipeline_length(config)
    if isinstance(proportion, list) and len(proportion) == 1 and ipus > 1:
        replace("matmul_proportion", proportion[0], ONE_PROPORTION, f"has one proportion for {ipus} IPUs",
                ", that proportion on every IPU, as earlier releases read it")
    carried = legacy_keys_carried_over(config, source)
    return Migrated(carried.config, migrations + carried.migrations)


def carry_over_legacy_keys(values: Dict[str, Any]) -> None:
    """`legacy_keys_carried_over` in place, with a warning per key: for settings given as arguments."""
    carried = legacy_keys_carried_over(values)
    values.clear()
    values.update(carried.config)
    _warn_each(carried.migrations)


def legacy_keys_carried_over(values: Dict[str, Any], source: Optional[str] = None) -> Migrated:
    """`values` (left unchanged) with each key of an earlier release replaced by the current settings that hold its
    value, or dropped where none does; `source` names the file or repository in the migrations.

    Raises:
        SettingTypeError: a legacy value of the wrong type.
        IncompatibleSettingsError: a legacy value disagrees with the current setting given too.
    """
    where = f" in {source}" if source else ""
    config, migrations = dict(values), []
    for key in [key for key in values if key in LEGACY_KEYS]:
        legacy, value = LEGACY_KEYS[key], config.pop(key)
        carried = _carried(key, value, legacy)
        if not carried:
            migrations.append(Migration(key, f"`{key}`{where} is no longer an IPUConfig setting and is ignored: "
                                             f"{legacy.note}"))
            continue
        for name, carried_value in carried.items():
            given = config.get(name)
            if isinstance(carried_value, dict):  # entries of `popart_options`: merged into those given
                given = given or {}
                clash = {option: given[option] for option in carried_value if option in given}
                if any(given[option] != carried_value[option] for option in clash):
                    _refuse_both(key, value, name, clash)
                carried_value = {**given, **carried_value}
            elif name in config and given != carried_value:
                _refuse_both(key, value, name, given)
            config[name] = carried_value
        assignments = ", ".join(f"`{name}={as_json(carried_value)}`" for name, carried_value in carried.items())
        migrations.append(Migration(key, f"`{key}`{where} is no longer an IPUConfig setting; its value is carried "
                                         f"over as {assignments}: {legacy.note} Write the new key instead."))
    return Migrated(config, migrations)


def _warn_each(migrations: List[Migration]) -> None:
    """One `ConfigMigrationWarning` (a `FutureWarning`) per migration, at the caller's line."""
    for migration in migrations:
        warn(migration.message, ConfigMigrationWarning)


def _is_per_pod_type(value: Any) -> bool:
    return isinstance(value, dict) and bool(value) and set(value) <= {*POD_TYPES, "default"}


def _for_pod_type(key: str, value: Dict[str, Any], pod_type: Optional[str]) -> Any:
    if pod_type in value:
        return value[pod_type]
    if "default" in value:
        return value["default"]
    has = ", ".join(pod for pod in POD_TYPES if pod in value)
    if pod_type is None:
        raise InvalidSettingError(key, value, f"it gives a value per pod type and no \"default\": choose one of {has} "
                                              "with `pod_type=` (`--pod-type` on the command line)")
    raise InvalidSettingError(key, value, f"it has no value for {pod_type} and no \"default\"; the pod types it has "
                                          f"are {has}")


def _pipeline_length(config: Dict[str, Any]) -> int:
    """The IPUs of a replica, as 0.7.1 counts them: `ipus_per_replica`, else one per entry of `layers_per_ipu`."""
    ipus, layers = config.get("ipus_per_replica"), config.get("layers_per_ipu")
    if isinstance(ipus, int):
        return ipus
    return len(layers) if isinstance(layers, list) else 1


def _carried(key: str, value: Any, legacy: LegacyKey) -> Dict[str, Any]:
    if legacy.carry is None:
        return {}
    if value is not None and not type_checker(legacy.kind)(value):
        raise SettingTypeError(key, value, f"{describe(legacy.kind)}, or null")
    return legacy.carry(value)


def _refuse_both(key: str, value: Any, name: str, given: Any) -> None:
    raise IncompatibleSettingsError(
        key, value, f"it is carried over to `{name}`, which is given too, as {as_json(given)}: give `{name}` only"
    )


def migrate_and_warn(raw: Dict[str, Any], source: Optional[str] = None,
                     pod_type: Optional[str] = None) -> Dict[str, Any]:
    """`migrate(raw, source, pod_type)`'s settings, after a warning per migration at the caller's line."""
    migrated = migrate(raw, source, pod_type)
    _warn_each(migrated.migrations)
    return migrated.config
