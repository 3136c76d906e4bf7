"""From `poptorch.Options` to the settings of a config that rebuilds them: `IPUConfig.from_options`.

Each setting is read back by its own row (`Setting.read`) or, for the composite calls, by the reader beside the
call in `build.py`. PopART session options no setting writes become `popart_options`. The config is then rebuilt
and its options compared with the given ones: every option that differs is named in one
`UnsupportedOptionsError`, so a config that is returned rebuilds what it was given. Needs the Poplar SDK (or
what stands in for it): it reads the options the SDK made.
"""

import functools
from typing import Any, Dict, List, Optional, Tuple

from ..errors import IncompatibleSettingsError, UnsupportedOptionsError, warn
from ..sdk.plan import TempFile, sdk_value
from ..settings.mode import INFERENCE, TRAINING, Mode
from ..settings.table import POPTORCH_OPTION_KEYS, SETTINGS, UNSUPPORTED_CALLS, setting_writing
from .build import SIMPLE_ROWS, read_execution_strategy, read_memory_proportions, read_optimizer_location

READ_ORDER = (INFERENCE, TRAINING)  # training last: a setting both builds make is read from the training options
_MISSING = "not set"


def import_options(
    config_class: type, training: Any, inference: Any, overrides: Dict[str, Any]
) -> Any:
    """The config of `config_class` (a class of `SettingsMixin`) whose `to_options()` /
    `to_options(for_inference=True)` build the options `training` / `inference` hold; `overrides` give settings the
    options cannot tell (`layers_per_ipu`) or replace what they tell. See `SettingsMixin.from_options`."""
    given = {mode: options for mode, options in zip(READ_ORDER, (inference, training)) if options is not None}
    if not given:
        raise TypeError("from_options() needs `training` or `inference` options (poptorch.Options), or both")
    states = {mode: resolved_state(options, mode) for mode, options in given.items()}
    problems: Dict[str, str] = {}
    values, dropped = _read_settings(given, states, overrides, problems)
    values.setdefault("popart_options", {})
    config = _config(config_class, values, overrides, problems)
    if "popart_options" not in overrides:
        values["popart_options"] = _other_popart_options(config, states, problems)
        config = _config(config_class, values, overrides, problems)
    for mode in given:
        for option, problem in _rebuild_differences(config, given, states, mode).items():
            problems.setdefault(option, problem)  # a reader's reason says more than the difference it leaves
    if problems:
        raise UnsupportedOptionsError(problems)
    if dropped:
        warn("from_options() could not read, and dropped: " + "; ".join(dropped))
    return config


def _read_settings(
    given: Dict[Mode, Any], states: Dict[Mode, Dict[str, Any]], overrides: Dict[str, Any], problems: Dict[str, str]
) -> Tuple[Dict[str, Any], List[str]]:
    """The settings the options hold, `overrides` applied, and what was dropped; what cannot be read goes to
    `problems`."""
    values: Dict[str, Any] = {}
    dropped: List[str] = []
    for mode, options in given.items():
        ipus = overrides.get(mode.setting("ipus_per_replica"))
        values.update(_read_rows({**states[mode], **python_state(options)}, mode, problems))
        for read in (  # each bound to this mode's options now, and called under one `try`
            functools.partial(read_execution_strategy, options, mode),
            functools.partial(read_memory_proportions, states[mode], mode, ipus),
        ):
            try:
                values.update(read())
            except UnsupportedOptionsError as error:
                problems.update(_in_mode({option_name(key): why for key, why in error.options.items()}, mode, given))
        dropped += _beyond_the_pipeline(states[mode], ipus, mode)
    values.update(read_optimizer_location(list(states.values())))
    values.update(overrides)
    return values, dropped


def _rebuild_differences(config: Any, given: Dict[Mode, Any], states: Dict[Mode, Dict[str, Any]], mode: Mode):
    """How the options `config` builds for `mode` differ from the given ones (but for dropped memory proportions)."""
    rebuilt = config.options_plan(for_inference=mode.is_inference, popdist=False).build()
    expected = dict(states[mode])
    ipus = getattr(config, mode.setting("ipus_per_replica"))
    proportions = expected.get("available_memory_proportion") or {}
    expected["available_memory_proportion"] = {ipu: p for ipu, p in proportions.items() if ipu < ipus}
    differences = _differences(
        {**expected, **python_state(given[mode])}, {**resolved_state(rebuilt, mode), **python_state(rebuilt)}
    )
    return _in_mode(differences, mode, given)


def resolved_state(options: Any, mode: Mode) -> Dict[str, Any]:
    """`options.toDict()` as `trainingModel` / `inferenceModel` see it: on a clone whose default output mode is
    resolved (`Final` in training, `All` in inference)."""
    options = options.clone()
    if options.defaultOutputMode():
        options.outputMode(sdk_value("poptorch.OutputMode." + ("All" if mode.is_inference else "Final")))
    return options.toDict()


def full_state(options: Any, mode: Mode) -> Dict[str, Any]:
    """Everything `trainingModel` / `inferenceModel` take of `options`, by state key: `resolved_state` and
    `python_state`, values that are not plain data by their type (the progress bar callback)."""
    state = {**resolved_state(options, mode), **python_state(options)}
    return {key: _comparable(value) for key, value in state.items()}


