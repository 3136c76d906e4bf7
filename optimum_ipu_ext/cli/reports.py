"""What `ipu-config show`, `validate` and `diff` report, as data, and its text form."""

import copy
from typing import Any, Dict, List, Optional, Tuple

from ..config.mixin import SettingsMixin
from ..config.plain import PlainIPUConfig
from ..errors import IncompatibleSettingsError, as_json
from ..options.build import shards_optimizer_state
from ..sdk.popdist import PopDistLaunch
from ..settings.migration import migrate_and_warn
from ..settings.mode import Mode
from ..settings.rules import MAX_IPUS_PER_PROCESS, reserved_ipus
from ..settings.table import PHASED_STRATEGIES
from .output import Stream, one_line
from .sources import CommandError, following_inference, load_dict


def reserved_ipus_shown(requested: int, auto_round: Optional[bool]) -> Tuple[int, Optional[str]]:
    """The IPUs poptorch reserves when a build asks for `requested`, and a note when that is not `requested`.

    With `autoRoundNumIPUs(True)` poptorch rounds the number up to a power of two; a build that needs rounding
    without it is refused by the rules (`settings.rules.check_reserved_ipus`) before it is shown.
    """
    rounded = reserved_ipus(requested) if auto_round else requested
    notes = [f"{requested} requested, rounded up to a power of two"] if rounded != requested else []
    if rounded > MAX_IPUS_PER_PROCESS:
        notes.append(f"more than {MAX_IPUS_PER_PROCESS}: poptorch needs several processes, e.g. with poprun")
    return rounded, "; ".join(notes) or None


def differences_from_defaults(config: SettingsMixin) -> List[Dict[str, Any]]:
    """The settings whose value differs from `IPUConfig()`'s, which are optimum-graphcore 0.7.1's defaults."""
    return [
        {"setting": name, "value": value, "default": default}
        for name, (value, default) in config.non_default_settings().items()
    ]


def summary(
    config: SettingsMixin, source: str, for_inference: bool, popdist: Optional[PopDistLaunch] = None
) -> Dict[str, Any]:
    """What `ipu-config show` reports, as JSON-serializable data; with `popdist`, for that poprun instance."""
    plan = config.options_plan(for_inference=for_inference, popdist=popdist)

    name = Mode.of(for_inference).setting

    def value(setting: str) -> Any:
        return getattr(config, name(setting))

    replicas, ipus = value("replication_factor"), value("ipus_per_replica")
    total, total_note = reserved_ipus_shown(replicas * ipus, config.auto_round_num_ipus)
    factor_settings = ["replication_factor", "device_iterations"]
    if not for_inference:
        factor_settings.insert(1, "gradient_accumulation_steps")
    factors = {name(setting): value(setting) for setting in factor_settings}
    sharded = shards_optimizer_state(plan)
    return {
        "source": source,
        "mode": str(Mode.of(for_inference)),
        "pipeline": {
            "ipus_per_replica": ipus,
            "layers_per_ipu": value("layers_per_ipu"),
            "memory_proportion_per_ipu": plan.argument("setAvailableMemoryProportion"),
            "execution_strategy": value("execution_strategy"),
            "auto_stage": config.auto_stage,
            "execution_stages": config.execution_stages,
            "execution_phases": config.execution_phases,
        },
        "replication": {"replication_factor": replicas, "total_ipus": total, "note": total_note},
        "poprun_instance": None if popdist is None else {
            "num_instances": popdist.num_instances,
            "instance_index": popdist.instance_index,
            "local_replicas": popdist.local_replicas,
            "replica_index_offset": popdist.replica_index_offset,
        },
        "batch_size_factor": {"value": config.batch_size_factor(for_inference=for_inference), "factors": factors},
        "precision": {
            "half_partials": config.enable_half_partials,
            "stochastic_rounding": plan.argument("Precision.enableStochasticRounding"),
        },
        "recomputation": {
            "recomputation_mode": config.recomputation_mode,
            "recompute_checkpoint_every_layer": config.recompute_checkpoint_every_layer,
        },
        "optimizer_state": {
            "offchip": config.optimizer_state_offchip,
            "location": config.optimizer_location,
            "replicated_tensor_sharding": sharded,
            "note": "requested, unused with 1 replica" if config.replicated_tensor_sharding and not sharded else None,
        },
        "differs_from_defaults": differences_from_defaults(config),
        "options_plan": plan.to_dict(),
    }


