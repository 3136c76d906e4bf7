"""Keys that earlier optimum-graphcore releases wrote to `ipu_config.json` and 0.7.1 no longer accepts.

A config carrying one still loads. Where a current setting holds what the key meant, its value is carried over to
that setting, with a warning; otherwise the key is dropped, with a warning saying what replaced it. A value that
is what the current build does anyway (`decompose_grad_sum: false`, PopART's default) carries nothing over.
"""

from typing import Any, Callable, Dict, NamedTuple, Optional

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
    "use_popdist": LegacyKey(
        "removed in optimum-graphcore 0.4.0; a launch under poprun is detected by PopDist itself."
    ),
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
    "async_dataloader": LegacyKey(
        "never read by IPUConfig: it came in the example configs of optimum-graphcore 0.1.0 and 0.2.0, which the "
        'trainer saved back; the `dataloader_mode="async"` training argument chooses an asynchronous data loader.'),
    "_mode": LegacyKey("written by optimum-graphcore 0.6.1; `train()` and `eval()` choose the mode."),
}

