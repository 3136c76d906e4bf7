"""Strict test doubles of the Poplar SDK's ``poptorch``, ``popart`` and ``popdist``, and helpers to use them.

- ``installed(hardware_version=None, popdist_environment=None)`` puts the doubles in ``sys.modules``
  as ``poptorch`` and ``popart`` (always the same module objects), and ``popdist`` inside a poprun
  launch described by its environment variables, for the duration of a ``with`` block.
- ``state(opts)`` is ``opts.toDict()`` in a comparable form (see its docstring).
- ``load_upstream_ipu_configuration()`` loads optimum-graphcore's ``ipu_configuration.py``
  against the doubles, without importing ``optimum.graphcore``.
"""
import contextlib
import enum
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Dict, Iterator, Optional

from . import popart, popdist, poptorch
from .poptorch import _impl, _options_config, _options_impl, enums, ops, optim, options, poptorch_core

__all__ = ["installed", "load_upstream_ipu_configuration", "popart", "popdist", "poptorch", "state"]

_MODULES = {
    "poptorch": poptorch,
    "poptorch._impl": _impl,
    "poptorch._options_config": _options_config,
    "poptorch._options_impl": _options_impl,
    "poptorch.enums": enums,
    "poptorch.ops": ops,
    "poptorch.optim": optim,
    "poptorch.options": options,
    "poptorch.poptorch_core": poptorch_core,
    "popart": popart,
}
_ABSENT = object()
_POPRUN_ENVIRONMENT = popdist._ENVIRONMENT + ("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK")
_upstream_ipu_configuration: Optional[ModuleType] = None


def _check_hardware_version(hardware_version: Optional[int]) -> None:
    if hardware_version is None:
        return
    if not isinstance(hardware_version, int) or isinstance(hardware_version, bool):
        raise TypeError(
            f"hardware_version={hardware_version!r} must be None (no IPU) or an int, "
            f"got {type(hardware_version).__name__}"
        )
    if hardware_version == 0 or hardware_version < -1:
        raise ValueError(
            f"hardware_version={hardware_version!r} is not a version poptorch reports; allowed: None (no IPU), "
            "a positive IPU version (2 = Mk2, 21 = Mk2 with FP8) or -1 (unknown)"
        )


def _check_popdist_environment(environment: Optional[Dict[str, str]]) -> None:
    if environment is None:
        return
    if not isinstance(environment, dict):
        raise TypeError(f"popdist_environment={environment!r} must be None (no popdist) or a dict of variables")
    for name, value in environment.items():
        if name not in _POPRUN_ENVIRONMENT:
            raise ValueError(
                f"popdist_environment has {name!r}; allowed: the variables poprun sets, {_POPRUN_ENVIRONMENT}"
            )
        if not isinstance(value, str):
            raise TypeError(f"popdist_environment[{name!r}]={value!r} must be a str, as environment variables are")


@contextlib.contextmanager
def installed(
    hardware_version: Optional[int] = None, popdist_environment: Optional[Dict[str, str]] = None
) -> Iterator[None]:
    """Make ``import poptorch`` / ``import popart`` (and ``import popdist``) give the doubles inside the block.

    ``hardware_version`` is what ``poptorch.ipuHardwareVersion()`` returns; ``None`` (the
    default) is a machine without IPUs, where it raises ``AssertionError`` like the real one.
    ``popdist_environment`` is ``None`` (the default) for a machine without popdist, where
    ``import popdist`` fails; else popdist is installed and these are the variables poprun set for
    this process (``{}``: not launched by poprun). Inside the block the ``POPDIST_*`` variables are
    exactly those given. Whatever ``sys.modules`` and ``os.environ`` held before is restored on exit.
    """
    _check_hardware_version(hardware_version)
    _check_popdist_environment(popdist_environment)
    given = popdist_environment or {}
    modules = dict(_MODULES, popdist=None if popdist_environment is None else popdist)
    saved_modules = {name: sys.modules.get(name, _ABSENT) for name in [*modules, "popdist.poptorch"]}
    replaced = {name for name in os.environ if name.startswith("POPDIST_")} | set(given)
    saved_environment = {name: os.environ.get(name) for name in replaced}
    saved_version = poptorch_core._hardware_version
    sys.modules.update(modules)
    sys.modules.pop("popdist.poptorch", None)
    for name in replaced:
        os.environ.pop(name, None)
    os.environ.update(given)
    poptorch_core._hardware_version = hardware_version
    try:
        yield
    finally:
        poptorch_core._hardware_version = saved_version
        for name, value in saved_environment.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        if hasattr(popdist, "poptorch"):  # set by ``import popdist.poptorch`` in the block
            del popdist.poptorch
        for name, module in saved_modules.items():
            if module is _ABSENT:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def _comparable(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, dict):
        return {key: _comparable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_comparable(item) for item in value]
    if isinstance(value, (set, frozenset)):
        return sorted(_comparable(item) for item in value)
    return f"<{type(value).__name__}>"