def render_differences(changed: List[Dict[str, Any]], out: Stream) -> None:
    """Writes `differences_from_defaults` data: a title, then one line per setting."""
    width = max([len(item["setting"]) for item in changed] + [0])
    out.write(out.style(f"Differs from optimum-graphcore's defaults ({len(changed)})", "bold"))
    for item in changed:
        default = out.style(f"(default {as_json(item['default'])})", "dim")
        out.write(f"  {item['setting']:<{width}}  {as_json(item['value'])}  {default}")


def _execution(pipeline: Dict[str, Any]) -> str:
    """The build's execution strategy, as `show` writes it."""
    strategy = pipeline["execution_strategy"]
    if strategy is None:
        return "pipelined, stages same_as_ipu (poptorch's default)"
    if strategy in PHASED_STRATEGIES:
        return f"{strategy}, phases: {len(pipeline['execution_phases'])}"
    if pipeline["execution_stages"]:
        return f"{strategy}, explicit stages: {len(pipeline['execution_stages'])}"
    return f"{strategy}, stages {pipeline['auto_stage'] or 'same_as_ipu'}"


def render_summary(data: Dict[str, Any], code: str, out: Stream) -> None:
    """Writes `summary` data as text, then `code`: the options plan as Python."""

    def section(title: str, rows: List[Tuple[str, str, Optional[str]]]) -> None:
        out.write(out.style(title, "bold"))
        for label, text, note in rows:
            out.write(f"  {label:<27} {text}" + ("  " + out.style(f"({note})", "dim") if note else ""))
        out.write()

    def on(flag: bool) -> str:
        return "on" if flag else "off"

    def unless_unset(value: Any, text: str, default_of: str) -> Tuple[str, Optional[str]]:
        """`text`, or "not set" with whose default stays where the setting makes no call (`value` None)."""
        return ("not set", f"{default_of}'s default") if value is None else (text, None)

    pipeline, replication, batch = data["pipeline"], data["replication"], data["batch_size_factor"]
    proportions = pipeline["memory_proportion_per_ipu"]
    precision, recomputation, optimizer = data["precision"], data["recomputation"], data["optimizer_state"]
    out.write(f"{out.style(data['source'], 'bold')} ({data['mode']})")
    out.write()
    section("Pipeline", [
        ("IPUs per replica", str(pipeline["ipus_per_replica"]), None),
        ("layers per IPU", as_json(pipeline["layers_per_ipu"]),
         "-1: the remaining layers, spread evenly" if -1 in pipeline["layers_per_ipu"] else None),
        ("memory proportion per IPU", *unless_unset(proportions, ", ".join(
            f"{ipu}={proportion}" for ipu, proportion in (proportions or {}).items()), "poptorch")),
        ("execution", _execution(pipeline), None),
    ])
    total = replication["total_ipus"]
    instance = data["poprun_instance"]
    section("Replication", [
        ("replicas", str(replication["replication_factor"]), None),
        ("total IPUs", str(total), replication["note"]),
        ("combined batch-size factor", str(batch["value"]),
         " x ".join(f"{name} {count}" for name, count in batch["factors"].items())),
        *([] if instance is None else [
            ("poprun instance", f"{instance['instance_index']} of {instance['num_instances']}", None),
            ("replicas of this instance", str(instance["local_replicas"]),
             f"replicas {instance['replica_index_offset']} to "
             f"{instance['replica_index_offset'] + instance['local_replicas'] - 1} of the job"),
        ]),
    ])
    mode = recomputation["recomputation_mode"]
    rounding = precision["stochastic_rounding"]
    section("Precision and recomputation", [
        ("matmul/conv partials", "float16" if precision["half_partials"] else "float32", None),
        ("stochastic rounding", *unless_unset(rounding, on(rounding), "PopART")),
        ("recomputation", mode or "not set", None if mode else "PopART's default"),
        ("checkpoint every layer", on(recomputation["recompute_checkpoint_every_layer"]), None),
    ])
    if optimizer["location"] is not None:
        placement = ("placement", as_json(optimizer["location"]), "TensorLocationSettings calls")
    else:
        where = "off chip" if optimizer["offchip"] else "on chip"
        placement = ("placement", *unless_unset(optimizer["offchip"], where, "poptorch"))
    section("Optimizer state", [
        placement,
        ("sharding across replicas", on(optimizer["replicated_tensor_sharding"]), optimizer["note"]),
    ])
    render_differences(data["differs_from_defaults"], out)
    out.write()
    out.write(out.style("Options: the calls to_options() makes", "bold"))
    out.write(code)


