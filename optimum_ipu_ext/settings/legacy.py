"""Keys that earlier optimum-graphcore releases wrote to `ipu_config.json` and 0.7.1 no longer accepts.

A config carrying one still loads. Where a current setting holds what the key meant, its value is carried over to
that setting, with a warning; otherwise the key is dropped, with a warning saying what replaced it. A value that
is what the current build does anyway (`decompose_grad_sum: false`, PopART's default) carries nothing over.
"""

from typing import Any, Callable, Dict, NamedTuple, Optional

from ..errors import IncompatibleSettingsError, LegacyKeyWarning, SettingTypeError, as_json, warn
from .schema import describe, type_checker


Carried = Dict[str, Any]


class LegacyKey(NamedTuple):
    """A key of an earlier release.

    Args:
        note: what became of it, as a sentence.
        kind: the type its value had (`bool`, `int`), checked before it is carried over; `None` for a key that is
            only dropped.
        carry: the current settings that hold its value: `{setting: value}`, a `popart_options` entry being
            `{"popart_options": {option: value}}`; `{}` where the value is what the current build does anyway.
    """

    note: str
    kind: Any = None
    carry: Optional[Callable[[Any], Carried]] = None


def _when_on(carried: Carried) -> Callable[[Any], Carried]:
    """The carry of a flag that meant `carried` when on and the current build's default when off."""
    return lambda on: carried if on else {}


LEGACY_KEYS = {
    "random_seed": LegacyKey(
        "renamed `seed` in optimum-graphcore 0.2.1.", int, lambda seed: {"seed": seed} if seed else {}),
    "compile_only": LegacyKey("since optimum-graphcore 0.2.1 it is the `compile_only` argument of `to_options()`."),
    "synthetic_data": LegacyKey(
        "removed in optimum-graphcore 0.2.2; `popart_options` holds PopART's synthetic data mode "
        '(`{"syntheticDataMode": 2}`: random normal data, what `enableSyntheticData(True)` sets).',
        bool, _when_on({"popart_options": {"syntheticDataMode": 2}})),
    "use_popdist": LegacyKey("removed in optimum-graphcore 0.4.0; a launch under poprun is detected by PopDist itself."),
    "profile_dir": LegacyKey(
        "removed in optimum-graphcore 0.4.0; set `autoReport.directory` in the POPLAR_ENGINE_OPTIONS environment "
        "variable instead."),
    "decompose_grad_sum": LegacyKey(
        "removed in optimum-graphcore 0.4.0, leaving PopART's default (false); "
        '`popart_options={"decomposeGradSum": true}` sets it.',
        bool, _when_on({"popart_options": {"decomposeGradSum": True}})),
    "enable_half_first_order_momentum": LegacyKey(
        "deprecated in optimum-graphcore 0.4.0; the trainer accumulates momentum in float16 unless the `--fp32` "
        "training argument is given."),
    "sharded_execution_for_inference": LegacyKey(
        "deprecated in optimum-graphcore 0.4.0, which always runs inference sharded; "
        "`inference_execution_strategy` (default: sharded) chooses it.",
        bool, _when_on({"inference_execution_strategy": "sharded"})),
    "_mode": LegacyKey("written by optimum-graphcore 0.6.1; `train()` and `eval()` choose the mode."),
}


def carry_over_legacy_keys(values: Dict[str, Any], source: Optional[str] = None) -> None:
    """Replaces, in `values`, each key of an earlier release by the current settings that hold its value, or drops
    it where none does, with a `LegacyKeyWarning` (a `FutureWarning`) naming `source` (the file or repository) and the new key. A legacy
    key whose value disagrees with a current setting given too is an error."""
    where = f" in {source}" if source else ""
    for key in [key for key in values if key in LEGACY_KEYS]:
        legacy, value = LEGACY_KEYS[key], values.pop(key)
        carried = _carried(key, value, legacy)
        if not carried:
            warn(f"`{key}`{where} is no longer an IPUConfig setting and is ignored: {legacy.note}", LegacyKeyWarning)
            continue
        for name, carried_value in carried.items():
            given = values.get(name)
            if isinstance(carried_value, dict):  # entries of `popart_options`: merged into those given
                given = given or {}
                clash = {option: given[option] for option in carried_value if option in given}
                if any(given[option] != carried_value[option] for option in clash):
                    _refuse_both(key, value, name, clash)
                carried_value = {**given, **carried_value}
            elif name in values and given != carried_value:
                _refuse_both(key, value, name, given)
            values[name] = carried_value
        assignments = ", ".join(f"`{name}={as_json(carried_value)}`" for name, carried_value in carried.items())
        warn(f"`{key}`{where} is no longer an IPUConfig setting; its value is carried over as {assignments}: "
             f"{legacy.note} Write the new key instead.", LegacyKeyWarning)


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
