"""The native module ``poptorch.poptorch_core``: the hardware query, the backend's error and its option parser.

``doubles.installed(hardware_version=...)`` sets ``_hardware_version``: ``None`` stands
for a machine without IPUs, where the real query answers 0.

``_parse_session_options`` stands for what the real backend does with ``Options.toDict()`` when
a model is compiled (``SessionOptionsParser.cpp`` in graphcore/poptorch, with the ``PybindValue``
type tests of ``python/poptorch.cpp``): it takes only booleans, floats, unsigned integers, strings,
lists/tuples/sets of strings or integers, and dicts, and refuses anything else, a popart enum
member included, with ``Error("Unknown value type ...")``.
"""
from typing import Any, Dict, Optional

_hardware_version: Optional[int] = None

_UINT64_END = 1 << 64
_FLOAT_MAX = 3.4028234663852886e38  # std::numeric_limits<float>::max()


class Error(Exception):
    """``poptorch.Error``: what the real backend raises for what it cannot compile."""


def ipuHardwareVersion(numIpus: int = 1) -> int:
    """The IPU architecture version (2 for Mk2, 21 for Mk2 with FP8), 0 without IPUs, -1 if unknown."""
    return 0 if _hardware_version is None else _hardware_version


def _type_name(value: Any) -> str:
    return f"<class '{type(value).__module__}.{type(value).__qualname__}'>"


def _to_uint64(name: str, value: Any) -> int:
    """``PybindValue::toUInt64``: a Python int (bool included) that fits an unsigned 64-bit integer."""
    if not isinstance(value, int) or not 0 <= value < _UINT64_END:
        raise Error(f"Option {name}: cannot convert {value!r} of type {_type_name(value)} to an unsigned integer")
    return int(value)


def _to_string(name: str, value: Any) -> str:
    """``PybindValue::toString``: a string, or an int written in decimal."""
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(_to_uint64(name, value))
    raise Error(f"Option {name}: don't know how to convert type {_type_name(value)} to string")


def _to_float_with_range_check(name: str, value: Any) -> float:
    """``IPyValue::toFloatWithRangeCheck``: a number that fits a C++ float."""
    if not isinstance(value, (int, float)):
        raise Error(f"Option {name}: cannot convert {value!r} of type {_type_name(value)} to a float")
    if value > _FLOAT_MAX:
        raise Error(f"{value} is too high for a Popart float attribute.")
    if value < -_FLOAT_MAX:
        raise Error(f"{value} is too low for a Popart float attribute.")
    return float(value)


def _to_boolean(name: str, value: Any) -> bool:
    """pybind11's converting ``cast<bool>``: a bool, a number or None; never a string or a container."""
    if value is not None and not isinstance(value, (bool, int, float)):
        raise Error(f"Option {name}: cannot convert {value!r} of type {_type_name(value)} to bool")
    return bool(value)


def _parse_session_options(options: Dict[str, Any]) -> None:
    """Parses ``options`` (``Options.toDict()``) as the backend does before compiling; raises ``Error`` on a value
    it refuses. Option names are not checked here (PopART checks them against its own list)."""
    for name, value in options.items():
        if name in ("patterns_level", "anchored_tensors"):
            continue
        if name == "compilation_progress_bar_fn":
            if not callable(value):
                raise Error(f"Option {name}: {value!r} is not a function")
        elif isinstance(value, bool) or isinstance(value, float) or isinstance(value, str):
            continue
        elif isinstance(value, int):
            _to_uint64(name, value)
        elif isinstance(value, (list, tuple, set)):
            for item in value:
                _to_string(name, item)
        elif isinstance(value, dict):
            _parse_dict_option(options, name, value)
        else:
            raise Error(f"Unknown value type {_type_name(value)} for option {name}")


def _parse_dict_option(options: Dict[str, Any], name: str, value: Dict[Any, Any]) -> None:
    if name == "available_memory_proportion":
        for ipu, proportion in value.items():
            _to_uint64(name, ipu)
            _to_float_with_range_check(name, proportion)
    elif name == "patterns":
        if "patterns_level" not in options:
            raise Error("PopART option 'patterns' should not be set without first setting 'patterns_level'.")
        _to_uint64("patterns_level", options["patterns_level"])
        for pattern, enabled in value.items():
            _to_string(name, pattern)
            _to_boolean(name, enabled)
    elif name.startswith("location_"):
        for tensor, location in value.items():
            _to_string(name, tensor)
            _to_uint64(name, location)
    else:
        for key, item in value.items():
            _to_string(name, key)
            _to_string(name, item)
