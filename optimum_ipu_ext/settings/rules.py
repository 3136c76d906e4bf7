"""The rules between settings: which keys a config takes, how optimum-graphcore's settings derive from each other,
what both builds must agree on, and the IPUs poptorch reserves for them."""

from typing import Any, Dict, Mapping, Optional

from ..errors import IncompatibleSettingsError, UnknownSettingError, as_json
from ..sdk.popdist import PopDistLaunch
from .migration import carry_over_legacy_keys
from .mode import MODES, Mode
from .schema import parse_update_string
from .table import (
    BASE_SETTINGS,
    MAX_IPUS_IN_A_JOB,
    PHASED_STRATEGIES,
    POPART_KEYS_WITH_A_SETTING,
    POPTORCH_KEYS_WITH_A_SETTING,
    POPTORCH_OPTION_KEYS,
    SETTINGS,
    STRATEGY_SETTINGS,
    TENSORS_LIVENESS_CALLS,
    TRANSFORMERS_KEYS,
    setting_writing,
)


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
        default = BASE_SETTINGS["matmul_proportion"].default
        values["inference_matmul_proportion"] = default if per_ipu_mismatch else proportion
    values["parallelize_kwargs"] = values["parallelize_kwargs"] or {}
    values["inference_parallelize_kwargs"] = values["inference_parallelize_kwargs"] or {}
    return values


def check_base_rules(settings: Dict[str, Any]) -> None:
    """Checks that optimum-graphcore's settings agree with each other in both modes, as its own class does,
    and that the job fits the largest IPU system. Like upstream, defaults a serialization factor to 1 when
    neither it nor its splits are given.

    `settings` is a config's `vars()`, where either base stores its settings (read there, no attribute hooks run).
    """
    for mode in MODES:
        _check_pipeline_lengths(settings, mode)
        replicas_name, ipus_name = mode.setting("replication_factor"), mode.setting("ipus_per_replica")
        replicas, ipus = settings[replicas_name], settings[ipus_name]
        if replicas * ipus > MAX_IPUS_IN_A_JOB:
            raise IncompatibleSettingsError(
                replicas_name, replicas,
                f"with `{ipus_name}={ipus}` the job needs {replicas * ipus} IPUs, more than the {MAX_IPUS_IN_A_JOB} "
                "of the largest IPU system",
            )


def _check_pipeline_lengths(settings: Dict[str, Any], mode: Mode) -> None:
    ipus_name = mode.setting("ipus_per_replica")
    ipus = settings[ipus_name]

    def require_pipeline_length(name: str) -> None:
        value = settings[name]
        if len(value) != ipus:
            raise IncompatibleSettingsError(name, value, f"it needs one entry per IPU, as `{ipus_name}={ipus}`")

    if isinstance(settings[mode.setting("matmul_proportion")], list):
        require_pipeline_length(mode.setting("matmul_proportion"))
    layers = settings[mode.setting("layers_per_ipu")]
    if -1 not in layers or (ipus > 1 and layers != [-1]):  # parallelize() refuses other wildcard lists of this length
        require_pipeline_length(mode.setting("layers_per_ipu"))
    for layer in ("embedding", "projection"):
        factor_name = mode.setting(f"{layer}_serialization_factor")
        splits_name = mode.setting(f"serialized_{layer}_splits_per_ipu")
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
            "input_replica_grouping",
            grouping,
            f"its size must divide `replication_factor={settings['replication_factor']}`",
        )
    popart_options = settings["popart_options"] or {}
    for key in popart_options:
        if key in POPART_KEYS_WITH_A_SETTING:
            owner = setting_writing(key, settings)
            if owner is None:
                continue  # its setting makes no call: the option is free
            problem = f"set `{owner}` instead (or make it null and set the option here)"
        elif key in POPTORCH_KEYS_WITH_A_SETTING:
            setting = POPTORCH_KEYS_WITH_A_SETTING[key]
            problem = f"`{key}` is poptorch's own option, not PopART's: set `{setting}` instead"
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
        both_call = all(SETTINGS[field].argument(settings[field]) is not None for field in (name, replaced))
        if both_call:
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
    for mode in MODES:
        check_reserved_ipus(settings, mode, launch)


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


