"""`plan()`: the fastest config that fits a model on a number of IPUs, as configs of the user's class
(placement/planning.py searches; here the request is checked and each candidate's config built)."""

import copy
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Dict, Optional, Union

from ..errors import InvalidSettingError, is_positive_whole
from ..settings.mode import Mode

if TYPE_CHECKING:
    from ..placement.generation_planning import GenerationPlan
    from ..placement.planning import Candidate, Plan

# the IPUs of each Pod a `pod` names
PODS = {"pod4": 4, "pod16": 16, "pod64": 64, "pod128": 128, "pod256": 256, "pod512": 512, "pod1024": 1024}


def plan(
    model: Any,
    ipus: Optional[int] = None,
    *,
    pod: Optional[str] = None,
    global_batch_size: Optional[int] = None,
    micro_batch_size: Optional[int] = None,
    sequence_length: Optional[int] = None,
    decoder_sequence_length: Optional[int] = None,
    architecture: Optional[str] = None,
    ipu: str = "gc200",
    reserve: Optional[float] = None,
    base: Any = None,
    inference: bool = False,
    fp32: bool = False,
    revision: Optional[str] = None,
    token: Optional[str] = None,
    calibration: Any = None,
    trials: int = 0,
    generate: Any = False,
    max_latency: Optional[float] = None,
) -> Union["Plan", "GenerationPlan"]:
    """The fastest builds of `model` on `ipus` IPUs (or a `pod`'s) that fit, each placed and timed as
    `IPUConfig.placement()` places and times it, best first, with its config.

    Args:
        model: a Hub model id, a local folder, a transformers `PretrainedConfig` or the dict of a `config.json`.
        ipus, pod: the IPUs in all, a power of two, or a Pod's (`"pod16"`, ...).
        global_batch_size: the samples of a training step, micro-batch x gradient accumulation x replicas.
        micro_batch_size: search this micro-batch alone (default: the powers of two the batch allows).
        sequence_length, decoder_sequence_length: as `placement()` takes them.
        architecture: the class to plan for (default: the one `config.json` names).
        ipu: `"gc200"` or `"bow"`; reserve: the share of each IPU's memory kept for what is not counted.
        base: a config whose other settings the candidates keep (default: `IPUConfig()`); where its IPUs and
            batch are the plan's, it is placed and timed too, as the plan's `reference`.
        inference: plan the inference build: replicas and device iterations for throughput.
        fp32: weights in fp32, as `IPUTrainer` with `fp32=True`.
        revision, token: for a Hub model.
        calibration: the time model's constants, as `placement()` takes them (a file `ipu-config calibrate`
            wrote; default the file `OPTIMUM_IPU_EXT_CALIBRATION` names, else the shipped constants), read once.
        trials: the builds worth measuring to calibrate the model, as the plan's `trials`: the best, and up to
            `trials - 1` builds whose order against it the model is least sure of
            (`placement.planning.choose_trials()`), each with its config; training plans only.
        generate: plan the generation build instead (a `GenerationPlan`), as `placement(generate=...)` takes it:
            True, or what generate() is called with (`batch_size`, else searched; `num_beams`, `max_length`); it
            searches the IPUs of a replica, the encoder's and the decoder's IPUs and their splits, the replicas, the
            batch and `on_device_generation_steps`, each build's config keeping `base`'s other settings.
        max_latency: with `generate`, the most seconds a token may take: the builds that meet it first, the most
            tokens a second first (default: the most tokens a second).

    Raises:
        InvalidSettingError: for a request outside what it allows (naming the argument).
        CalibrationFileError: for a calibration file that cannot be read.
        PlacementError: where no build runs, or the model cannot be placed.
    """
    from ..placement.estimate.calibration_file import calibration_of
    from ..placement.hardware import RESERVE
    from ..placement.models import architecture_of
    from ..placement.placer import cached_shapes, check_reserve, ipu_type_of
    from ..placement.planning import Model, Plan, Request, choose_trials, pareto, search, settings_of, with_config
    from ..placement.source.model import read_model

    if base is None:
        from .configuration import IPUConfig

        base = IPUConfig()
    reserve = RESERVE if reserve is None else reserve
    check_reserve(reserve)
    trials = _whole_from_0("trials", trials)
    if trials and inference:
        raise InvalidSettingError("trials", trials, "an inference plan has no trials: calibrate fits training runs")
    if generate is not False or max_latency is not None:
        if trials:
            raise InvalidSettingError("trials", trials, "a generation plan has no trials: calibrate fits training "
                                      "runs")
        return _generation_plan(model, _ipus(ipus, pod), generate, max_latency, global_batch_size, micro_batch_size,
                                decoder_sequence_length, sequence_length, architecture, ipu, reserve, base, fp32,
                                revision, token, calibration_of(calibration))
    request = Request(_ipus(ipus, pod), _global_batch(global_batch_size, inference),
                      _positive("micro_batch_size", micro_batch_size), sequence_length, decoder_sequence_length,
                      ipu_type_of(ipu), reserve, inference, fp32, calibration_of(calibration))
    source = read_model(model, revision, token)
    row = architecture_of(source.name, source.config, architecture)
    searched = Model(source.name, row, source.config, cached_shapes(source))
    mode = Mode.of(inference)
    candidates = [with_config(candidate, configured(base, settings_of(candidate.build, mode)))
                  for candidate in search(searched, vars(base), request)]
    reference = _reference(searched, base, request)
    chosen = tuple(replace(trial, candidate=with_config(trial.candidate, configured(
                       base, settings_of(trial.candidate.build, mode))))
                   for trial in choose_trials(searched, vars(base), request, candidates, trials))
    return Plan(source.name, row.name, request, tuple(candidates), tuple(pareto(candidates)), reference, chosen)


