"""``poptorch._impl`` (Poplar SDK 3.4): the IPU-context flag and poptorch's own error.

``isRunningOnIpu()`` answers ``False`` outside an IPU trace, as on CPU; a tracer stands
in by ``setIpuContext(True)`` for the time it traces, as poptorch's executor does.
"""
from . import poptorch_core

_is_ipu_context = False


def createPoptorchError(msg):
    """The ``poptorch.Error`` that poptorch's Python code raises, with its ``type``/``message``/``location``."""
    type = "poptorch_py_error"
    error = poptorch_core.Error(f"'{type}': {msg}")
    error.type = type
    error.message = msg
    error.location = ""
    return error


def isRunningOnIpu() -> bool:
    """``True`` while a model is traced for the IPU, ``False`` when it runs on CPU."""
    return _is_ipu_context


def setIpuContext(val: bool):
    global _is_ipu_context
    _is_ipu_context = val