def _strategy_state(strategy: Any) -> Dict[str, Any]:
    auto_stage = getattr(strategy._stages_manager, "_auto_stage", None)
    recorded = {
        "type": type(strategy).__name__,
        "auto_stage": None if auto_stage is None else int(auto_stage),
        "blocks": {
            block: {"stage": stage._stage_id, "phase": stage._phase_id, "ipu": stage._ipu}
            for block, stage in strategy._block_map.items()
        },
    }
    if hasattr(strategy, "_phases"):
        recorded["phases"] = [[list(stage.blocks) for stage in phase.stages] for phase in strategy._phases]
    return recorded


def state(opts: Any) -> Dict[str, Any]:
    """``opts.toDict()`` as plain, deep-copied data, plus the execution strategy.

    ``toDict()`` is first parsed as poptorch's backend parses it when a model is compiled
    (``poptorch_core._parse_session_options``): a value the real backend refuses fails here too.

    Normalisation, the same every time:
    - enum members become their value (``ReductionType.Mean`` -> ``1``);
    - lists and tuples become lists, sets become sorted lists;
    - any other object becomes ``"<TypeName>"`` (``compilation_progress_bar_fn`` -> ``"<ProgressBar>"``);
    - ``toDict()`` only says ``execution_mode`` (0 pipelined, 1 sharded, 2 phased) and the phased options, so the
      key ``"_execution_strategy"`` adds what ``Options`` keeps of the strategy:
      ``{"type": class name, "auto_stage": AutoStage value or None,
      "blocks": {block id: {"stage": stage id, "phase": phase id, "ipu": IPU or None}}}``, what the backend is
      given for each block; a phased strategy adds ``"phases"``: the blocks of each stage of each phase.
    """
    options = opts.toDict()
    poptorch_core._parse_session_options(options)
    result = _comparable(options)
    result["_execution_strategy"] = _strategy_state(opts._execution_strategy)
    return result


def load_upstream_ipu_configuration() -> ModuleType:
    """optimum-graphcore's ``ipu_configuration`` module, loaded by path against the doubles (cached)."""
    global _upstream_ipu_configuration
    if _upstream_ipu_configuration is not None:
        return _upstream_ipu_configuration
    spec = importlib.util.find_spec("optimum")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    candidates = [Path(location) / "graphcore" / "ipu_configuration.py" for location in locations]
    path = next((candidate for candidate in candidates if candidate.is_file()), None)
    if path is None:
        raise FileNotFoundError(
            f"optimum-graphcore's graphcore/ipu_configuration.py not found under optimum's search path {locations}; "
            "install it with `pip install --no-deps optimum-graphcore==0.7.1`"
        )
    module_spec = importlib.util.spec_from_file_location("upstream_optimum_graphcore_ipu_configuration", path)
    module = importlib.util.module_from_spec(module_spec)
    with installed():
        module_spec.loader.exec_module(module)
    _upstream_ipu_configuration = module
    return module