def _generation_plan(model: Any, ipus: int, generate: Any, max_latency: Optional[float],
                     global_batch_size: Optional[int], micro_batch_size: Optional[int],
                     decoder_sequence_length: Optional[int], sequence_length: Optional[int],
                     architecture: Optional[str], ipu: str, reserve: float, base: Any, fp32: bool,
                     revision: Optional[str], token: Optional[str], calibration: Any) -> "GenerationPlan":
    """`plan(generate=...)`: the request checked, the builds searched, each timed with `calibration`, each with its
    config."""
    from ..placement.generation_planning import (
        GenerationPlan,
        GenerationRequest,
        frontier,
        generation_search,
        with_config,
    )
    from ..placement.models import architecture_of
    from ..placement.placer import cached_shapes, generate_arguments, ipu_type_of
    from ..placement.planning import Model
    from ..placement.source.model import read_model

    asked = generate_arguments(True if generate is False else generate)
    for name, value, meaning in (("global_batch_size", global_batch_size, "a training step's samples"),
                                 ("micro_batch_size", micro_batch_size, "a micro-batch; give generate's batch_size"),
                                 ("decoder_sequence_length", decoder_sequence_length,
                                  "a micro-batch's; give generate's max_length")):
        if value is not None:
            raise InvalidSettingError(name, value, f"a generation plan takes none: it is {meaning}")
    if max_latency is not None and (isinstance(max_latency, bool) or not isinstance(max_latency, (int, float))
                                    or not max_latency > 0):
        raise InvalidSettingError("max_latency", max_latency, "allowed values are seconds a token, above 0")
    request = GenerationRequest(ipus, asked.get("batch_size"), asked.get("num_beams"), asked.get("max_length"),
                                sequence_length, max_latency, ipu_type_of(ipu), reserve, fp32, calibration)
    source = read_model(model, revision, token)
    row = architecture_of(source.name, source.config, architecture)
    searched = Model(source.name, row, source.config, cached_shapes(source))
    candidates = [with_config(candidate, configured(base, candidate.settings))
                  for candidate in generation_search(searched, vars(base), request)]
    return GenerationPlan(source.name, row.name, request, tuple(candidates), tuple(frontier(candidates)))


def configured(base: Any, settings: Dict[str, Any]) -> Any:
    """A copy of `base` with `settings`, each checked as the class checks a setting, then the whole as the class
    checks a config."""
    config = copy.copy(base)
    for name, value in settings.items():
        setattr(config, name, value)
    config._validate_ipu_config()
    return config


def _ipus(ipus: Optional[int], pod: Optional[str]) -> int:
    if (ipus is None) == (pod is None):
        raise InvalidSettingError("ipus", ipus, "give the IPUs (a power of two) or a pod, one of them")
    if pod is not None:
        if pod not in PODS:
            raise InvalidSettingError("pod", pod, "allowed values are " + ", ".join(f'"{name}"' for name in PODS))
        return PODS[pod]
    if _positive("ipus", ipus) & (ipus - 1):
        raise InvalidSettingError("ipus", ipus, "allowed values are powers of two (1, 2, 4, ...), as IPU devices "
                                  "come")
    return ipus


def _whole_from_0(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidSettingError(name, value, "allowed values are whole numbers from 0")
    return value


def _positive(name: str, value: Optional[int]) -> Optional[int]:
    if value is not None and not is_positive_whole(value):
        raise InvalidSettingError(name, value, "allowed values are positive whole numbers")
    return value


def _global_batch(value: Optional[int], inference: bool) -> Optional[int]:
    if inference:
        if value is not None:
            raise InvalidSettingError("global_batch_size", value, "an inference plan takes no global batch: it "
                                      "chooses the replicas and the device iterations of each step")
        return None
    if value is None:
        raise InvalidSettingError("global_batch_size", None, "a training plan needs the samples of a step: a "
                                  "positive whole number, the micro-batch x gradient accumulation x replicas")
    return _positive("global_batch_size", value)


def _reference(model: Any, base: Any, request: Any) -> Optional["Candidate"]:
    """`base` placed and timed as the plan's candidates are, where it runs on the plan's IPUs and batch."""
    from ..errors import PlacementError
    from ..placement.placer import generated, placer_of
    from ..placement.planning import Candidate, build_of

    mode = Mode.of(request.for_inference)
    settings = vars(base)
    replicas = settings[mode.setting("replication_factor")]
    if settings[mode.setting("ipus_per_replica")] * replicas != request.ipus:
        return None
    if request.for_inference:
        micro_batch = request.micro_batch_size or 1
    else:
        micro_batch, remainder = divmod(request.global_batch_size,
                                        settings["gradient_accumulation_steps"] * replicas)
        if remainder or not micro_batch:
            return None
    try:
        placer = placer_of(model.name, model.architecture, model.values, settings, model.shapes,
                           request.for_inference, request.fp32, _measure(model, request, micro_batch), request.ipu,
                           request.reserve, request.calibration,
                           generated((micro_batch, request.sequence_length, request.decoder_sequence_length)))
    except PlacementError:
        return None
    return Candidate(build_of(settings, mode), micro_batch, placer.place(), base)


def _measure(model: Any, request: Any, micro_batch: int):
    from ..placement.placer import measure

    return measure(model.name, (micro_batch, request.sequence_length, request.decoder_sequence_length), request.fp32)