def problems(source: str, revision: Optional[str] = None, updates: Optional[Dict[str, Any]] = None,
             pod_type: Optional[str] = None) -> List[str]:
    """The problems the class finds in a configuration, with the settings `updates` (`--set`) replacing its own, one
    line each (`SOURCE: message`). A file of an earlier release is read in 0.7.1's terms first (`pod_type` choosing
    its per-pod-type values), with a warning per key that changed.

    The first is reported as the class raises it. When it is about one setting, that setting is put back to
    its default and the rest checked again, so every setting that is invalid on its own is reported; a
    disagreement between settings is reported only first, as later ones could come from the defaults put back.
    """
    try:
        config_dict = migrate_and_warn(load_dict(source, revision), pod_type=pod_type)
    except CommandError as error:
        return [str(error)]
    except (OSError, ValueError) as error:
        return [f"{source}: {one_line(error)}"]
    if updates:
        try:
            current = vars(PlainIPUConfig.from_dict(config_dict))
        except (ValueError, TypeError):
            current = None  # reported below; an invalid source has no pipeline to follow
        config_dict.update(updates)
        if current is not None:
            config_dict.update(following_inference(current, updates, source))
    found: List[str] = []
    while True:
        try:
            config = PlainIPUConfig.from_dict(config_dict)
            for for_inference in (False, True):
                config.options_plan(for_inference=for_inference)
            return found
        except (ValueError, TypeError, NotImplementedError) as error:
            field = getattr(error, "field", None)
            between_settings = isinstance(error, IncompatibleSettingsError)
            if not (found and between_settings):
                found.append(f"{source}: {one_line(error)}")
            if between_settings or field not in config_dict:
                return found
            config_dict = {key: value for key, value in config_dict.items() if key != field}


def plans(config: SettingsMixin) -> Tuple[Any, Any]:
    """The options plans of `config` for training and for inference."""
    return config.options_plan(for_inference=False), config.options_plan(for_inference=True)


def _option_key(call) -> Any:
    """Calls with the same key set the same option state; a later one overrides an earlier one."""
    return (call.method, call.args[0]) if call.method == "_Popart.set" else call.method


def plan_changes(plan_a, plan_b) -> List[Tuple[Optional[Any], Optional[Any]]]:
    """The (call of A, call of B) pairs that leave different option state; `None` where a plan makes no such call.

    Calls compare by value; any temporary file equals any other.
    """
    calls_a = {_option_key(call): call for call in plan_a.calls}
    calls_b = {_option_key(call): call for call in plan_b.calls}
    keys = dict.fromkeys(list(calls_a) + list(calls_b))
    return [(calls_a.get(key), calls_b.get(key)) for key in keys if calls_a.get(key) != calls_b.get(key)]


def _changes_options(config: SettingsMixin, name: str, value: Any) -> Optional[bool]:
    """Whether setting `name` to `value` alone changes the options of `config`; `None` if it cannot be set alone."""
    variant = copy.deepcopy(config)
    try:
        setattr(variant, name, copy.deepcopy(value))
        return plans(variant) != plans(config)
    except (ValueError, TypeError):
        return None


def setting_changes(config_a: SettingsMixin, config_b: SettingsMixin) -> List[Dict[str, Any]]:
    """The settings that differ, each with `effect`: `False` when it changes the options of neither config alone."""
    changes = []
    for name in type(config_a).SETTINGS:
        before, after = getattr(config_a, name), getattr(config_b, name)
        if before != after:
            effects = {_changes_options(config_a, name, after), _changes_options(config_b, name, before)}
            changes.append({"setting": name, "a": before, "b": after, "effect": effects != {False}})
    return changes


def render_diff(name_a: str, name_b: str, config_a: SettingsMixin, config_b: SettingsMixin, out: Stream) -> bool:
    """Writes the settings that differ between two configurations, then the option calls that differ; returns
    whether any setting differs."""
    out.write(out.style(f"--- {name_a}", "red"))
    out.write(out.style(f"+++ {name_b}", "green"))
    changes = setting_changes(config_a, config_b)
    if not changes:
        out.write("No setting differs.")
        return False
    width = max(len(change["setting"]) for change in changes)
    out.write(out.style(f"Settings ({len(changes)} differ)", "bold"))
    for change in changes:
        note = "" if change["effect"] else "  " + out.style("(no effect on the options)", "dim")
        out.write(f"  {change['setting']:<{width}}  {as_json(change['a'])} -> {as_json(change['b'])}{note}")
    for mode, plan_a, plan_b in zip(("training", "inference"), plans(config_a), plans(config_b)):
        calls = plan_changes(plan_a, plan_b)
        out.write()
        out.write(out.style(f"Options, {mode}", "bold") + ("" if calls else ": the same"))
        for call_a, call_b in calls:
            if call_a is not None:
                out.write(out.style(f"- {call_a.render()}", "red"))
            if call_b is not None:
                out.write(out.style(f"+ {call_b.render()}", "green"))
    return True