# poptorch takes at most 64 IPUs in one process (`assertSingleInstanceMaxNumIPUs`, popart_compiler/source/
# CompilerImpl.cpp): a job beyond that runs as several processes, under poprun.
MAX_IPUS_PER_PROCESS = 64


def reserved_ipus(requested: int) -> int:
    """The IPUs poptorch reserves for a process whose build uses `requested`: the next power of two
    (`roundUpNumIPUs`, popart_compiler/source/Utils.cpp)."""
    rounded = 1
    while rounded < requested:
        rounded *= 2
    return rounded


def check_reserved_ipus(settings: Dict[str, Any], mode: Mode, popdist: Optional[PopDistLaunch]) -> None:
    """Refuses a build that poptorch 3.4 refuses to run on IPUs: one whose process asks for a number of IPUs that
    is not a power of two while `auto_round_num_ipus` is not true (null makes no call: poptorch's default, false).

    A process asks for its replicas x the IPUs of one replica: all the replicas on one host, this instance's share
    under poprun (`popdist`). poptorch makes the check only when it attaches to IPUs: not for an offline target
    (`connection_type: "never"`; `to_options(compile_only=True)` does not call this). On one host, a job of more
    than 64 IPUs can only run under poprun, where each instance's build is checked.
    """
    auto_round = settings["auto_round_num_ipus"]
    if auto_round or settings["connection_type"] == "never":
        return
    ipus_name = mode.setting("ipus_per_replica")
    ipus = settings[ipus_name]
    if popdist is None:
        replicas_name = mode.setting("replication_factor")
        replicas = settings[replicas_name]
        asked = f"`{replicas_name}={replicas}` x `{ipus_name}={ipus}`"
        if replicas * ipus > MAX_IPUS_PER_PROCESS:
            return
    else:
        replicas = popdist.local_replicas
        asked = f"this poprun instance's {replicas} replicas (of {popdist.num_replicas}) x `{ipus_name}={ipus}`"
    requested = replicas * ipus
    rounded = reserved_ipus(requested)
    if rounded != requested:
        default = " (null makes no call: poptorch's default, false)" if auto_round is None else ""
        raise IncompatibleSettingsError(
            "auto_round_num_ipus", auto_round,
            f"the {mode} build asks for {asked} = {requested} IPUs in one "
            f"process, and poptorch reserves only a power of two unless `auto_round_num_ipus` is true{default}: make "
            f"it true (it reserves {rounded}, {rounded - requested} idle), or use a number of IPUs that is a power "
            "of two",
        )


STRATEGY_FIELDS = tuple(mode.setting("execution_strategy") for mode in MODES)


def check_execution_strategies(settings: Dict[str, Any]) -> None:
    """The rules between the strategy settings: a strategy's own settings are given only when a build uses that
    strategy, a phased build has its phases, and its tensors' liveness is one the strategy can set."""
    strategies = {field: settings[field] for field in STRATEGY_FIELDS}
    read = {name for strategy in strategies.values() if strategy for name in STRATEGY_SETTINGS[strategy]}
    for name in sorted({name for names in STRATEGY_SETTINGS.values() for name in names} - read):
        if settings[name] is not None:
            readers = [strategy for strategy, names in STRATEGY_SETTINGS.items() if name in names]
            chosen = ", ".join(f"`{field}={as_json(strategy)}`" for field, strategy in strategies.items())
            raise IncompatibleSettingsError(
                name,
                settings[name],
                f"only the {' and '.join(readers)} strategies read it, and no build uses them ({chosen})",
            )
    liveness = settings["tensors_liveness"]
    for field, strategy in strategies.items():
        if strategy in PHASED_STRATEGIES and settings["execution_phases"] is None:
            raise IncompatibleSettingsError(field, strategy, "a phased strategy needs `execution_phases`")
        if liveness is not None and strategy in TENSORS_LIVENESS_CALLS:
            method, arguments = TENSORS_LIVENESS_CALLS[strategy]
            if liveness not in arguments:
                allowed = ", ".join(map(as_json, arguments))
                raise IncompatibleSettingsError(
                    "tensors_liveness",
                    liveness,
                    f"`{field}={as_json(strategy)}` sets it with `{method}`, which takes {allowed}",
                )