def python_state(options: Any) -> Dict[str, Any]:
    """What `trainingModel` / `inferenceModel` use of the options besides `toDict()`, where poptorch 3.4 keeps it,
    by the method that sets it."""
    strategy = options._execution_strategy
    return {
        "setExecutionStrategy": (
            type(strategy).__name__,
            getattr(strategy._stages_manager, "_auto_stage", None),
            {block: (stage._stage_id, stage._phase_id, stage._ipu) for block, stage in strategy._block_map.items()},
        ),
        "relaxOptimizerAttributesChecks": options._relax_optimizer_checks,
        "disableModuleNamescope": not options._module_namescope_enabled,
        "sourceLocationExcludes": options._source_location_excludes,
    }


def _read_rows(state: Dict[str, Any], mode: Mode, problems: Dict[str, str]) -> Dict[str, Any]:
    values = {}
    for name, setting in SIMPLE_ROWS[mode]:
        try:
            values[name] = setting.check(setting.read(state))
        except (ValueError, TypeError) as error:
            written = setting.sdk.state[0]
            problems[option_name(written)] = f"{state.get(written, _MISSING)!r}: {error}"
    return values


def _other_popart_options(
    config: Any, states: Dict[Mode, Dict[str, Any]], problems: Dict[str, str]
) -> Dict[str, Any]:
    """The PopART session options of the given options that the config built without them does not set alike (an
    option a setting writes only where that setting makes no call)."""
    found: Dict[str, Any] = {}
    for mode, state in states.items():
        rebuilt = config.options_plan(for_inference=mode.is_inference, popdist=False).build().toDict()
        for key, value in state.items():
            if (
                key in POPTORCH_OPTION_KEYS
                or setting_writing(key, vars(config))
                or rebuilt.get(key, _MISSING) == value
            ):
                continue
            problem = SETTINGS["popart_options"].constraint({key: value})
            if problem:
                problems[name_in_mode(key, mode, states)] = f"{value!r}: {problem}"
            else:
                found[key] = value
    return found


def _config(config_class: Any, values: Dict[str, Any], overrides: Dict[str, Any], problems: Dict[str, str]) -> Any:
    """The config of `values`; settings read from the options that disagree with each other are options no config
    rebuilds (an unknown or invalid override is the caller's error, raised as it is)."""
    try:
        return config_class(**values)
    except IncompatibleSettingsError as error:
        if error.field in overrides:
            raise
        problems[f"setting `{error.field}`"] = str(error)
        raise UnsupportedOptionsError(problems) from error


def _beyond_the_pipeline(state: Dict[str, Any], ipus: Optional[int], mode: Mode):
    proportions = state.get("available_memory_proportion") or {}
    beyond = sorted(ipu for ipu in proportions if ipus is not None and ipu >= ipus)
    if beyond:
        names = ", ".join(f"IPU{ipu}" for ipu in beyond)
        yield f"the {mode} memory proportions of {names}, beyond the {ipus} IPUs per replica given"


def _differences(given: Dict[str, Any], rebuilt: Dict[str, Any]) -> Dict[str, str]:
    """What differs, by the method that writes it: `{"logDir (log_dir)": why}`."""
    problems = {}
    for key in sorted(set(given) | set(rebuilt)):
        before, after = given.get(key, _MISSING), rebuilt.get(key, _MISSING)
        temporary = all(isinstance(name, str) and TempFile.drew(name) for name in (before, after))
        if key == "saveInitializersToFile" and temporary:
            continue  # a fresh temporary file each build
        if _comparable(before) != _comparable(after):
            why = UNSUPPORTED_CALLS.get(key, (None, None))[1]
            problems[option_name(key)] = f"{before!r} given: {why}" if why else f"{before!r} given, {after!r} rebuilt"
    return problems


# The method that writes each state key, where it is not the key itself or `_Popart.set`
_METHODS = {
    **{key: setting.sdk.method for setting in SETTINGS.values() if setting.sdk and setting.sdk.method != "_Popart.set"
       for key in setting.sdk.state},
    **{key: method for key, (method, _) in UNSUPPORTED_CALLS.items()},
}


def option_name(key: str) -> str:
    """A state key as refusals name it: `logDir (log_dir)`, by the method that writes it (a PopART option as
    itself)."""
    method = _METHODS.get(key, key)
    return key if method == key else f"{method} ({key})"


def _comparable(value: Any) -> Any:
    """Plain data as it is; any other object (the progress bar callback) by its type."""
    if isinstance(value, (bool, int, float, str, list, tuple, dict, set)) or value is None:
        return value
    return type(value)


def _in_mode(problems: Dict[str, str], mode: Mode, given: Dict[Mode, Any]) -> Dict[str, str]:
    return {name_in_mode(option, mode, given): problem for option, problem in problems.items()}


def name_in_mode(option: str, mode: Mode, given: Dict[Mode, Any]) -> str:
    """How a refusal names `option` of the `mode` build when the builds `given` are imported: with its build, where
    both are given."""
    return option if len(given) == 1 else f"{option} ({mode})"
